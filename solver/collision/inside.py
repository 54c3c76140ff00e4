"""Inside or outside the mesh colliders, for bodies as artists have them: closed or open (a
scanned body without a bottom, a neck hole), faceted, and made of parts that touch or pass into
each other (arms against the torso, a joined-on head).

The test is the generalized winding number ([Jacobson2013] in docs/references.md): the solid
angle the collider triangles subtend at a point, over 4π, with each face counted by the side its
normal points to. It is 1 inside and 0 outside a closed surface and 2 inside two overlapping
parts, so "inside" = w ≥ ½ holds for all of them, where the parity of ray crossings fails (a point
inside two overlapping parts crosses both: even, "outside"). The holes of an open body are closed
by a fan from each hole's centroid (ColliderSet.cap_edges), so that w is 0 or 1 in the mouth of a
hole too and the way out can go through it; an open mesh whose holes are large (a floor, a bowl:
ColliderSet.mesh_solid) has no inside. All solid mesh colliders count together, each turned so
its normals point out (ColliderSet.mesh_orientation): inside one collider is inside.

Far from a point, whole subtrees of the collider tree are summed as one dipole (their area
vectors at their area centroid; Barill et al.'s fast winding numbers, [Barill2018]), near it every
triangle's exact solid angle (Van Oosterom & Strackee's formula, [VanOosterom1983]); the error of
the far field is well below the ½ that decides, so the answer near the surface is exact.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit, prange
from .bvh import TriangleTree
from .closest import point_triangle
from .colliders import cap_centres
from .intersections import _box_distance2, nearest_on_mesh
from .vector import cross, dot, load, sub

# A subtree is summed as one dipole from points farther than FAR_FIELD times its radius
# (Barill et al.'s 2). Measured against the exact sum at random points around a UV sphere and a
# torso with arms: at most 0.03 off (0.012 at 3, at twice the cost), far below the ½ that decides
FAR_FIELD = 2.0
INSIDE = 0.5  # winding number from which a point is inside
CANDIDATES = 64  # surface points tried, nearest first, for an exit that is outside
_STACK = 128
# A ray that proves a point outside (``clear_ray``) must miss each triangle by this much of its
# edge parameters (and of its size behind the point), and meet no triangle's plane at a sine
# below CLEAR_SINE; a miss closer than that may be rounding, and the winding number decides
CLEAR_SLACK = 1e-6
CLEAR_SINE = 1e-3


@njit
def node_dipoles(left, right, first, order, tris, X, outward, area, centre, radius, lo, hi):
    """Per tree node (children after parents: left, right, first, order as in bvh.py): the sum
    of its triangles' area vectors ½(b − a)×(c − a), turned by ``outward`` (T,) ±1, into area
    (N, 3) [m²], their area-weighted centroid into centre (N, 3) [m] and the distance from it to
    the farthest corner of the node's box (lo, hi, fitted at X (Vc, 3)) into radius (N,) [m]."""
    weight = np.zeros(left.shape[0])
    for node in range(left.shape[0] - 1, -1, -1):
        a = left[node]
        if a < 0:
            t = order[first[node]]
            p, q, r = load(X, tris[t, 0]), load(X, tris[t, 1]), load(X, tris[t, 2])
            n = cross(sub(q, p), sub(r, p))
            s = 0.5 * outward[t]
            area[node, 0], area[node, 1], area[node, 2] = s * n[0], s * n[1], s * n[2]
            w = 0.5 * np.sqrt(dot(n, n))
            weight[node] = w
            for k in range(3):
                centre[node, k] = (p[k] + q[k] + r[k]) / 3.0
        else:
            b = right[node]
            w = weight[a] + weight[b]
            weight[node] = w
            for k in range(3):
                area[node, k] = area[a, k] + area[b, k]
                if w > 0.0:
                    centre[node, k] = (weight[a] * centre[a, k] + weight[b] * centre[b, k]) / w
                else:
                    centre[node, k] = 0.5 * (centre[a, k] + centre[b, k])
        far = 0.0
        for cx in (lo[node, 0], hi[node, 0]):
            for cy in (lo[node, 1], hi[node, 1]):
                for cz in (lo[node, 2], hi[node, 2]):
                    dx, dy, dz = cx - centre[node, 0], cy - centre[node, 1], cz - centre[node, 2]
                    far = max(far, dx * dx + dy * dy + dz * dz)
        radius[node] = np.sqrt(far)


