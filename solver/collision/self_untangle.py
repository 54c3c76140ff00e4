"""Cloth that starts passed through itself (a posed garment whose fold went through a layer):
before a frame is simulated, the regions cut off by each intersection contour are moved back
through the layer they crossed, a step a round, until no two cloth triangles intersect.

The continuous tests and impact zones keep a clean cloth clean, but they assume a clean start:
on a tangled one they hold the crossing in place. This is a small global intersection analysis
in the spirit of Baraff, Witkin & Kass 2003 ("Untangling cloth", [Baraff2003] in
docs/references.md):

1. the intersecting triangle pairs are found as the report counts them
   (intersections.intersecting_pair_mask on the cloth tree's candidates, shared and sewn
   vertices skipped), so driving this to zero drives the report's ``self_intersections`` to 0;
2. the edges of one triangle that pierce the other are cut out of the cloth's edge graph; the
   connected pieces left are the regions the contours cut off. Pairs that share a triangle
   belong to one contour;
3. per contour, the smallest region next to one of its cut edges is the one that went through
   (the tip of a fold, a poked-through patch): it is translated along the crossed triangle's
   normal towards the side its cut edges' other ends are on, by the deepest of those ends'
   distance to the plane plus the cloth thickness. The contour then moves by about one row a
   round and the region shrinks until it is out. A contour that cuts nothing off (it ends
   inside the cloth) moves only the nearer end of each piercing edge across the plane.

The move changes positions only (the simulation then holds the strain limit by positions).
While a pair still intersects after the rounds of a frame, its vertices are left out of the
self-contact response of that frame (CollisionHandler.excluded), so that the contacts do not
hold the layers the wrong way round; a frame that starts clean ends the untangling.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from ..topology import components
from .intersections import _plane_distance, _segment_crosses_triangle, intersecting_pair_mask
from .vector import cross, dot, load, sub


def intersecting_cloth_pairs(handler, x: np.ndarray) -> np.ndarray:
    """The intersecting pairs of cloth triangles at positions x (V, 3) [m] that share no
    (sewn) vertex, (H, 2) triangle indices; the same pairs the frame report counts."""
    tris = handler.model.triangles
    handler.cloth_tree.refit(x, x, np.zeros(len(tris)))
    pairs = handler.cloth_tree.self_pairs()
    if len(pairs) == 0:
        return np.zeros((0, 2), np.int64)
    hit = intersecting_pair_mask(pairs, tris, tris, x, x, handler.weld)
    return pairs[hit == 1]


def tangled_vertices(handler, x: np.ndarray) -> np.ndarray:
    """(V,) bool: the vertices of the intersecting cloth triangle pairs at x (V, 3) [m]."""
    out = np.zeros(handler.V, bool)
    out[handler.model.triangles[intersecting_cloth_pairs(handler, x)].reshape(-1)] = True
    return out


@njit
def piercing_edges(hits, tris, x):
    """The triangle sides that pierce the other triangle of each intersecting pair hits (H, 2).

    Returns (rows (K, 4): pair, crossed triangle, the side's two vertices; distance (K, 2) [m]
    of those vertices to the crossed triangle's plane, signed along normal (K, 3) of it)."""
    H = hits.shape[0]
    rows = np.empty((6 * H, 4), np.int64)
    dist = np.empty((6 * H, 2))
    normal = np.empty((6 * H, 3))
    k = 0
    for h in range(H):
        for side in range(2):
            own, other = hits[h, side], hits[h, 1 - side]
            a, b, c = load(x, tris[other, 0]), load(x, tris[other, 1]), load(x, tris[other, 2])
            n = cross(sub(b, a), sub(c, a))
            ln = np.sqrt(dot(n, n))
            if ln <= 1e-300:
                continue
            size = max(np.sqrt(dot(sub(a, b), sub(a, b))), np.sqrt(dot(sub(b, c), sub(b, c))),
                       np.sqrt(dot(sub(c, a), sub(c, a))))
            for r in range(3):
                i, j = tris[own, r], tris[own, (r + 1) % 3]
                p, q = load(x, i), load(x, j)
                sp = _plane_distance(n, ln, a, p, 1e-10 * size)
                sq = _plane_distance(n, ln, a, q, 1e-10 * size)
                if _segment_crosses_triangle(p, q, sp, sq, a, b, c):
                    rows[k, 0], rows[k, 1], rows[k, 2], rows[k, 3] = h, other, i, j
                    dist[k, 0], dist[k, 1] = sp, sq
                    normal[k, 0], normal[k, 1], normal[k, 2] = n[0] / ln, n[1] / ln, n[2] / ln
                    k += 1
    return rows[:k], dist[:k], normal[:k]


def untangle_self(handler, x: np.ndarray, inv_mass: np.ndarray) -> int:
    """One round: move the regions of cloth positions x (V, 3) [m] that passed through another
    layer of the cloth back by a step (see the module docstring), in place; vertices with
    inv_mass 0 stay. Returns the number of intersecting pairs before the move."""
    V = handler.V
    tris = handler.model.triangles
    hits = intersecting_cloth_pairs(handler, x)
    if len(hits) == 0:
        return 0
    rows, dist, normal = piercing_edges(hits, tris, x)
    gap = handler.model.thickness
    # regions: the cloth's triangle sides without the piercing ones
    sides = handler.features.edges
    sides = sides[np.all(sides < V, axis=1)]
    cut = np.sort(rows[:, 2:], axis=1)
    keep = ~np.isin(sides[:, 0] * V + sides[:, 1], cut[:, 0] * V + cut[:, 1])
    region = components(V, sides[keep])
    size = np.bincount(region, minlength=V)
    # contours: intersecting pairs that share a triangle
    contour = components(len(tris), hits)[hits[rows[:, 0], 0]]
    move = np.zeros_like(x)
    for c in np.unique(contour):
        mine = np.flatnonzero(contour == c)
        i, j = rows[mine, 2], rows[mine, 3]
        ri, rj = region[i], region[j]
        split = ri != rj
        if split.any():
            # the smallest region a cut edge of this contour separates, and its edges' ends in it
            cand = np.concatenate([ri[split], rj[split]])
            pick = cand[np.argmin(size[cand] * (len(tris) + 1) + cand)]
            # towards the other end's side of the crossed plane, as deep as the other end is
            side_i, side_j = ri == pick, rj == pick
            toward = np.concatenate([np.sign(dist[mine[side_i], 1] - dist[mine[side_i], 0]),
                                     np.sign(dist[mine[side_j], 0] - dist[mine[side_j], 1])])
            n = np.concatenate([normal[mine[side_i]], normal[mine[side_j]]])
            depth = np.concatenate([np.abs(dist[mine[side_i], 0]),
                                    np.abs(dist[mine[side_j], 1])])
            d = (toward[:, None] * n).sum(axis=0)
            length = np.linalg.norm(d)
            if length > 0.0:
                move[region == pick] += (depth.max() + gap) * d / length
        else:
            # nothing cut off: the nearer end of each piercing edge goes across
            near = np.abs(dist[mine, 0]) <= np.abs(dist[mine, 1])
            v = np.where(near, i, j)
            s = np.where(near, dist[mine, 0], dist[mine, 1])
            far = np.where(near, dist[mine, 1], dist[mine, 0])
            step = (np.abs(s) + gap) * np.sign(far - s)
            np.add.at(move, v, step[:, None] * normal[mine])
    move[inv_mass == 0.0] = 0.0
    x += move
    return len(hits)
