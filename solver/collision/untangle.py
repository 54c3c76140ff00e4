"""Cloth that starts inside a collider (a sleeve posed half inside an arm): before a frame is
simulated, every cloth vertex inside a sphere, behind a plane or inside a closed collider mesh
is moved to the nearest point of that surface plus its contact distance (the shortest path to
the outside), and its velocity into the surface is removed.

The move changes positions only. Without it, spheres and planes were left to the collision
pipeline, which pushes a vertex out as a step's correction (a sheet 2 cm inside a sphere came
out in the first frame), but closed collider meshes were not: the proximity and continuous tests
only see surfaces near the path, so a sheet 2 cm inside a sphere mesh stayed there (23-30 mm
deep, 70 crossing triangle pairs every frame). The simulation applies it only while a frame
starts with a vertex inside, from the first frame on (simulation.py), so a cloth that starts
outside is never touched and bakes bit for bit as before.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit, prange
from .intersections import RAY, _box_distance2, nearest_on_mesh, ray_crossings
from .vector import load


@njit(parallel=True)
def mesh_exits(x, X, tris, tri_group, closed, gap, ray, left, right, first, order, lo, hi,
               target):
    """Where each point of x (V, 3) [m] inside a closed collider mesh must go: the nearest
    point of that mesh's surface plus its contact distance ``gap`` (G,) [m] along the way out,
    written into target (V, 3); rows of points inside no closed mesh become NaN.

    Inside = a ray along ``ray`` crosses the mesh an odd number of times (as
    intersections.mesh_depth decides it); both queries walk the collider tree (left, right,
    first, order, lo, hi; boxes of the triangles at X (Vc, 3)).
    """
    G = closed.shape[0]
    d = (ray[0], ray[1], ray[2])
    inv = (1.0 / ray[0], 1.0 / ray[1], 1.0 / ray[2])
    for i in prange(x.shape[0]):
        target[i, 0] = target[i, 1] = target[i, 2] = np.nan
        p = load(x, i)
        if left.shape[0] == 0 or _box_distance2(p, lo, hi, 0) > 0.0:
            continue
        stack = np.empty(128, np.int64)
        deepest = 0.0
        for g in range(G):
            if not closed[g]:
                continue
            if ray_crossings(p, d, inv, g, X, tris, tri_group, left, right, first, order, lo,
                             hi, stack) % 2 == 0:
                continue
            best, cx, cy, cz = nearest_on_mesh(p, g, X, tris, tri_group, left, right, first,
                                               order, lo, hi, stack)
            depth = np.sqrt(best)
            if depth < deepest:  # inside several meshes: leave the deepest
                continue
            deepest = depth
            if depth > 0.0:
                s = 1.0 + gap[g] / depth  # on through the surface by the contact distance
                target[i, 0] = p[0] + s * (cx - p[0])
                target[i, 1] = p[1] + s * (cy - p[1])
                target[i, 2] = p[2] + s * (cz - p[2])
    return target


def untangle(handler, x: np.ndarray, v: np.ndarray, inv_mass: np.ndarray, state) -> int:
    """Move the vertices of x (V, 3) [m] that are inside a collider of ``handler`` (a
    CollisionHandler) at ``state`` (a ColliderState) out, in place, and remove their velocity
    v (V, 3) [m/s] into the surface; vertices with inv_mass 0 (hard pins) stay. Returns how
    many vertices moved."""
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
    if c.has_mesh and c.mesh_closed.any():
        X = state.mesh_positions
        t = handler.collider_tree
        t.refit(X, X, np.zeros(len(c.mesh_tris)))
        exits = mesh_exits(x, X, c.mesh_tris, c.mesh_group[c.mesh_tris[:, 0]], c.mesh_closed,
                           c.mesh_gap, RAY, t.left, t.right, t.first, t.order, t.lo, t.hi,
                           np.empty_like(x))
        found = np.isfinite(exits[:, 0])
        deeper = np.linalg.norm(exits - x, axis=1) > _deepest(target, x)
        target[found & deeper] = exits[found & deeper]
    rows = np.flatnonzero(np.isfinite(target[:, 0]) & (inv_mass > 0))
    if len(rows) == 0:
        return 0
    out = target[rows] - x[rows]
    out /= np.maximum(np.linalg.norm(out, axis=1), 1e-300)[:, None]
    x[rows] = target[rows]
    into = np.einsum("ij,ij->i", v[rows], out)
    v[rows] -= np.minimum(into, 0.0)[:, None] * out
    return len(rows)


def _deepest(target: np.ndarray, x: np.ndarray) -> np.ndarray:
    """How far each vertex is already to move (0 where it is not), (V,) [m]: a vertex inside
    several colliders leaves the one it is deepest in."""
    d = np.linalg.norm(target - x, axis=1)
    return np.where(np.isfinite(d), d, 0.0)
