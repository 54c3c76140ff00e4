"""Block-sparse (3x3 blocks, CSR by vertex) matrices with a fixed pattern, assembled by gathering.

Element kernels write their local force vectors and 3x3 Hessian blocks into flat buffers in
parallel; these gathers then sum them per vertex / per matrix block in a fixed order. No two
threads write the same slot, so assembly is race-free and bit-deterministic.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._jit import njit, prange


@dataclass(frozen=True)
class ElementGroup:
    """Elements of one kind (triangles, hinges, springs, ...), each touching ``k`` vertices.

    Attributes:
        elements: vertex indices, shape (E, k), int64.
        force_offset: first row of this group in the shared local-force buffer.
        block_offset: first block of this group in the shared local-block buffer; the
            block for element e, corners (a, b) is ``block_offset + (e * k + a) * k + b``.
    """

    elements: np.ndarray
    force_offset: int
    block_offset: int


@dataclass(frozen=True)
class Assembly:
    """Gather maps from the local buffers to per-vertex forces and matrix blocks.

    Attributes:
        row_ptr: CSR row pointer over vertices, shape (V + 1,).
        col: block column index, shape (nnzb,).
        diag: slot of the diagonal block of each vertex, shape (V,).
        force_ptr, force_src: vertex v sums local forces ``force_src[force_ptr[v]:force_ptr[v+1]]``.
        block_ptr, block_src: slot s sums local blocks ``block_src[block_ptr[s]:block_ptr[s+1]]``.
        local_force_count: rows of the local-force buffer.
        local_block_count: blocks of the local-block buffer.
    """

    row_ptr: np.ndarray
    col: np.ndarray
    diag: np.ndarray
    force_ptr: np.ndarray
    force_src: np.ndarray
    block_ptr: np.ndarray
    block_src: np.ndarray
    local_force_count: int
    local_block_count: int


def build_assembly(element_sets: list[np.ndarray], vertex_count: int
                   ) -> tuple[Assembly, list[ElementGroup]]:
    """Make the matrix pattern and gather maps for the given element sets.

    Args:
        element_sets: one (E_g, k_g) int array per element kind.
        vertex_count: V.
    """
    V = vertex_count
    groups, f_off, b_off = [], 0, 0
    rows, cols, f_vert, b_key = [np.arange(V)], [np.arange(V)], [], []
    for el in element_sets:
        el = np.asarray(el, dtype=np.int64)  # (E, k); E may be 0 (e.g. one triangle: no hinges)
        E, k = el.shape
        groups.append(ElementGroup(el, f_off, b_off))
        f_vert.append(el.ravel())
        r = np.repeat(el, k, axis=1).ravel()          # (E, k, k) row vertex
        c = np.tile(el, (1, k)).ravel()               # (E, k, k) column vertex
        rows.append(r)
        cols.append(c)
        b_key.append(r * V + c)
        f_off += E * k
        b_off += E * k * k
    keys = np.unique(np.concatenate(rows) * V + np.concatenate(cols))
    row, col = keys // V, keys % V
    row_ptr = np.zeros(V + 1, dtype=np.int64)
    np.cumsum(np.bincount(row, minlength=V), out=row_ptr[1:])
    diag = np.searchsorted(keys, np.arange(V) * V + np.arange(V))
    fv = np.concatenate(f_vert) if f_vert else np.zeros(0, np.int64)
    force_src = np.argsort(fv, kind="stable").astype(np.int64)
    force_ptr = np.zeros(V + 1, dtype=np.int64)
    np.cumsum(np.bincount(fv, minlength=V), out=force_ptr[1:])
    slot = np.searchsorted(keys, np.concatenate(b_key)) if b_key else np.zeros(0, np.int64)
    block_src = np.argsort(slot, kind="stable").astype(np.int64)
    block_ptr = np.zeros(len(keys) + 1, dtype=np.int64)
    np.cumsum(np.bincount(slot, minlength=len(keys)), out=block_ptr[1:])
    asm = Assembly(row_ptr, col.astype(np.int64), diag.astype(np.int64), force_ptr, force_src,
                   block_ptr, block_src, f_off, b_off)
    return asm, groups


@njit(parallel=True)
def gather_forces(local, ptr, src, out):
    """out[v] += sum of local[src[ptr[v]:ptr[v+1]]]; local (L, 3), out (V, 3)."""
    for v in prange(len(ptr) - 1):
        s0 = s1 = s2 = 0.0
        for p in range(ptr[v], ptr[v + 1]):
            q = src[p]
            s0 += local[q, 0]
            s1 += local[q, 1]
            s2 += local[q, 2]
        out[v, 0] += s0
        out[v, 1] += s1
        out[v, 2] += s2


@njit(parallel=True)
def gather_blocks(local_k, local_d, ptr, src, out_k, out_d):
    """out_k[s] = Σ local_k[src[ptr[s]:ptr[s+1]]], and the same for d, in one pass over the
    gather map; local_* (L, 3, 3), out_* (nnzb, 3, 3). Scalar accumulators: a 3x3 temporary
    per block made this gather the largest cost of a Newton iteration at 1k vertices."""
    for s in prange(len(ptr) - 1):
        k = np.zeros(9)  # hoisted by numba; each entry of the map is read once
        d = np.zeros(9)
        for p in range(ptr[s], ptr[s + 1]):
            q = src[p]
            for e in range(9):
                k[e] += local_k[q, e // 3, e % 3]
                d[e] += local_d[q, e // 3, e % 3]
        for e in range(9):
            out_k[s, e // 3, e % 3] = k[e]
            out_d[s, e // 3, e % 3] = d[e]


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
