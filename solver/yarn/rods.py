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


@njit(parallel=True)
def project_lengths(x, inv_mass, seg, target, compliance, lam, tol, max_iter, ties, tie_len):
    """Fast projection of the segment lengths onto ``target`` [m] (Goldenthal et al. 2007,
    Algorithm 1 with lumped mass, as Kaldor §4.3.1), in place on x (P, 3).

    Constraint k: C_k = (|e_k|² − ℓ_k²)/(2ℓ_k) [m] (≈ |e_k| − ℓ_k), ∇C_k = ±e_k/ℓ_k. Each iteration
    solves (∇C·M⁻¹·∇Cᵀ + diag(compliance))·δλ = −C − compliance·λ exactly: the matrix is
    tridiagonal (consecutive segments share one point; segments of different yarns none), so a
    Thomas sweep solves it in O(S). compliance = 0 gives Goldenthal's hard constraints;
    compliance_k = 1/(k_k·h²) gives a stiff linear spring k_k [N/m] (the relaxation's "linear
    yarns", one implicit XPBD step; lam [m·kg] carries λ through the iterations).

    Kaldor's glue constraints (his §4.2.4: a yarn end held to another piece of yarn so the knit
    cannot unravel from it) are ties (T, 2) of two points kept at distance tie_len (T,) [m],
    projected point-pair by point-pair after each tridiagonal solve (they couple non-adjacent
    points, so they stay out of the banded system; they are few).

    Args:
        inv_mass: (P,) [1/kg], 0 for pinned points.
        tol: stop when max |C_k|/ℓ_k ≤ tol (hard constraints only; ties included).

    Returns:
        (iterations, max relative violation before the last solve).
    """
    S = seg.shape[0]
    P = x.shape[0]
    diag = np.empty(S)
    off = np.zeros(S)           # off[k] couples k and k + 1
    rhs = np.empty(S)
    e = np.empty((S, 3))
    viol = np.empty(S)
    # the segments ending and starting at each point, so the corrections are applied per
    # point in parallel (in the order a loop over the segments would: the ending one first)
    seg_in = np.full(P, -1, np.int64)
    seg_out = np.full(P, -1, np.int64)
    for k in range(S):
        seg_out[seg[k, 0]] = k
        seg_in[seg[k, 1]] = k
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
        for k in range(ties.shape[0]):
            a = ties[k, 0]
            b = ties[k, 1]
            dd = np.sqrt((x[b, 0] - x[a, 0]) ** 2 + (x[b, 1] - x[a, 1]) ** 2
                         + (x[b, 2] - x[a, 2]) ** 2)
            worst = max(worst, abs(dd - tie_len[k]) / max(tie_len[k], target[0]))
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
        # Thomas algorithm (the matrix is SPD and diagonally dominant enough in practice)
        cp = np.empty(S)
        dp = np.empty(S)
        cp[0] = off[0] / diag[0]
        dp[0] = rhs[0] / diag[0]
        for k in range(1, S):
            den = diag[k] - off[k - 1] * cp[k - 1]
            cp[k] = off[k] / den
            dp[k] = (rhs[k] - off[k - 1] * dp[k - 1]) / den
        for k in range(S - 2, -1, -1):
            dp[k] -= cp[k] * dp[k + 1]
        for k in prange(S):
            lam[k] += dp[k]
        for q in prange(P):
            w = inv_mass[q]
            k = seg_in[q]
            if k >= 0:
                for r in range(3):
                    x[q, r] += w * e[k, r] * dp[k]
            k = seg_out[q]
            if k >= 0:
                for r in range(3):
                    x[q, r] -= w * e[k, r] * dp[k]
        for k in range(ties.shape[0]):
            a = ties[k, 0]
            b = ties[k, 1]
            wsum = inv_mass[a] + inv_mass[b]
            d0 = x[b, 0] - x[a, 0]
            d1 = x[b, 1] - x[a, 1]
            d2 = x[b, 2] - x[a, 2]
            dd = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
            if wsum == 0.0 or dd == 0.0:
                continue
            corr = (dd - tie_len[k]) / (dd * wsum)
            x[a, 0] += inv_mass[a] * corr * d0
            x[a, 1] += inv_mass[a] * corr * d1
            x[a, 2] += inv_mass[a] * corr * d2
            x[b, 0] -= inv_mass[b] * corr * d0
            x[b, 1] -= inv_mass[b] * corr * d1
            x[b, 2] -= inv_mass[b] * corr * d2
        if soft:
            break
    return it, worst
