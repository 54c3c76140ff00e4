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


def bending_matrix(segments: Segments, n_points: int, bend_stiffness: float,
                   limp: np.ndarray | None = None) -> sp.csr_matrix:
    """K (P, P) [N/m] of the bending energy's quadratic part ½·xᵀK·x per coordinate axis.

    At each interior point i between segments a = (i−1, i) and b = (i, i+1) the discrete
    curvature vector is g = e_b/ℓ_b − e_a/ℓ_a (rest lengths ℓ: while the length constraints hold,
    |g| = 2 sin(θ/2) for the turning angle θ, so |g| ≈ κ·l̄ with l̄ = (ℓ_a + ℓ_b)/2), and the
    bending energy is E = ½·B·Σ |g − ḡ|²/l̄ ≈ ½·B·∫|κ − κ̄|² ds with ḡ the rest curvature
    (``curvature_force``). Its part ½·B·Σ|g|²/l̄ is quadratic in the points, like Kaldor's
    eq. 4.4 with a straight rest shape: K is constant and its implicit step one prefactored
    solve; the rest curvature's part is a force. Points of ``limp`` (indices) do not bend.
    """
    seg = segments.seg
    rows, cols, vals = [], [], []
    # consecutive segments of one yarn share a point: seg[k, 1] == seg[k + 1, 0]
    bends = seg[:-1, 1] == seg[1:, 0]
    if limp is not None and len(limp):
        bends &= ~np.isin(seg[:-1, 1], limp)
    for k in np.nonzero(bends)[0]:
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


def point_segments(seg: np.ndarray, n_points: int) -> tuple[np.ndarray, np.ndarray]:
    """(seg_in, seg_out) (P,): the segment ending and the one starting at each point, −1 if
    none (yarn ends)."""
    seg_in = np.full(n_points, -1, np.int64)
    seg_out = np.full(n_points, -1, np.int64)
    seg_out[seg[:, 0]] = np.arange(len(seg))
    seg_in[seg[:, 1]] = np.arange(len(seg))
    return seg_in, seg_out


@njit(inline="always")
def _curvature_frame(x, p, seg, seg_in, seg_out, rest, out):
    """The discrete curvature g = e_b/ℓ_b − e_a/ℓ_a at point p and its frame, written to
    out (4, 3) as rows g, t, n, t × n; returns False where p is a yarn end or g vanishes.

    t is the mean of the two unit edges. n is fixed by the yarn two segments to either side
    (the curvature over the longer stencil a₂, p, c₂, less its part along t), so that it turns
    with the yarn around p but not with g itself: a rest curvature expressed in (t, n, t × n)
    then resists the bend turning about the yarn as well as its size changing. Where that
    stencil does not exist (next to a yarn end) or is straight, n = g/|g|."""
    ka = seg_in[p]
    kb = seg_out[p]
    if ka < 0 or kb < 0:
        return False
    a = seg[ka, 0]
    c = seg[kb, 1]
    la = rest[ka]
    lb = rest[kb]
    gl = 0.0
    tl = 0.0
    for r in range(3):
        ea = (x[p, r] - x[a, r]) / la
        eb = (x[c, r] - x[p, r]) / lb
        out[0, r] = eb - ea
        out[1, r] = ea + eb
        gl += out[0, r] ** 2
        tl += out[1, r] ** 2
    if gl <= 1e-24 or tl <= 1e-24:
        return False
    tl = np.sqrt(tl)
    for r in range(3):
        out[1, r] /= tl
    kaa = seg_in[a]
    kcc = seg_out[c]
    dt = 0.0
    if kaa >= 0 and kcc >= 0:
        a2 = seg[kaa, 0]
        c2 = seg[kcc, 1]
        for r in range(3):
            out[2, r] = ((x[c2, r] - x[p, r]) / (lb + rest[kcc])
                         - (x[p, r] - x[a2, r]) / (la + rest[kaa]))
            dt += out[2, r] * out[1, r]
    else:
        for r in range(3):
            out[2, r] = out[0, r]
            dt += out[2, r] * out[1, r]
    nl = 0.0
    for r in range(3):
        out[2, r] -= dt * out[1, r]
        nl += out[2, r] ** 2
    if nl <= 1e-6 * gl:     # the longer stencil is straight: n along g itself
        nl = 0.0
        dt = 0.0
        for r in range(3):
            dt += out[0, r] * out[1, r]
        for r in range(3):
            out[2, r] = out[0, r] - dt * out[1, r]
            nl += out[2, r] ** 2
        if nl <= 1e-24:
            return False
    nl = np.sqrt(nl)
    for r in range(3):
        out[2, r] /= nl
    out[3, 0] = out[1, 1] * out[2, 2] - out[1, 2] * out[2, 1]
    out[3, 1] = out[1, 2] * out[2, 0] - out[1, 0] * out[2, 2]
    out[3, 2] = out[1, 0] * out[2, 1] - out[1, 1] * out[2, 0]
    return True


