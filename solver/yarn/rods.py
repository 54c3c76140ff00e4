"""Yarns as inextensible polyline rods: segments, lumped masses, the bending matrix and the
length constraints solved by fast projection ([Kaldor2011] §4.2.1, §4.3.1; [Goldenthal2007]).

Kaldor's yarn is a cubic B-spline; here it is the polyline through its points, so mass sits at
the points (lumped, as Kaldor lumps his mass matrix) and cannot slide inside a segment: his
weak length energy k_len (eq. 4.6), which only stops that sliding, is not needed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._jit import njit, prange
from .stitches import yarn_segments


@dataclass(frozen=True)
class Segments:
    """The segments of a set of yarns.

    Attributes:
        seg: (S, 2) int64 point indices (consecutive points of one yarn).
        rest: (S,) rest lengths ℓ [m].
        yarn: (S,) int64 yarn of each segment.
        arc: (S,) rest arc length [m] along its yarn where each segment starts.
    """

    seg: np.ndarray
    rest: np.ndarray
    yarn: np.ndarray
    arc: np.ndarray

    @staticmethod
    def of(yarn_offsets: np.ndarray, positions: np.ndarray,
           rest: np.ndarray | None = None) -> Segments:
        """Segments of ``yarn_offsets`` with rest lengths ``rest`` (default: as laid out)."""
        seg = yarn_segments(np.asarray(yarn_offsets))
        if rest is None:
            rest = np.linalg.norm(positions[seg[:, 1]] - positions[seg[:, 0]], axis=1)
        rest = np.ascontiguousarray(rest, dtype=np.float64)
        yarn = np.searchsorted(np.asarray(yarn_offsets), seg[:, 0], side="right") - 1
        arc = np.zeros(len(seg))
        for y in np.unique(yarn):
            on = yarn == y
            arc[on] = np.concatenate([[0.0], np.cumsum(rest[on])[:-1]])
        return Segments(seg, rest, yarn.astype(np.int64), arc)

    def lengths(self, x: np.ndarray) -> np.ndarray:
        """Current segment lengths [m] (S,)."""
        return np.linalg.norm(x[self.seg[:, 1]] - x[self.seg[:, 0]], axis=1)


def lumped_masses(segments: Segments, n_points: int, linear_density: float) -> np.ndarray:
    """Point masses [kg] (P,): half of each adjacent segment's mass ρ·ℓ."""
    m = np.zeros(n_points)
    half = 0.5 * linear_density * segments.rest
    np.add.at(m, segments.seg[:, 0], half)
    np.add.at(m, segments.seg[:, 1], half)
    return m


def bending_matrix(segments: Segments, n_points: int, bend_stiffness: float) -> sp.csr_matrix:
    """K (P, P) [N/m] of the bending energy E = ½·xᵀK·x per coordinate axis.

    At each interior point i between segments a = (i−1, i) and b = (i, i+1) the discrete
    curvature vector is g = e_b/ℓ_b − e_a/ℓ_a (rest lengths ℓ: while the length constraints hold,
    |g| = 2 sin(θ/2) for the turning angle θ, so |g| ≈ κ·l̄ with l̄ = (ℓ_a + ℓ_b)/2), and
    E = ½·B·Σ |g|²/l̄ ≈ ½·B·∫κ² ds, quadratic in the points like Kaldor's eq. 4.4 (straight rest
    shape). Being quadratic, K is constant and its implicit step is one prefactored solve.
    """
    seg = segments.seg
    rows, cols, vals = [], [], []
    # consecutive segments of one yarn share a point: seg[k, 1] == seg[k + 1, 0]
    for k in np.nonzero(seg[:-1, 1] == seg[1:, 0])[0]:
        la, lb = segments.rest[k], segments.rest[k + 1]
        idx = (seg[k, 0], seg[k, 1], seg[k + 1, 1])
        c = (1.0 / la, -(1.0 / la + 1.0 / lb), 1.0 / lb)
        w = bend_stiffness / (0.5 * (la + lb))
        for p in range(3):
            for q in range(3):
                rows.append(idx[p])
                cols.append(idx[q])
                vals.append(w * c[p] * c[q])
    return sp.csr_matrix((vals, (rows, cols)), shape=(n_points, n_points))


@njit
def _thomas_factor(diag, off, cp, inv_den):
    """Factor the tridiagonal matrix (diagonal diag (S,), off-diagonal off (S,), off[k]
    coupling k and k + 1) for _thomas_solve: cp and inv_den (S,) are written."""
    inv_den[0] = 1.0 / diag[0]
    cp[0] = off[0] * inv_den[0]
    for k in range(1, diag.shape[0]):
        inv_den[k] = 1.0 / (diag[k] - off[k - 1] * cp[k - 1])
        cp[k] = off[k] * inv_den[k]


