"""Cloth that starts through a collider (a sleeve posed half inside an arm, a sheet laid into a
faceted body): before a frame is simulated, the cloth is moved out and clear.

1. ``untangle``: every cloth vertex inside a sphere, behind a plane or inside a solid collider
   mesh (inside.py: closed, open with small holes, or in parts that overlap) goes to the
   nearest point of that surface whose exit, plus the contact distance, is outside everything
   (the shortest way out), without velocity into it. A patch of the cloth that is inside goes
   out one way (``one_way_out``): through a thin part, the nearest way would tear it in two.
2. ``uncross``: a coarse body's corners and ridges still poke through the cloth's faces once
   every vertex is out (a 32 x 16 UV sphere under a sheet with shorter edges: 37 crossing
   triangle pairs, held in place by impact zones every frame after). Each cloth triangle that a
   collider triangle crosses is lifted along its normal, to the collider's outside, until the
   collider side that pierces it is the contact distance behind it (``lift_requests``).

Both change positions only. The simulation alternates them with the strain limiter until
nothing is inside and no pair crosses (simulation.py, UNTANGLE_ROUNDS), before the first frame
and before every later frame until one starts clean; a cloth that starts outside and clear is
never touched and bakes bit for bit as before. A self-colliding cloth that starts clear of
itself goes from where it was to where these moves put it along a path that the cloth–cloth
collision tests keep clear (pipeline.py, ``CollisionHandler.resolve_self``): a jump would take
a sleeve's layer pressed out of an arm through the sleeve's other layer.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from ..topology import components
from .inside import INSIDE
from .intersections import _plane_distance, _segment_crosses_triangle, intersecting_pair_mask
from .vector import cross, dot, load, sub


def untangle(handler, x: np.ndarray, v: np.ndarray, inv_mass: np.ndarray,
             state) -> np.ndarray:
    """Move the vertices of x (V, 3) [m] that are inside a collider of ``handler`` (a
    CollisionHandler) at ``state`` (a ColliderState) out, in place, and remove their velocity
    v (V, 3) [m/s] into the surface; vertices with inv_mass 0 (hard pins) stay. Returns the
    vertices moved (indices)."""
    c = handler.colliders
    target = np.full_like(x, np.nan)
    if len(c.sphere_radius):
        rel = x[:, None, :] - state.sphere_centers[None]
        dist = np.linalg.norm(rel, axis=2)
        depth = c.sphere_radius[None] + c.sphere_gap[None] - dist  # (V, S) beyond the gap
        inside = dist < c.sphere_radius[None]
        for s in range(len(c.sphere_radius)):
            rows = np.flatnonzero(inside[:, s] & ~(depth[:, s] < _deepest(target, x)))
            if len(rows):
                out = rel[rows, s] / np.maximum(dist[rows, s], 1e-300)[:, None]
                out[dist[rows, s] == 0.0] = (0.0, 0.0, 1.0)  # at the centre: any way out
                target[rows] = state.sphere_centers[s] + out * (c.sphere_radius[s]
                                                                + c.sphere_gap[s])
    for p in range(len(c.plane_gap)):
        n = c.plane_normal[p]
        height = (x - state.plane_points[p]) @ n
        rows = np.flatnonzero((height < 0.0) & ~(c.plane_gap[p] - height < _deepest(target, x)))
        target[rows] = x[rows] + (c.plane_gap[p] - height[rows])[:, None] * n
    if c.has_mesh:
        exits = one_way_out(handler, x, handler.inside.exits(x, state.mesh_positions, c.mesh_gap),
                            state)
        found = np.isfinite(exits[:, 0])
        deeper = np.linalg.norm(exits - x, axis=1) > _deepest(target, x)
        target[found & deeper] = exits[found & deeper]
    rows = np.flatnonzero(np.isfinite(target[:, 0]) & (inv_mass > 0))
    if len(rows) == 0:
        return rows
    out = target[rows] - x[rows]
    out /= np.maximum(np.linalg.norm(out, axis=1), 1e-300)[:, None]
    x[rows] = target[rows]
    into = np.einsum("ij,ij->i", v[rows], out)
    v[rows] -= np.minimum(into, 0.0)[:, None] * out
    return rows


def any_inside(handler, x: np.ndarray, inv_mass: np.ndarray, state) -> bool:
    """True when a vertex of x (V, 3) [m] that may move (inv_mass > 0) is inside a sphere,
    behind a plane or inside a solid collider mesh of ``handler`` at ``state``: whenever
    ``untangle`` would move one, without finding the ways out (where a mesh gives a vertex
    none, ``untangle`` moves nothing and its rounds end at once)."""
    c = handler.colliders
    free = inv_mass > 0
    if len(c.sphere_radius):
        dist = np.linalg.norm(x[:, None, :] - state.sphere_centers[None], axis=2)
        if (free[:, None] & (dist < c.sphere_radius[None])).any():
            return True
    for p in range(len(c.plane_gap)):
        if (free & ((x - state.plane_points[p]) @ c.plane_normal[p] < 0.0)).any():
            return True
    return bool(c.has_mesh and (free & (handler.inside.winding(x, state.mesh_positions)
                                        >= INSIDE)).any())


def one_way_out(handler, x: np.ndarray, exits: np.ndarray, state) -> np.ndarray:
    """The exits (V, 3) [m] of the vertices of x inside the mesh colliders (NaN rows for the
    others), made to agree within each patch of the cloth that is inside (vertices joined by
    cloth edges): the vertices whose nearest way out runs against the patch's majority
    (more than 90° from the mean of its directions) go out along that mean instead.

    Where a cloth passes through a thin part (a sheet through the middle of an arm), the nearest
    way out splits the patch along the middle, half to each side, and the rounds of strain
    limiting that follow pull the halves back in against each other. A patch resting inside a
    body's cap goes out radially, within 90° of its mean, and is left as it was."""
    inside = np.isfinite(exits[:, 0])
    if inside.sum() < 2:
        return exits
    e = handler.model.edges
    e = e[inside[e[:, 0]] & inside[e[:, 1]]]
    patch = components(len(x), e)
    way = exits - x
    way[~inside] = 0.0
    way /= np.maximum(np.linalg.norm(way, axis=1), 1e-300)[:, None]
    mean = np.zeros((patch.max() + 1, 3))
    np.add.at(mean, patch, way)
    length = np.linalg.norm(mean, axis=1)
    mean /= np.maximum(length, 1e-300)[:, None]
    against = inside & (np.einsum("ij,ij->i", way, mean[patch]) < 0.0) & (length[patch] > 0.0)
    rows = np.flatnonzero(against)
    if len(rows):
        out = handler.inside.ray_exits(x[rows], mean[patch[rows]], state.mesh_positions,
                                       handler.colliders.mesh_gap)
        ok = np.isfinite(out[:, 0])
        exits = exits.copy()
        exits[rows[ok]] = out[ok]
    return exits