@njit(parallel=True)
def rest_curvature(x, seg, seg_in, seg_out, rest):
    """Every point's curvature g in its own frame (t, n, t × n) (``_curvature_frame``),
    (P, 3); zero at yarn ends and straight points. Taken at the rest shape, it is the rest
    curvature ḡ of ``curvature_force``."""
    P = x.shape[0]
    out = np.zeros((P, 3))
    for p in prange(P):
        fr = np.empty((4, 3))
        if _curvature_frame(x, p, seg, seg_in, seg_out, rest, fr):
            for q in range(3):
                out[p, q] = fr[0, 0] * fr[q + 1, 0] + fr[0, 1] * fr[q + 1, 1] \
                    + fr[0, 2] * fr[q + 1, 2]
    return out


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


@njit
def _segment_constraints(x, seg, target, compliance, lam, e, viol, rhs):
    """Each segment's constraint at x (P, 3) [m]: its gradient direction e (S, 3) = e_k/ℓ_k
    [1], relative violation viol (S,) = |C_k|/ℓ_k and right-hand side rhs (S,) = −C_k −
    compliance_k·λ_k [m], with C_k = (|e_k|² − ℓ_k²)/(2ℓ_k), ℓ = target (S,) [m]."""
    for k in range(seg.shape[0]):
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


@njit
def _tie_constraints(x, ties, tie_len, length0, tie_e, tie_c, worst):
    """Each tie's gradient direction tie_e (T, 3) and constraint tie_c (T,) [m] at x (P, 3),
    as _segment_constraints' for a tie of length tie_len (T,) [m]. Returns ``worst`` raised to
    the ties' relative violations (relative to their length, at least length0 [m])."""
    for t in range(ties.shape[0]):
        a = ties[t, 0]
        b = ties[t, 1]
        length = max(tie_len[t], 1e-12)
        dd = 0.0
        for r in range(3):
            tie_e[t, r] = (x[b, r] - x[a, r]) / length
            dd += (x[b, r] - x[a, r]) ** 2
        tie_c[t] = (dd - length * length) / (2.0 * length)
        worst = max(worst, abs(np.sqrt(dd) - tie_len[t]) / max(tie_len[t], length0))
    return worst


@njit
def _segment_matrix(seg, inv_mass, compliance, e, diag, off, rhs):
    """The segments' tridiagonal matrix ∇C·M⁻¹·∇Cᵀ + diag(compliance) [1/kg]:
    diag (S,), off (S,) coupling k and k + 1 where they share a point; a segment with both
    ends pinned gets diag 1 and rhs 0 (nothing can move)."""
    S = seg.shape[0]
    for k in range(S):
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