@njit(inline="always")
def solid_angle(p, a, b, c):
    """Signed solid angle [sr] of triangle abc seen from p: positive when its normal
    (b − a)×(c − a) points away from p ([VanOosterom1983])."""
    u, v, w = sub(a, p), sub(b, p), sub(c, p)
    lu, lv, lw = np.sqrt(dot(u, u)), np.sqrt(dot(v, v)), np.sqrt(dot(w, w))
    det = dot(u, cross(v, w))
    den = lu * lv * lw + dot(u, v) * lw + dot(v, w) * lu + dot(w, u) * lv
    return 2.0 * np.arctan2(det, den)


@njit
def winding_at(p, tris, X, outward, left, right, first, order, area, centre, radius, stack):
    """Generalized winding number of the collider triangles at p (3-tuple) [m] (see the
    module docstring); ``stack`` is scratch space."""
    total = 0.0
    stack[0] = 0
    top = 1
    while top > 0:
        top -= 1
        node = stack[top]
        dx, dy, dz = centre[node, 0] - p[0], centre[node, 1] - p[1], centre[node, 2] - p[2]
        d2 = dx * dx + dy * dy + dz * dz
        if left[node] >= 0 and d2 > (FAR_FIELD * radius[node]) ** 2:
            total += (dx * area[node, 0] + dy * area[node, 1] + dz * area[node, 2]) \
                / (d2 * np.sqrt(d2))
        elif left[node] < 0:
            t = order[first[node]]
            total += outward[t] * solid_angle(p, load(X, tris[t, 0]), load(X, tris[t, 1]),
                                              load(X, tris[t, 2]))
        else:
            stack[top] = right[node]
            stack[top + 1] = left[node]
            top += 2
    return total / (4.0 * np.pi)


@njit(parallel=True)
def winding_numbers(x, tris, X, outward, left, right, first, order, area, centre, radius,
                    lo, hi):
    """Winding number of the collider triangles at each point of x (V, 3) [m], (V,); 0 for
    points outside the tree's root box (nothing encloses them)."""
    w = np.zeros(x.shape[0])
    if left.shape[0] == 0:
        return w
    for i in prange(x.shape[0]):
        p = load(x, i)
        if _box_distance2(p, lo, hi, 0) > 0.0:
            continue
        stack = np.empty(_STACK, np.int64)
        w[i] = winding_at(p, tris, X, outward, left, right, first, order, area, centre,
                          radius, stack)
    return w


@njit(inline="always")
def _may_cross(p, d, a, b, c):
    """The ray p + s·d (s >= 0, d a unit vector) may meet triangle abc: False only where it
    misses by more than rounding could close (CLEAR_SLACK, CLEAR_SINE); a degenerate triangle
    may always be met. Möller–Trumbore's parameters ([Moller1997])."""
    e1, e2 = sub(b, a), sub(c, a)
    n = cross(e1, e2)
    h = cross(d, e2)
    det = dot(e1, h)  # −d·n
    if abs(det) <= CLEAR_SINE * np.sqrt(dot(n, n)):
        return True  # grazing or degenerate
    inv = 1.0 / det
    t = sub(p, a)
    u = dot(t, h) * inv
    if u < -CLEAR_SLACK or u > 1.0 + CLEAR_SLACK:
        return False
    q = cross(t, e1)
    v = dot(d, q) * inv
    if v < -CLEAR_SLACK or u + v > 1.0 + CLEAR_SLACK:
        return False
    size = np.sqrt(dot(e1, e1)) + np.sqrt(dot(e2, e2))
    return dot(e2, q) * inv >= -CLEAR_SLACK * size


