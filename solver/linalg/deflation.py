"""Krylov subspace recycling for the implicit solve: deflated PCG [Saad2000].

Consecutive Newton systems of a bake are nearly the same matrix, and the slow modes of one
solve are the slow modes of the next. ``RecycledSpace`` keeps the last few Newton corrections;
before a solve they are filtered by the current constraints and orthonormalised into W (k
columns), and the solve starts with the Galerkin correction on W and keeps its search
directions A-orthogonal to W, so the PCG only works on what W does not already span.

All reductions are summed in fixed chunks (see cg.py), so results do not depend on the thread
count.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit, prange
from .cg import _CHUNK, _chunk_count


@njit(parallel=True)
def columns_dot(W, y, out):
    """out_j = Σ_i W_j,i·y_i for the k columns W (k, V, 3) and y (V, 3), each summed in fixed
    chunks (thread-count independent)."""
    k, n = W.shape[0], W.shape[1]
    nchunk = _chunk_count(n)
    part = np.zeros((nchunk, k))
    for c in prange(nchunk):
        for i in range(c * _CHUNK, min(n, (c + 1) * _CHUNK)):
            y0, y1, y2 = y[i, 0], y[i, 1], y[i, 2]
            for j in range(k):
                part[c, j] += W[j, i, 0] * y0 + W[j, i, 1] * y1 + W[j, i, 2] * y2
    for j in range(k):
        s = 0.0
        for c in range(nchunk):
            s += part[c, j]
        out[j] = s


@njit(parallel=True)
def add_columns(W, coef, x, sign):
    """x += sign·Σ_j coef_j·W_j over the k columns W (k, V, 3)."""
    k = W.shape[0]
    for i in prange(W.shape[1]):
        for r in range(3):
            s = 0.0
            for j in range(k):
                s += coef[j] * W[j, i, r]
            x[i, r] += sign * s


@njit(parallel=True)
def _filter_columns(filt, H, out):
    """out_j = S·H_j per vertex for each column j."""
    for i in prange(H.shape[1]):
        for j in range(H.shape[0]):
            for r in range(3):
                out[j, i, r] = (filt[i, r, 0] * H[j, i, 0] + filt[i, r, 1] * H[j, i, 1]
                                + filt[i, r, 2] * H[j, i, 2])


@njit(parallel=True)
def _gram(A, B, out):
    """out_ab = Σ_i A_a,i·B_b,i over columns A (ka, V, 3), B (kb, V, 3), in fixed chunks."""
    ka, kb, n = A.shape[0], B.shape[0], A.shape[1]
    nchunk = _chunk_count(n)
    part = np.zeros((nchunk, ka, kb))
    for c in prange(nchunk):
        for i in range(c * _CHUNK, min(n, (c + 1) * _CHUNK)):
            for a in range(ka):
                a0, a1, a2 = A[a, i, 0], A[a, i, 1], A[a, i, 2]
                for b in range(kb):
                    part[c, a, b] += a0 * B[b, i, 0] + a1 * B[b, i, 1] + a2 * B[b, i, 2]
    for a in range(ka):
        for b in range(kb):
            s = 0.0
            for c in range(nchunk):
                s += part[c, a, b]
            out[a, b] = s


@njit(parallel=True)
def _combine_columns(F, C, out):
    """out_m = Σ_j C_jm·F_j: new columns (M, V, 3) from F (k, V, 3) and C (k, M)."""
    k, m = C.shape[0], C.shape[1]
    for i in prange(F.shape[1]):
        for col in range(m):
            for r in range(3):
                s = 0.0
                for j in range(k):
                    s += C[j, col] * F[j, i, r]
                out[col, i, r] = s


@njit(parallel=True)
def _filtered_products(row_ptr, col, blocks, filt, X, out):
    """out_j = S·A·X_j for every column j, reading each block of A once."""
    k = X.shape[0]
    for i in prange(len(row_ptr) - 1):
        acc = np.zeros((k, 3))
        for p in range(row_ptr[i], row_ptr[i + 1]):
            j = col[p]
            b = blocks[p]
            for m in range(k):
                x0, x1, x2 = X[m, j, 0], X[m, j, 1], X[m, j, 2]
                acc[m, 0] += b[0, 0] * x0 + b[0, 1] * x1 + b[0, 2] * x2
                acc[m, 1] += b[1, 0] * x0 + b[1, 1] * x1 + b[1, 2] * x2
                acc[m, 2] += b[2, 0] * x0 + b[2, 1] * x1 + b[2, 2] * x2
        for m in range(k):
            for r in range(3):
                out[m, i, r] = (filt[i, r, 0] * acc[m, 0] + filt[i, r, 1] * acc[m, 1]
                                + filt[i, r, 2] * acc[m, 2])


class Deflation:
    """The deflation space of one solve: W (k, V, 3) in the free subspace, AW = S·A·W, and the
    Cholesky factor of WᵀAW (k, k)."""

    def __init__(self, W: np.ndarray, AW: np.ndarray, chol: np.ndarray):
        self.W, self.AW, self.chol = W, AW, chol
        self._t = np.empty(len(W))

    def _solve_small(self, rhs: np.ndarray) -> np.ndarray:
        """(WᵀAW)⁻¹·rhs."""
        y = np.linalg.solve(self.chol, rhs)
        return np.linalg.solve(self.chol.T, y)

    def galerkin(self, r: np.ndarray, x: np.ndarray) -> None:
        """x += W·(WᵀAW)⁻¹·Wᵀr and r −= AW·(same): the residual becomes orthogonal to W."""
        columns_dot(self.W, r, self._t)
        y = self._solve_small(self._t)
        add_columns(self.W, y, x, 1.0)
        add_columns(self.AW, y, r, -1.0)

    def project(self, s: np.ndarray, p: np.ndarray) -> None:
        """p −= W·(WᵀAW)⁻¹·(AW)ᵀs: the new direction p A-orthogonal to W."""
        columns_dot(self.AW, s, self._t)
        add_columns(self.W, self._solve_small(self._t), p, -1.0)


class RecycledSpace:
    """The last ``size`` Newton corrections of an implicit solver, for deflating its next
    solves. ``remember`` after each solve, ``deflation`` before one."""

    def __init__(self, size: int):
        self.size = int(size)
        self._history: list[np.ndarray] = []

    def remember(self, dv: np.ndarray) -> None:
        if self.size <= 0 or not np.any(dv):
            return
        self._history.append(np.array(dv, dtype=np.float64))
        del self._history[:-self.size]

    def deflation(self, asm, blocks, filt) -> Deflation | None:
        """W from the remembered corrections, filtered by ``filt`` and orthonormalised
        (directions with less than 1e-6 of the largest Gram eigenvalue dropped), with
        AW = S·A·W for the matrix (asm, blocks); None if nothing is left."""
        if not self._history:
            return None
        H = np.stack(self._history)
        F = np.empty_like(H)
        _filter_columns(filt, H, F)
        k = len(F)
        M = np.empty((k, k))
        _gram(F, F, M)
        lam, vec = np.linalg.eigh(0.5 * (M + M.T))
        keep = lam > 1e-6 * max(lam[-1], 0.0)
        if lam[-1] <= 0.0 or not keep.any():
            return None
        C = np.ascontiguousarray(vec[:, keep] / np.sqrt(lam[keep]))
        W = np.empty((C.shape[1],) + F.shape[1:])
        _combine_columns(F, C, W)
        AW = np.empty_like(W)
        _filtered_products(asm.row_ptr, asm.col, blocks, filt, W, AW)
        G = np.empty((len(W), len(W)))
        _gram(W, AW, G)
        try:
            chol = np.linalg.cholesky(0.5 * (G + G.T))
        except np.linalg.LinAlgError:
            return None
        return Deflation(W, AW, chol)
