"""Incomplete Cholesky IC(0) of the implicit system, refactored for every matrix, as the PCG
preconditioner.

Block Jacobi needs more PCG iterations than its cap allows on stiff cloth at fine resolution;
IC(0) [Saad2003], no fill beyond the matrix's own pattern, needs about a tenth as many on the
same matrices. Its factorisation costs a few dozen products and its application two triangular
solves, so a converged solve costs less than the capped Jacobi one (docs/solver.md,
"IC(0) preconditioner").

The factor works on 3x3 blocks (lower block triangle of the matrix's pattern, natural vertex
order). On a pattern of whole blocks this is the same factor as scalar IC(0), with one index per
block instead of one per entry, which makes it much faster to factor and to apply. Fully
prescribed vertices get identity rows, as in the filtered system. Stiff cloth matrices are SPD
but not M-matrices, so IC(0) can meet a non-positive pivot; the diagonal is then scaled by
(1 + shift) for increasing shifts (Manteuffel's shifted IC, [Manteuffel1980]). If every shift
fails, the factor falls back to the diagonal (Jacobi).

A factor and its triangular solves are serial in the natural order, and on two threads they were
the largest share of a self-colliding drape's frame. Cloth of MIN_SPLIT vertices or more given
positions is factored in a two-domain order instead (two_domains: the cloth halved across its
longest extent, each half towards the cut, the cut's vertices last), whose two halves are
factored and solved side by side. That order is a different IC(0), with more PCG iterations
(about a third more on the headline's self-colliding drape), but the same factor at any thread
count (docs/solver.md, "IC(0) preconditioner").

The implicit model factors its matrix with the bending hinges' couplings scaled by 0.9
(system.HINGE_COUPLING_IN_FACTOR; their diagonal blocks whole), the convex combination of each
hinge's rank-one term and its block diagonal, so still semi-definite. The hinge terms' off-diagonal
blocks have both signs, and their weight against the mass grows as 1/edge⁴: on fine cloth IC(0)
of the whole matrix met non-positive pivots, needed large shifts and several times the PCG
iterations. Dropping the couplings altogether costs iterations too, and dropping their blocks from
the pattern more still: the hinge-only blocks of the pattern act as fill for the membrane part
(docs/solver.md, "IC(0) hinge scaling"). Keys in brackets are in docs/references.md.
"""

from __future__ import annotations

import functools

import numpy as np

from .._jit import njit, prange
from .preconditioner import filtered_blocks, projected_blocks
from .sparse import Assembly

SHIFTS = (0.0, 1e-3, 1e-2, 0.05, 0.2, 1.0)  # tried in turn on a non-positive pivot
# Refreshes at a held shift before trying one lower. Starting one lower every time wasted a
# failed factorisation on many matrices with contacts, because consecutive matrices alternate
# between needing a shift and not; a small shift held for a matrix that needs none barely
# changes the PCG iterations (docs/solver.md, "IC(0) shifts").
SHIFT_HOLD = 3
# Vertices from which a factor given the vertices' positions is made in two-domain order
# (two_domains): its factorisation and triangular solves then run on two threads. Below it a
# factor costs a fraction of a millisecond, and the order's extra PCG iterations would cost more.
MIN_SPLIT = 2048


