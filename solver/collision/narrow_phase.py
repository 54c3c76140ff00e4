"""Exact tests over candidate triangle pairs: proximity contacts and continuous collisions.

All points live in one array: cloth vertices first, then the vertices of mesh colliders (their
inverse mass is 0). For each candidate triangle pair the features the two triangles own (see
features.py) are paired: vertex–face both ways and edge–edge, skipping features that share a
vertex (or two sewn vertices: a seam's pair counts as one vertex, so contact never pushes a
seam open). Each test produces a contact record:

    idx (4,) int: point indices, VERTEX_FACE (vertex, face corners) or EDGE_EDGE (edge, edge);
    rec (RECORD,) float: weights w (4) with Σ w·x = vector from the second primitive to the
        first, unit normal n (3), separation d0 = n·Σ w·x0 at the start [m], required gap [m],
        friction coefficient, and the velocity of the other side U (3) [m/s] (zero here: a mesh
        collider's motion is in its vertices' velocities).

NEARBY (for the implicit solve's contact prediction): every cloth vertex against every mesh
collider face within its contact distance of the swept boxes, with its closest points at the
start, whatever its motion (the caller picks and predicts). The other feature pairs were once
tested and dropped by the caller, which nearly doubled the narrow phase's time
(docs/solver.md, "Narrow phase").
REPULSION (Bridson's repulsion stage, after a step): cloth/collider pairs that end the step
closer than their contact distance ask for it along the direction between their closest points
at the end. The start normal would be wrong there: when cloth slides over a faceted collider
the closest features change, and the start normal, from a ridge or corner that the cloth is
sliding past, points along the surface; asking the end positions for the gap along it pushed
sliding cloth back along the surface and stretched it. A
pair that touches during the step (the continuous test) or whose closest direction reverses
went through, or into the gap, on its way: it keeps the start normal, which says which side it
belongs on. Cloth/cloth pairs keep the start normal and ask for the distance when they end
closer along it: layers piled on the floor are stretched by these pushes either way (more with
end normals; docs/solver.md, "Narrow phase"), a separate, known limitation (docs/solver.md,
"Collisions").
CONTINUOUS: pairs that touch (within a tolerance) during the linear motion x0 → x1 ask for a
small positive gap along the normal of the first touch.
WITHIN (the implicit solve's contact set, contact_pairs.py): every feature pair closer at x0
than its contact distance plus a margin, except cloth vertices against collider faces (those
are the solve's constraints), with its closest points and normal at x0 and, in the record's
velocity slot, its kind (VERTEX_FACE or EDGE_EDGE).

Cost: the swept-box test of each feature pair was most of a pass when it gathered the four
points' coordinates itself; it now compares boxes computed once per pass for every point,
triangle and edge. The proximity pass also runs the continuous test on the same path
(run_with_collisions), so the first continuous round after the pushes tests only the pairs they
moved (docs/solver.md, "Narrow phase").
"""

from __future__ import annotations

import numpy as np

from .._jit import njit, prange
from .ccd import EDGE_EDGE, VERTEX_FACE, contact_normal, first_contact, gap
from .vector import add, dot, load, norm, scale, sub

NEARBY = 0
CONTINUOUS = 1
REPULSION = 2
WITHIN = 3

FOUND, COLLIDES = 1, 2  # _test's flags

# record layout
W0, NX, D0, GAP, MU, UX = 0, 4, 7, 8, 9, 10
RECORD = 13

_CHUNKS = 64
MIN_DISTANCE = 1e-6   # [m] smallest contact distance and CCD tolerance (float64 at metre scale)
LOWER_BOUND_MARGIN = 1e-9  # [m] rounding room for the bounding-sphere rejection in _test


def ccd_tolerance(contact_distance):
    """Distance [m] at which the continuous test reports a touch: a tenth of the contact
    distance, at least MIN_DISTANCE. After a collision the pair is sent to twice this."""
    return np.maximum(0.1 * contact_distance, MIN_DISTANCE)


