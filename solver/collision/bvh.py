"""Axis-aligned bounding-box trees over triangles: built once, refitted every step
([vandenBergen1997], [Liu2012] §2.3; keys in docs/references.md).

The tree is built top-down at the start by median splits along the longest axis of the
primitive centres, so neighbouring triangles of the mesh share subtrees; the topology never
changes afterwards and only the boxes are refitted bottom-up from each step's swept primitive
boxes (refitting is far cheaper than rebuilding, and cloth keeps its mesh neighbourhoods).

Node n covers the leaf slots first[n]..last[n]; leaf slot s holds primitive order[s]. Parents
come before their children, so a reverse sweep refits bottom-up. Queries run one traversal per
query leaf in parallel and write into fixed-capacity per-chunk buffers that are compacted in
chunk order, so the pair lists are identical for any thread count.

Normal cones ([Volino1994], [Provot1997]): a self query may skip the pairs inside *flat* nodes:
nodes whose triangles form one edge-connected patch (known from the mesh once, at build) and
whose normals lie within FLAT_CONE of a common axis (from the refit's positions). Such a patch
is a height field over a plane, so its triangles come near each other only where they are
neighbours in the mesh: it cannot touch itself without folding, which widens its cone. The
contour condition of the exact criterion (the patch's border does not overlap itself seen along
the axis) is not tested, so only the implicit solve's contact set (contact_pairs.py) culls, never
the collision pipeline, whose continuous test keeps the no-crossing guarantee.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit, prange

_STACK = 128        # traversal stack depth (the tree depth is about log2 of the leaf count)
_CHUNKS = 64        # work units of a parallel query (fixed: keeps the output order fixed)
FLAT_CONE = np.radians(60.0)  # half-angle of a flat node's normal cone (module docstring)


@njit
def _build(centres):
    """Top-down median-split tree over primitive centres (P, 3).

    Returns (left, right, first, last, order): children (−1 at leaves), leaf-slot ranges and
    the primitive at each leaf slot.
    """
    P = centres.shape[0]
    n_nodes = max(2 * P - 1, 1)
    left = np.full(n_nodes, -1, np.int64)
    right = np.full(n_nodes, -1, np.int64)
    first = np.zeros(n_nodes, np.int64)
    last = np.zeros(n_nodes, np.int64)
    order = np.arange(P)
    if P == 0:
        return left, right, first, last, order
    stack = np.empty(2 * P + 2, np.int64)
    top = 0
    stack[0] = 0
    first[0], last[0] = 0, P - 1
    top = 1
    next_node = 1
    while top > 0:
        top -= 1
        node = stack[top]
        s, e = first[node], last[node] + 1
        if e - s == 1:
            continue
        lo = np.full(3, np.inf)
        hi = np.full(3, -np.inf)
        for k in range(s, e):
            for r in range(3):
                c = centres[order[k], r]
                lo[r] = min(lo[r], c)
                hi[r] = max(hi[r], c)
        axis = int(np.argmax(hi - lo))
        seg = order[s:e].copy()
        key = np.empty(e - s)
        for k in range(e - s):
            key[k] = centres[seg[k], axis]
        srt = np.argsort(key, kind="mergesort")
        for k in range(e - s):
            order[s + k] = seg[srt[k]]
        m = s + (e - s) // 2
        a, b = next_node, next_node + 1
        next_node += 2
        left[node], right[node] = a, b
        first[a], last[a] = s, m - 1
        first[b], last[b] = m, e - 1
        stack[top] = a
        stack[top + 1] = b
        top += 2
    return left, right, first, last, order


@njit
def _find(parent, i):
    while parent[i] != i:
        parent[i] = parent[parent[i]]
        i = parent[i]
    return i


@njit
def connected_nodes(left, first, last, order, neighbours):
    """(N,) bool: the node's triangles form one patch through shared edges; neighbours (T, 3)
    are each triangle's edge neighbours (−1 padded)."""
    T = order.shape[0]
    slot = np.empty(T, np.int64)
    for s in range(T):
        slot[order[s]] = s
    out = np.zeros(left.shape[0], np.bool_)
    parent = np.arange(T)
    for node in range(left.shape[0]):
        a, b = first[node], last[node]
        if a == b:
            out[node] = True
            continue
        for s in range(a, b + 1):
            parent[order[s]] = order[s]
        groups = b - a + 1
        for s in range(a, b + 1):
            t = order[s]
            for k in range(3):
                u = neighbours[t, k]
                if u < 0 or slot[u] < a or slot[u] > b:
                    continue
                rt, ru = _find(parent, t), _find(parent, u)
                if rt != ru:
                    parent[rt] = ru
                    groups -= 1
        out[node] = groups == 1
    return out


