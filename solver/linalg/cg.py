"""Modified preconditioned conjugate gradient with constraint filtering [Baraff1998].

Solves A·Δv = b where each vertex i may have its velocity change prescribed along some
directions: ``S_i`` (3x3) projects onto the free directions (I: free, 0: pinned, I - n nᵀ: held
along n) and ``z`` holds the prescribed part. The preconditioner is pluggable: incomplete
Cholesky (incomplete_cholesky.py, the default), Baraff & Witkin's block Jacobi, which needs
hundreds of iterations on stiff cloth (their "P_ii = 1/A_ii" wording must not be copied
literally: [BW98-E1]), or a reused sparse LU (preconditioner.py). Keys in brackets are in
docs/references.md.

Dot products and norms are summed in fixed chunks so the result does not depend on the thread count.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit, prange
from .sparse import bsr_matvec

_CHUNK = 512


@njit(inline="always")
def _chunk_count(n):
    """Fixed work units of a chunked reduction over n vertices (independent of threads)."""
    return (n + _CHUNK - 1) // _CHUNK


@njit(inline="always")
def _sum_in_order(part):
    """Σ part, in index order: the chunks' partial sums always add up the same way."""
    total = 0.0
    for c in range(part.shape[0]):
        total += part[c]
    return total


@njit(parallel=True)
def weighted_dot(w, a, b):
    """Σ_i w_i·(a_i·b_i) over (V, 3) arrays a, b with weights w (V,); an empty w means unit
    weights. Summed in fixed chunks, so the result does not depend on the thread count."""
    n = a.shape[0]
    unit = w.shape[0] == 0
    nchunk = _chunk_count(n)
    part = np.zeros(nchunk)
    for c in prange(nchunk):
        s = 0.0
        for i in range(c * _CHUNK, min(n, (c + 1) * _CHUNK)):
            d = a[i, 0] * b[i, 0] + a[i, 1] * b[i, 1] + a[i, 2] * b[i, 2]
            s += d if unit else w[i] * d
        part[c] = s
    return _sum_in_order(part)


_UNIT = np.zeros(0)


def dot3(a, b):
    """Deterministic Σ a·b over (V, 3) arrays."""
    return weighted_dot(_UNIT, a, b)


def weighted_norm2(w, r):
    """Σ w_i·|r_i|² over (V, 3) r with per-vertex weights w (V,), summed deterministically."""
    return weighted_dot(w, r, r)


@njit(parallel=True)
def filter_and_dot(filt, y, a, out):
    """out_i = S_i·y_i per vertex; returns Σ a·out (chunked, thread-count independent)."""
    n = y.shape[0]
    nchunk = _chunk_count(n)
    part = np.zeros(nchunk)
    for c in prange(nchunk):
        acc = 0.0
        for i in range(c * _CHUNK, min(n, (c + 1) * _CHUNK)):
            for r in range(3):
                o = filt[i, r, 0] * y[i, 0] + filt[i, r, 1] * y[i, 1] + filt[i, r, 2] * y[i, 2]
                out[i, r] = o
                acc += a[i, r] * o
        part[c] = acc
    return _sum_in_order(part)


@njit(parallel=True)
def step_and_norm(alpha, c, q, x, r, w):
    """x += α·c, r −= α·q; returns Σ_i w_i·|r_i|² of the new r (chunked)."""
    n = x.shape[0]
    nchunk = _chunk_count(n)
    part = np.zeros(nchunk)
    for k in prange(nchunk):
        acc = 0.0
        for i in range(k * _CHUNK, min(n, (k + 1) * _CHUNK)):
            s = 0.0
            for d in range(3):
                x[i, d] += alpha * c[i, d]
                r[i, d] -= alpha * q[i, d]
                s += r[i, d] * r[i, d]
            acc += w[i] * s
        part[k] = acc
    return _sum_in_order(part)


@njit(parallel=True)
def filtered_xpby(filt, y, beta, c):
    """c = S·(y + β·c) per vertex, in place."""
    for i in prange(y.shape[0]):
        u0 = y[i, 0] + beta * c[i, 0]
        u1 = y[i, 1] + beta * c[i, 1]
        u2 = y[i, 2] + beta * c[i, 2]
        for r in range(3):
            c[i, r] = filt[i, r, 0] * u0 + filt[i, r, 1] * u1 + filt[i, r, 2] * u2