@njit
def clear_ray(p, tris, X, left, right, first, order, lo, hi, pad, stack):
    """True if the ray from p (3-tuple) [m] straight away from the centre of the tree's root
    box meets no collider triangle, with a margin (_may_cross; boxes padded by ``pad`` [m]):
    then p and the far end of the ray lie on the same side of every closed surface the
    triangles form, and p's exact winding number is 0. ``stack`` is scratch space."""
    dx = p[0] - 0.5 * (lo[0, 0] + hi[0, 0])
    dy = p[1] - 0.5 * (lo[0, 1] + hi[0, 1])
    dz = p[2] - 0.5 * (lo[0, 2] + hi[0, 2])
    length = np.sqrt(dx * dx + dy * dy + dz * dz)
    if length <= 0.0:
        return False
    d = (dx / length, dy / length, dz / length)
    inv = (1.0 / d[0] if d[0] != 0.0 else 1e300, 1.0 / d[1] if d[1] != 0.0 else 1e300,
           1.0 / d[2] if d[2] != 0.0 else 1e300)
    stack[0] = 0
    top = 1
    while top > 0:
        top -= 1
        node = stack[top]
        t0, t1 = 0.0, np.inf
        for r in range(3):
            a = (lo[node, r] - pad - p[r]) * inv[r]
            b = (hi[node, r] + pad - p[r]) * inv[r]
            t0 = max(t0, min(a, b))
            t1 = min(t1, max(a, b))
        if t0 > t1:
            continue
        if left[node] < 0:
            t = order[first[node]]
            if _may_cross(p, d, load(X, tris[t, 0]), load(X, tris[t, 1]), load(X, tris[t, 2])):
                return False
        else:
            stack[top] = right[node]
            stack[top + 1] = left[node]
            top += 2
    return True


@njit(parallel=True)
def inside_points(x, closed, tris, X, outward, left, right, first, order, area, centre,
                  radius, lo, hi):
    """Which points of x (V, 3) [m] are inside the colliders: winding number >= INSIDE, (V,)
    bool. Points outside the tree's root box are outside (as in winding_numbers); where the
    triangles are ``closed`` (closed_surfaces), so is a point whose clear_ray meets none of
    them (its exact winding number is 0, and the far-field sums stay far below the ½ that
    decides); the others are decided by winding_at."""
    inside = np.zeros(x.shape[0], np.bool_)
    if left.shape[0] == 0:
        return inside
    pad = CLEAR_SLACK * max(hi[0, 0] - lo[0, 0], hi[0, 1] - lo[0, 1], hi[0, 2] - lo[0, 2])
    for i in prange(x.shape[0]):
        p = load(x, i)
        if _box_distance2(p, lo, hi, 0) > 0.0:
            continue
        stack = np.empty(_STACK, np.int64)
        if closed and clear_ray(p, tris, X, left, right, first, order, lo, hi, pad, stack):
            continue
        inside[i] = winding_at(p, tris, X, outward, left, right, first, order, area, centre,
                               radius, stack) >= INSIDE
    return inside


def closed_surfaces(tris: np.ndarray, outward: np.ndarray) -> bool:
    """True if the triangles (T, 3), each turned by ``outward`` (T,) ±1, run every directed
    edge (a, b) as often as (b, a): closed surfaces, consistently oriented (touching or
    passing into each other allowed), whose winding number is a whole number off them. Also
    the empty set of triangles."""
    t = np.where(outward[:, None] > 0, tris, tris[:, ::-1]).astype(np.int64)
    a, b = t.ravel(), np.roll(t, -1, axis=1).ravel()
    n = int(t.max(initial=-1)) + 1
    return bool(np.array_equal(np.sort(a * n + b), np.sort(b * n + a)))


@njit(parallel=True)
def inside_depths(x, inside, tris, X, tri_group, left, right, first, order, lo, hi):
    """Distance [m] from each point of x (V, 3) that is ``inside`` (V,) bool to the nearest
    collider triangle, 0 for the others, (V,)."""
    depth = np.zeros(x.shape[0])
    for i in prange(x.shape[0]):
        if not inside[i]:
            continue
        stack = np.empty(_STACK, np.int64)
        depth[i] = np.sqrt(nearest_on_mesh(load(x, i), -1, X, tris, tri_group, left, right,
                                           first, order, lo, hi, stack)[0])
    return depth


