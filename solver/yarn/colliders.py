"""Yarn against colliders (spheres, planes and triangle meshes, solver.spec.Collider), by
projection inside the step.

Kaldor handles colliders with a distance field as a velocity filter that brings the yarn to the
surface and applies an approximate friction response ([Kaldor2011] §4.2.4, with [Bridson2002]).
Here the same at the position level: a yarn point whose centre ends a step closer to a collider
surface than r + t_o (the yarn's radius plus the collider's thickness) is pushed out to that
distance along the surface normal, and its motion along the surface relative to the collider's
is reduced by μ times the push (Coulomb friction as a position correction: a point pressed
harder sticks, one grazing the surface slides). The step's velocity is then (x⁺ − x)/h, so the
push also removes the velocity into the collider.

A point cannot tunnel through a thin collider: the yarn step moves no point by 0.1 yarn
diameter or more (dynamics.py), less than the r + t_o it is kept away, so the side of a mesh
face a point starts a step on is the side it is pushed back to. Points are tested, not the
segments between them: a collider edge sharper than a segment (half a yarn diameter at the
usual gauges) can poke between two points.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from ..collision.bvh import TriangleTree
from ..collision.closest import point_triangle
from ..collision.colliders import ColliderSet, ColliderState
from ..collision.intersections import RAY, analytic_depth, mesh_depth
from ..collision.vector import load

# mesh faces are tested again after a push, for points pushed into a neighbouring face (a
# concave corner); a third pass found nothing more in the tests
MESH_PASSES = 2


@njit(inline="always")
def _push(x_start, x, i, nx, ny, nz, depth, ux, uy, uz, mu):
    """Move x[i] by ``depth`` along the unit normal n and reduce its motion over the step along
    the surface, relative to the surface's own motion u [m], by μ·depth."""
    x[i, 0] += depth * nx
    x[i, 1] += depth * ny
    x[i, 2] += depth * nz
    tx = x[i, 0] - x_start[i, 0] - ux
    ty = x[i, 1] - x_start[i, 1] - uy
    tz = x[i, 2] - x_start[i, 2] - uz
    tn = tx * nx + ty * ny + tz * nz
    tx -= tn * nx
    ty -= tn * ny
    tz -= tn * nz
    t = (tx * tx + ty * ty + tz * tz) ** 0.5
    if t > 0.0:
        slow = min(1.0, mu * depth / t)
        x[i, 0] -= slow * tx
        x[i, 1] -= slow * ty
        x[i, 2] -= slow * tz


@njit
def project_spheres(x_start, x, inv_mass, c0, c1, sphere_radius, gap, mu):
    """Push points of x (P, 3) [m] out of spheres (centres c0 at the step's start, c1 at its
    end (S, 3), radii (S,)) to their radius + gap (S,) [m], with friction μ (S,); in place.
    Pinned points (inv_mass 0) are left alone. Returns the number of pushes."""
    n = 0
    for i in range(x.shape[0]):
        if inv_mass[i] == 0.0:
            continue
        for s in range(c1.shape[0]):
            dx = x[i, 0] - c1[s, 0]
            dy = x[i, 1] - c1[s, 1]
            dz = x[i, 2] - c1[s, 2]
            d = (dx * dx + dy * dy + dz * dz) ** 0.5
            reach = sphere_radius[s] + gap[s]
            if d >= reach:
                continue
            if d <= 1e-12 * reach:  # at the centre: out along the start's side
                dx = x_start[i, 0] - c0[s, 0]
                dy = x_start[i, 1] - c0[s, 1]
                dz = x_start[i, 2] - c0[s, 2]
                d0 = (dx * dx + dy * dy + dz * dz) ** 0.5
                if d0 <= 0.0:
                    dx, dy, dz, d0 = 0.0, 0.0, 1.0, 1.0
                dx, dy, dz, d = dx / d0, dy / d0, dz / d0, 0.0
            else:
                dx, dy, dz = dx / d, dy / d, dz / d
            _push(x_start, x, i, dx, dy, dz, reach - d, c1[s, 0] - c0[s, 0],
                  c1[s, 1] - c0[s, 1], c1[s, 2] - c0[s, 2], mu[s])
            n += 1
    return n