def _deepest(target: np.ndarray, x: np.ndarray) -> np.ndarray:
    """How far each vertex is already to move (0 where it is not), (V,) [m]: a vertex inside
    several colliders leaves the one it is deepest in."""
    d = np.linalg.norm(target - x, axis=1)
    return np.where(np.isfinite(d), d, 0.0)


def collider_crossing_pairs(handler, x: np.ndarray, state) -> np.ndarray:
    """The intersecting (cloth triangle, collider triangle) pairs at cloth positions x (V, 3)
    [m] and collider ``state``, (H, 2): the pairs the frame report counts as
    ``collider_crossings``."""
    c = handler.colliders
    if not c.has_mesh:
        return np.zeros((0, 2), np.int64)
    X = state.mesh_positions
    handler.cloth_tree.refit(x, x, np.zeros(handler.T))
    handler.collider_tree.refit(X, X, np.zeros(len(c.mesh_tris)))
    pairs = handler.cloth_tree.pairs_with(handler.collider_tree)
    if len(pairs) == 0:
        return pairs
    hit = intersecting_pair_mask(pairs, handler.model.triangles, c.mesh_tris, x, X,
                                 np.zeros(0, np.int64))
    return pairs[hit == 1]


@njit
def _height_over(p, q, u, a0, a1, a2):
    """How far [m] segment pq rises along unit u above the plane of triangle a0a1a2 while it is
    over the triangle (clipped to the prism the triangle sweeps along u); -inf if never over it.
    A long side of a coarse body that crosses the cloth at a shallow angle rises little over the
    crossed triangle, however far its end is."""
    t0, t1 = 0.0, 1.0
    d = sub(q, p)
    corners = (a0, a1, a2)
    for r in range(3):
        a, b, c = corners[r], corners[(r + 1) % 3], corners[(r + 2) % 3]
        m = cross(u, sub(b, a))
        if dot(m, sub(c, a)) < 0.0:  # point it into the triangle
            m = (-m[0], -m[1], -m[2])
        f0 = dot(m, sub(p, a))
        df = dot(m, d)
        if df == 0.0:
            if f0 < 0.0:
                return -np.inf
        elif df > 0.0:
            t0 = max(t0, -f0 / df)
        else:
            t1 = min(t1, -f0 / df)
    if t0 > t1:
        return -np.inf
    h0 = dot(u, sub(p, a0)) + t0 * dot(u, d)
    h1 = dot(u, sub(p, a0)) + t1 * dot(u, d)
    return max(h0, h1)


# A cloth triangle is lifted over a collider side that pierces it only when the side ends at most
# this many of the triangle's longest sides beyond it: a coarse body's corner or ridge, not a body
# that runs on through the cloth (a post through a sheet, left to the collision pipeline)
LIFT_REACH = 3.0


