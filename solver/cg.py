"""Modified preconditioned conjugate gradient with constraint filtering (Baraff & Witkin 1998).

Solves A·Δv = b where each vertex i may have its velocity change prescribed along some
directions: ``S_i`` (3x3) projects onto the free directions (I: free, 0: pinned, I - n nᵀ: held
along n) and ``z`` holds the prescribed part. The preconditioner is block Jacobi, applied as a
*division* by the diagonal blocks (the seeds' "P_ii = 1/A_ii" wording must not be copied
literally; see the digest, errata 4).

Dot products are summed in fixed chunks so the result does not depend on the thread count.
"""

from __future__ import annotations

import numpy as np

from ._jit import njit, prange
from .sparse import bsr_matvec

_CHUNK = 512


@njit(parallel=True)
def dot3(a, b):
    """Deterministic Σ a·b over (V, 3) arrays."""
    n = a.shape[0]
    nchunk = (n + _CHUNK - 1) // _CHUNK
    part = np.zeros(nchunk)
    for c in prange(nchunk):
        s = 0.0
        for i in range(c * _CHUNK, min(n, (c + 1) * _CHUNK)):
            s += a[i, 0] * b[i, 0] + a[i, 1] * b[i, 1] + a[i, 2] * b[i, 2]
        part[c] = s
    total = 0.0
    for c in range(nchunk):
        total += part[c]
    return total


@njit(parallel=True)
def apply_blocks(m, x, out):
    """out[i] = m[i] @ x[i] for per-vertex 3x3 blocks m (V, 3, 3)."""
    for i in prange(x.shape[0]):
        for r in range(3):
            out[i, r] = m[i, r, 0] * x[i, 0] + m[i, r, 1] * x[i, 1] + m[i, r, 2] * x[i, 2]


@njit(parallel=True)
def invert_diagonal_blocks(blocks, diag, filt, out):
    """Block-Jacobi preconditioner: out[i] = S_i · inv(A_ii) · S_i (0 where fully pinned)."""
    for i in prange(diag.shape[0]):
        a = blocks[diag[i]]
        out[i] = filt[i] @ np.linalg.inv(a) @ filt[i]


@njit(parallel=True)
def _axpy(alpha, x, y):
    """y += alpha * x."""
    for i in prange(x.shape[0]):
        for r in range(3):
            y[i, r] += alpha * x[i, r]


@njit(parallel=True)
def _xpby(x, beta, y):
    """y = x + beta * y."""
    for i in prange(x.shape[0]):
        for r in range(3):
            y[i, r] = x[i, r] + beta * y[i, r]


@njit
def mpcg(row_ptr, col, blocks, diag, b, filt, z, tol, max_iter, x):
    """Filtered PCG for A·x = b with x's constrained part fixed to z.

    Args:
        row_ptr, col, blocks: the block-CSR matrix A (symmetric positive definite on the free
            subspace).
        diag: slot of each vertex's diagonal block, (V,).
        b: right-hand side, (V, 3).
        filt: per-vertex filters S_i, (V, 3, 3).
        z: prescribed values on the constrained directions, (V, 3).
        tol: stop when the preconditioned residual norm falls below tol times its initial value.
        max_iter: iteration cap.
        x: in: initial guess for the free directions (e.g. the previous step's solution, a warm
            start); out: the solution, (V, 3).

    Returns:
        (iterations, relative residual reached).
    """
    n = b.shape[0]
    pinv = np.empty((n, 3, 3))
    invert_diagonal_blocks(blocks, diag, filt, pinv)
    tmp = np.empty_like(b)
    apply_blocks(filt, x, tmp)  # keep the guess on free directions, z on constrained ones
    for i in range(n):
        for r_ in range(3):
            x[i, r_] = tmp[i, r_] + z[i, r_] - (filt[i, r_, 0] * z[i, 0] + filt[i, r_, 1] * z[i, 1]
                                               + filt[i, r_, 2] * z[i, 2])
    r = np.empty_like(b)
    bsr_matvec(row_ptr, col, blocks, x, tmp)
    apply_blocks(filt, b - tmp, r)
    fb = np.empty_like(b)
    apply_blocks(filt, b, fb)
    pfb = np.empty_like(b)
    apply_blocks(pinv, fb, pfb)
    delta0 = dot3(fb, pfb)
    c = np.empty_like(b)
    apply_blocks(pinv, r, c)
    delta = dot3(r, c)
    if delta0 <= 0.0:
        return 0, 0.0
    q = np.empty_like(b)
    s = np.empty_like(b)
    it = 0
    while it < max_iter and delta > tol * tol * delta0:
        bsr_matvec(row_ptr, col, blocks, c, tmp)
        apply_blocks(filt, tmp, q)
        cq = dot3(c, q)
        if cq <= 0.0:  # lost definiteness (should not happen with clamped Hessians)
            break
        alpha = delta / cq
        _axpy(alpha, c, x)
        _axpy(-alpha, q, r)
        apply_blocks(pinv, r, s)
        delta_old = delta
        delta = dot3(r, s)
        _xpby(s, delta / delta_old, c)
        apply_blocks(filt, c, tmp)
        c[:] = tmp
        it += 1
    return it, np.sqrt(max(delta, 0.0) / delta0)
