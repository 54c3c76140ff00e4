"""Independent checks of the collision guarantee, for the per-frame report.

These do not reuse the proximity or continuous tests: triangle–triangle intersection is decided
from signs of orientation determinants (an edge of one triangle crosses the other triangle),
with a 2-D test for coplanar pairs, and "inside a closed mesh" from the parity of ray
crossings (the yarn model's report; the cloth's uses winding numbers, inside.py, which also
hold for open bodies and overlapping parts). They count what a user would see as a failure:

* self-intersections: pairs of cloth triangles without a shared (or sewn) vertex that intersect;
* collider crossings: pairs (cloth triangle, collider triangle) that intersect;
* penetration depth: how far a cloth vertex is inside a sphere, behind a plane, or inside a
  closed collider mesh.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit, prange
from .closest import point_triangle
from .vector import cross, dot, load, sub


@njit(inline="always")
def _orient(a, b, c, d):
    """Six times the signed volume of tetrahedron abcd."""
    return dot(cross(sub(b, a), sub(c, a)), sub(d, a))


@njit
def _segment_crosses_triangle(p, q, sp, sq, a, b, c):
    """Segment pq meets triangle abc, given the signed plane distances sp, sq of p and q
    (snapped to 0 near the plane): the endpoints are not strictly on one side, and the line
    passes inside the three edges. A segment lying in the plane is left to the other tests."""
    if (sp > 0.0 and sq > 0.0) or (sp < 0.0 and sq < 0.0) or (sp == 0.0 and sq == 0.0):
        return False
    o1 = _orient(p, q, a, b)
    o2 = _orient(p, q, b, c)
    o3 = _orient(p, q, c, a)
    return (o1 >= 0.0 and o2 >= 0.0 and o3 >= 0.0) or (o1 <= 0.0 and o2 <= 0.0 and o3 <= 0.0)


@njit(inline="always")
def _plane_distance(n, ln, a, p, eps):
    """Signed distance of p to the plane through a with normal n (|n| = ln), 0 within eps."""
    s = dot(n, sub(p, a)) / ln
    return 0.0 if abs(s) <= eps else s


@njit(inline="always")
def _proj(p, axis):
    """Drop coordinate ``axis``."""
    if axis == 0:
        return p[1], p[2]
    if axis == 1:
        return p[0], p[2]
    return p[0], p[1]


@njit(inline="always")
def _orient2(a, b, c):
    return (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0])


@njit
def _segments_cross_2d(p, q, r, s):
    d1 = _orient2(r, s, p)
    d2 = _orient2(r, s, q)
    d3 = _orient2(p, q, r)
    d4 = _orient2(p, q, s)
    return ((d1 > 0.0) != (d2 > 0.0)) and ((d3 > 0.0) != (d4 > 0.0)) and d1 != d2 and d3 != d4


@njit
def _inside_2d(p, a, b, c):
    o1, o2, o3 = _orient2(a, b, p), _orient2(b, c, p), _orient2(c, a, p)
    return (o1 > 0.0 and o2 > 0.0 and o3 > 0.0) or (o1 < 0.0 and o2 < 0.0 and o3 < 0.0)


@njit
def _coplanar_overlap(a, b, c, d, e, f):
    n = cross(sub(b, a), sub(c, a))
    axis = 0
    if abs(n[1]) > abs(n[axis]):
        axis = 1
    if abs(n[2]) > abs(n[axis]):
        axis = 2
    A, B, C = _proj(a, axis), _proj(b, axis), _proj(c, axis)
    D, E, F = _proj(d, axis), _proj(e, axis), _proj(f, axis)
    for p, q in ((A, B), (B, C), (C, A)):
        for r, s in ((D, E), (E, F), (F, D)):
            if _segments_cross_2d(p, q, r, s):
                return True
    return _inside_2d(D, A, B, C) or _inside_2d(A, D, E, F)


@njit
def triangles_intersect(a, b, c, d, e, f):
    """True if triangles abc and def (3-tuples, metres) intersect (touching counts).

    Points within 1e-10 of the triangles' size from a plane count as on it, so that nearly
    coplanar neighbours of a flat sheet are not mistaken for crossings by rounding noise."""
    size = 0.0
    for p, q in ((a, b), (b, c), (c, a), (d, e), (e, f), (f, d)):
        size = max(size, np.sqrt(dot(sub(p, q), sub(p, q))))
    eps = 1e-10 * size
    n1 = cross(sub(b, a), sub(c, a))
    n2 = cross(sub(e, d), sub(f, d))
    l1 = np.sqrt(dot(n1, n1))
    l2 = np.sqrt(dot(n2, n2))
    if l1 <= 1e-300 or l2 <= 1e-300:
        return False  # a degenerate triangle has no area to intersect
    sd, se, sf = (_plane_distance(n1, l1, a, d, eps), _plane_distance(n1, l1, a, e, eps),
                  _plane_distance(n1, l1, a, f, eps))
    if (sd > 0.0 and se > 0.0 and sf > 0.0) or (sd < 0.0 and se < 0.0 and sf < 0.0):
        return False
    if sd == 0.0 and se == 0.0 and sf == 0.0:
        return _coplanar_overlap(a, b, c, d, e, f)
    sa, sb, sc = (_plane_distance(n2, l2, d, a, eps), _plane_distance(n2, l2, d, b, eps),
                  _plane_distance(n2, l2, d, c, eps))
    if (sa > 0.0 and sb > 0.0 and sc > 0.0) or (sa < 0.0 and sb < 0.0 and sc < 0.0):
        return False
    return (_segment_crosses_triangle(d, e, sd, se, a, b, c)
            or _segment_crosses_triangle(e, f, se, sf, a, b, c)
            or _segment_crosses_triangle(f, d, sf, sd, a, b, c)
            or _segment_crosses_triangle(a, b, sa, sb, d, e, f)
            or _segment_crosses_triangle(b, c, sb, sc, d, e, f)
            or _segment_crosses_triangle(c, a, sc, sa, d, e, f))


@njit(inline="always")
def _pair_intersects(i, j, tris_a, tris_b, xa, xb, weld, skip_shared):
    """Whether triangle tris_a[i] (over xa) intersects tris_b[j] (over xb); with skip_shared,
    never where they share a vertex through weld."""
    if skip_shared:
        for r in range(3):
            for s in range(3):
                if weld[tris_a[i, r]] == weld[tris_b[j, s]]:
                    return False
    return triangles_intersect(load(xa, tris_a[i, 0]), load(xa, tris_a[i, 1]),
                               load(xa, tris_a[i, 2]), load(xb, tris_b[j, 0]),
                               load(xb, tris_b[j, 1]), load(xb, tris_b[j, 2]))


@njit(parallel=True)
def intersecting_pair_mask(pairs, tris_a, tris_b, xa, xb, weld):
    """1 for each pair (i, j) with triangle tris_a[i] (over points xa) intersecting
    tris_b[j] (over xb), else 0, (K,) int64. With weld (one entry per point: the point it
    stands for, e.g. a seam's two vertices one of them), pairs sharing a vertex are 0; weld
    empty: every pair is tested."""
    hits = np.zeros(pairs.shape[0], np.int64)
    skip_shared = weld.shape[0] > 0
    for k in prange(pairs.shape[0]):
        if _pair_intersects(pairs[k, 0], pairs[k, 1], tris_a, tris_b, xa, xb, weld, skip_shared):
            hits[k] = 1
    return hits


def count_intersecting_pairs(pairs, tris_a, tris_b, xa, xb, weld) -> int:
    """Number of pairs that intersecting_pair_mask marks."""
    return int(intersecting_pair_mask(pairs, tris_a, tris_b, xa, xb, weld).sum())


_FRONTIER = 256  # node pairs handed out to the threads of a tree–tree count (fixed: a fixed sum)
_PAIR_STACK = 512  # node pairs pending in one traversal (about twice the two trees' depths)


@njit(inline="always")
def _boxes_overlap(alo, ahi, a, blo, bhi, b):
    return (alo[a, 0] <= bhi[b, 0] and blo[b, 0] <= ahi[a, 0] and alo[a, 1] <= bhi[b, 1]
            and blo[b, 1] <= ahi[a, 1] and alo[a, 2] <= bhi[b, 2] and blo[b, 2] <= ahi[a, 2])


@njit(inline="always")
def _split(self_query, a, b, al, ar, af, alst, bl, br, bf, blst, out, top):
    """Push the children of node pair (a, b) onto out[top:] and return the new top: a self pair
    (a, a) of a self query gives (l, l), (r, r) and (l, r), so that each unordered pair of
    leaves comes once, lower leaf slots first; otherwise the node with more leaves is split
    (the other when it is a leaf)."""
    if self_query and a == b:
        l, r = al[a], ar[a]
        out[top, 0], out[top, 1] = l, l
        out[top + 1, 0], out[top + 1, 1] = r, r
        out[top + 2, 0], out[top + 2, 1] = l, r
        return top + 3
    if bl[b] < 0 or (al[a] >= 0 and alst[a] - af[a] >= blst[b] - bf[b]):
        out[top, 0], out[top, 1] = al[a], b
        out[top + 1, 0], out[top + 1, 1] = ar[a], b
    else:
        out[top, 0], out[top, 1] = a, bl[b]
        out[top + 1, 0], out[top + 1, 1] = a, br[b]
    return top + 2


@njit(parallel=True)
def count_intersecting_leaves(self_query, al, ar, af, alst, aorder, alo, ahi, bl, br, bf, blst,
                              border, blo, bhi, tris_a, tris_b, xa, xb, weld):
    """The number of triangle pairs that intersect among those whose boxes in two refitted
    trees overlap (bvh.TriangleTree arrays: left, right, first, last, order, lo, hi of tree a,
    then of tree b): what intersecting_pair_mask counts over ``a.pairs_with(b)``, or with
    ``self_query`` (a and b the same tree) over ``a.self_pairs()``, each pair tested with its
    triangles in the same order (tree a's first; of a self pair the lower leaf slot's), by one
    descent of both trees at once that lists no pairs. weld: see intersecting_pair_mask."""
    if al.shape[0] == 0 or bl.shape[0] == 0:
        return 0
    skip_shared = weld.shape[0] > 0
    # node pairs that may hold overlapping leaves, split breadth-first until there are enough
    # to share between threads
    work = np.empty((4 * _FRONTIER + 4, 2), np.int64)
    n = 0
    if self_query or _boxes_overlap(alo, ahi, 0, blo, bhi, 0):
        work[0, 0], work[0, 1] = 0, 0
        n = 1
    while 0 < n < _FRONTIER:
        nxt = np.empty((4 * _FRONTIER + 4, 2), np.int64)
        m = 0
        split = False
        for k in range(n):
            a, b = work[k, 0], work[k, 1]
            if al[a] < 0 and bl[b] < 0:
                nxt[m, 0], nxt[m, 1] = a, b
                m += 1
                continue
            split = True
            top = _split(self_query, a, b, al, ar, af, alst, bl, br, bf, blst, nxt, m)
            kept = m
            for c in range(m, top):  # the children whose boxes overlap
                x, y = nxt[c, 0], nxt[c, 1]
                if (self_query and x == y) or _boxes_overlap(alo, ahi, x, blo, bhi, y):
                    nxt[kept, 0], nxt[kept, 1] = x, y
                    kept += 1
            m = kept
        work, n = nxt, m
        if not split:
            break
    found = np.zeros(n, np.int64)
    for k in prange(n):
        stack = np.empty((_PAIR_STACK, 2), np.int64)
        stack[0, 0], stack[0, 1] = work[k, 0], work[k, 1]
        top = 1
        hits = 0
        while top > 0:
            top -= 1
            a, b = stack[top, 0], stack[top, 1]
            if al[a] >= 0 or bl[b] >= 0:
                new = _split(self_query, a, b, al, ar, af, alst, bl, br, bf, blst, stack, top)
                kept = top
                for c in range(top, new):
                    x, y = stack[c, 0], stack[c, 1]
                    if (self_query and x == y) or _boxes_overlap(alo, ahi, x, blo, bhi, y):
                        stack[kept, 0], stack[kept, 1] = x, y
                        kept += 1
                top = kept
                continue
            if self_query and a == b:
                continue  # a triangle with itself
            if _pair_intersects(aorder[af[a]], border[bf[b]], tris_a, tris_b, xa, xb, weld,
                                skip_shared):
                hits += 1
        found[k] = hits
    return found.sum()


def count_intersections(a, b, tris_a, tris_b, xa, xb, weld) -> int:
    """count_intersecting_leaves over two refitted bvh.TriangleTree (``a is b``: the pairs of
    one tree with itself)."""
    return int(count_intersecting_leaves(a is b, a.left, a.right, a.first, a.last, a.order, a.lo,
                                         a.hi, b.left, b.right, b.first, b.last, b.order, b.lo,
                                         b.hi, tris_a, tris_b, xa, xb, weld))


@njit(parallel=True)
def analytic_depth(x, s_c, s_r, p_o, p_n):
    """Deepest penetration [m] of points x (V, 3) into spheres (centres s_c, radii s_r) and
    behind planes (points p_o, unit normals p_n); 0 if none is inside."""
    depth = np.zeros(x.shape[0])
    for i in prange(x.shape[0]):
        d = 0.0
        for s in range(s_r.shape[0]):
            dx, dy, dz = x[i, 0] - s_c[s, 0], x[i, 1] - s_c[s, 1], x[i, 2] - s_c[s, 2]
            d = max(d, s_r[s] - np.sqrt(dx * dx + dy * dy + dz * dz))
        for p in range(p_n.shape[0]):
            d = max(d, -((x[i, 0] - p_o[p, 0]) * p_n[p, 0] + (x[i, 1] - p_o[p, 1]) * p_n[p, 1]
                         + (x[i, 2] - p_o[p, 2]) * p_n[p, 2]))
        depth[i] = d
    return depth.max() if x.shape[0] else 0.0


# an irrational direction: rays along it do not run along mesh edges or through vertices of
# axis-aligned meshes
RAY = np.array([0.8017837257372732, 0.5345224838248488, 0.2672612419124244])


@njit
def _ray_hits(o, d, a, b, c):
    """Ray o + s·d (s > 0) crosses triangle abc (Möller–Trumbore, [Moller1997] in
    docs/references.md)."""
    e1, e2 = sub(b, a), sub(c, a)
    p = cross(d, e2)
    det = dot(e1, p)
    if abs(det) < 1e-300:
        return False
    inv = 1.0 / det
    t = sub(o, a)
    u = dot(t, p) * inv
    if u < 0.0 or u > 1.0:
        return False
    q = cross(t, e1)
    v = dot(d, q) * inv
    if v < 0.0 or u + v > 1.0:
        return False
    return dot(e2, q) * inv > 0.0


@njit(inline="always")
def _ray_box(p, inv, lo, hi, node):
    """The ray p + s·d (s >= 0, inv = 1/d) meets box node."""
    t0, t1 = 0.0, np.inf
    for r in range(3):
        a = (lo[node, r] - p[r]) * inv[r]
        b = (hi[node, r] - p[r]) * inv[r]
        if a > b:
            a, b = b, a
        t0 = max(t0, a)
        t1 = min(t1, b)
    return t0 <= t1


@njit(inline="always")
def _box_distance2(p, lo, hi, node):
    s = 0.0
    for r in range(3):
        d = max(lo[node, r] - p[r], 0.0, p[r] - hi[node, r])
        s += d * d
    return s


@njit
def ray_crossings(p, d, inv, g, X, tris, tri_group, left, right, first, order, lo, hi, stack):
    """How many triangles of collider mesh ``g`` the ray p + s·d (s >= 0, inv = 1/d) crosses,
    walking the collider tree (left, right, first, order, lo, hi; boxes of the triangles at
    X); ``stack`` is scratch space (int64, deep enough for the tree). Odd: p is inside."""
    n = 0
    stack[0] = 0
    top = 1
    while top > 0:
        top -= 1
        node = stack[top]
        if not _ray_box(p, inv, lo, hi, node):
            continue
        if left[node] < 0:
            t = order[first[node]]
            if tri_group[t] == g and _ray_hits(p, d, load(X, tris[t, 0]), load(X, tris[t, 1]),
                                               load(X, tris[t, 2])):
                n += 1
        else:
            stack[top] = right[node]
            stack[top + 1] = left[node]
            top += 2
    return n


@njit
def nearest_on_mesh(p, g, X, tris, tri_group, left, right, first, order, lo, hi, stack):
    """Squared distance [m²] from p to collider mesh ``g`` (g < 0: the nearest of all) and the
    nearest point (x, y, z) on it, walking the collider tree as ``ray_crossings`` does."""
    best = np.inf
    cx = cy = cz = 0.0
    stack[0] = 0
    top = 1
    while top > 0:
        top -= 1
        node = stack[top]
        if _box_distance2(p, lo, hi, node) >= best:
            continue
        if left[node] < 0:
            t = order[first[node]]
            if g < 0 or tri_group[t] == g:
                a, b, c = load(X, tris[t, 0]), load(X, tris[t, 1]), load(X, tris[t, 2])
                d2, wa, wb, wc = point_triangle(p, a, b, c)
                if d2 < best:
                    best = d2
                    cx = wa * a[0] + wb * b[0] + wc * c[0]
                    cy = wa * a[1] + wb * b[1] + wc * c[1]
                    cz = wa * a[2] + wb * b[2] + wc * c[2]
        else:
            stack[top] = right[node]
            stack[top + 1] = left[node]
            top += 2
    return best, cx, cy, cz


@njit(parallel=True)
def mesh_depth(x, X, tris, tri_group, closed, ray, left, right, first, order, lo, hi):
    """Deepest penetration [m] of points x (V, 3) into the closed collider meshes.

    A point is inside a mesh when a ray from it crosses that mesh's triangles an odd number of
    times; its depth is then its distance to the nearest triangle of that mesh. Both queries
    walk the collider tree (left, right, first, order, lo, hi; boxes of the triangles at X).
    """
    G = closed.shape[0]
    depth = np.zeros(x.shape[0])
    d = (ray[0], ray[1], ray[2])
    inv = (1.0 / ray[0], 1.0 / ray[1], 1.0 / ray[2])
    for i in prange(x.shape[0]):
        p = load(x, i)
        if left.shape[0] == 0 or _box_distance2(p, lo, hi, 0) > 0.0:
            continue
        stack = np.empty(128, np.int64)
        for g in range(G):
            if not closed[g]:
                continue
            if ray_crossings(p, d, inv, g, X, tris, tri_group, left, right, first, order, lo,
                             hi, stack) % 2 == 0:
                continue
            best = nearest_on_mesh(p, g, X, tris, tri_group, left, right, first, order, lo, hi,
                                   stack)[0]
            depth[i] = max(depth[i], np.sqrt(best))
    return depth.max() if x.shape[0] else 0.0