@njit
def normal_cones(left, right, first, order, tris, x, axis, half):
    """Each node's normal cone from triangle normals at x: unit axis (N, 3) and half-angle
    (N,) [rad] (π where the normals do not fit in a cone narrower than a hemisphere)."""
    for node in range(left.shape[0] - 1, -1, -1):
        a = left[node]
        if a < 0:
            t = order[first[node]]
            p, q, r = tris[t, 0], tris[t, 1], tris[t, 2]
            ux, uy, uz = x[q, 0] - x[p, 0], x[q, 1] - x[p, 1], x[q, 2] - x[p, 2]
            vx, vy, vz = x[r, 0] - x[p, 0], x[r, 1] - x[p, 1], x[r, 2] - x[p, 2]
            nx, ny, nz = uy * vz - uz * vy, uz * vx - ux * vz, ux * vy - uy * vx
            ln = np.sqrt(nx * nx + ny * ny + nz * nz)
            if ln > 0.0:
                axis[node, 0], axis[node, 1], axis[node, 2] = nx / ln, ny / ln, nz / ln
                half[node] = 0.0
            else:
                axis[node, :] = 0.0
                half[node] = np.pi
            continue
        b = right[node]
        sx = axis[a, 0] + axis[b, 0]
        sy = axis[a, 1] + axis[b, 1]
        sz = axis[a, 2] + axis[b, 2]
        ls = np.sqrt(sx * sx + sy * sy + sz * sz)
        if ls < 1e-9 or half[a] >= np.pi or half[b] >= np.pi:
            axis[node, :] = 0.0
            half[node] = np.pi
            continue
        sx, sy, sz = sx / ls, sy / ls, sz / ls
        wide = 0.0
        for c in (a, b):
            dot = max(-1.0, min(1.0, sx * axis[c, 0] + sy * axis[c, 1] + sz * axis[c, 2]))
            wide = max(wide, np.arccos(dot) + half[c])
        axis[node, 0], axis[node, 1], axis[node, 2] = sx, sy, sz
        half[node] = min(wide, np.pi)


@njit
def refit(left, right, first, order, prim_lo, prim_hi, lo, hi):
    """Node boxes from primitive boxes (P, 3) into lo, hi (N, 3), children before parents."""
    for node in range(left.shape[0] - 1, -1, -1):
        a = left[node]
        if a < 0:
            p = order[first[node]]
            for r in range(3):
                lo[node, r] = prim_lo[p, r]
                hi[node, r] = prim_hi[p, r]
        else:
            b = right[node]
            for r in range(3):
                lo[node, r] = min(lo[a, r], lo[b, r])
                hi[node, r] = max(hi[a, r], hi[b, r])


@njit(parallel=True)
def triangle_boxes(tris, x0, x1, pad, lo, hi):
    """Boxes of triangles swept from x0 to x1 (positions (N, 3) [m]), grown by pad[t] [m]."""
    for t in prange(tris.shape[0]):
        for r in range(3):
            a = np.inf
            b = -np.inf
            for c in range(3):
                v = tris[t, c]
                a = min(a, x0[v, r], x1[v, r])
                b = max(b, x0[v, r], x1[v, r])
            lo[t, r] = a - pad[t]
            hi[t, r] = b + pad[t]