@njit(parallel=True)
def exits(x, w, gap, tri_group, tris, X, outward, left, right, first, order, area, centre,
          radius, lo, hi, target):
    """Where each point of x (V, 3) with winding number w (V,) >= INSIDE must go to be outside:
    the nearest point of the collider surfaces whose exit, that point plus the collider's
    contact distance ``gap`` (G,) [m] on the way out, is itself outside every collider, into
    target (V, 3); NaN rows for the points outside. Where none of the CANDIDATES nearest
    points has an outside exit, the nearest one's exit (the next round goes on from there).

    The nearest surface point alone is not enough where parts touch or overlap (an arm against
    the torso): the way out of one part can lead into the other, and the next round would move
    the point back. Candidates are taken in order of distance (a best-first walk of the tree)
    until one's exit is outside."""
    for i in prange(x.shape[0]):
        target[i, 0] = target[i, 1] = target[i, 2] = np.nan
        if w[i] < INSIDE:
            continue
        p = load(x, i)
        stack = np.empty(_STACK, np.int64)
        scratch = np.empty(_STACK, np.int64)
        # best-first: repeatedly the nearest triangle farther than the last one rejected
        floor = -1.0
        floor_t = -1
        first_exit = (np.nan, np.nan, np.nan)
        for _ in range(CANDIDATES):
            best = np.inf
            bt = -1
            cx = cy = cz = 0.0
            stack[0] = 0
            top = 1
            while top > 0:
                top -= 1
                node = stack[top]
                if _box_distance2(p, lo, hi, node) > best:
                    continue
                if left[node] < 0:
                    t = order[first[node]]
                    a, b, c = load(X, tris[t, 0]), load(X, tris[t, 1]), load(X, tris[t, 2])
                    d2, wa, wb, wc = point_triangle(p, a, b, c)
                    # the next in (distance, triangle) order after the last rejected one
                    later = d2 > floor or (d2 == floor and t > floor_t)
                    if later and (d2 < best or (d2 == best and t < bt)):
                        best, bt = d2, t
                        cx = wa * a[0] + wb * b[0] + wc * c[0]
                        cy = wa * a[1] + wb * b[1] + wc * c[1]
                        cz = wa * a[2] + wb * b[2] + wc * c[2]
                else:
                    stack[top] = right[node]
                    stack[top + 1] = left[node]
                    top += 2
            if bt < 0:
                break
            depth = np.sqrt(best)
            if depth > 0.0:
                s = 1.0 + gap[tri_group[bt]] / depth
                q = (p[0] + s * (cx - p[0]), p[1] + s * (cy - p[1]), p[2] + s * (cz - p[2]))
            else:  # on the surface: out along the face's outward normal
                a, b, c = load(X, tris[bt, 0]), load(X, tris[bt, 1]), load(X, tris[bt, 2])
                n = cross(sub(b, a), sub(c, a))
                ln = np.sqrt(dot(n, n))
                if ln <= 0.0:
                    floor, floor_t = best, bt
                    continue
                s = outward[bt] * gap[tri_group[bt]] / ln
                q = (p[0] + s * n[0], p[1] + s * n[1], p[2] + s * n[2])
            if np.isnan(first_exit[0]):
                first_exit = q
            if winding_at(q, tris, X, outward, left, right, first, order, area, centre, radius,
                          scratch) < INSIDE:
                first_exit = q
                break
            floor, floor_t = best, bt
        target[i, 0], target[i, 1], target[i, 2] = first_exit
    return target


@njit(inline="always")
def _ray_triangle(p, d, a, b, c):
    """Distance s > 0 along the ray p + s·d at which it crosses triangle abc, inf if it
    does not (Möller–Trumbore, [Moller1997])."""
    e1, e2 = sub(b, a), sub(c, a)
    h = cross(d, e2)
    det = dot(e1, h)
    if abs(det) < 1e-300:
        return np.inf
    inv = 1.0 / det
    t = sub(p, a)
    u = dot(t, h) * inv
    if u < 0.0 or u > 1.0:
        return np.inf
    q = cross(t, e1)
    v = dot(d, q) * inv
    if v < 0.0 or u + v > 1.0:
        return np.inf
    s = dot(e2, q) * inv
    return s if s > 0.0 else np.inf