def lower_blocks(asm: Assembly) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The strictly lower blocks of the pattern ``asm`` by block row, columns ascending.

    Returns (row_ptr (V+1,), col (B,) int32, source (B,): each block's slot in ``asm``).
    """
    V = len(asm.row_ptr) - 1
    rows = np.repeat(np.arange(V), np.diff(asm.row_ptr))
    lower = np.flatnonzero(asm.col < rows)  # asm's columns ascend within each row
    row_ptr = np.zeros(V + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows[lower], minlength=V), out=row_ptr[1:])
    return row_ptr, asm.col[lower].astype(np.int32), lower.astype(np.int64)


@njit
def ic0_block_factor(row_ptr, col, source, diag, a, shift, blocks, diag_l, diag_inv):
    """Block IC(0): L·Lᵀ ≈ A with L on the lower block pattern of A.

    L_ik = (A_ik − Σ_j L_ij·L_kjᵀ)·L_kk⁻ᵀ over the j both rows hold, and L_ii the Cholesky
    factor of A_ii − Σ_j L_ij·L_ijᵀ, where A_ii's diagonal is first scaled by (1 + shift).

    Args:
        row_ptr, col, source: the strictly lower blocks (lower_blocks).
        diag: (V,) slot of each diagonal block in ``a``.
        a: (nnzb, 3, 3) the matrix blocks.
        blocks: out (B, 3, 3) the strictly lower blocks of L.
        diag_l, diag_inv: out (V, 3, 3) L_ii (lower triangular) and its inverse.
    Returns:
        False on a non-positive pivot (the outputs are then incomplete).
    """
    V = len(row_ptr) - 1
    pos = -np.ones(V, dtype=np.int64)
    return _factor_rows(0, V, row_ptr, col, source, diag, a, shift, blocks, diag_l, diag_inv,
                        pos)


@njit(parallel=True)
def ic0_domains_factor(ends, row_ptr, col, source, diag, a, shift, blocks, diag_l, diag_inv):
    """ic0_block_factor of a matrix in two-domain order (two_domains): the rows of the two
    domains, which couple only within their own domain, factored side by side, then the
    separator's rows. ends: (3,) the ends of domain 0, domain 1 and the separator in the
    order. The result does not depend on the thread count."""
    V = len(row_ptr) - 1
    pos = -np.ones(V, dtype=np.int64)  # each domain marks only its own columns
    ok = np.zeros(2, np.bool_)
    for d in prange(2):
        lo = 0 if d == 0 else ends[0]
        ok[d] = _factor_rows(lo, ends[d], row_ptr, col, source, diag, a, shift, blocks,
                             diag_l, diag_inv, pos)
    if not (ok[0] and ok[1]):
        return False
    return _factor_rows(ends[1], ends[2], row_ptr, col, source, diag, a, shift, blocks, diag_l,
                        diag_inv, pos)


@njit
def _factor_rows(lo, hi, row_ptr, col, source, diag, a, shift, blocks, diag_l, diag_inv, pos):
    """Rows lo..hi of ic0_block_factor (the rows they hold before lo already factored); pos:
    (V,) −1 on entry and on return (column -> its block in the current row)."""
    acc = np.empty((3, 3))
    for i in range(lo, hi):
        p0, p1 = row_ptr[i], row_ptr[i + 1]
        for p in range(p0, p1):
            pos[col[p]] = p
        for p in range(p0, p1):
            k = col[p]
            acc[:, :] = a[source[p]]
            for q in range(row_ptr[k], row_ptr[k + 1]):  # j < k in row k
                pj = pos[col[q]]
                if pj >= 0:
                    for r in range(3):
                        for c in range(3):
                            acc[r, c] -= (blocks[pj, r, 0] * blocks[q, c, 0]
                                          + blocks[pj, r, 1] * blocks[q, c, 1]
                                          + blocks[pj, r, 2] * blocks[q, c, 2])
            for r in range(3):  # · L_kk⁻ᵀ
                for c in range(3):
                    blocks[p, r, c] = (acc[r, 0] * diag_inv[k, c, 0]
                                       + acc[r, 1] * diag_inv[k, c, 1]
                                       + acc[r, 2] * diag_inv[k, c, 2])
        acc[:, :] = a[diag[i]]
        for r in range(3):
            acc[r, r] *= 1.0 + shift
        for p in range(p0, p1):
            for r in range(3):
                for c in range(r + 1):
                    acc[r, c] -= (blocks[p, r, 0] * blocks[p, c, 0]
                                  + blocks[p, r, 1] * blocks[p, c, 1]
                                  + blocks[p, r, 2] * blocks[p, c, 2])
        for p in range(p0, p1):
            pos[col[p]] = -1
        if not _cholesky3(acc, diag_l[i], diag_inv[i]):
            return False
    return True


@njit
def _cholesky3(d, low, inv):
    """Lower Cholesky factor ``low`` of the symmetric 3x3 ``d`` (lower part read) and its
    inverse ``inv``; False if ``d`` is not positive definite."""
    if not d[0, 0] > 0.0:
        return False
    l00 = np.sqrt(d[0, 0])
    l10 = d[1, 0] / l00
    l20 = d[2, 0] / l00
    e = d[1, 1] - l10 * l10
    if not e > 0.0:
        return False
    l11 = np.sqrt(e)
    l21 = (d[2, 1] - l20 * l10) / l11
    e = d[2, 2] - l20 * l20 - l21 * l21
    if not e > 0.0:
        return False
    l22 = np.sqrt(e)
    low[:, :] = 0.0
    low[0, 0], low[1, 0], low[1, 1] = l00, l10, l11
    low[2, 0], low[2, 1], low[2, 2] = l20, l21, l22
    inv[:, :] = 0.0
    inv[0, 0], inv[1, 1], inv[2, 2] = 1.0 / l00, 1.0 / l11, 1.0 / l22
    inv[1, 0] = -l10 / (l00 * l11)
    inv[2, 1] = -l21 / (l11 * l22)
    inv[2, 0] = (l21 * l10 - l20 * l11) / (l00 * l11 * l22)
    return True


@njit
def ic0_block_solve(row_ptr, col, blocks, diag_inv, r, out):
    """out = (L·Lᵀ)⁻¹·r with L in 3x3 blocks: ``blocks`` (B, 3, 3) the strictly lower blocks in
    block-CSR (row_ptr, col), ``diag_inv`` (V, 3, 3) the inverses of the lower-triangular
    diagonal blocks; r, out flat (3V,).

    Forward by gathering along block rows, backward (Lᵀ) by scattering each solved block;
    one index per 3x3 block instead of one per entry, faster than the scalar solve because
    the solve is bound by memory traffic (docs/solver.md, "IC(0) preconditioner").
    """
    V = len(row_ptr) - 1
    _forward_rows(0, V, _IDENTITY, row_ptr, col, blocks, diag_inv, r, out)
    _backward_rows(0, V, row_ptr, col, blocks, diag_inv, out)


_IDENTITY = np.zeros(0, np.int64)  # "no renumbering" for _forward_rows


@njit(inline="always")
def _forward_rows(lo, hi, perm, row_ptr, col, blocks, diag_inv, r, y):
    """y_i = L_ii⁻¹·(r_perm[i] − Σ_j L_ij·y_j) for rows lo..hi, by gathering along the block
    rows; perm empty: r in the factor's own order."""
    for i in range(lo, hi):
        o = 3 * (perm[i] if perm.shape[0] else i)
        s0, s1, s2 = r[o], r[o + 1], r[o + 2]
        for p in range(row_ptr[i], row_ptr[i + 1]):
            j = 3 * col[p]
            b = blocks[p]
            y0, y1, y2 = y[j], y[j + 1], y[j + 2]
            s0 -= b[0, 0] * y0 + b[0, 1] * y1 + b[0, 2] * y2
            s1 -= b[1, 0] * y0 + b[1, 1] * y1 + b[1, 2] * y2
            s2 -= b[2, 0] * y0 + b[2, 1] * y1 + b[2, 2] * y2
        d = diag_inv[i]
        y[3 * i] = d[0, 0] * s0
        y[3 * i + 1] = d[1, 0] * s0 + d[1, 1] * s1
        y[3 * i + 2] = d[2, 0] * s0 + d[2, 1] * s1 + d[2, 2] * s2


@njit(inline="always")
def _backward_rows(lo, hi, row_ptr, col, blocks, diag_inv, y):
    """Lᵀ·x = y for rows hi−1..lo, in place on y, by scattering each solved block."""
    for i in range(hi - 1, lo - 1, -1):
        d = diag_inv[i]
        s0, s1, s2 = y[3 * i], y[3 * i + 1], y[3 * i + 2]
        x0 = d[0, 0] * s0 + d[1, 0] * s1 + d[2, 0] * s2
        x1 = d[1, 1] * s1 + d[2, 1] * s2
        x2 = d[2, 2] * s2
        y[3 * i], y[3 * i + 1], y[3 * i + 2] = x0, x1, x2
        for p in range(row_ptr[i], row_ptr[i + 1]):
            j = 3 * col[p]
            b = blocks[p]
            y[j] -= b[0, 0] * x0 + b[1, 0] * x1 + b[2, 0] * x2
            y[j + 1] -= b[0, 1] * x0 + b[1, 1] * x1 + b[2, 1] * x2
            y[j + 2] -= b[0, 2] * x0 + b[1, 2] * x1 + b[2, 2] * x2


@njit(parallel=True)
def ic0_domains_solve(ends, perm, row_ptr, col, blocks, diag_inv, r, y, out):
    """ic0_block_solve of a factor in two-domain order (ic0_domains_factor): r, out flat (3V,)
    in the vertices' own order, y (3V,) work space in the factor's. The forward solve runs the
    two domains side by side, then the separator; the backward one the separator, then the
    domains side by side (a domain's rows reach only its own columns)."""
    for d in prange(2):
        _forward_rows(0 if d == 0 else ends[0], ends[d], perm, row_ptr, col, blocks, diag_inv,
                      r, y)
    _forward_rows(ends[1], ends[2], perm, row_ptr, col, blocks, diag_inv, r, y)
    _backward_rows(ends[1], ends[2], row_ptr, col, blocks, diag_inv, y)
    for d in prange(2):
        _backward_rows(0 if d == 0 else ends[0], ends[d], row_ptr, col, blocks, diag_inv, y)
    for i in prange(len(perm)):
        o = 3 * perm[i]
        out[o], out[o + 1], out[o + 2] = y[3 * i], y[3 * i + 1], y[3 * i + 2]


def two_domains(asm: Assembly, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """An order of the vertices for a factor on two threads: (perm (V,) new -> old vertex,
    ends (3,)). The vertices are halved at the median along the positions' (V, 3) longest
    extent; the separator is the first half's vertices that the pattern couples to the second
    half, so that the two domains couple only through the separator, which comes last (a
    one-level nested dissection [Saad2003]). The first domain is in the vertices' own order,
    the second in reverse, so that both run towards the separator."""
    V = len(asm.row_ptr) - 1
    axis = int(np.argmax(np.ptp(positions, axis=0)))
    along = np.argsort(positions[:, axis], kind="stable")
    half = V // 2
    for _ in range(2):  # the second cut moves the median by half the first separator's size,
        label = np.zeros(V, np.int64)  # which the first half gives up: domains of equal size
        label[along[half:]] = 1
        _mark_separator(asm.row_ptr, asm.col, label)
        half = min(V, (V + int(np.count_nonzero(label == 2))) // 2)
    # each domain ends at the separator: the second in reverse order (a twisted factorisation,
    # [vanderVorst1987]); in its own order its first rows, next to the separator, left more of
    # their fill out of the pattern (18 % against 41 % more PCG iterations than one domain)
    perm = np.concatenate([np.flatnonzero(label == 0), np.flatnonzero(label == 1)[::-1],
                           np.flatnonzero(label == 2)])
    ends = np.cumsum(np.bincount(label, minlength=3))
    return perm, ends


def ordered_lower_blocks(asm: Assembly, perm: np.ndarray
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """lower_blocks of the pattern with its vertices renumbered: new vertex i is old perm[i]."""
    V = len(asm.row_ptr) - 1
    new = np.empty(V, np.int64)
    new[perm] = np.arange(V)
    return _renumbered_lower(asm.row_ptr, asm.col, np.ascontiguousarray(perm, np.int64), new)


@njit
def _mark_separator(row_ptr, col, label):
    """label (V,) 2 for the rows labelled 0 that the pattern (row_ptr, col) couples to a
    column labelled 1 (in place; a row's test reads only labels that no row changes)."""
    for i in range(len(row_ptr) - 1):
        if label[i] != 0:
            continue
        for p in range(row_ptr[i], row_ptr[i + 1]):
            if label[col[p]] == 1:
                label[i] = 2
                break


@njit
def _renumbered_lower(row_ptr, col, perm, new):
    """ordered_lower_blocks row by row: new row i is old row perm[i], its strictly lower
    blocks (new column < i) in ascending new column (each row's few blocks insertion-sorted,
    instead of a lexsort over the whole pattern every time a contact set makes a pattern)."""
    V = len(row_ptr) - 1
    out_ptr = np.zeros(V + 1, np.int64)
    for i in range(V):
        o = perm[i]
        n = 0
        for p in range(row_ptr[o], row_ptr[o + 1]):
            if new[col[p]] < i:
                n += 1
        out_ptr[i + 1] = out_ptr[i] + n
    out_col = np.empty(out_ptr[V], np.int32)
    source = np.empty(out_ptr[V], np.int64)
    for i in range(V):
        o = perm[i]
        start = out_ptr[i]
        n = 0
        for p in range(row_ptr[o], row_ptr[o + 1]):
            c = new[col[p]]
            if c >= i:
                continue
            k = start + n
            while k > start and out_col[k - 1] > c:
                out_col[k] = out_col[k - 1]
                source[k] = source[k - 1]
                k -= 1
            out_col[k] = c
            source[k] = p
            n += 1
    return out_ptr, out_col, source


class IncompleteCholesky:
    """IC(0) preconditioner, refactored for every matrix (see module docstring).

    Args:
        asm: pattern of the system matrix.
        fixed: (F,) indices of vertices whose velocity is fully prescribed.
        positions: (V, 3) [m] the vertices' positions, or None: with at least ``min_split``
            vertices (None: MIN_SPLIT) the factor is in the two-domain order cut across them
            (``order``: (perm, ends) of two_domains, else None).
    """

    def __init__(self, asm: Assembly, fixed: np.ndarray, positions: np.ndarray | None = None,
                 min_split: int | None = None):
        self.asm = asm
        V = len(asm.row_ptr) - 1
        self.fixed_mask = np.zeros(V, dtype=np.bool_)
        self.fixed_mask[np.asarray(fixed, dtype=np.int64)] = True
        self._work = np.zeros((len(asm.col), 3, 3))
        # (perm, ends) of the two-domain order, or None: the vertices' own order
        self.order = two_domains(asm, positions) \
            if positions is not None and V >= max(MIN_SPLIT if min_split is None else min_split, 2) \
            else None
        if self.order is None:
            self._row_ptr, self._col, self._source = lower_blocks(asm)
            self._diag_slot = asm.diag
        else:
            self._row_ptr, self._col, self._source = ordered_lower_blocks(asm, self.order[0])
            self._diag_slot = np.ascontiguousarray(asm.diag[self.order[0]])
            self._y = np.zeros(3 * V)
        self._blocks = np.zeros((len(self._col), 3, 3))
        self._diag = np.zeros((V, 3, 3))
        self._diag_inv = np.zeros((V, 3, 3))
        self._blocks32 = np.zeros((len(self._col), 3, 3), dtype=np.float32)
        self._diag_inv32 = np.zeros((V, 3, 3), dtype=np.float32)
        self._first_shift = 0  # index into SHIFTS: start near the last factor's shift
        self._held = 0  # refreshes in a row that succeeded at _first_shift
        self.factorizations = 0
        self.shifts_used: list[float] = []  # per factorisation (inf: fell back to Jacobi)
        self.stale = True

    def refresh(self, blocks: np.ndarray, key, x: np.ndarray, filt=None) -> None:
        """Factor the current matrix, projected by the PCG's filters ``filt`` (V, 3, 3) when
        given (contacts: the factor then matches the constrained system, and needs far fewer
        iterations on a drape; docs/solver.md, "IC(0) preconditioner"), else with the
        fixed vertices filtered."""
        a = self.asm
        if filt is None:
            filtered_blocks(a.row_ptr, a.col, blocks, a.diag, self.fixed_mask, self._work)
        else:
            projected_blocks(a.row_ptr, a.col, blocks, a.diag, filt, self._work)
        args = (self._row_ptr, self._col, self._source, self._diag_slot, self._work)
        out = (self._blocks, self._diag, self._diag_inv)
        factor = ic0_block_factor if self.order is None \
            else functools.partial(ic0_domains_factor, self.order[1])
        # Consecutive matrices need similar shifts: start at the last factor's shift, and try
        # one lower once it has held SHIFT_HOLD times (see SHIFT_HOLD)
        probe = self._first_shift > 0 and self._held >= SHIFT_HOLD
        start = self._first_shift - 1 if probe else self._first_shift
        for k in range(start, len(SHIFTS)):
            if factor(*args, SHIFTS[k], *out):
                self._held = self._held + 1 if k == start and not probe else 0
                shift, self._first_shift = SHIFTS[k], k
                break
        else:  # keep only the (positive) diagonal: Jacobi
            shift, self._first_shift, self._held = np.inf, len(SHIFTS) - 1, 0
            self._blocks[:] = 0.0
            d = np.sqrt(np.abs(np.diagonal(self._work[self._diag_slot], axis1=1, axis2=2)))
            self._diag[:] = d[:, :, None] * np.eye(3)
            self._diag_inv[:] = np.eye(3) / np.where(d > 0, d, 1.0)[:, :, None]
        # factored in float64, applied in float32: the triangular solves are memory-bound
        self._blocks32[:] = self._blocks
        self._diag_inv32[:] = self._diag_inv
        self.shifts_used.append(shift)
        self.factorizations += 1
        self.stale = False

    def factor(self):
        """L as a scipy.sparse CSR matrix (3V × 3V, lower triangular), for tests; with a
        two-domain order, of the matrix in that order (new vertex i is old order[0][i])."""
        import scipy.sparse as sp
        V = len(self._row_ptr) - 1
        lower = sp.bsr_matrix((self._blocks, self._col, self._row_ptr), shape=(3 * V, 3 * V))
        return (lower + sp.block_diag(list(self._diag))).tocsr()

    def apply(self, r: np.ndarray, out: np.ndarray) -> None:
        """out = P·r; r, out (V, 3), out C-contiguous (written through a flat view)."""
        if not out.flags.c_contiguous:
            raise ValueError("IncompleteCholesky.apply needs a C-contiguous output array")
        r = np.ascontiguousarray(r).reshape(-1)
        if self.order is None:
            ic0_block_solve(self._row_ptr, self._col, self._blocks32, self._diag_inv32, r,
                            out.reshape(-1))
        else:
            perm, ends = self.order
            ic0_domains_solve(ends, perm, self._row_ptr, self._col, self._blocks32,
                              self._diag_inv32, r, self._y, out.reshape(-1))

    def report_iterations(self, iterations: int) -> None:
        """Nothing to track: the factor is rebuilt for every matrix."""