@njit(inline="always")
def _overlap(alo, ahi, i, blo, bhi, j):
    return (alo[i, 0] <= bhi[j, 0] and blo[j, 0] <= ahi[i, 0] and alo[i, 1] <= bhi[j, 1]
            and blo[j, 1] <= ahi[i, 1] and alo[i, 2] <= bhi[j, 2] and blo[j, 2] <= ahi[i, 2])


@njit(parallel=True)
def _query(q_order, q_lo, q_hi, left, right, first, last, order, lo, hi, self_query, flat,
           cap, out, counts):
    """For every query primitive, the tree primitives whose boxes overlap its box.

    With self_query the query and the tree are the same tree (q_order = order) and each
    unordered pair is reported once, from its lower leaf slot. Chunk c writes up to cap pairs
    into out[c*cap:(c+1)*cap] and its full count into counts[c] (a count above cap means the
    buffer was too small; the caller retries).
    """
    Q = q_order.shape[0]
    per = (Q + _CHUNKS - 1) // _CHUNKS
    for c in prange(_CHUNKS):
        stack = np.empty(_STACK, np.int64)
        n = 0
        base = c * cap
        for slot in range(c * per, min(Q, (c + 1) * per)):
            qp = q_order[slot]
            stack[0] = 0
            top = 1
            while top > 0:
                top -= 1
                node = stack[top]
                if self_query and last[node] <= slot:
                    continue
                if flat.shape[0] and flat[node] and first[node] <= slot:
                    continue  # a flat patch holding the query: none of its pairs (see above)
                if not _overlap(q_lo, q_hi, qp, lo, hi, node):
                    continue
                a = left[node]
                if a < 0:
                    if n < cap:
                        out[base + n, 0] = qp
                        out[base + n, 1] = order[first[node]]
                    n += 1
                else:
                    stack[top] = right[node]
                    stack[top + 1] = a
                    top += 2
        counts[c] = n


@njit
def _compact(out, counts, cap):
    total = 0
    for c in range(counts.shape[0]):
        total += counts[c]
    res = np.empty((total, 2), np.int64)
    k = 0
    for c in range(counts.shape[0]):
        for i in range(counts[c]):
            res[k, 0] = out[c * cap + i, 0]
            res[k, 1] = out[c * cap + i, 1]
            k += 1
    return res