@njit(inline="always")
def _path_box(x0, x1, points, out):
    """out = [lo (3), hi (3)] of the straight paths x0 → x1 of the given points."""
    for r in range(3):
        lo, hi = np.inf, -np.inf
        for i in points:
            lo = min(lo, x0[i, r], x1[i, r])
            hi = max(hi, x0[i, r], x1[i, r])
        out[r], out[3 + r] = lo, hi


@njit(parallel=True)
def swept_boxes(x0, x1, tris, own_v, own_e, edges, used, point_box, tri_box, edge_box):
    """Boxes [lo (3), hi (3)] of the straight paths x0 → x1 of the triangles flagged in used
    (T,) (all of them if used is empty), (T, 6), and of the points (N, 6) and edges (E, 6)
    those triangles own (features.py); the other rows are left as they were."""
    every = used.shape[0] == 0
    for t in prange(tris.shape[0]):
        if not (every or used[t]):
            continue
        _path_box(x0, x1, (tris[t, 0], tris[t, 1], tris[t, 2]), tri_box[t])
        for k in range(3):
            v = own_v[t, k]
            if v >= 0:
                _path_box(x0, x1, (v, v), point_box[v])
            e = own_e[t, k]
            if e >= 0:
                _path_box(x0, x1, (edges[e, 0], edges[e, 1]), edge_box[e])


@njit(inline="always")
def _apart(p, i, q, j, pad):
    """True if box p[i] and box q[j] ((lo, hi) rows) are more than pad apart on some axis."""
    for r in range(3):
        if p[i, r] > q[j, 3 + r] + pad or q[j, r] > p[i, 3 + r] + pad:
            return True
    return False


@njit(inline="always")
def _moved_by(p0, p1, q0, q1):
    """|(p1 − p0) − (q1 − q0)|: how far q's motion carries it relative to p."""
    dx = (p1[0] - p0[0]) - (q1[0] - q0[0])
    dy = (p1[1] - p0[1]) - (q1[1] - q0[1])
    dz = (p1[2] - p0[2]) - (q1[2] - q0[2])
    return np.sqrt(dx * dx + dy * dy + dz * dz)


@njit
def _relative_motion(kind, a0, b0, c0, d0, a1, b1, c1, d1):
    """Largest motion [m] of a point of the first primitive relative to one of the second."""
    m = max(_moved_by(a0, a1, c0, c1), _moved_by(a0, a1, d0, d1))
    if kind == VERTEX_FACE:
        return max(m, _moved_by(a0, a1, b0, b1))
    return max(m, _moved_by(b0, b1, c0, c1), _moved_by(b0, b1, d0, d1))


@njit(inline="always")
def _distance_lower_bound(kind, a, b, c, d):
    """A lower bound [m] on the distance between the primitives, from bounding spheres: the
    vertex a against the sphere about the face (b, c, d)'s centroid, or the spheres about the
    edges (a, b) and (c, d). Cheaper than the exact distance."""
    if kind == VERTEX_FACE:
        g = scale(add(add(b, c), d), 1.0 / 3.0)
        gb, gc, gd = sub(b, g), sub(c, g), sub(d, g)
        radius = np.sqrt(max(dot(gb, gb), dot(gc, gc), dot(gd, gd)))
        return norm(sub(a, g)) - radius
    return norm(scale(sub(add(a, b), add(c, d)), 0.5)) - 0.5 * (norm(sub(b, a))
                                                             + norm(sub(d, c)))


@njit(fastmath=False)
def _ahead(w0, w1, w2, w3, nx, ny, nz, a, b, c, d):
    """n · Σ w·x: separation of the points with weights w along n [m] (without fastmath, as
    _start_normal)."""
    return (nx * (w0 * a[0] + w1 * b[0] + w2 * c[0] + w3 * d[0])
            + ny * (w0 * a[1] + w1 * b[1] + w2 * c[1] + w3 * d[1])
            + nz * (w0 * a[2] + w1 * b[2] + w2 * c[2] + w3 * d[2]))