@njit
def project_planes(x_start, x, inv_mass, o0, o1, normal, gap, mu):
    """Push points of x (P, 3) [m] in front of planes (a point o0 / o1 (Q, 3) at the step's
    start / end, unit normals (Q, 3), the solid behind) to gap (Q,) [m] in front, with
    friction μ (Q,); in place. Pinned points are left alone. Returns the number of pushes."""
    n = 0
    for i in range(x.shape[0]):
        if inv_mass[i] == 0.0:
            continue
        for q in range(o1.shape[0]):
            nx, ny, nz = normal[q, 0], normal[q, 1], normal[q, 2]
            ahead = ((x[i, 0] - o1[q, 0]) * nx + (x[i, 1] - o1[q, 1]) * ny
                     + (x[i, 2] - o1[q, 2]) * nz)
            if ahead >= gap[q]:
                continue
            _push(x_start, x, i, nx, ny, nz, gap[q] - ahead, o1[q, 0] - o0[q, 0],
                  o1[q, 1] - o0[q, 1], o1[q, 2] - o0[q, 2], mu[q])
            n += 1
    return n


@njit
def _face_normal(m, a, b, c):
    """Unit normal (3-tuple) of triangle abc of positions m; (0, 0, 0) if degenerate."""
    ux, uy, uz = m[b, 0] - m[a, 0], m[b, 1] - m[a, 1], m[b, 2] - m[a, 2]
    vx, vy, vz = m[c, 0] - m[a, 0], m[c, 1] - m[a, 1], m[c, 2] - m[a, 2]
    nx, ny, nz = uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
    length = (nx * nx + ny * ny + nz * nz) ** 0.5
    if length <= 0.0:
        return 0.0, 0.0, 0.0
    return nx / length, ny / length, nz / length


@njit
def project_mesh(x_start, x, inv_mass, pairs, tris, m0, m1, tri_gap, tri_mu):
    """Push points out of the mesh faces they are near, in place: for each point of the
    candidate (point, face) pairs (K, 2) (sorted by point), the face whose surface it is
    deepest inside of, then the next pass. A point is kept ``tri_gap`` (T,) [m] from a face on
    the side it started the step on (m0: face vertices at the start, m1 at the end (Vc, 3)):
    along the direction from the face's closest point, or along the face normal where it
    crossed the face's interior (near an edge the direction from the edge is the right one
    even behind the face's plane). Friction μ (T,) against the face's motion at the
    closest point. Returns the number of pushes."""
    n = 0
    K = pairs.shape[0]
    k = 0
    while k < K:
        i = pairs[k, 0]
        end = k
        while end < K and pairs[end, 0] == i:
            end += 1
        if inv_mass[i] != 0.0:
            for _ in range(MESH_PASSES):
                best, bn, bu = 0.0, (0.0, 0.0, 0.0), (0.0, 0.0, 0.0)
                best_f = -1
                for kk in range(k, end):
                    f = pairs[kk, 1]
                    a, b, c = tris[f, 0], tris[f, 1], tris[f, 2]
                    nx, ny, nz = _face_normal(m0, a, b, c)
                    side = ((x_start[i, 0] - m0[a, 0]) * nx + (x_start[i, 1] - m0[a, 1]) * ny
                            + (x_start[i, 2] - m0[a, 2]) * nz)
                    sign = 1.0 if side >= 0.0 else -1.0
                    d2, wa, wb, wc = point_triangle(load(x, i), load(m1, a), load(m1, b),
                                                    load(m1, c))
                    qx = wa * m1[a, 0] + wb * m1[b, 0] + wc * m1[c, 0]
                    qy = wa * m1[a, 1] + wb * m1[b, 1] + wc * m1[c, 1]
                    qz = wa * m1[a, 2] + wb * m1[b, 2] + wc * m1[c, 2]
                    ex, ey, ez = x[i, 0] - qx, x[i, 1] - qy, x[i, 2] - qz
                    e1x, e1y, e1z = _face_normal(m1, a, b, c)
                    d = d2 ** 0.5
                    behind = (ex * e1x + ey * e1y + ez * e1z) * sign <= 0.0
                    interior = wa > 0.0 and wb > 0.0 and wc > 0.0
                    if d > 0.0 and not (behind and interior):
                        depth = tri_gap[f] - d
                        dirn = (ex / d, ey / d, ez / d)
                    else:  # crossed the face: out along its normal, to the start's side
                        depth = tri_gap[f] + d
                        dirn = (sign * e1x, sign * e1y, sign * e1z)
                    if depth > best:
                        best, bn, best_f = depth, dirn, f
                        bu = (wa * (m1[a, 0] - m0[a, 0]) + wb * (m1[b, 0] - m0[b, 0])
                              + wc * (m1[c, 0] - m0[c, 0]),
                              wa * (m1[a, 1] - m0[a, 1]) + wb * (m1[b, 1] - m0[b, 1])
                              + wc * (m1[c, 1] - m0[c, 1]),
                              wa * (m1[a, 2] - m0[a, 2]) + wb * (m1[b, 2] - m0[b, 2])
                              + wc * (m1[c, 2] - m0[c, 2]))
                if best_f < 0:
                    break
                _push(x_start, x, i, bn[0], bn[1], bn[2], best, bu[0], bu[1], bu[2],
                      tri_mu[best_f])
                n += 1
        k = end
    return n