class TriangleTree:
    """A bounding-box tree over triangles (T, 3) of a point set, refitted from swept boxes.

    Args:
        tris: vertex indices (T, 3) into the positions passed to ``refit``.
        positions: positions [m] (N, 3) that shape the tree (e.g. the rest shape).
    """

    def __init__(self, tris: np.ndarray, positions: np.ndarray):
        self.tris = np.ascontiguousarray(tris, dtype=np.int64)
        self._connected = None  # per node, built on the first culled query
        centres = positions[self.tris].mean(axis=1) if len(self.tris) else np.zeros((0, 3))
        (self.left, self.right, self.first, self.last,
         self.order) = _build(np.ascontiguousarray(centres))
        T = len(self.tris)
        self.prim_lo = np.zeros((T, 3))
        self.prim_hi = np.zeros((T, 3))
        self.lo = np.zeros((len(self.left), 3))
        self.hi = np.zeros((len(self.left), 3))
        self._cap = 256
        self._no_flat = np.zeros(0, np.bool_)

    def __len__(self) -> int:
        return len(self.tris)

    def refit(self, x0: np.ndarray, x1: np.ndarray, pad: np.ndarray) -> None:
        """Boxes of every triangle swept from x0 to x1, grown by pad (T,) [m]; then the nodes."""
        if len(self.tris) == 0:
            return
        triangle_boxes(self.tris, x0, x1, pad, self.prim_lo, self.prim_hi)
        refit(self.left, self.right, self.first, self.order, self.prim_lo, self.prim_hi,
              self.lo, self.hi)

    def self_pairs(self, cull_flat_at: np.ndarray | None = None) -> np.ndarray:
        """Unordered pairs (i, j), i ≠ j, of triangles whose boxes overlap, (K, 2); with
        ``cull_flat_at`` (positions (N, 3) [m]) not those inside flat patches there (module
        docstring)."""
        if cull_flat_at is None:
            return self._run(self, True)
        return self._run(self, True, flat=self.flat_nodes(cull_flat_at))

    def flat_nodes(self, x: np.ndarray) -> np.ndarray:
        """(N,) bool: nodes that are one edge-connected patch with a normal cone narrower than
        FLAT_CONE at positions x (N, 3) [m]."""
        if self._connected is None:
            from ..topology import unique_edges
            T = len(self.tris)
            sides = np.stack([self.tris, np.roll(self.tris, -1, axis=1)], axis=2).reshape(-1, 2)
            _, edge = unique_edges(sides)
            edge = edge.reshape(-1)
            tri = np.repeat(np.arange(T), 3)
            order = np.lexsort((tri, edge))
            e, t = edge[order], tri[order]
            nb = -np.ones((T, 3), np.int64)
            fill = np.zeros(T, np.int64)
            same = np.flatnonzero(e[1:] == e[:-1])  # consecutive triangles of one edge
            for a, b in zip(t[same], t[same + 1]):
                if fill[a] < 3 and fill[b] < 3:
                    nb[a, fill[a]], nb[b, fill[b]] = b, a
                    fill[a] += 1
                    fill[b] += 1
            self._connected = connected_nodes(self.left, self.first, self.last, self.order, nb)
        axis = np.zeros((len(self.left), 3))
        half = np.zeros(len(self.left))
        normal_cones(self.left, self.right, self.first, self.order, self.tris,
                     np.ascontiguousarray(x, dtype=np.float64), axis, half)
        return self._connected & (half < FLAT_CONE)

    def pairs_with(self, other: "TriangleTree") -> np.ndarray:
        """Pairs (i of self, j of other) of triangles whose boxes overlap, (K, 2)."""
        if len(other) == 0:
            return np.zeros((0, 2), np.int64)
        return self._run(other, False)

    def box_pairs(self, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
        """Pairs (i, t) of query boxes i (lo, hi: (Q, 3) [m]) and triangles t of this tree
        whose boxes overlap, (K, 2), in order of i: no tree is built over the queries (for
        a few points tested against a mesh each step)."""
        if len(self.tris) == 0 or len(lo) == 0:
            return np.zeros((0, 2), np.int64)
        return self._run(self, False, np.arange(len(lo)), np.ascontiguousarray(lo),
                         np.ascontiguousarray(hi))

    def _run(self, tree: "TriangleTree", self_query: bool, q_order=None, q_lo=None,
             q_hi=None, flat=None) -> np.ndarray:
        """Pairs of the query primitives (this tree's, or the boxes q_lo, q_hi in q_order)
        with the triangles of ``tree``."""
        if q_order is None:
            if len(self.tris) == 0:
                return np.zeros((0, 2), np.int64)
            q_order, q_lo, q_hi = self.order, self.prim_lo, self.prim_hi
        counts = np.zeros(_CHUNKS, np.int64)
        while True:
            out = np.empty((_CHUNKS * self._cap, 2), np.int64)
            _query(q_order, q_lo, q_hi, tree.left, tree.right, tree.first, tree.last,
                   tree.order, tree.lo, tree.hi, self_query,
                   self._no_flat if flat is None else flat, self._cap, out, counts)
            need = int(counts.max())
            if need <= self._cap:
                return _compact(out, counts, self._cap)
            self._cap = int(need * 1.5) + 16