@njit(inline="always")
def _write(out, w0, w1, w2, w3, nx, ny, nz, s0, want, mu):
    """Fill a contact record (see the module docstring)."""
    out[0], out[1], out[2], out[3] = w0, w1, w2, w3
    out[4], out[5], out[6] = nx, ny, nz
    out[D0] = s0
    out[GAP] = want
    out[MU] = mu
    out[10] = out[11] = out[12] = 0.0


@njit(fastmath=False)
def _start_normal(kind, sep, tol, w0, w1, w2, w3, a0, b0, c0, d0, a1, b1, c1, d1):
    """Unit vector from the second primitive's closest point to the first's at the start (the
    separation sep [m] between them); where they touch, contact_normal's direction. Without
    fastmath: with contraction allowed, code compiled fresh and loaded from numba's cache
    rounded it differently (docs/solver.md, "fastmath policy")."""
    if sep > 1e-3 * tol:
        return ((w0 * a0[0] + w1 * b0[0] + w2 * c0[0] + w3 * d0[0]) / sep,
                (w0 * a0[1] + w1 * b0[1] + w2 * c0[1] + w3 * d0[1]) / sep,
                (w0 * a0[2] + w1 * b0[2] + w2 * c0[2] + w3 * d0[2]) / sep)
    return contact_normal(kind, 0.0, w0, w1, w2, w3, a0, b0, c0, d0, a1, b1, c1, d1, tol)


@njit(fastmath=False)
def _test(mode, with_ccd, kind, i0, i1, i2, i3, x0, x1, inv_mass, collider, dist, tol, mu,
          pad, moved, h_out, c_out):
    """One feature pair whose swept boxes are within pad [m] (the caller's filter). Returns
    flags: FOUND when the pair is a contact (or collision) of ``mode``, its record written into
    h_out (RECORD,); with with_ccd (REPULSION only) also COLLIDES when the pair touches on
    this path as the CONTINUOUS mode would report it, that record written into c_out.
    collider: True for a pair against a mesh collider; dist, tol, mu: its contact distance
    and continuous-test tolerance [m] and its friction. moved: (N,) flags, or empty for all pairs; only pairs with a flagged point
    are tested."""
    if inv_mass[i0] + inv_mass[i1] + inv_mass[i2] + inv_mass[i3] <= 0.0:
        return 0  # nothing here can move
    if moved.shape[0] and not (moved[i0] or moved[i1] or moved[i2] or moved[i3]):
        return 0  # same path as when it was last found clear
    a0, b0, c0, d0 = load(x0, i0), load(x0, i1), load(x0, i2), load(x0, i3)
    a1, b1, c1, d1 = load(x1, i0), load(x1, i1), load(x1, i2), load(x1, i3)
    motion = 0.0  # largest relative motion of the two primitives' points [m]
    if mode != NEARBY:
        motion = _relative_motion(kind, a0, b0, c0, d0, a1, b1, c1, d1)
        # Along the path the distance stays above its start value less the largest relative
        # motion; above the pad throughout, neither the continuous test (which would compare
        # the exact start distance with the same sum) nor the proximity one (its end
        # separation along the start normal is at least that) can report the pair.
        far = _distance_lower_bound(kind, a0, b0, c0, d0) - motion
        if far > pad + LOWER_BOUND_MARGIN:
            return 0
    d2, w0, w1, w2, w3 = gap(kind, 0.0, a0, b0, c0, d0, a1, b1, c1, d1)
    sep = np.sqrt(d2)  # distance at the start
    if mode == WITHIN:
        if sep > pad:
            return 0
        nx, ny, nz = _start_normal(kind, sep, tol, w0, w1, w2, w3, a0, b0, c0, d0, a1, b1, c1,
                                   d1)
        _write(h_out, w0, w1, w2, w3, nx, ny, nz, sep, dist, mu)
        h_out[UX] = kind
        return FOUND
    # Continuous test: the closest points move apart or together at most by the largest
    # relative motion of a point of one primitive against a point of the other, so a pair
    # farther apart at the start cannot touch (and skips the cubic).
    touches = False
    flags = 0
    if mode != NEARBY and sep <= tol + motion and (
            mode == CONTINUOUS or with_ccd or collider):
        t, v0, v1, v2, v3, mx, my, mz = first_contact(kind, a0, b0, c0, d0, a1, b1, c1, d1,
                                                      tol)
        touches = t >= 0.0
        if touches and (mode == CONTINUOUS or with_ccd):
            want = 2.0 * tol
            if _ahead(v0, v1, v2, v3, mx, my, mz, a1, b1, c1, d1) < want:
                out = h_out if mode == CONTINUOUS else c_out
                _write(out, v0, v1, v2, v3, mx, my, mz,
                       _ahead(v0, v1, v2, v3, mx, my, mz, a0, b0, c0, d0), want, mu)
                flags = FOUND if mode == CONTINUOUS else COLLIDES
    if mode == CONTINUOUS:
        return flags
    nx, ny, nz = _start_normal(kind, sep, tol, w0, w1, w2, w3, a0, b0, c0, d0, a1, b1, c1, d1)
    want = dist
    if mode == REPULSION and collider and not touches:
        e2, v0, v1, v2, v3 = gap(kind, 0.0, a1, b1, c1, d1, a1, b1, c1, d1)
        end = np.sqrt(e2)
        if end > 1e-3 * tol:
            mx = (v0 * a1[0] + v1 * b1[0] + v2 * c1[0] + v3 * d1[0]) / end
            my = (v0 * a1[1] + v1 * b1[1] + v2 * c1[1] + v3 * d1[1]) / end
            mz = (v0 * a1[2] + v1 * b1[2] + v2 * c1[2] + v3 * d1[2]) / end
            if mx * nx + my * ny + mz * nz > 0.0:  # not reversed: the end's own normal
                if end >= want:
                    return flags
                w0, w1, w2, w3 = v0, v1, v2, v3
                nx, ny, nz = mx, my, mz
    s1 = _ahead(w0, w1, w2, w3, nx, ny, nz, a1, b1, c1, d1)
    if s1 >= want and mode != NEARBY:
        return flags  # already ends far enough apart along the normal
    _write(h_out, w0, w1, w2, w3, nx, ny, nz, _ahead(w0, w1, w2, w3, nx, ny, nz, a0, b0, c0, d0),
           want, mu)
    return flags | FOUND