@njit(parallel=True)
def filter_with_prescribed(filt, x, z, out):
    """out = S·x + (I − S)·z per vertex: x on the free directions, z on the constrained ones."""
    for i in prange(x.shape[0]):
        for r in range(3):
            sx = filt[i, r, 0] * x[i, 0] + filt[i, r, 1] * x[i, 1] + filt[i, r, 2] * x[i, 2]
            sz = filt[i, r, 0] * z[i, 0] + filt[i, r, 1] * z[i, 1] + filt[i, r, 2] * z[i, 2]
            out[i, r] = sx + z[i, r] - sz


@njit(parallel=True)
def filtered_residual(filt, b, ax, out):
    """out = S·(b − A·x) per vertex, given ax = A·x."""
    for i in prange(b.shape[0]):
        d0, d1, d2 = b[i, 0] - ax[i, 0], b[i, 1] - ax[i, 1], b[i, 2] - ax[i, 2]
        for r in range(3):
            out[i, r] = filt[i, r, 0] * d0 + filt[i, r, 1] * d1 + filt[i, r, 2] * d2


def mpcg(asm, blocks, b, filt, z, precond, weights, tol, max_iter, x,
         product_dtype=np.float64, deflation=None):
    """Filtered PCG for A·x = b with x's constrained part fixed to z (Baraff & Witkin's MPCG).

    Args:
        asm: pattern of A (row_ptr, col); blocks (nnzb, 3, 3) its values, symmetric positive
            definite on the free subspace.
        b: right-hand side, (V, 3).
        filt: per-vertex filters S_i, (V, 3, 3).
        z: prescribed values on the constrained directions, (V, 3).
        precond: object with ``apply(r, out)``, an SPD approximation of A⁻¹ (the filter is
            applied around it here).
        weights: (V,) weights of the residual norm that decides convergence (e.g. 1/mass).
            It is checked right after each update, before preconditioning the new residual, so
            a solve that converges in one iteration costs one preconditioner application.
        tol: stop when the weighted residual norm falls below tol times its initial value.
        max_iter: iteration cap.
        x: in: initial guess for the free directions (a warm start); out: the solution, (V, 3).
        product_dtype: precision of the matrix copy used in the products. The products are
            memory-bound, and float32 blocks halve their traffic and fit the cache (Blender's
            solver is float32 throughout). Vectors and reductions stay float64, but the
            solution then solves the rounded matrix: its error floor is about cond(A)·6e-8,
            which Newton's float64 residual corrects in its next iteration
            (docs/solver.md, "float32 PCG products").
        deflation: a ``deflation.Deflation`` for this matrix and filter, or None: the solve
            then starts with the Galerkin correction on its space W and keeps every search
            direction A-orthogonal to W (deflated PCG [Saad2000]); the tolerance still refers
            to the residual of the initial guess.

    Returns:
        (iterations, relative residual reached).
    """
    blocks = blocks.astype(product_dtype, copy=False)
    tmp = np.empty_like(b)
    filter_with_prescribed(filt, x.copy(), z, x)
    bsr_matvec(asm.row_ptr, asm.col, blocks, x, tmp)
    r = np.empty_like(b)
    filtered_residual(filt, b, tmp, r)
    rr0 = weighted_norm2(weights, r)
    if rr0 <= 0.0:
        return 0, 0.0
    rr = rr0
    if deflation is not None:
        deflation.galerkin(r, x)
        rr = weighted_norm2(weights, r)
        if rr <= tol * tol * rr0:
            return 0, float(np.sqrt(max(rr, 0.0) / rr0))
    s = np.empty_like(b)
    c = np.empty_like(b)
    q = np.empty_like(b)
    w = np.ascontiguousarray(weights, dtype=np.float64)
    precond.apply(r, tmp)
    delta = filter_and_dot(filt, tmp, r, c)  # c = S·P·r
    if deflation is not None:
        deflation.project(c, c)
    it = 0
    # One kernel per line of the textbook loop, each fusing a filter with its reduction:
    # a PCG iteration is five calls (product, preconditioner and three vector kernels).
    while it < max_iter and delta > 0.0:
        bsr_matvec(asm.row_ptr, asm.col, blocks, c, tmp)
        cq = filter_and_dot(filt, tmp, c, q)  # q = S·A·c
        if cq <= 0.0:  # lost definiteness (should not happen with clamped Hessians)
            break
        alpha = delta / cq
        rr = step_and_norm(alpha, c, q, x, r, w)
        it += 1
        if rr <= tol * tol * rr0:
            break
        precond.apply(r, tmp)
        delta_old = delta
        delta = filter_and_dot(filt, tmp, r, s)  # s = S·P·r
        filtered_xpby(filt, s, delta / delta_old, c)
        if deflation is not None:
            deflation.project(s, c)
    return it, float(np.sqrt(max(rr, 0.0) / rr0))
