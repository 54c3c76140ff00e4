"""Rest geometry of a cloth mesh: triangle areas and warp/weft frames, and the bending hinges
(which hinges, the areas beside them, their rest angles and the Gram matrices of their angles'
gradients). Material-free: the force terms turn it into coefficients (solver/forces/)."""

from __future__ import annotations

import numpy as np

from .topology import alternate_quad_triangles, hinges


def triangle_frames(pos: np.ndarray, tris: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rest areas and warp/weft directions of each triangle.

    Warp (u) is world X projected into the triangle's plane (world Y where X is nearly normal to
    it); weft (v) = n × u. For a flat grid in the XY plane u = X and v = Y exactly.
    """
    e1 = pos[tris[:, 1]] - pos[tris[:, 0]]
    e2 = pos[tris[:, 2]] - pos[tris[:, 0]]
    n = np.cross(e1, e2)
    two_a = np.linalg.norm(n, axis=1)
    safe = np.where(two_a > 0, two_a, 1.0)
    n = n / safe[:, None]
    ref = np.where((np.abs(n[:, 0]) > 0.99)[:, None], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0])
    u = ref - np.sum(ref * n, axis=1)[:, None] * n
    u /= np.linalg.norm(u, axis=1)[:, None]
    v = np.cross(n, u)
    return 0.5 * two_a, u, v


def membrane_triangles(mesh, tris):
    """The membrane's triangles and weights: every quad split along both diagonals with weight
    1/2 each (the fan split's two triangles, then the other diagonal's), other polygons' fan
    triangles ``tris`` with weight 1. A single split makes a quad stiffer along one diagonal
    than the other, and a cloth hung symmetrically drifts to one side.

    Returns:
        (triangles (M, 3) int64, weights (M,)).
    """
    sides = np.diff(mesh.face_offsets)
    from_quad = np.repeat(sides == 4, sides - 2)
    alt = alternate_quad_triangles(mesh)
    weights = np.concatenate([np.where(from_quad, 0.5, 1.0), np.full(len(alt), 0.5)])
    return np.concatenate([tris, alt]).astype(np.int64), weights


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
