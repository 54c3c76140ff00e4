"""Block-sparse (3x3 blocks, CSR by vertex) matrices with a fixed pattern, and their assembly.

Element kernels add their forces and 3x3 Jacobian blocks straight into the per-vertex forces
and the matrix: runs of consecutive elements are coloured so that no two runs of one colour
share a vertex; the colours run one after another and the runs of a colour in parallel. No two
threads write the same vertex or block and every one sums its terms in the same order, so
assembly is race-free and bit-deterministic whatever the thread count. (Gathering blocks from a
per-element buffer instead reads that buffer in random order and was much slower;
docs/solver.md, "Assembly by coloured runs".)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._jit import njit, prange


@dataclass(frozen=True)
class ElementGroup:
    """Elements of one kind (triangles, hinges, springs, ...), each touching ``k`` vertices.

    Attributes:
        elements: vertex indices, shape (E, k), int64.
        block_offset: first entry of this group in ``Assembly.block_slot``; element e's block
            for corners (a, b) is matrix slot ``block_slot[block_offset + (e * k + a) * k + b]``.
        run_start, run_order, color_ptr: runs of consecutive elements, coloured so that runs
            of one colour share no vertex (see color_elements).
    """

    elements: np.ndarray
    block_offset: int
    run_start: np.ndarray
    run_order: np.ndarray
    color_ptr: np.ndarray


@dataclass(frozen=True)
class Assembly:
    """The matrix pattern and where every element block goes in it.

    Attributes:
        row_ptr: CSR row pointer over vertices, shape (V + 1,).
        col: block column index, shape (nnzb,).
        diag: slot of the diagonal block of each vertex, shape (V,).
        block_slot: matrix slot of every element block (see ElementGroup), shape (L,).
    """

    row_ptr: np.ndarray
    col: np.ndarray
    diag: np.ndarray
    block_slot: np.ndarray


def build_assembly(element_sets: list[np.ndarray], vertex_count: int
                   ) -> tuple[Assembly, list[ElementGroup]]:
    """Make the matrix pattern and the element colouring for the given element sets.

    Args:
        element_sets: one (E_g, k_g) int array per element kind.
        vertex_count: V.
    """
    V = vertex_count
    groups, b_off = [], 0
    rows, cols, b_key = [np.arange(V)], [np.arange(V)], []
    for el in element_sets:
        el = np.asarray(el, dtype=np.int64)  # (E, k); E may be 0 (e.g. one triangle: no hinges)
        E, k = el.shape
        groups.append(ElementGroup(el, b_off, *color_elements(el, V)))
        r = np.repeat(el, k, axis=1).ravel()          # (E, k, k) row vertex
        c = np.tile(el, (1, k)).ravel()               # (E, k, k) column vertex
        rows.append(r)
        cols.append(c)
        b_key.append(r * V + c)
        b_off += E * k * k
    keys = np.unique(np.concatenate(rows) * V + np.concatenate(cols))
    row, col = keys // V, keys % V
    row_ptr = np.zeros(V + 1, dtype=np.int64)
    np.cumsum(np.bincount(row, minlength=V), out=row_ptr[1:])
    diag = np.searchsorted(keys, np.arange(V) * V + np.arange(V))
    slot = np.searchsorted(keys, np.concatenate(b_key)) if b_key else np.zeros(0, np.int64)
    asm = Assembly(row_ptr, col.astype(np.int64), diag.astype(np.int64), slot.astype(np.int64))
    return asm, groups


RUN_MIN_ELEMENTS = 64  # elements per run, at least
RUN_MAX_COUNT = 256    # runs per element kind, at most (bounds the colouring's work table)


def color_elements(elements: np.ndarray, vertex_count: int
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Split the elements into runs of consecutive elements and colour the runs so that runs of
    one colour share no vertex.

    Within a run elements keep their mesh order, so a thread adding one run's blocks walks
    nearby matrix rows. (Colouring single elements instead made every colour sweep the whole
    matrix, and the bending kernel several times slower; docs/solver.md, "Assembly by
    coloured runs".)

    Args:
        elements: (E, k) vertex indices.
    Returns:
        (run_start (R+1,): run r is elements run_start[r]:run_start[r+1];
         run_order (R,): runs sorted by colour; color_ptr (C+1,): colour c is
         run_order[color_ptr[c]:color_ptr[c+1]]).
    """
    E = len(elements)
    size = max(RUN_MIN_ELEMENTS, -(-E // RUN_MAX_COUNT))
    run_start = np.append(np.arange(0, E, size), E).astype(np.int64)
    R = len(run_start) - 1
    if R == 0:
        return run_start, np.zeros(0, np.int64), np.zeros(1, np.int64)
    color = _greedy_run_colors(np.ascontiguousarray(elements, dtype=np.int64), run_start,
                               vertex_count)
    run_order = np.argsort(color, kind="stable").astype(np.int64)
    color_ptr = np.zeros(int(color.max()) + 2, dtype=np.int64)
    np.cumsum(np.bincount(color), out=color_ptr[1:])
    return run_start, run_order, color_ptr


@njit
def _greedy_run_colors(elements, run_start, vertex_count):
    R = len(run_start) - 1
    used = np.zeros((vertex_count, R), dtype=np.bool_)  # colours already at each vertex
    color = np.empty(R, dtype=np.int64)
    for r in range(R):
        taken = np.zeros(R, dtype=np.bool_)
        for e in range(run_start[r], run_start[r + 1]):
            for a in range(elements.shape[1]):
                for c in range(R):
                    if used[elements[e, a], c]:
                        taken[c] = True
        c = 0
        while taken[c]:
            c += 1
        color[r] = c
        for e in range(run_start[r], run_start[r + 1]):
            for a in range(elements.shape[1]):
                used[elements[e, a], c] = True
    return color


@njit(parallel=True)
def bsr_matvec(row_ptr, col, blocks, x, out):
    """out = A x for a block-CSR matrix A; x, out (V, 3)."""
    for i in prange(len(row_ptr) - 1):
        s0 = s1 = s2 = 0.0
        for p in range(row_ptr[i], row_ptr[i + 1]):
            j = col[p]
            b = blocks[p]
            x0, x1, x2 = x[j, 0], x[j, 1], x[j, 2]
            s0 += b[0, 0] * x0 + b[0, 1] * x1 + b[0, 2] * x2
            s1 += b[1, 0] * x0 + b[1, 1] * x1 + b[1, 2] * x2
            s2 += b[2, 0] * x0 + b[2, 1] * x1 + b[2, 2] * x2
        out[i, 0] = s0
        out[i, 1] = s1
        out[i, 2] = s2


def to_scipy(asm: Assembly, blocks: np.ndarray):
    """The assembled matrix as scipy.sparse.bsr_matrix (for tests and debugging)."""
    import scipy.sparse as sp
    V = len(asm.row_ptr) - 1
    return sp.bsr_matrix((blocks, asm.col, asm.row_ptr), shape=(3 * V, 3 * V))


@njit(parallel=True)
def blend_blocks(out, blocks, theta):
    """out = (1 − θ)·out + θ·blocks, over (nnzb, 3, 3) arrays."""
    for p in prange(out.shape[0]):
        for r in range(3):
            for c in range(3):
                out[p, r, c] = (1.0 - theta) * out[p, r, c] + theta * blocks[p, r, c]


@njit(parallel=True)
def fill_scaled_identity(out, s):
    """out[p] = s[p]·I₃ over (nnzb, 3, 3) blocks."""
    for p in prange(out.shape[0]):
        for r in range(3):
            for c in range(3):
                out[p, r, c] = s[p] if r == c else 0.0


@njit(parallel=True)
def subtract_scaled_identity(out, blocks, s, theta):
    """out[p] = blocks[p] − θ·s[p]·I₃ over (nnzb, 3, 3) blocks."""
    for p in prange(out.shape[0]):
        for r in range(3):
            for c in range(3):
                out[p, r, c] = blocks[p, r, c] - (theta * s[p] if r == c else 0.0)


@njit
def add_scaled_identity(blocks, slots, s):
    """blocks[slots[i]] += s[i]·I₃ (slots may repeat: serial)."""
    for i in range(len(slots)):
        for r in range(3):
            blocks[slots[i], r, r] += s[i]


@njit(parallel=True)
def copy_blocks(out, blocks, slots):
    """out[slots[i]] = blocks[slots[i]] over (nnzb, 3, 3) arrays."""
    for i in prange(len(slots)):
        for r in range(3):
            for c in range(3):
                out[slots[i], r, c] = blocks[slots[i], r, c]


@dataclass(frozen=True)
class ExtendedPattern:
    """A pattern with extra vertex couplings (contacts between vertices that share no element)
    and where the original pattern's blocks go in it.

    Attributes:
        asm: the extended pattern (its block_slot is empty: elements assemble into the
            original pattern).
        base_slot: (nnzb,) each original slot's slot in ``asm``.
    """

    asm: Assembly
    base_slot: np.ndarray

    def slots(self, points: np.ndarray) -> np.ndarray:
        """(S, P·P): the slots in ``asm`` of the blocks (points[k, a], points[k, b]) at
        P·a + b for groups of points (S, P) that ``extend_pattern`` was given (or fewer);
        −1 where either point is not an unknown (outside [0, V))."""
        points = np.ascontiguousarray(points, np.int64)
        out = np.empty((len(points), points.shape[1] ** 2), np.int64)
        group_block_slots(self.asm.row_ptr, self.asm.col, points, len(self.asm.row_ptr) - 1,
                          out)
        return out


@njit(inline="always")
def _find_slot(row_ptr, col, i, j):
    """Where column j is or would go in row i of a CSR pattern (binary search)."""
    lo, hi = row_ptr[i], row_ptr[i + 1]
    while lo < hi:
        mid = (lo + hi) // 2
        if col[mid] < j:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit
def point_block_slots(row_ptr, col, points, out):
    """Slots in a CSR pattern of the blocks (points[k, a], points[k, b]) of every group k of
    P points, written to out (K, P·P) at P·a + b (−1 where either point is −1, a point with
    no unknown). True when every block is in the pattern; False at the first one that is not
    (out is then incomplete)."""
    P = points.shape[1]
    for k in range(points.shape[0]):
        for a in range(P):
            i = points[k, a]
            for b in range(P):
                j = points[k, b]
                if i < 0 or j < 0:
                    out[k, P * a + b] = -1
                    continue
                slot = _find_slot(row_ptr, col, i, j)
                if slot == row_ptr[i + 1] or col[slot] != j:
                    return False
                out[k, P * a + b] = slot
    return True


@njit
def _grouped_couplings(row_ptr, col, points, V):
    """The pattern (row_ptr, col) with every coupling of two different points of a group
    (row of points (S, P); entries outside [0, V) stand for no unknown) added, columns
    ascending: (row_ptr, col, base_slot, diag) of the result, base_slot (nnzb,) each original
    slot's slot in it, diag (V,) the slot of each diagonal block. Each row marks its own columns
    and then those of the groups holding its point, so the couplings are never listed and
    sorted as a whole: a contact set searched at every step gets a new pattern every step."""
    S, P = points.shape
    start = np.zeros(V + 1, np.int64)  # the groups holding each point (CSR)
    for k in range(S):
        for a in range(P):
            i = points[k, a]
            if 0 <= i < V:
                start[i + 1] += 1
    for i in range(V):
        start[i + 1] += start[i]
    held = np.empty(start[V], np.int64)
    fill = start[:V].copy()
    for k in range(S):
        for a in range(P):
            i = points[k, a]
            if 0 <= i < V:
                held[fill[i]] = k
                fill[i] += 1
    mark = -np.ones(V, np.int64)
    extra = np.empty(start[V] * (P - 1), np.int64)  # each row's new columns, at P−1 per group
    count = np.zeros(V, np.int64)
    for i in range(V):
        for p in range(row_ptr[i], row_ptr[i + 1]):
            mark[col[p]] = i
        base = start[i] * (P - 1)
        n = 0
        for h in range(start[i], start[i + 1]):
            k = held[h]
            for b in range(P):
                j = points[k, b]
                if 0 <= j < V and mark[j] != i:
                    mark[j] = i
                    extra[base + n] = j
                    n += 1
        count[i] = n
        for a in range(base + 1, base + n):  # a row's few new columns, sorted in place
            j = extra[a]
            b = a
            while b > base and extra[b - 1] > j:
                extra[b] = extra[b - 1]
                b -= 1
            extra[b] = j
    out_ptr = np.zeros(V + 1, np.int64)
    for i in range(V):
        out_ptr[i + 1] = out_ptr[i] + row_ptr[i + 1] - row_ptr[i] + count[i]
    out_col = np.empty(out_ptr[V], np.int64)
    base_slot = np.empty(col.shape[0], np.int64)
    for i in range(V):  # merge the row's own columns with its new ones
        p, e = row_ptr[i], row_ptr[i + 1]
        q = start[i] * (P - 1)
        f = q + count[i]
        o = out_ptr[i]
        while p < e or q < f:
            if q == f or (p < e and col[p] < extra[q]):
                out_col[o] = col[p]
                base_slot[p] = o
                p += 1
            else:
                out_col[o] = extra[q]
                q += 1
            o += 1
    diag = np.empty(V, np.int64)
    for i in range(V):
        for o in range(out_ptr[i], out_ptr[i + 1]):
            if out_col[o] == i:
                diag[i] = o
    return out_ptr, out_col, base_slot, diag


@njit(parallel=True)
def group_block_slots(row_ptr, col, points, V, out):
    """out (S, P·P)[k, P·a + b] = the slot of block (points[k, a], points[k, b]) in a CSR
    pattern that holds every such block; −1 where either point is outside [0, V)."""
    S, P = points.shape
    for k in prange(S):
        for a in range(P):
            i = points[k, a]
            for b in range(P):
                j = points[k, b]
                if i < 0 or i >= V or j < 0 or j >= V:
                    out[k, P * a + b] = -1
                else:
                    out[k, P * a + b] = _find_slot(row_ptr, col, i, j)


def extend_pattern(asm: Assembly, points: np.ndarray) -> ExtendedPattern:
    """``asm`` with the blocks (i, j) of every two different points i, j of a group (rows of
    points (S, P), e.g. the points of contact pairs; indices outside [0, V) are no unknowns
    and left out)."""
    V = len(asm.row_ptr) - 1
    row_ptr, col, base_slot, diag = _grouped_couplings(
        asm.row_ptr, asm.col, np.ascontiguousarray(points, np.int64), V)
    return ExtendedPattern(Assembly(row_ptr, col, diag, np.zeros(0, np.int64)), base_slot)


@njit(parallel=True)
def scatter_blocks(blocks, base_slot, out):
    """out = 0, then out[base_slot[p]] = blocks[p] (each target slot once)."""
    for p in prange(out.shape[0]):
        for r in range(3):
            for c in range(3):
                out[p, r, c] = 0.0
    for p in prange(blocks.shape[0]):
        s = base_slot[p]
        for r in range(3):
            for c in range(3):
                out[s, r, c] = blocks[p, r, c]