@njit(inline="always")
def _ray_box_from(p, inv, lo, hi, node, start):
    """The ray p + s·d (inv = 1/d) meets box node at some s >= start."""
    t0, t1 = start, np.inf
    for r in range(3):
        a = (lo[node, r] - p[r]) * inv[r]
        b = (hi[node, r] - p[r]) * inv[r]
        if a > b:
            a, b = b, a
        t0 = max(t0, a)
        t1 = min(t1, b)
    return t0 <= t1


@njit(parallel=True)
def ray_exits(x, direction, gap, tri_group, tris, X, outward, left, right, first, order, area,
              centre, radius, lo, hi, target):
    """Where each point of x (V, 3) [m] leaves the colliders going along its unit direction
    (V, 3): the first crossing of a collider triangle after which the point ``gap`` (G,) [m]
    farther on is outside every collider, into target (V, 3); NaN where none is."""
    for i in prange(x.shape[0]):
        target[i, 0] = target[i, 1] = target[i, 2] = np.nan
        p = load(x, i)
        d = load(direction, i)
        inv = (1.0 / d[0] if d[0] != 0.0 else 1e300, 1.0 / d[1] if d[1] != 0.0 else 1e300,
               1.0 / d[2] if d[2] != 0.0 else 1e300)
        stack = np.empty(_STACK, np.int64)
        scratch = np.empty(_STACK, np.int64)
        floor = 0.0
        for _ in range(CANDIDATES):
            best = np.inf
            bt = -1
            stack[0] = 0
            top = 1
            while top > 0:
                top -= 1
                node = stack[top]
                if not _ray_box_from(p, inv, lo, hi, node, floor):
                    continue
                if left[node] < 0:
                    t = order[first[node]]
                    s = _ray_triangle(p, d, load(X, tris[t, 0]), load(X, tris[t, 1]),
                                      load(X, tris[t, 2]))
                    if floor < s < best:
                        best, bt = s, t
                else:
                    stack[top] = right[node]
                    stack[top + 1] = left[node]
                    top += 2
            if bt < 0:
                break
            reach = best + gap[tri_group[bt]]
            q = (p[0] + reach * d[0], p[1] + reach * d[1], p[2] + reach * d[2])
            if winding_at(q, tris, X, outward, left, right, first, order, area, centre, radius,
                          scratch) < INSIDE:
                target[i, 0], target[i, 1], target[i, 2] = q
                break
            floor = best
    return target