@njit
def _thomas_solve(off, cp, inv_den, r):
    """Solve the factored tridiagonal system for the right-hand side r (S,), in place."""
    S = r.shape[0]
    r[0] *= inv_den[0]
    for k in range(1, S):
        r[k] = (r[k] - off[k - 1] * r[k - 1]) * inv_den[k]
    for k in range(S - 2, -1, -1):
        r[k] -= cp[k] * r[k + 1]


@njit(parallel=True)
def project_lengths(x, inv_mass, seg, target, compliance, lam, tol, max_iter, ties, tie_len):
    """Fast projection of the segment lengths onto ``target`` [m] (Goldenthal et al. 2007,
    Algorithm 1 with lumped mass, as Kaldor §4.3.1), in place on x (P, 3).

    Constraint k: C_k = (|e_k|² − ℓ_k²)/(2ℓ_k) [m] (≈ |e_k| − ℓ_k), ∇C_k = ±e_k/ℓ_k. Each iteration
    solves (∇C·M⁻¹·∇Cᵀ + diag(compliance))·δλ = −C − compliance·λ exactly: the segments' part
    of the matrix is tridiagonal (consecutive segments share one point; segments of different
    yarns none), so a Thomas sweep solves it in O(S). compliance = 0 gives Goldenthal's hard
    constraints; compliance_k = 1/(k_k·h²) gives a stiff linear spring k_k [N/m] (the
    relaxation's "linear yarns", one implicit XPBD step; lam [m·kg] carries λ through the
    iterations).

    Kaldor's glue constraints (his §4.2.4: a yarn end held to another piece of yarn so the knit
    cannot unravel from it) are ties (T, 2) of two points kept at distance tie_len (T,) [m],
    hard constraints of the same form in the same Newton system: they couple non-adjacent
    points, so they border the tridiagonal matrix, and its Schur complement (T × T, from T + 1
    tridiagonal solves) takes them in. Projected apart after each solve instead, they made
    the iteration converge only linearly: 10–11 iterations to 1e-6 in a 42 × 32 swatch
    against 3 without its two ties (docs/yarn.md, "Speed").

    Args:
        inv_mass: (P,) [1/kg], 0 for pinned points.
        tol: stop when max |C_k|/ℓ_k ≤ tol (hard constraints only; ties included).

    Returns:
        (iterations, max relative violation before the last solve).
    """
    S = seg.shape[0]
    P = x.shape[0]
    T = ties.shape[0]
    diag = np.empty(S)
    off = np.zeros(S)           # off[k] couples k and k + 1
    rhs = np.empty(S)
    e = np.empty((S, 3))
    viol = np.empty(S)
    cp = np.empty(S)
    inv_den = np.empty(S)
    # the segments ending and starting at each point, so the corrections are applied per
    # point in parallel (in the order a loop over the segments would: the ending one first)
    seg_in = np.full(P, -1, np.int64)
    seg_out = np.full(P, -1, np.int64)
    for k in range(S):
        seg_out[seg[k, 0]] = k
        seg_in[seg[k, 1]] = k
    # the ties' gradients (direction over length at their second point), their rows of the
    # border (the segments at their points: segment row, weight), the border's solves
    tie_e = np.empty((T, 3))
    tie_c = np.empty(T)
    rows = np.full((T, 4), -1, np.int64)
    vals = np.zeros((T, 4))
    U = np.empty((T, S))        # row t: A⁻¹ times the border's column t
    schur = np.empty((T, T))
    y = np.empty(T)
    worst = 0.0
    it = 0
    soft = False
    for k in range(S):
        soft = soft or compliance[k] > 0.0
    for it in range(1, max_iter + 1):
        for k in prange(S):
            a = seg[k, 0]
            b = seg[k, 1]
            l0 = target[k]
            e0 = x[b, 0] - x[a, 0]
            e1 = x[b, 1] - x[a, 1]
            e2 = x[b, 2] - x[a, 2]
            e[k, 0] = e0 / l0
            e[k, 1] = e1 / l0
            e[k, 2] = e2 / l0
            c = (e0 * e0 + e1 * e1 + e2 * e2 - l0 * l0) / (2.0 * l0)
            viol[k] = abs(c) / l0
            rhs[k] = -c - compliance[k] * lam[k]
        worst = 0.0
        for k in range(S):
            worst = max(worst, viol[k])
        for t in range(T):
            a = ties[t, 0]
            b = ties[t, 1]
            length = max(tie_len[t], 1e-12)
            dd = 0.0
            for r in range(3):
                tie_e[t, r] = (x[b, r] - x[a, r]) / length
                dd += (x[b, r] - x[a, r]) ** 2
            tie_c[t] = (dd - length * length) / (2.0 * length)
            worst = max(worst, abs(np.sqrt(dd) - tie_len[t]) / max(tie_len[t], target[0]))
        if worst <= tol and not soft:
            break
        for k in prange(S):
            a = seg[k, 0]
            b = seg[k, 1]
            g2 = e[k, 0] ** 2 + e[k, 1] ** 2 + e[k, 2] ** 2
            diag[k] = (inv_mass[a] + inv_mass[b]) * g2 + compliance[k]
            if diag[k] <= 0.0:
                diag[k] = 1.0  # both ends pinned: nothing can move, δλ = rhs (times zero mass)
                rhs[k] = 0.0
            off[k] = 0.0
            if k + 1 < S and seg[k + 1, 0] == b:
                # ∇C_k at b is +e_k, ∇C_{k+1} at b is −e_{k+1}
                off[k] = -inv_mass[b] * (e[k, 0] * e[k + 1, 0] + e[k, 1] * e[k + 1, 1]
                                         + e[k, 2] * e[k + 1, 2])
        _thomas_factor(diag, off, cp, inv_den)
        _thomas_solve(off, cp, inv_den, rhs)
        if T > 0:
            # border B (S × T): tie t meets segment k at a shared point p with weight
            # w_p·(±e_k)·(±e_t); then U = A⁻¹B, the Schur complement D − BᵀU and the ties'
            # multipliers y; the segments' are A⁻¹r − U·y
            for t in range(T):
                n = 0
                for q in range(2):
                    p = ties[t, q]
                    sign_t = -1.0 if q == 0 else 1.0
                    for side in range(2):
                        k = seg_in[p] if side == 0 else seg_out[p]
                        if k < 0:
                            continue
                        sign_k = 1.0 if side == 0 else -1.0
                        rows[t, n] = k
                        vals[t, n] = inv_mass[p] * sign_k * sign_t * (
                            e[k, 0] * tie_e[t, 0] + e[k, 1] * tie_e[t, 1]
                            + e[k, 2] * tie_e[t, 2])
                        n += 1
                U[t, :] = 0.0
                for m in range(n):
                    U[t, rows[t, m]] += vals[t, m]
                _thomas_solve(off, cp, inv_den, U[t])
            for t in range(T):
                y[t] = -tie_c[t]
                for m in range(4):
                    if rows[t, m] >= 0:
                        y[t] -= vals[t, m] * rhs[rows[t, m]]
                for u in range(T):
                    d = 0.0
                    for q in range(2):
                        for qq in range(2):
                            if ties[t, q] == ties[u, qq]:
                                sq = (1.0 if q == 1 else -1.0) * (1.0 if qq == 1 else -1.0)
                                d += inv_mass[ties[t, q]] * sq * (
                                    tie_e[t, 0] * tie_e[u, 0] + tie_e[t, 1] * tie_e[u, 1]
                                    + tie_e[t, 2] * tie_e[u, 2])
                    for m in range(4):
                        if rows[t, m] >= 0:
                            d -= vals[t, m] * U[u, rows[t, m]]
                    schur[t, u] = d
            for t in range(T):
                if inv_mass[ties[t, 0]] + inv_mass[ties[t, 1]] <= 0.0:
                    # both points pinned: the tie cannot act
                    for u in range(T):
                        schur[t, u] = 0.0
                        schur[u, t] = 0.0
                    schur[t, t] = 1.0
                    y[t] = 0.0
            y[:] = np.linalg.solve(schur, y)
            for k in prange(S):
                for t in range(T):
                    rhs[k] -= U[t, k] * y[t]
        for k in prange(S):
            lam[k] += rhs[k]
        for q in prange(P):
            w = inv_mass[q]
            k = seg_in[q]
            if k >= 0:
                for r in range(3):
                    x[q, r] += w * e[k, r] * rhs[k]
            k = seg_out[q]
            if k >= 0:
                for r in range(3):
                    x[q, r] -= w * e[k, r] * rhs[k]
        for t in range(T):
            a = ties[t, 0]
            b = ties[t, 1]
            for r in range(3):
                x[a, r] -= inv_mass[a] * tie_e[t, r] * y[t]
                x[b, r] += inv_mass[b] * tie_e[t, r] * y[t]
        if soft:
            break
    return it, worst
