"""Rest geometry of a cloth mesh: triangle areas and warp/weft frames, and the bending hinges
(which hinges, the areas beside them, their dihedral angles with their gradients, and the Gram
matrices of those gradients). Material-free: the force terms turn it into coefficients
(solver/forces/); the bending kernel evaluates a hinge's angle with ``hinge_angle_gradient``."""

from __future__ import annotations

import numpy as np

from ._jit import njit, prange
from .topology import alternate_quad_corners, alternate_quad_triangles, fan_corners, hinges


def triangle_frames(pos: np.ndarray, tris: np.ndarray, warp: np.ndarray | None = None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rest areas and warp/weft directions of each triangle.

    Warp (u) is the direction ``warp`` ((T, 3) per triangle, or None: world X) projected into
    the triangle's plane; where that is (nearly) normal to the triangle, world X, or world Y
    where X is too. Weft (v) = n × u. For a flat grid in the XY plane and no ``warp``, u = X
    and v = Y exactly.
    """
    e1 = pos[tris[:, 1]] - pos[tris[:, 0]]
    e2 = pos[tris[:, 2]] - pos[tris[:, 0]]
    n = np.cross(e1, e2)
    two_a = np.linalg.norm(n, axis=1)
    safe = np.where(two_a > 0, two_a, 1.0)
    n = n / safe[:, None]
    ref = np.where((np.abs(n[:, 0]) > 0.99)[:, None], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0])
    if warp is not None:
        w = np.asarray(warp, dtype=np.float64)
        length = np.linalg.norm(w, axis=1)
        in_plane = length * 0.99 > np.abs(np.sum(w * n, axis=1))  # not (nearly) normal
        ref = np.where(in_plane[:, None], w / np.where(length > 0, length, 1.0)[:, None], ref)
    u = ref - np.sum(ref * n, axis=1)[:, None] * n
    u /= np.linalg.norm(u, axis=1)[:, None]
    v = np.cross(n, u)
    return 0.5 * two_a, u, v


def membrane_corners(mesh):
    """The membrane's triangles, as polygon corners (indices into ``face_indices``), and their
    weights: every quad split along both diagonals with weight 1/2 each (first the fan split's
    triangles of every polygon, as ``topology.triangulate`` orders them, then the other
    diagonal's), other polygons fan-split with weight 1. A single split makes a quad stiffer
    along one diagonal than the other, and a cloth hung symmetrically drifts to one side.

    Returns:
        (corners (M, 3) int64, weights (M,)).
    """
    sides = np.diff(mesh.face_offsets)
    from_quad = np.repeat(sides == 4, sides - 2)
    alt = alternate_quad_corners(mesh)
    weights = np.concatenate([np.where(from_quad, 0.5, 1.0), np.full(len(alt), 0.5)])
    return np.concatenate([fan_corners(mesh)[0], alt]), weights


def warp_directions(pos, tris, corners, uv, grain):
    """Warp hint of each triangle (T, 3) for ``triangle_frames``: ∂x/∂U from the corners' UVs
    (``uv`` (C, 2) per polygon corner, or None), else ``grain`` (3,); None if neither is given
    (world X)."""
    if uv is None and grain is None:
        return None
    hint = np.broadcast_to(np.asarray([1.0, 0.0, 0.0] if grain is None else grain,
                                      dtype=np.float64), tris.shape).copy()
    if uv is None:
        return hint
    t = np.asarray(uv, dtype=np.float64)[corners]  # (T, 3, 2)
    du, dv = t[:, 1] - t[:, 0], t[:, 2] - t[:, 0]
    det = du[:, 0] * dv[:, 1] - dv[:, 0] * du[:, 1]
    e1 = pos[tris[:, 1]] - pos[tris[:, 0]]
    e2 = pos[tris[:, 2]] - pos[tris[:, 0]]
    # [e1 e2] = [∂x/∂U ∂x/∂V]·[du dv]  =>  ∂x/∂U = (e1·dv_V − e2·du_V)/det
    ok = np.abs(det) > 1e-12 * (np.linalg.norm(du, axis=1) * np.linalg.norm(dv, axis=1)) + 1e-300
    d_u = (e1 * dv[:, 1:2] - e2 * du[:, 1:2]) / np.where(ok, det, 1.0)[:, None]
    hint[ok] = d_u[ok]
    return hint


def averaged_hinges(mesh, tris, area, pos):
    """Hinges of the fan split and of the other diagonal split of every quad, averaged.

    A hinge present in both splits keeps weight 1; one present in only one split gets 1/2.

    Returns:
        (hinges (H, 4), area sums A1 + A2 [m²] (H,), weights (H,)).
    """
    alt = alternate_quad_triangles(mesh)
    if len(alt) == 0:
        hg = hinges(tris)
        return hg, hinge_area_sum(hg, tris, area), np.ones(len(hg))
    quad_tris = np.repeat(np.diff(mesh.face_offsets) == 4, np.diff(mesh.face_offsets) - 2)
    tris_b = np.concatenate([tris[~quad_tris], alt])
    area_b = np.concatenate([area[~quad_tris], triangle_frames(pos, alt)[0]])
    ha, hb = hinges(tris), hinges(tris_b)
    both = np.concatenate([ha, hb])
    aa = np.concatenate([hinge_area_sum(ha, tris, area), hinge_area_sum(hb, tris_b, area_b)])
    key = np.concatenate([np.sort(both[:, :2], 1), np.sort(both[:, 2:], 1)], 1)
    uniq, first, count = np.unique(key, axis=0, return_index=True, return_counts=True)
    return both[first], aa[first], count / 2.0


def hinge_area_sum(hg, tris, area):
    """A1 + A2 of the two triangles of each hinge [m²]."""
    if len(hg) == 0:
        return np.zeros(0)
    keys = np.sort(tris, axis=1)
    V = int(tris.max()) + 1
    code = (keys[:, 0] * V + keys[:, 1]) * V + keys[:, 2]
    order = np.argsort(code)

    def tri_area_of(c):
        k = np.sort(np.stack([hg[:, 0], hg[:, 1], hg[:, c]], 1), axis=1)
        q = (k[:, 0] * V + k[:, 1]) * V + k[:, 2]
        return area[order[np.searchsorted(code[order], q)]]

    return tri_area_of(2) + tri_area_of(3)


def hinge_edge_length2(pos, hg):
    """|e|² of each hinge's shared edge [m²], (H,)."""
    return np.sum((pos[hg[:, 1]] - pos[hg[:, 0]]) ** 2, axis=1)


def angles_and_grams(pos, hg, grams=True):
    """(H,) dihedral angles [rad] of the hinges at positions pos and (H, 4, 4) Gram matrices
    of the angles' gradients [1/m²] (an empty array unless ``grams``)."""
    angle, gram = np.zeros(len(hg)), np.zeros((len(hg) if grams else 0, 4, 4))
    hinge_angles_and_grams(np.ascontiguousarray(pos, dtype=np.float64),
                           np.ascontiguousarray(hg, dtype=np.int64), angle, gram)
    return angle, gram


def clamped_hinge_area(pos, hinges, area_sum, clamped):
    """A1 + A2 of each hinge [m²], (H,), with the wing left out where that wing is clamped (its
    three corners in ``clamped``, a (V,) bool mask of hard pins) and the other is not.

    Args:
        pos: rest positions [m], (V, 3); hinges: (H, 4) (edge a, edge b, wing 1, wing 2).
        area_sum: A1 + A2 [m²], (H,) (geometry.averaged_hinges).
    """
    if len(hinges) == 0 or not clamped.any():
        return area_sum
    edge_pinned = clamped[hinges[:, 0]] & clamped[hinges[:, 1]]
    wing1 = edge_pinned & clamped[hinges[:, 2]]
    wing2 = edge_pinned & clamped[hinges[:, 3]]
    e = pos[hinges[:, 1]] - pos[hinges[:, 0]]
    a1 = 0.5 * np.linalg.norm(np.cross(e, pos[hinges[:, 2]] - pos[hinges[:, 0]]), axis=1)
    a2 = 0.5 * np.linalg.norm(np.cross(e, pos[hinges[:, 3]] - pos[hinges[:, 0]]), axis=1)
    return np.where(wing1 & ~wing2, a2, np.where(wing2 & ~wing1, a1, area_sum))


@njit
def dihedral_angle_and_gradient(x0, x1, x2, x3, grad):
    """Signed dihedral angle θ [rad] of a hinge (0 when flat) and ∂θ/∂x_m into grad (4, 3).

    Returns θ, or NaN when a triangle is degenerate (grad is then zero).
    """
    pts = np.empty((4, 3))
    pts[0], pts[1], pts[2], pts[3] = x0, x1, x2, x3
    return hinge_angle_gradient(pts, 0, 1, 2, 3, grad)


@njit
def hinge_angle_gradient(x, i0, i1, i2, i3, g):
    """Signed dihedral angle θ [rad] of the hinge (x[i0], x[i1]; wings x[i2], x[i3]) and ∂θ/∂x
    of its four vertices into g (4, 3), from Bridson's mode vectors; NaN (g zero) when a
    triangle is degenerate. Scalars only: no allocation in a parallel loop."""
    ex, ey, ez = x[i1, 0] - x[i0, 0], x[i1, 1] - x[i0, 1], x[i1, 2] - x[i0, 2]
    a0x, a0y, a0z = x[i2, 0] - x[i0, 0], x[i2, 1] - x[i0, 1], x[i2, 2] - x[i0, 2]
    a1x, a1y, a1z = x[i2, 0] - x[i1, 0], x[i2, 1] - x[i1, 1], x[i2, 2] - x[i1, 2]
    b1x, b1y, b1z = x[i3, 0] - x[i1, 0], x[i3, 1] - x[i1, 1], x[i3, 2] - x[i1, 2]
    b0x, b0y, b0z = x[i3, 0] - x[i0, 0], x[i3, 1] - x[i0, 1], x[i3, 2] - x[i0, 2]
    # n1 = (x2 − x0) × (x2 − x1), n2 = (x3 − x1) × (x3 − x0)
    n1x, n1y, n1z = a0y * a1z - a0z * a1y, a0z * a1x - a0x * a1z, a0x * a1y - a0y * a1x
    n2x, n2y, n2z = b1y * b0z - b1z * b0y, b1z * b0x - b1x * b0z, b1x * b0y - b1y * b0x
    le = np.sqrt(ex * ex + ey * ey + ez * ez)
    q1 = n1x * n1x + n1y * n1y + n1z * n1z
    q2 = n2x * n2x + n2y * n2y + n2z * n2z
    if le < 1e-300 or q1 < 1e-300 or q2 < 1e-300:
        for m in range(4):
            for r in range(3):
                g[m, r] = 0.0
        return np.nan
    ehx, ehy, ehz = ex / le, ey / le, ez / le
    cx, cy, cz = n1y * n2z - n1z * n2y, n1z * n2x - n1x * n2z, n1x * n2y - n1y * n2x
    r12 = np.sqrt(q1 * q2)
    theta = np.arctan2((cx * ehx + cy * ehy + cz * ehz) / r12,
                       (n1x * n2x + n1y * n2y + n1z * n2z) / r12)
    w1 = 1.0 / q1
    w2 = 1.0 / q2
    s21 = (a1x * ehx + a1y * ehy + a1z * ehz) * w1   # (x2 − x1)·ê / |n1|²
    s31 = (b1x * ehx + b1y * ehy + b1z * ehz) * w2   # (x3 − x1)·ê / |n2|²
    s20 = (a0x * ehx + a0y * ehy + a0z * ehz) * w1   # (x2 − x0)·ê / |n1|²
    s30 = (b0x * ehx + b0y * ehy + b0z * ehz) * w2   # (x3 − x0)·ê / |n2|²
    g[2, 0], g[2, 1], g[2, 2] = -le * w1 * n1x, -le * w1 * n1y, -le * w1 * n1z
    g[3, 0], g[3, 1], g[3, 2] = -le * w2 * n2x, -le * w2 * n2y, -le * w2 * n2z
    g[0, 0] = -(s21 * n1x + s31 * n2x)
    g[0, 1] = -(s21 * n1y + s31 * n2y)
    g[0, 2] = -(s21 * n1z + s31 * n2z)
    g[1, 0] = s20 * n1x + s30 * n2x
    g[1, 1] = s20 * n1y + s30 * n2y
    g[1, 2] = s20 * n1z + s30 * n2z
    return theta


@njit(parallel=True)
def hinge_angles_and_grams(x, hinges, angle, gram):
    """Dihedral angle θ [rad] of every hinge (0 for a degenerate one) and its Gram matrix
    Γ_mn = ∇θ_m·∇θ_n [1/m²] over the hinge's four vertices.

    Args:
        x: positions [m], (V, 3); hinges: (H, 4) vertex indices.
        angle: out (H,); gram: out (H, 4, 4) (zero for a degenerate hinge), or an empty
            array for the angles alone.
    """
    for h in prange(len(hinges)):
        g = np.empty((4, 3))
        idx = hinges[h]
        theta = hinge_angle_gradient(x, idx[0], idx[1], idx[2], idx[3], g)
        angle[h] = 0.0 if np.isnan(theta) else theta
        if gram.shape[0] == 0:
            continue
        for m in range(4):
            for n in range(4):
                gram[h, m, n] = g[m, 0] * g[n, 0] + g[m, 1] * g[n, 1] + g[m, 2] * g[n, 2]