class InsideTest:
    """Winding numbers, depths and exits of points against the solid mesh colliders
    (ColliderSet.mesh_solid: closed, or open with small holes), their holes closed by fans
    from each hole's centroid, so that a point in the mouth of a hole is inside exactly when it
    is on the body's side of the fan, and the way out of it can go through the hole. Meshes
    that enclose nothing (a floor, a bowl) have no inside.

    Args:
        colliders: a ColliderSet.
    """

    def __init__(self, colliders):
        c = colliders
        self.colliders = c
        group = c.mesh_group[c.mesh_tris[:, 0]] if c.has_mesh else np.zeros(0, np.int64)
        solid = c.mesh_solid[group] if c.has_mesh else np.zeros(0, bool)
        Vc = c.mesh_vertex_count
        caps = np.stack([Vc + c.cap_loop, c.cap_edges[:, 1], c.cap_edges[:, 0]], axis=1)
        self.tris = np.ascontiguousarray(np.concatenate([c.mesh_tris[solid], caps]),
                                         dtype=np.int64)
        self.tri_group = np.concatenate([group[solid], c.mesh_group[c.cap_edges[:, 0]]])
        self.outward = c.mesh_orientation[self.tri_group].astype(np.float64)
        self.active = len(self.tris) > 0
        # closed, consistently oriented surfaces (with the caps): a ray can prove a point
        # outside (inside_points)
        self.closed = closed_surfaces(self.tris, self.outward)
        self.tree = TriangleTree(self.tris, self._points(c.state(0).mesh_positions))
        N = len(self.tree.left)
        self.area = np.zeros((N, 3))
        self.centre = np.zeros((N, 3))
        self.radius = np.zeros(N)
        self._at = None
        self._points_at = None

    def _points(self, X: np.ndarray) -> np.ndarray:
        """The collider vertices X (Vc, 3) [m] and the hole centroids after them."""
        c = self.colliders
        return np.concatenate([X, cap_centres(c.cap_edges, c.cap_loop, X)])

    def fit(self, X: np.ndarray) -> np.ndarray:
        """The tree and the dipoles at collider positions X (Vc, 3) [m] (refitted only when X
        changed); returns the points of the triangles (with the hole centroids)."""
        if self._at is not None and self._at.shape == X.shape and np.array_equal(self._at, X):
            return self._points_at
        P = self._points(X)
        t = self.tree
        t.refit(P, P, np.zeros(len(self.tris)))
        node_dipoles(t.left, t.right, t.first, t.order, self.tris, P, self.outward, self.area,
                     self.centre, self.radius, t.lo, t.hi)
        self._at, self._points_at = X.copy(), P
        return P

    def winding(self, x: np.ndarray, X: np.ndarray) -> np.ndarray:
        """Winding numbers (V,) at points x (V, 3) [m] of the colliders at X (Vc, 3) [m]."""
        if not self.active:
            return np.zeros(len(x))
        P = self.fit(X)
        t = self.tree
        return winding_numbers(x, self.tris, P, self.outward, t.left, t.right, t.first, t.order,
                               self.area, self.centre, self.radius, t.lo, t.hi)

    def inside(self, x: np.ndarray, X: np.ndarray) -> np.ndarray:
        """Which points of x (V, 3) [m] are inside the colliders at X (Vc, 3) [m]: winding
        number >= INSIDE, (V,) bool (inside_points: most points outside are proved so by a
        ray, without their winding number)."""
        if not self.active:
            return np.zeros(len(x), bool)
        P = self.fit(X)
        t = self.tree
        return inside_points(np.ascontiguousarray(x), self.closed, self.tris, P, self.outward,
                             t.left, t.right, t.first, t.order, self.area, self.centre,
                             self.radius, t.lo, t.hi)

    def depths(self, x: np.ndarray, X: np.ndarray) -> np.ndarray:
        """Depth [m] of each point of x (V, 3) inside the colliders at X, 0 outside, (V,)."""
        inside = self.inside(x, X)
        if not inside.any():
            return np.zeros(len(x))
        t = self.tree
        return inside_depths(x, inside, self.tris, self._points_at, self.tri_group, t.left,
                             t.right, t.first, t.order, t.lo, t.hi)

    def exits(self, x: np.ndarray, X: np.ndarray, gap: np.ndarray) -> np.ndarray:
        """Exit targets (V, 3) [m] of the points of x inside the colliders at X (``exits``),
        NaN rows for the others; gap (G,) [m] per collider."""
        w = self.winding(x, X)
        if not self.active:
            return np.full_like(x, np.nan)
        t = self.tree
        return exits(x, w, gap, self.tri_group, self.tris, self._points_at, self.outward,
                     t.left, t.right, t.first, t.order, self.area, self.centre, self.radius,
                     t.lo, t.hi, np.empty_like(x))

    def ray_exits(self, x: np.ndarray, direction: np.ndarray, X: np.ndarray,
                  gap: np.ndarray) -> np.ndarray:
        """Exit targets (V, 3) [m] of the points of x going along the unit directions (V, 3)
        out of the colliders at X (``ray_exits``); NaN rows where there is none."""
        if not self.active or len(x) == 0:
            return np.full_like(x, np.nan)
        P = self.fit(X)
        t = self.tree
        return ray_exits(np.ascontiguousarray(x), np.ascontiguousarray(direction), gap,
                         self.tri_group, self.tris, P, self.outward, t.left, t.right, t.first,
                         t.order, self.area, self.centre, self.radius, t.lo, t.hi,
                         np.empty_like(x))