@njit(inline="always")
def _store(i0, i1, i2, i3, record, out_i, out_f, n, base, cap):
    """Append one record to a chunk's slice of (out_i, out_f) if it has room; returns the
    chunk's new count (which may exceed cap: the caller then retries with more room)."""
    if n < cap:
        out_i[base + n, 0], out_i[base + n, 1] = i0, i1
        out_i[base + n, 2], out_i[base + n, 3] = i2, i3
        out_f[base + n] = record
    return n + 1


@njit(inline="always")
def _keep(flags, i0, i1, i2, i3, h, c, out_i, out_f, n, cout_i, cout_f, m, base, cap):
    """Store the records _test flagged; returns the new counts (n, m)."""
    if flags & FOUND:
        n = _store(i0, i1, i2, i3, h, out_i, out_f, n, base, cap)
    if flags & COLLIDES:
        m = _store(i0, i1, i2, i3, c, cout_i, cout_f, m, base, cap)
    return n, m


@njit(parallel=True)
def _collect(mode, with_ccd, pairs, tris, own_v, own_e, edges, x0, x1, inv_mass, group,
             weld, self_gap, self_mu, group_gap, group_mu, margin, moved, point_box, tri_box,
             edge_box, cap, out_i, out_f, counts, cout_i, cout_f, ccounts):
    P = pairs.shape[0]
    per = (P + _CHUNKS - 1) // _CHUNKS
    for c in prange(_CHUNKS):
        rec = np.empty(RECORD)
        crec = np.empty(RECORD)
        n = 0
        m = 0
        base = c * cap
        for p in range(c * per, min(P, (c + 1) * per)):
            A, B = pairs[p, 0], pairs[p, 1]
            # a triangle's points belong to one mesh: the pair's contact distance and friction
            g = max(group[tris[A, 0]], group[tris[B, 0]])
            dist, mu = (self_gap, self_mu) if g < 0 else (group_gap[g], group_mu[g])
            tol = max(0.1 * dist, MIN_DISTANCE)  # as ccd_tolerance
            # the continuous test's pad, tol, is at most the proximity one's (dist), so what
            # the proximity pass's filters reject the continuous test would reject as well
            pad = tol if mode == CONTINUOUS else dist + margin
            for side in range(2):
                S, F = (A, B) if side == 0 else (B, A)
                f0, f1, f2 = tris[F, 0], tris[F, 1], tris[F, 2]
                if mode == NEARBY and (group[f0] < 0 or group[tris[S, 0]] >= 0):
                    continue  # the prediction wants cloth vertices against collider faces
                if mode == WITHIN and group[f0] >= 0 and group[tris[S, 0]] < 0:
                    continue  # cloth vertices against collider faces: the solve's constraints
                w0, w1, w2 = weld[f0], weld[f1], weld[f2]
                for k in range(3):
                    v = own_v[S, k]
                    if v < 0:
                        continue
                    wv = weld[v]  # sewn vertices are one point: no contact between them
                    if wv == w0 or wv == w1 or wv == w2 \
                            or _apart(point_box, v, tri_box, F, pad):
                        continue
                    flags = _test(mode, with_ccd, VERTEX_FACE, v, f0, f1, f2, x0, x1,
                                  inv_mass, g >= 0, dist, tol, mu, pad, moved, rec, crec)
                    if flags:
                        n, m = _keep(flags, v, f0, f1, f2, rec, crec, out_i, out_f, n,
                                     cout_i, cout_f, m, base, cap)
            for k in range(3 if mode != NEARBY else 0):
                e = own_e[A, k]
                if e < 0:
                    continue
                p0, p1 = edges[e, 0], edges[e, 1]
                a0, a1 = weld[p0], weld[p1]
                for l in range(3):
                    f = own_e[B, l]
                    if f < 0:
                        continue
                    q0, q1 = edges[f, 0], edges[f, 1]
                    b0, b1 = weld[q0], weld[q1]
                    if a0 == b0 or a0 == b1 or a1 == b0 or a1 == b1 \
                            or _apart(edge_box, e, edge_box, f, pad):
                        continue
                    flags = _test(mode, with_ccd, EDGE_EDGE, p0, p1, q0, q1, x0, x1,
                                  inv_mass, g >= 0, dist, tol, mu, pad, moved, rec, crec)
                    if flags:
                        n, m = _keep(flags, p0, p1, q0, q1, rec, crec, out_i, out_f, n,
                                     cout_i, cout_f, m, base, cap)
        counts[c] = n
        ccounts[c] = m