@njit
def _thomas_solve_sparse(off, cp, inv_den, r, rs, window):
    """_thomas_solve for a right-hand side r (S,) that is zero but at the rows rs (n,)
    (ascending), sweeping only where the solution is not zero; window (n, 2) receives the
    intervals [lo, hi) outside which r is zero on return (unused ones (0, 0)).

    A⁻¹ of the segments' matrix decays along the yarn (a few tenths per segment in a knit's
    loops) and is cut at a yarn's end and at a pinned segment (off = 0): a sweep from a zero
    right-hand side stays exactly zero, and once a value has decayed to zero it stays zero
    until the next row of rs, so each sweep jumps over such stretches (a tie's solve then
    covers a thousand or so segments next to each of its points, not the whole knit). Every
    value computed is the full sweep's, bit for bit; the rest are zero, as the full sweep
    computes them (up to the sign of a zero)."""
    S = r.shape[0]
    n = rs.shape[0]
    a = np.empty(n, np.int64)      # the forward sweep's intervals [a, b) of values
    b = np.empty(n, np.int64)
    m = 0
    j = 0
    k = rs[0]
    start = k
    while True:
        if k == 0:
            r[0] *= inv_den[0]
        else:
            r[k] = (r[k] - off[k - 1] * r[k - 1]) * inv_den[k]
        while j < n and rs[j] <= k:
            j += 1
        if r[k] == 0.0 and (j == n or rs[j] > k + 1):
            a[m] = start
            b[m] = k + 1
            m += 1
            if j == n:
                break
            k = rs[j]              # zero up to the next row
            start = k
            continue
        k += 1
        if k == S:
            a[m] = start
            b[m] = S
            m += 1
            break
    for i in range(n):
        window[i, 0] = window[i, 1] = 0
    w = 0
    i = m - 1
    top = b[i]
    k = b[i] - 1
    while True:
        if k + 1 < S:
            r[k] -= cp[k] * r[k + 1]
        if k < a[i]:
            if i > 0 and k < b[i - 1]:
                i -= 1             # the tail runs into the interval below
            elif r[k] == 0.0:      # decayed to zero: zero down to the interval below
                window[w, 0] = k
                window[w, 1] = top
                w += 1
                i -= 1
                if i < 0:
                    break
                top = b[i]
                k = b[i] - 1
                continue
        k -= 1
        if k < 0:
            window[w, 0] = 0
            window[w, 1] = top
            break


@njit
def _tie_border(ties, inv_mass, seg_in, seg_out, e, tie_e, off, cp, inv_den, rows, vals, U,
                window):
    """The border B (S × T) the ties add to the segments' matrix: tie t meets segment k at a
    shared point p with weight w_p·(±e_k)·(±e_t) [1/kg], stored as rows (T, 4) (segment, −1
    where none) and vals (T, 4); and U (T, S) = A⁻¹B row by row (A factored in cp, inv_den),
    zero outside the intervals window[t] (T, 4, 2) [lo, hi) (on entry: the last call's, or
    (0, 0), where U is cleared first)."""
    for t in range(ties.shape[0]):
        for i in range(4):
            U[t, window[t, i, 0]:window[t, i, 1]] = 0.0
            window[t, i, 0] = window[t, i, 1] = 0
            rows[t, i] = -1
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
        for m in range(n):
            U[t, rows[t, m]] += vals[t, m]
        if n > 0:
            _thomas_solve_sparse(off, cp, inv_den, U[t], np.sort(rows[t, :n]), window[t])


@njit
def _tie_schur(ties, inv_mass, tie_e, tie_c, rhs, rows, vals, U, schur, y):
    """The ties' Schur complement schur (T, T) = D − BᵀU [1/kg] and right-hand side y (T,)
    [m] = −C_t − Bᵀ(A⁻¹r) (rhs holds A⁻¹r); a tie with both points pinned gets an identity
    row and y 0 (it cannot act)."""
    T = ties.shape[0]
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


@njit
def _apply_corrections(x, inv_mass, seg_in, seg_out, e, rhs, lam, ties, tie_e, y):
    """Move x (P, 3) [m] by the multipliers' corrections: segment k's δλ_k = rhs[k] [m·kg]
    along ±e_k at its points, tie t's y[t] along ±tie_e[t], each times the point's inverse
    mass (P,) [1/kg]; λ (S,) accumulates δλ."""
    for k in range(rhs.shape[0]):
        lam[k] += rhs[k]
    for q in range(x.shape[0]):
        w = inv_mass[q]
        k = seg_in[q]
        if k >= 0:
            for r in range(3):
                x[q, r] += w * e[k, r] * rhs[k]
        k = seg_out[q]
        if k >= 0:
            for r in range(3):
                x[q, r] -= w * e[k, r] * rhs[k]
    for t in range(ties.shape[0]):
        a = ties[t, 0]
        b = ties[t, 1]
        for r in range(3):
            x[a, r] -= inv_mass[a] * tie_e[t, r] * y[t]
            x[b, r] += inv_mass[b] * tie_e[t, r] * y[t]