@njit
def lift_requests(hits, tris, ctris, x, X, outward, gap):
    """How far each cloth triangle of the crossing pairs hits (H, 2) (cloth triangle of tris
    over x (V, 3), collider triangle of ctris over X (Vc, 3)) must move to clear it.

    A side of the collider triangle that pierces the cloth triangle (a body's corner or ridge
    through the cloth): the cloth triangle goes along its own normal, turned to the collider
    face's outside (``outward`` (Tc,) ±1 is the orientation of each face's mesh), until the
    side's far end is ``gap`` (Tc,) [m] behind it. Otherwise (a cloth side pierces the face:
    the contour ends at the cloth's border or the body's) the end of the piercing side behind
    the face goes along the face's outward normal to ``gap`` in front of it.

    Returns (vertex (K,), direction (K, 3) unit, distance (K,) [m]): up to nine requests a
    pair, one per vertex it moves.
    """
    H = hits.shape[0]
    vert = np.empty(9 * H, np.int64)
    direction = np.empty((9 * H, 3))
    dist = np.empty(9 * H)
    k = 0
    for h in range(H):
        t, b = hits[h, 0], hits[h, 1]
        a0, a1, a2 = load(x, tris[t, 0]), load(x, tris[t, 1]), load(x, tris[t, 2])
        b0, b1, b2 = load(X, ctris[b, 0]), load(X, ctris[b, 1]), load(X, ctris[b, 2])
        nt = cross(sub(a1, a0), sub(a2, a0))
        nb = cross(sub(b1, b0), sub(b2, b0))
        lt, lb = np.sqrt(dot(nt, nt)), np.sqrt(dot(nb, nb))
        if lt <= 1e-300 or lb <= 1e-300:
            continue
        nb = (outward[b] * nb[0] / lb, outward[b] * nb[1] / lb, outward[b] * nb[2] / lb)
        turn = 1.0 if dot(nt, nb) >= 0.0 else -1.0
        u = (turn * nt[0] / lt, turn * nt[1] / lt, turn * nt[2] / lt)
        size = 0.0
        for p, q in ((a0, a1), (a1, a2), (a2, a0), (b0, b1), (b1, b2), (b2, b0)):
            size = max(size, np.sqrt(dot(sub(p, q), sub(p, q))))
        eps = 1e-10 * size
        reach = over = -np.inf
        for p, q in ((b0, b1), (b1, b2), (b2, b0)):
            sp = _plane_distance(u, 1.0, a0, p, eps)
            sq = _plane_distance(u, 1.0, a0, q, eps)
            if _segment_crosses_triangle(p, q, sp, sq, a0, a1, a2):
                reach = max(reach, sp, sq)
                over = max(over, _height_over(p, q, u, a0, a1, a2))
        if reach > -np.inf:
            # at most the triangle's longest side a round, and nothing where the body runs on
            # over the triangle for several of them (a post through a sheet): lifting the
            # cloth over it would tear it
            side = np.sqrt(max(dot(sub(a0, a1), sub(a0, a1)), dot(sub(a1, a2), sub(a1, a2)),
                               dot(sub(a2, a0), sub(a2, a0))))
            if over > LIFT_REACH * side:
                continue
            for r in range(3):
                vert[k] = tris[t, r]
                direction[k, 0], direction[k, 1], direction[k, 2] = u
                dist[k] = min(reach + gap[b], side)
                k += 1
            continue
        for r in range(3):
            i, j = tris[t, r], tris[t, (r + 1) % 3]
            p, q = load(x, i), load(x, j)
            sp = _plane_distance(nb, 1.0, b0, p, eps)
            sq = _plane_distance(nb, 1.0, b0, q, eps)
            if _segment_crosses_triangle(p, q, sp, sq, b0, b1, b2):
                behind, depth = (i, sp) if sp < sq else (j, sq)
                vert[k] = behind
                direction[k, 0], direction[k, 1], direction[k, 2] = nb
                dist[k] = gap[b] - depth
                k += 1
    return vert[:k], direction[:k], dist[:k]


def uncross(handler, x: np.ndarray, inv_mass: np.ndarray, state) -> tuple[int, np.ndarray]:
    """One round: move the cloth triangles of x (V, 3) [m] that a collider mesh's triangles
    cross in ``state`` clear of them (``lift_requests``), in place; each vertex takes the
    farthest move asked of it, vertices with inv_mass 0 stay. Returns (the number of crossing
    pairs before the move, the vertices moved)."""
    hits = collider_crossing_pairs(handler, x, state)
    if len(hits) == 0:
        return 0, np.zeros(0, np.int64)
    c = handler.colliders
    tri_group = c.mesh_group[c.mesh_tris[:, 0]]
    vert, direction, dist = lift_requests(hits, handler.model.triangles, c.mesh_tris, x,
                                          state.mesh_positions,
                                          c.mesh_orientation[tri_group].astype(np.float64),
                                          c.mesh_gap[tri_group])
    # per vertex the farthest request; ties broken by order, so the move is deterministic
    order = np.lexsort((np.arange(len(vert)), -dist, vert))
    first = np.ones(len(order), bool)
    first[1:] = vert[order[1:]] != vert[order[:-1]]
    pick = order[first]
    pick = pick[inv_mass[vert[pick]] > 0.0]
    x[vert[pick]] += dist[pick, None] * direction[pick]
    return len(hits), vert[pick]