@njit(parallel=True)
def vertex_face_records(vertex, face, x0, x1, tris, group, group_gap, group_mu, inv_mass,
                        found, rec):
    """NEARBY over candidate (cloth vertex, collider triangle) pairs, (K,) each: found[k] = True
    and the record in rec[k] (RECORD,) where the vertex's path box x0 → x1 is within the
    collider's contact distance group_gap[g] [m] of the triangle's (tris (T, 3) into the points
    of x0, x1 (N, 3) [m]; group (N,): −1 cloth, else the collider), exactly as the triangle
    pairs' pass (_collect) finds them: the same filters, the same test, the same record."""
    no_filter = np.zeros(0, np.uint8)
    for k in prange(vertex.shape[0]):
        v, t = vertex[k], face[k]
        f0, f1, f2 = tris[t, 0], tris[t, 1], tris[t, 2]
        g = group[f0]
        dist, mu = group_gap[g], group_mu[g]
        tol = max(0.1 * dist, MIN_DISTANCE)  # as ccd_tolerance
        pad = dist + 0.0  # as _collect's dist + margin
        apart = False
        for r in range(3):  # _apart of the two path boxes
            plo, phi = min(x0[v, r], x1[v, r]), max(x0[v, r], x1[v, r])
            tlo = min(x0[f0, r], x1[f0, r], x0[f1, r], x1[f1, r], x0[f2, r], x1[f2, r])
            thi = max(x0[f0, r], x1[f0, r], x0[f1, r], x1[f1, r], x0[f2, r], x1[f2, r])
            if plo > thi + pad or tlo > phi + pad:
                apart = True
        found[k] = False
        if apart:
            continue
        # (NEARBY writes no collision record: rec[k] stands in for that slot too)
        found[k] = _test(NEARBY, False, VERTEX_FACE, v, f0, f1, f2, x0, x1, inv_mass, True,
                         dist, tol, mu, pad, no_filter, rec[k], rec[k]) != 0