class ProjectionWork:
    """Scratch arrays of project_lengths for S segments, T ties and P points, kept from call
    to call: fresh arrays of this size cost more than the projection's own sweeps (their
    memory is handed back to the system when freed and its pages are faulted in again at every
    call: about 0.8 ms a call for Kaldor's 42 × 32, against 0.3 ms for a Newton iteration).
    The ties' solves (U, zero outside window) carry over from call to call."""

    def __init__(self, S: int, T: int, P: int):
        self.shape = (S, T, P)
        self.arrays = (
            np.empty(S), np.zeros(S), np.empty(S), np.empty((S, 3)), np.empty(S),  # diag, off,
            np.empty(S), np.empty(S),                        # rhs, e, viol, cp, inv_den
            np.empty(P, np.int64), np.empty(P, np.int64),    # seg_in, seg_out
            np.empty((T, 3)), np.empty(T),                   # tie_e, tie_c
            np.full((T, 4), -1, np.int64), np.zeros((T, 4)),  # rows, vals
            np.zeros((T, S)), np.zeros((T, 4, 2), np.int64),  # U, window
            np.empty((T, T)), np.empty(T))                   # schur, y


def project_lengths(x, inv_mass, seg, target, compliance, lam, tol, max_iter, ties, tie_len,
                    work: ProjectionWork | None = None):
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
    tridiagonal solves) takes them in. Projected apart after each solve instead, they would
    make the iteration converge only linearly, however few they are.

    Args:
        inv_mass: (P,) [1/kg], 0 for pinned points.
        tol: stop when max |C_k|/ℓ_k ≤ tol (hard constraints only; ties included).
        work: the scratch arrays (ProjectionWork) to use; new ones when None or sized for
            another problem.

    Returns:
        (iterations, max relative violation before the last solve).
    """
    shape = (seg.shape[0], ties.shape[0], x.shape[0])
    if work is None or work.shape != shape:
        work = ProjectionWork(*shape)
    return _project_lengths(x, inv_mass, seg, target, compliance, lam, tol, max_iter, ties,
                            tie_len, *work.arrays)


@njit
def _project_lengths(x, inv_mass, seg, target, compliance, lam, tol, max_iter, ties, tie_len,
                     diag, off, rhs, e, viol, cp, inv_den, seg_in, seg_out, tie_e, tie_c, rows,
                     vals, U, window, schur, y):
    """project_lengths in the scratch arrays of a ProjectionWork (off[k] couples segments k
    and k + 1; U row t: A⁻¹ times the border's column t, zero outside window[t])."""
    S = seg.shape[0]
    T = ties.shape[0]
    # the segments ending and starting at each point, so the corrections are applied per
    # point in parallel (in the order a loop over the segments would: the ending one first)
    seg_in[:] = -1
    seg_out[:] = -1
    for k in range(S):
        seg_out[seg[k, 0]] = k
        seg_in[seg[k, 1]] = k
    worst = 0.0
    it = 0
    soft = False
    for k in range(S):
        soft = soft or compliance[k] > 0.0
    for it in range(1, max_iter + 1):
        _segment_constraints(x, seg, target, compliance, lam, e, viol, rhs)
        worst = 0.0
        for k in range(S):
            worst = max(worst, viol[k])
        worst = _tie_constraints(x, ties, tie_len, target[0], tie_e, tie_c, worst)
        if worst <= tol and not soft:
            break
        _segment_matrix(seg, inv_mass, compliance, e, diag, off, rhs)
        _thomas_factor(diag, off, cp, inv_den)
        _thomas_solve(off, cp, inv_den, rhs)
        if T > 0:
            # the ties' multipliers y from the Schur complement of the bordered system; the
            # segments' are A⁻¹r − U·y
            _tie_border(ties, inv_mass, seg_in, seg_out, e, tie_e, off, cp, inv_den, rows,
                        vals, U, window)
            _tie_schur(ties, inv_mass, tie_e, tie_c, rhs, rows, vals, U, schur, y)
            y[:] = np.linalg.solve(schur, y)
            for t in range(T):     # U is zero outside its windows; each k takes t in order
                for i in range(4):
                    for k in range(window[t, i, 0], window[t, i, 1]):
                        rhs[k] -= U[t, k] * y[t]
        _apply_corrections(x, inv_mass, seg_in, seg_out, e, rhs, lam, ties, tie_e, y)
        if soft:
            break
    return it, worst


@njit(inline="always")
def _frame_stencil(x, p, a, c, seg, seg_in, seg_out, rest, fr, m):
    """The vector m (3,) [1/m] whose part normal to t gives point p's frame normal n, as
    _curvature_frame chose it: the longer stencil's curvature (x_c₂ − x_p)/L₂ − (x_p − x_a₂)/L₁
    (L₁, L₂ [m] two rest lengths each) where it exists and is not straight, else g = fr[0].
    Written to m; returns (found, long, m·t, |m − (m·t)t|, a₂, c₂, L₁, L₂), found False where
    n does not exist (a₂, c₂ −1 and L₁ = L₂ = 1 unless long)."""
    g0, g1, g2 = fr[0, 0], fr[0, 1], fr[0, 2]
    t0, t1, t2 = fr[1, 0], fr[1, 1], fr[1, 2]
    kaa = seg_in[a]
    kcc = seg_out[c]
    long = kaa >= 0 and kcc >= 0
    wl = 0.0
    mt = 0.0
    a2 = c2 = -1
    L1 = L2 = 1.0
    if long:
        a2 = seg[kaa, 0]
        c2 = seg[kcc, 1]
        L1 = rest[seg_in[p]] + rest[kaa]
        L2 = rest[seg_out[p]] + rest[kcc]
        for r in range(3):
            m[r] = (x[c2, r] - x[p, r]) / L2 - (x[p, r] - x[a2, r]) / L1
        mt = m[0] * t0 + m[1] * t1 + m[2] * t2
        for r in range(3):
            wl += (m[r] - mt * fr[1, r]) ** 2
        if wl <= 1e-6 * (g0 * g0 + g1 * g1 + g2 * g2):   # as _curvature_frame: n from g
            long = False
    if not long:
        m[0], m[1], m[2] = g0, g1, g2
        mt = m[0] * t0 + m[1] * t1 + m[2] * t2
        wl = 0.0
        for r in range(3):
            wl += (m[r] - mt * fr[1, r]) ** 2
        if wl <= 1e-24:
            return False, long, mt, wl, a2, c2, L1, L2
    return True, long, mt, np.sqrt(wl), a2, c2, L1, L2


@njit(inline="always")
def _frame_chain(fr, gbar, m, mt, wl, ul):
    """∂φ/∂m and ∂φ/∂u (3 floats each, [m]·[1/m]⁻¹ scaled as φ over m and u) for
    φ = g·(ḡ₀t + ḡ₁n + ḡ₂ t×n) with g held, through n = w/|w|, w = m − (m·t)t (wl = |w|,
    mt = m·t) and t = u/|u| (ul = |u|); fr (4, 3) the frame rows g, t, n, t × n, gbar (3,)."""
    g0, g1, g2 = fr[0, 0], fr[0, 1], fr[0, 2]
    t0, t1, t2 = fr[1, 0], fr[1, 1], fr[1, 2]
    n0, n1, n2 = fr[2, 0], fr[2, 1], fr[2, 2]
    b0, b1, b2 = gbar[0], gbar[1], gbar[2]
    # ∂φ/∂t with n held: ḡ₀g + ḡ₂ n×g; ∂φ/∂n with t held: ḡ₁g + ḡ₂ g×t
    Gt0 = b0 * g0 + b2 * (n1 * g2 - n2 * g1)
    Gt1 = b0 * g1 + b2 * (n2 * g0 - n0 * g2)
    Gt2 = b0 * g2 + b2 * (n0 * g1 - n1 * g0)
    Gn0 = b1 * g0 + b2 * (g1 * t2 - g2 * t1)
    Gn1 = b1 * g1 + b2 * (g2 * t0 - g0 * t2)
    Gn2 = b1 * g2 + b2 * (g0 * t1 - g1 * t0)
    # n = w/|w|: ∂φ/∂w = (I − n nᵀ)·Gn/|w|
    nG = n0 * Gn0 + n1 * Gn1 + n2 * Gn2
    Q0 = (Gn0 - nG * n0) / wl
    Q1 = (Gn1 - nG * n1) / wl
    Q2 = (Gn2 - nG * n2) / wl
    # w = m − (m·t)t: ∂φ/∂m = Q − t(t·Q), and onto t −(t·Q)m − (m·t)Q
    tQ = t0 * Q0 + t1 * Q1 + t2 * Q2
    Gm0 = Q0 - tQ * t0
    Gm1 = Q1 - tQ * t1
    Gm2 = Q2 - tQ * t2
    Tt0 = Gt0 - tQ * m[0] - mt * Q0
    Tt1 = Gt1 - tQ * m[1] - mt * Q1
    Tt2 = Gt2 - tQ * m[2] - mt * Q2
    # t = u/|u|: ∂φ/∂u = (I − t tᵀ)·Tt/|u|
    tT = t0 * Tt0 + t1 * Tt1 + t2 * Tt2
    Gu0 = (Tt0 - tT * t0) / ul
    Gu1 = (Tt1 - tT * t1) / ul
    Gu2 = (Tt2 - tT * t2) / ul
    return Gm0, Gm1, Gm2, Gu0, Gu1, Gu2


@njit(inline="always")
def _frame_turn(x, p, seg, seg_in, seg_out, rest, gbar, fr, grad, idx):
    """∂φ/∂x for φ = g·(ḡ₀t + ḡ₁n + ḡ₂ t×n) with g held: how the frame of point p turns with
    the points it is made from (_curvature_frame, whose rows fr (4, 3) are given). Writes
    grad (5, 3) for the points idx (5,) (a₂, a, p, c, c₂; −1 where absent); False where p has
    no frame.

    t = u/|u|, u = e_a/ℓ_a + e_b/ℓ_b; n = w/|w|, w = m − (m·t)t with m the longer stencil's
    curvature (or g where _curvature_frame falls back to it): the chain rule through both
    normalisations."""
    ka = seg_in[p]
    kb = seg_out[p]
    a = seg[ka, 0]
    c = seg[kb, 1]
    la = rest[ka]
    lb = rest[kb]
    for i in range(5):
        idx[i] = -1
        for r in range(3):
            grad[i, r] = 0.0
    ul = 0.0
    for r in range(3):
        ul += ((x[p, r] - x[a, r]) / la + (x[c, r] - x[p, r]) / lb) ** 2
    ul = np.sqrt(ul)
    m = np.empty(3)
    found, long, mt, wl, a2, c2, L1, L2 = _frame_stencil(x, p, a, c, seg, seg_in, seg_out,
                                                          rest, fr, m)
    if not found:
        return False
    Gm0, Gm1, Gm2, Gu0, Gu1, Gu2 = _frame_chain(fr, gbar, m, mt, wl, ul)
    idx[1] = a
    idx[2] = p
    idx[3] = c
    if long:      # m = (x_c₂ − x_p)/L₂ − (x_p − x_a₂)/L₁
        idx[0] = a2
        idx[4] = c2
        cm = -(1.0 / L1 + 1.0 / L2)
        grad[0, 0], grad[0, 1], grad[0, 2] = Gm0 / L1, Gm1 / L1, Gm2 / L1
        grad[4, 0], grad[4, 1], grad[4, 2] = Gm0 / L2, Gm1 / L2, Gm2 / L2
        grad[2, 0], grad[2, 1], grad[2, 2] = cm * Gm0, cm * Gm1, cm * Gm2
    else:         # m = g = (x_c − x_p)/ℓ_b − (x_p − x_a)/ℓ_a
        cg = (1.0 / la, -(1.0 / la + 1.0 / lb), 1.0 / lb)
        for i in range(3):
            grad[1 + i, 0] = cg[i] * Gm0
            grad[1 + i, 1] = cg[i] * Gm1
            grad[1 + i, 2] = cg[i] * Gm2
    cu = (-1.0 / la, 1.0 / la - 1.0 / lb, 1.0 / lb)     # u = (x_p − x_a)/ℓ_a + (x_c − x_p)/ℓ_b
    for i in range(3):
        grad[1 + i, 0] += cu[i] * Gu0
        grad[1 + i, 1] += cu[i] * Gu1
        grad[1 + i, 2] += cu[i] * Gu2
    return True


class BendingWork:
    """Scratch arrays of curvature_force for P points, kept from call to call (fresh ones, 3
    MB for Kaldor's 42 × 32, have their pages faulted in again at every call)."""

    def __init__(self, P: int):
        self.P = P
        self.q = np.empty((P, 3))
        self.contrib = np.empty((P, 5, 3))
        self.where = np.empty((P, 5), np.int64)


def curvature_force(x, seg, seg_in, seg_out, rest, curvature, bend_stiffness, force,
                    work: BendingWork | None = None, turn: bool = True):
    """Add the rest curvature's bending force to ``force`` (P, 3) [N].

    E = ½·B·Σ|g − ḡ|²/l̄ = ½·xᵀK·x (bending_matrix, stepped implicitly) − B·Σ g·ḡ/l̄ + const;
    this is the force of the middle term, B/l̄·∂g/∂x·ḡ, with ḡ = curvature[p] (P, 3) placed in
    the point's current frame (rest_curvature) so that it turns with the yarn, the frame held
    fixed; and, with ``turn``, the force from the frame turning with the yarn, B/l̄·∂φ/∂x
    (_frame_turn). With both and the bending matrix the bending force is the exact gradient of
    ½·B·Σ|g − R(x)ḡ|²/l̄: it does no work around a closed path and no net torque. Without the
    turn a knit at rest spins, and its bending feeds a motion that grows (docs/yarn.md, "Rest
    state"). Each point's frame is made once (_frame_terms, in parallel); the frozen-frame
    terms are gathered per point in parallel, the turn's added in point order (the same at
    every thread count). ``work``: the scratch arrays (BendingWork); new ones when None."""
    if work is None or work.P != x.shape[0]:
        work = BendingWork(x.shape[0])
    _frame_terms(x, seg, seg_in, seg_out, rest, curvature, bend_stiffness, work.q,
                 work.contrib, work.where)
    _add_frozen(seg, seg_in, seg_out, rest, work.q, force)
    if turn:
        _add_turn(work.contrib, work.where, force)


@njit(parallel=True)
def _frame_terms(x, seg, seg_in, seg_out, rest, curvature, bend_stiffness, q, contrib, where):
    """Per point p, from its frame (_curvature_frame): q[p] (3,) = B/l̄·ḡ placed in the frame
    [N·m], and the frame's turning contrib[p] (5, 3) = B/l̄·∂φ/∂x [N] on the points where[p]
    (5,) (−1: none); q 0 and where −1 where p has no rest curvature or no frame."""
    for p in prange(x.shape[0]):
        for r in range(3):
            q[p, r] = 0.0
        for i in range(5):
            where[p, i] = -1
        if curvature[p, 0] == 0.0 and curvature[p, 1] == 0.0 and curvature[p, 2] == 0.0:
            continue
        fr = np.empty((4, 3))
        if not _curvature_frame(x, p, seg, seg_in, seg_out, rest, fr):
            continue
        w = bend_stiffness / (0.5 * (rest[seg_in[p]] + rest[seg_out[p]]))
        for r in range(3):
            q[p, r] = w * (curvature[p, 0] * fr[1, r] + curvature[p, 1] * fr[2, r]
                           + curvature[p, 2] * fr[3, r])
        grad = np.empty((5, 3))
        idx = np.empty(5, np.int64)
        if not _frame_turn(x, p, seg, seg_in, seg_out, rest, curvature[p], fr, grad, idx):
            continue
        for i in range(5):
            where[p, i] = idx[i]
            for r in range(3):
                contrib[p, i, r] = w * grad[i, r]


@njit(parallel=True)
def _add_frozen(seg, seg_in, seg_out, rest, q, force):
    """Add the frozen-frame force B/l̄·∂g/∂x·ḡ (q (P, 3) from _frame_terms) to force (P, 3)
    [N]: each point gathers the terms of itself and its two neighbours, in parallel."""
    for p in prange(force.shape[0]):
        ka = seg_in[p]
        kb = seg_out[p]
        if ka >= 0 and kb >= 0:          # p the middle point: −(1/ℓ_a + 1/ℓ_b)
            s = 1.0 / rest[ka] + 1.0 / rest[kb]
            for r in range(3):
                force[p, r] -= s * q[p, r]
        if ka >= 0:                      # p the far end of its previous point's stencil
            for r in range(3):
                force[p, r] += q[seg[ka, 0], r] / rest[ka]
        if kb >= 0:                      # p the near end of its next point's stencil
            for r in range(3):
                force[p, r] += q[seg[kb, 1], r] / rest[kb]


@njit
def _add_turn(contrib, where, force):
    """Add the frames' turning (contrib (P, 5, 3) on the points where (P, 5), from
    _frame_terms) to force (P, 3) [N], in point order."""
    for p in range(where.shape[0]):
        for i in range(5):
            q = where[p, i]
            if q >= 0:
                for r in range(3):
                    force[q, r] += contrib[p, i, r]