@njit
def _points_in_box(x_start, x, lo, hi):
    """The points (indices (N,)) whose motion x_start → x (P, 3) [m] has a box overlapping
    the box lo, hi (3,), and their boxes (N, 3), (N, 3)."""
    keep = np.zeros(x.shape[0], np.bool_)
    for i in range(x.shape[0]):
        inside = True
        for r in range(3):
            a = min(x_start[i, r], x[i, r])
            b = max(x_start[i, r], x[i, r])
            if a > hi[r] or b < lo[r]:
                inside = False
        keep[i] = inside
    near = np.nonzero(keep)[0]
    p_lo = np.empty((near.shape[0], 3))
    p_hi = np.empty((near.shape[0], 3))
    for k in range(near.shape[0]):
        for r in range(3):
            p_lo[k, r] = min(x_start[near[k], r], x[near[k], r])
            p_hi[k, r] = max(x_start[near[k], r], x[near[k], r])
    return near, p_lo, p_hi


class YarnColliders:
    """The colliders of a yarn simulation and where they are at any time.

    Args:
        colliders: solver.spec.Collider objects (sphere, plane or mesh; moving by their
            velocity or, for meshes, per-frame positions).
        radius: yarn radius r [m]: a point is kept r + the collider's thickness from it.
        fps, frames: the simulation's frame rate and length (for per-frame mesh positions;
            after the last frame the colliders stay where they are then).
    """

    def __init__(self, colliders, radius: float, fps: float, frames: int):
        self.colliders = tuple(colliders)
        self.radius = float(radius)
        self.set = ColliderSet(tuple(colliders), 2.0 * float(radius), fps, frames)
        self._each: dict[float, tuple[YarnColliders, ...]] = {}   # reached's, by margin
        c = self.set
        self._tri_gap = np.zeros(0)
        self._tri_mu = np.zeros(0)
        self._mesh_tree = None
        self._states: dict[float, ColliderState] = {}
        self._fitted: tuple[float, float] | None = None   # the step the mesh tree is fitted to
        if c.has_mesh:
            group = c.mesh_group[c.mesh_tris[:, 0]]
            self._tri_gap = c.mesh_gap[group]
            self._tri_mu = c.mesh_mu[group]
            self._mesh_tree = TriangleTree(c.mesh_tris, c.state(0).mesh_positions)

    def __len__(self) -> int:
        c = self.set
        return len(c.sphere_radius) + len(c.plane_gap) + int(c.mesh_group.max(initial=-1)) + 1

    def state(self, t: float) -> ColliderState:
        """Where the colliders are at time t [s] (linear within a frame); the last few are
        kept, as a step asks for its start and end three times and the next step starts
        where it ended."""
        hit = self._states.get(t)
        if hit is not None:
            return hit
        c = self.set
        f = max(0.0, t * c.fps)
        i = min(int(f), c.frames - 1)
        s = c.frame(i + 1).at(min(1.0, f - i))
        self._states[t] = s
        if len(self._states) > 4:
            self._states.pop(next(iter(self._states)))
        return s

    def project(self, x_start: np.ndarray, x: np.ndarray, inv_mass: np.ndarray, t0: float,
                t1: float) -> int:
        """Push the step x_start → x (P, 3) [m] of a step from t0 to t1 [s] out of every
        collider, in place on x; returns the number of pushes."""
        c = self.set
        s0, s1 = self.state(t0), self.state(t1)
        n = 0
        if len(c.sphere_radius):
            n += project_spheres(x_start, x, inv_mass, s0.sphere_centers, s1.sphere_centers,
                                 c.sphere_radius, c.sphere_gap, c.sphere_mu)
        if len(c.plane_gap):
            n += project_planes(x_start, x, inv_mass, s0.plane_points, s1.plane_points,
                                c.plane_normal, c.plane_gap, c.plane_mu)
        if self._mesh_tree is not None:
            if self._fitted != (t0, t1):
                self._mesh_tree.refit(s0.mesh_positions, s1.mesh_positions, self._tri_gap)
                self._fitted = (t0, t1)
            pairs = self._mesh_pairs(x_start, x)
            if len(pairs):
                n += project_mesh(x_start, x, inv_mass, pairs, c.mesh_tris, s0.mesh_positions,
                                  s1.mesh_positions, self._tri_gap, self._tri_mu)
        return n

    def reached(self, x: np.ndarray, t: float, margin: float = 0.0) -> np.ndarray:
        """(P, K) bool: the points of x (P, 3) [m] closer to each of the K colliders (in the
        order given) at time t [s] than its reach (r + thickness) plus ``margin`` [m], pinned
        or not: with no margin, those a push by it would move. Each collider on its own, for
        the rare step that no shortening saves (dynamics.YarnSolver._crushed)."""
        each = self._each.get(margin)
        if each is None:
            c = self.set
            each = tuple(YarnColliders((one,), self.radius + margin, c.fps, c.frames)
                         for one in self.colliders)
            self._each[margin] = each
        out = np.zeros((len(x), len(each)), bool)
        for k, one in enumerate(each):
            y = x.copy()
            one.project(x, y, np.ones(len(x)), t, t)
            out[:, k] = np.any(y != x, axis=1)
        return out

    def depth(self, x: np.ndarray, t: float) -> float:
        """Deepest [m] a yarn point (P, 3), the yarn's centreline, lies inside a sphere, behind
        a plane or inside a closed mesh at time t [s]; 0 if none does. An independent check
        of the pushes (which keep the centreline r + thickness outside), for the bake's report;
        it does not see a point that went through an open mesh."""
        c = self.set
        s = self.state(t)
        depth = analytic_depth(x, s.sphere_centers, c.sphere_radius, s.plane_points,
                               c.plane_normal) if c.has_analytic else 0.0
        if self._mesh_tree is not None and c.mesh_closed.any():
            X = s.mesh_positions
            tree = self._mesh_tree
            tree.refit(X, X, np.zeros(len(c.mesh_tris)))
            self._fitted = None     # no longer fitted to a step's sweep
            depth = max(depth, mesh_depth(x, X, c.mesh_tris, c.mesh_group[c.mesh_tris[:, 0]],
                                          c.mesh_closed, RAY, tree.left, tree.right,
                                          tree.first, tree.order, tree.lo, tree.hi))
        return float(depth)

    def _mesh_pairs(self, x_start, x) -> np.ndarray:
        """(point, face) pairs, sorted by point, whose swept boxes (faces grown by their gap,
        in the mesh tree as fitted to the step) overlap; only the points inside the tree's
        root box are queried, each point's box against the faces' tree, which is refitted
        once per step: a tree over the points would be rebuilt at every call, as the points
        move every step."""
        near, p_lo, p_hi = _points_in_box(x_start, x, self._mesh_tree.lo[0],
                                          self._mesh_tree.hi[0])
        if len(near) == 0:
            return np.zeros((0, 2), np.int64)
        pairs = self._mesh_tree.box_pairs(p_lo, p_hi)
        pairs[:, 0] = near[pairs[:, 0]]
        return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]