@njit(parallel=True)
def pairs_with_flagged(pairs, tris, flags):
    """The triangle pairs (P, 2) with a point flagged in flags (N,) (uint8), and the triangles
    (T,) bool that those pairs hold."""
    hit = np.zeros(tris.shape[0], np.bool_)
    for t in prange(tris.shape[0]):
        hit[t] = flags[tris[t, 0]] or flags[tris[t, 1]] or flags[tris[t, 2]]
    keep = np.empty(pairs.shape[0], np.bool_)
    for p in prange(pairs.shape[0]):
        keep[p] = hit[pairs[p, 0]] or hit[pairs[p, 1]]
    kept = pairs[keep]
    used = np.zeros(tris.shape[0], np.bool_)
    for p in range(kept.shape[0]):
        used[kept[p, 0]] = True
        used[kept[p, 1]] = True
    return kept, used


@njit
def _compact(out_i, out_f, counts, cap):
    total = 0
    for c in range(counts.shape[0]):
        total += counts[c]
    ri = np.empty((total, 4), np.int64)
    rf = np.empty((total, RECORD))
    k = 0
    for c in range(counts.shape[0]):
        for i in range(counts[c]):
            ri[k] = out_i[c * cap + i]
            rf[k] = out_f[c * cap + i]
            k += 1
    return ri, rf


@njit
def closest_per_vertex(vertex, group, d0, vertex_count, group_count):
    """For each (vertex, group) pair that has records, the index of its record with the
    smallest start separation d0 (the first on ties), in vertex-then-group order: what a stable
    sort by (vertex, group, d0) keeping each pair's first record gives, in one pass.
    vertex, group: (K,) ints in [0, vertex_count) and [0, group_count); d0: (K,) [m]."""
    best = -np.ones((vertex_count, group_count), np.int64)
    n = 0
    for k in range(vertex.shape[0]):
        b = best[vertex[k], group[k]]
        if b < 0:
            n += 1
        if b < 0 or d0[k] < d0[b]:
            best[vertex[k], group[k]] = k
    out = np.empty(n, np.int64)
    n = 0
    for v in range(vertex_count):
        for g in range(group_count):
            if best[v, g] >= 0:
                out[n] = best[v, g]
                n += 1
    return out


