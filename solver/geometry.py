"""Rest geometry of a cloth mesh: triangle areas and warp/weft frames, and the bending hinges
(which hinges, the areas beside them, their rest angles and the Gram matrices of their angles'
gradients). Material-free: the force terms turn it into coefficients (solver/forces/)."""

from __future__ import annotations

import numpy as np

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
    of the angles' gradients [1/m²] (an empty array unless ``grams``), by forces/bending.py's
    kernel."""
    from .forces.bending import hinge_angles_and_grams
    angle, gram = np.zeros(len(hg)), np.zeros((len(hg) if grams else 0, 4, 4))
    hinge_angles_and_grams(np.ascontiguousarray(pos, dtype=np.float64),
                           np.ascontiguousarray(hg, dtype=np.int64), angle, gram)
    return angle, gram