class PairTester:
    """Runs the proximity or continuous tests over candidate triangle pairs.

    Args:
        tris, own_vertices, own_edges, edges: the combined mesh's features (features.py).
        group: per point, −1 for cloth, else the index of its mesh collider, (N,).
        self_gap, self_mu: contact distance [m] and friction between cloth layers.
        group_gap, group_mu: the same between the cloth and each mesh collider, (G,).
        weld: per point, the one point it stands for in contact tests, (N,): features whose
            points stand for the same point are not tested (sewn vertices, topology.welds);
            None = every point for itself.
    """

    def __init__(self, tris, own_vertices, own_edges, edges, group, self_gap, self_mu,
                 group_gap, group_mu, weld=None):
        self.tris, self.own_v, self.own_e, self.edges = tris, own_vertices, own_edges, edges
        self.group = group
        self.weld = np.arange(len(group), dtype=np.int64) if weld is None \
            else np.ascontiguousarray(weld, dtype=np.int64)
        self.self_gap, self.self_mu = float(self_gap), float(self_mu)
        self.group_gap = np.ascontiguousarray(group_gap, dtype=np.float64).reshape(-1)
        self.group_mu = np.ascontiguousarray(group_mu, dtype=np.float64).reshape(-1)
        if len(self.group_gap) == 0:  # numba needs a typed array even when empty
            self.group_gap = np.zeros(1)
            self.group_mu = np.zeros(1)
        self._cap = 64
        self._all = np.zeros(0, np.uint8)  # "no filter"
        self._every = np.zeros(0, np.bool_)  # "every triangle"

    def run(self, mode: int, pairs: np.ndarray, x0: np.ndarray, x1: np.ndarray,
            inv_mass: np.ndarray, moved: np.ndarray | None = None, margin: float = 0.0
            ) -> tuple[np.ndarray, np.ndarray]:
        """Contacts (idx (K, 4), records (K, RECORD)) among the candidate triangle pairs; with
        moved (N,) uint8 flags, only feature pairs that have a flagged point; margin [m]: how
        much farther than its contact distance a WITHIN pair may be."""
        return self._run(mode, False, pairs, x0, x1, inv_mass, moved, margin)[0]

    def run_with_collisions(self, pairs: np.ndarray, x0: np.ndarray, x1: np.ndarray,
                            inv_mass: np.ndarray, moved: np.ndarray | None = None):
        """The REPULSION contacts and, from the same pass, the CONTINUOUS collisions of the
        same path: ((idx, records), (idx, records)). A feature pair's two tests share its
        filters and start distance, so this costs little more than the proximity pass alone."""
        return self._run(REPULSION, True, pairs, x0, x1, inv_mass, moved)

    def _run(self, mode, with_ccd, pairs, x0, x1, inv_mass, moved, margin=0.0):
        none = (np.zeros((0, 4), np.int64), np.zeros((0, RECORD)))
        used = self._every
        if moved is None:
            moved = self._all
        elif len(pairs):  # only pairs with a flagged triangle (a repeated resolve flags ~1%)
            pairs, used = pairs_with_flagged(pairs, self.tris, moved)
        if len(pairs) == 0:
            return none, none
        counts = np.zeros(_CHUNKS, np.int64)
        ccounts = np.zeros(_CHUNKS, np.int64)
        boxes = (np.empty((len(x0), 6)), np.empty((len(self.tris), 6)),
                 np.empty((len(self.edges), 6)))
        # only the boxes of the pairs' features: most calls are filtered passes (the CCD rounds
        # after pushes and the resolves after the strain limiter), which keep a small share of
        # the pairs and triangles (docs/solver.md, "Narrow phase")
        swept_boxes(x0, x1, self.tris, self.own_v, self.own_e, self.edges, used, *boxes)
        while True:
            size = _CHUNKS * self._cap
            out_i, out_f = np.empty((size, 4), np.int64), np.empty((size, RECORD))
            cout_i, cout_f = (np.empty((size, 4), np.int64), np.empty((size, RECORD))) \
                if with_ccd else (out_i[:0], out_f[:0])
            _collect(mode, with_ccd, pairs, self.tris, self.own_v, self.own_e, self.edges, x0,
                     x1, inv_mass, self.group, self.weld, self.self_gap, self.self_mu,
                     self.group_gap, self.group_mu, float(margin), moved, *boxes, self._cap,
                     out_i, out_f,
                     counts, cout_i, cout_f, ccounts)
            need = int(max(counts.max(), ccounts.max()))
            if need <= self._cap:
                return (_compact(out_i, out_f, counts, self._cap),
                        _compact(cout_i, cout_f, ccounts, self._cap) if with_ccd else none)
            self._cap = int(need * 1.5) + 16
