"""Damping of non-rigid motion: Kaldor's velocity filter over patches of loops ([Kaldor2011]
§4.2.3 eq. 4.11, revised in §4.5.2 with Table 4.3; D9 and P36–P37 of the seeds digest).

The knit is covered by fixed regions of loops. Each step, for every region, the rigid velocity
v_rigid(x) = v_cm + ω × (x − x_cm) is computed from the region's momentum and angular momentum
(I·ω = L), and the region's non-rigid velocity v_nr = v − v_rigid (a 3k-vector over its k
points) is reduced: Δv = −β·v_nr with one β for the whole region, so the region's momentum and
angular momentum (those of its rigid fit) are kept. Rigid motion (free fall, a swing) is not
damped at all, only the motion of loops relative to their neighbours: it stands in for the
friction of the yarn's fuzz, which a frictionless penalty contact lacks.

Each pass β = min(1, max(α, h·μ_const·√k/‖v_nr‖)) · s_k: the proportional part α is eq. 4.11's,
h·μ/(1 + h·μ) at a step h (dynamics.filter_shares: backward Euler, so that a region held
against a steady force creeps at a/μ at any step; Kaldor gives α per step of 1/11800 s); the constant part is Kaldor's revision (§4.5.2, Table 4.3): at low
speed a constant amount is removed, up to all of it, so the knit comes to rest in finite time
instead of creeping towards its energy minimum. s_k, the least 1/r_p over the region's points
(r_p: how many regions hold point p), shares the damping out among overlapping regions, so
that no point's shares add up to more than 1: the regions' removals, applied together, then
never add up to more than a point's non-rigid velocity, and the filter cannot overshoot (with
the mean of 1/r_p, the shares near a swatch's edges added up to more, and at the model's step
a knit at rest began to oscillate and grew: docs/yarn.md, "Rest state"). Eq. 4.11 divides by
each point's own r_p instead, which does not keep momentum where r_p differs within a region
(a swatch's edges: a free swatch then drifts with no force on it; Kaldor's footnote to §4.5.2
names the problem). The simulation filters in Kaldor's two passes
(§4.2.3: small regions of 2 × 2 loops one loop apart, then 4 × 4 loops two apart); his revised
single pass over 4 × 4-loop blocks is ``loop_regions(size=4, stride=None)`` (docs/yarn.md says
why it is not the default).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._jit import njit, prange


def loop_regions(loop_of_point: np.ndarray, stitches: int, courses: int,
                 size: int = 2, stride: int | None = 1) -> tuple[np.ndarray, np.ndarray]:
    """Regions of size × size loops, as CSR point lists: overlapping regions one loop apart
    (the default, stride 1, as far as size fits), or blocks that tile the swatch (stride None
    or ≥ size; the last block of a row or column may be smaller).

    Args:
        loop_of_point: (P,) loop index j·stitches + i of every point (stitches.Swatch.loops).
    Returns:
        (ptr (R + 1,), points): region k holds points[ptr[k]:ptr[k + 1]].
    """
    stride = size if stride is None else int(stride)
    by_loop = [[] for _ in range(stitches * courses)]
    for p, loop in enumerate(loop_of_point):
        by_loop[loop].append(p)
    ptr, pts = [0], []
    def starts(n):
        return range(0, n, stride) if stride >= size else range(max(1, n - size + 1))

    for j in starts(courses):
        for i in starts(stitches):
            members = [p for jj in range(j, min(courses, j + size))
                       for ii in range(i, min(stitches, i + size))
                       for p in by_loop[jj * stitches + ii]]
            pts.extend(members)
            ptr.append(len(pts))
    return np.array(ptr, np.int64), np.array(pts, np.int64)


@njit
def _solve3(A, b):
    """x (3,) with A·x = b for a 3 × 3 matrix A, by its adjugate (Cramer's rule): a region's
    angular velocity from I·ω = L, without a LAPACK call per region (whose overhead is far
    larger than a 3 × 3 solve)."""
    c00 = A[1, 1] * A[2, 2] - A[1, 2] * A[2, 1]
    c01 = A[1, 2] * A[2, 0] - A[1, 0] * A[2, 2]
    c02 = A[1, 0] * A[2, 1] - A[1, 1] * A[2, 0]
    det = A[0, 0] * c00 + A[0, 1] * c01 + A[0, 2] * c02
    x = np.zeros(3)
    if det == 0.0:      # a one-point region (its inertia underflows): no rotation to fit
        return x
    x[0] = (c00 * b[0] + (A[0, 2] * A[2, 1] - A[0, 1] * A[2, 2]) * b[1]
            + (A[0, 1] * A[1, 2] - A[0, 2] * A[1, 1]) * b[2]) / det
    x[1] = (c01 * b[0] + (A[0, 0] * A[2, 2] - A[0, 2] * A[2, 0]) * b[1]
            + (A[0, 2] * A[1, 0] - A[0, 0] * A[1, 2]) * b[2]) / det
    x[2] = (c02 * b[0] + (A[0, 1] * A[2, 0] - A[0, 0] * A[2, 1]) * b[1]
            + (A[0, 0] * A[1, 1] - A[0, 1] * A[1, 0]) * b[2]) / det
    return x


@dataclass(frozen=True)
class FilterRegions:
    """Regions (loop_regions) laid out for ``filter_regions``.

    The points held by exactly the same regions form a cell (a loop, or a few loops at a
    swatch's edge); every region is a union of cells. A region's rigid fit is then assembled
    from its cells' mass moments (parallel-axis sums), and every point of a cell takes the same
    affine change, the sum of its regions' (rigid velocities are affine in x): a pass visits
    each point twice instead of once for every region holding it (four 4 × 4-loop regions hold
    an inner loop of the second pass)."""

    share: np.ndarray          # (R,) each region's share s_k (module docstring)
    size: np.ndarray           # (R,) its number of points
    region_ptr: np.ndarray     # (R + 1,) region k holds cells region_cells[region_ptr[k]:...]
    region_cells: np.ndarray
    cell_ptr: np.ndarray       # (C + 1,) cell c holds points cell_points[cell_ptr[c]:...]
    cell_points: np.ndarray
    cell_rptr: np.ndarray      # (C + 1,) cell c lies in regions cell_regions[cell_rptr[c]:...]
    cell_regions: np.ndarray

    @classmethod
    def of(cls, ptr: np.ndarray, points: np.ndarray, n_points: int,
           least: bool = True) -> "FilterRegions":
        """The layout of regions (ptr, points) over n_points points; ``least`` as
        ``filter_nonrigid``'s."""
        ptr = np.ascontiguousarray(ptr, np.int64)
        points = np.ascontiguousarray(points[:ptr[-1]], np.int64)
        R = len(ptr) - 1
        share = np.empty(R)
        _shares(ptr, points, n_points, least, share)
        region = np.repeat(np.arange(R), np.diff(ptr))
        member = np.unique(points * R + region)        # (point, region), by point then region
        held_ptr = np.searchsorted(member // R, np.arange(n_points + 1))
        held = member % R
        cell_of = np.full(n_points, -1, np.int64)
        cells: dict[bytes, int] = {}
        for q in range(n_points):
            if held_ptr[q + 1] > held_ptr[q]:
                key = held[held_ptr[q]:held_ptr[q + 1]].tobytes()
                cell_of[q] = cells.setdefault(key, len(cells))
        C = len(cells)
        inside = np.nonzero(cell_of >= 0)[0]
        cell_points = inside[np.argsort(cell_of[inside], kind="stable")]
        cell_ptr = np.zeros(C + 1, np.int64)
        np.cumsum(np.bincount(cell_of[inside], minlength=C), out=cell_ptr[1:])
        first = cell_points[cell_ptr[:-1]]             # a point of each cell
        cell_rptr = np.zeros(C + 1, np.int64)
        np.cumsum(held_ptr[first + 1] - held_ptr[first], out=cell_rptr[1:])
        cell_regions = np.concatenate([held[held_ptr[q]:held_ptr[q + 1]] for q in first]) \
            if C else np.zeros(0, np.int64)
        pairs = np.unique(region * C + cell_of[points])   # (region, cell), by region
        region_ptr = np.searchsorted(pairs // C, np.arange(R + 1)) if C else np.zeros(R + 1,
                                                                                      np.int64)
        return cls(share, np.diff(ptr).astype(np.float64), region_ptr.astype(np.int64),
                   (pairs % C).astype(np.int64) if C else np.zeros(0, np.int64), cell_ptr,
                   cell_points.astype(np.int64), cell_rptr, cell_regions.astype(np.int64))


@njit
def _shares(ptr, points, n_points, least, share):
    """Each region's share s_k (R,): the least (or the mean) 1/r_p over its points, r_p the
    number of regions holding point p."""
    count = np.zeros(n_points)
    for k in range(ptr.shape[0] - 1):
        for q in range(ptr[k], ptr[k + 1]):
            count[points[q]] += 1.0
    for k in range(ptr.shape[0] - 1):
        if least:
            s = 1.0
            for q in range(ptr[k], ptr[k + 1]):
                s = min(s, 1.0 / count[points[q]])
        else:
            s = 0.0
            for q in range(ptr[k], ptr[k + 1]):
                s += 1.0 / count[points[q]]
            s /= ptr[k + 1] - ptr[k]
        share[k] = s


def filter_nonrigid(x, v, mass, free, ptr, points, alpha, const=0.0, least=True):
    """Kaldor's non-rigid velocity filter (module docstring), in place on v (P, 3) [m/s].

    Args:
        x: (P, 3) [m]; mass: (P,) [kg]; free: (P,) bool (pinned points keep their velocity).
        ptr, points: the regions (loop_regions).
        alpha: fraction of the non-rigid velocity removed per application, in [0, 1]
            (dynamics.filter_shares).
        const: h·μ_const [m/s], the least rms non-rigid speed removed per application (0: the
            proportional filter of eq. 4.11).
        least: each region's share s_k is the least 1/r_p of its points (the simulation's);
            False: their mean (Kaldor's relaxation, whose α = 0.3 per 1/11800 s is far from
            overshooting, so that relaxed knits stay as they were measured).

    A solver filtering at every step lays its regions out once (FilterRegions) and calls
    ``filter_regions``."""
    filter_regions(x, v, mass, free, FilterRegions.of(ptr, points, len(x), least), alpha, const)


def filter_regions(x, v, mass, free, regions: FilterRegions, alpha, const=0.0):
    """``filter_nonrigid`` with the regions laid out (FilterRegions.of)."""
    r = regions
    _filter(x, v, mass, free, r.share, r.size, r.region_ptr, r.region_cells, r.cell_ptr,
            r.cell_points, r.cell_rptr, r.cell_regions, alpha, const)


@njit(parallel=True)
def _cell_moments(x, v, mass, cell_ptr, cell_points, mom):
    """Each cell's moments (C, 33) about its own centres, in parallel: mass M, centre of mass
    c (3), its velocity V (3), Σm(|d|²I − ddᵀ) (6: xx yy zz xy xz yz), Σm d × (v − V) (3),
    with d = x − c; then unweighted: count n, centroid x̄ (3), mean velocity v̄ (3),
    Σ|v − v̄|², Σ(x − x̄) × (v − v̄) (3), Σ(|e|²I − eeᵀ) (6) with e = x − x̄."""
    for c in prange(cell_ptr.shape[0] - 1):
        m_tot = 0.0
        n = 0.0
        cx = np.zeros(3)
        cv = np.zeros(3)
        ux = np.zeros(3)
        uv = np.zeros(3)
        for q in range(cell_ptr[c], cell_ptr[c + 1]):
            p = cell_points[q]
            m_tot += mass[p]
            n += 1.0
            for r in range(3):
                cx[r] += mass[p] * x[p, r]
                cv[r] += mass[p] * v[p, r]
                ux[r] += x[p, r]
                uv[r] += v[p, r]
        if m_tot > 0.0:
            cx /= m_tot
            cv /= m_tot
        ux /= n
        uv /= n
        row = np.zeros(33)
        for q in range(cell_ptr[c], cell_ptr[c + 1]):
            p = cell_points[q]
            m = mass[p]
            d0, d1, d2 = x[p, 0] - cx[0], x[p, 1] - cx[1], x[p, 2] - cx[2]
            e0, e1, e2 = v[p, 0] - cv[0], v[p, 1] - cv[1], v[p, 2] - cv[2]
            dd = d0 * d0 + d1 * d1 + d2 * d2
            row[7] += m * (dd - d0 * d0)
            row[8] += m * (dd - d1 * d1)
            row[9] += m * (dd - d2 * d2)
            row[10] -= m * d0 * d1
            row[11] -= m * d0 * d2
            row[12] -= m * d1 * d2
            row[13] += m * (d1 * e2 - d2 * e1)
            row[14] += m * (d2 * e0 - d0 * e2)
            row[15] += m * (d0 * e1 - d1 * e0)
            a0, a1, a2 = x[p, 0] - ux[0], x[p, 1] - ux[1], x[p, 2] - ux[2]
            b0, b1, b2 = v[p, 0] - uv[0], v[p, 1] - uv[1], v[p, 2] - uv[2]
            aa = a0 * a0 + a1 * a1 + a2 * a2
            row[23] += b0 * b0 + b1 * b1 + b2 * b2
            row[24] += a1 * b2 - a2 * b1
            row[25] += a2 * b0 - a0 * b2
            row[26] += a0 * b1 - a1 * b0
            row[27] += aa - a0 * a0
            row[28] += aa - a1 * a1
            row[29] += aa - a2 * a2
            row[30] -= a0 * a1
            row[31] -= a0 * a2
            row[32] -= a1 * a2
        row[0] = m_tot
        row[16] = n
        for r in range(3):
            row[1 + r] = cx[r]
            row[4 + r] = cv[r]
            row[17 + r] = ux[r]
            row[20 + r] = uv[r]
        mom[c, :] = row


@njit(inline="always")
def _sym_apply(S, o, w, out):
    """out (3,) = S·w for the symmetric 3 × 3 stored in S[o:o + 6] as xx yy zz xy xz yz."""
    out[0] = S[o] * w[0] + S[o + 3] * w[1] + S[o + 4] * w[2]
    out[1] = S[o + 3] * w[0] + S[o + 1] * w[1] + S[o + 5] * w[2]
    out[2] = S[o + 4] * w[0] + S[o + 5] * w[1] + S[o + 2] * w[2]


@njit(inline="always")
def _rigid_fit(mom, region_ptr, region_cells, k, xc, vc):
    """Region k's rigid fit from its cells' moments mom (C, 33) (_cell_moments): its centre of
    mass xc (3,) [m] and velocity vc (3,) [m/s], written in place, and its angular velocity
    w (3,) [1/s] returned, from the parallel-axis sums of the cells' inertia [kg·m²] and
    angular momentum [kg·m²/s] about (xc, vc), as (True, w); (False, xc) where the region
    has no mass."""
    m_tot = 0.0
    for q in range(region_ptr[k], region_ptr[k + 1]):
        c = region_cells[q]
        m_tot += mom[c, 0]
        for r in range(3):
            xc[r] += mom[c, 0] * mom[c, 1 + r]
            vc[r] += mom[c, 0] * mom[c, 4 + r]
    if m_tot <= 0.0:
        return False, xc
    xc /= m_tot
    vc /= m_tot
    # parallel-axis sums of the cells' inertia and angular momentum about (xc, vc)
    inertia = np.zeros((3, 3))
    ang = np.zeros(3)
    for q in range(region_ptr[k], region_ptr[k + 1]):
        c = region_cells[q]
        M = mom[c, 0]
        d0, d1, d2 = mom[c, 1] - xc[0], mom[c, 2] - xc[1], mom[c, 3] - xc[2]
        e0, e1, e2 = mom[c, 4] - vc[0], mom[c, 5] - vc[1], mom[c, 6] - vc[2]
        dd = d0 * d0 + d1 * d1 + d2 * d2
        inertia[0, 0] += mom[c, 7] + M * (dd - d0 * d0)
        inertia[1, 1] += mom[c, 8] + M * (dd - d1 * d1)
        inertia[2, 2] += mom[c, 9] + M * (dd - d2 * d2)
        inertia[0, 1] += mom[c, 10] - M * d0 * d1
        inertia[0, 2] += mom[c, 11] - M * d0 * d2
        inertia[1, 2] += mom[c, 12] - M * d1 * d2
        ang[0] += mom[c, 13] + M * (d1 * e2 - d2 * e1)
        ang[1] += mom[c, 14] + M * (d2 * e0 - d0 * e2)
        ang[2] += mom[c, 15] + M * (d0 * e1 - d1 * e0)
    inertia[1, 0] = inertia[0, 1]
    inertia[2, 0] = inertia[0, 2]
    inertia[2, 1] = inertia[1, 2]
    # a region's inertia is never singular unless its points are collinear; the small
    # diagonal term keeps that case finite (it then damps the spin about that line)
    tr = inertia[0, 0] + inertia[1, 1] + inertia[2, 2]
    for a in range(3):
        inertia[a, a] += 1e-9 * tr + 1e-300
    return True, _solve3(inertia, ang)


@njit(inline="always")
def _nonrigid_norm2(mom, region_ptr, region_cells, k, xc, vc, w):
    """‖v_nr‖² [m²/s²] of region k: Σ|v − vc − w × (x − xc)|² over its points' velocities,
    summed cell by cell from mom (C, 33) about each cell's centroid (where the cross terms
    vanish); xc (3,) [m], vc (3,) [m/s], w (3,) [1/s] its rigid fit."""
    nr2 = 0.0
    Jw = np.empty(3)
    for q in range(region_ptr[k], region_ptr[k + 1]):
        c = region_cells[q]
        _sym_apply(mom[c], 27, w, Jw)
        nr2 += mom[c, 23] - 2.0 * (w[0] * mom[c, 24] + w[1] * mom[c, 25]
                                   + w[2] * mom[c, 26]) \
            + w[0] * Jw[0] + w[1] * Jw[1] + w[2] * Jw[2]
        R0, R1, R2 = mom[c, 17] - xc[0], mom[c, 18] - xc[1], mom[c, 19] - xc[2]
        u0 = mom[c, 20] - vc[0] - (w[1] * R2 - w[2] * R1)
        u1 = mom[c, 21] - vc[1] - (w[2] * R0 - w[0] * R2)
        u2 = mom[c, 22] - vc[2] - (w[0] * R1 - w[1] * R0)
        nr2 += mom[c, 16] * (u0 * u0 + u1 * u1 + u2 * u2)
    return nr2


@njit(parallel=True)
def _region_fits(mom, shares, size, region_ptr, region_cells, alpha, const, fit):
    """Each region's rigid fit and strength, in parallel: fit (R, 10) = centre of mass (3) [m],
    its velocity (3) [m/s], angular velocity (3) [1/s], strength (1, 0: skip) = min(1, f)·share
    with f = alpha, raised so that const [m/s] of the rms non-rigid speed per point goes."""
    for k in prange(shares.shape[0]):
        xc = np.zeros(3)
        vc = np.zeros(3)
        found, w = _rigid_fit(mom, region_ptr, region_cells, k, xc, vc)
        if not found:
            continue
        # one strength for the whole region: the region's momentum and angular momentum are
        # those of its rigid fit, so a uniform fraction of (v − v_rigid) sums to nothing in
        # both. α/count[p] per point, as eq. 4.11 reads, does not: at a swatch's edges the
        # counts differ within a region, and a free swatch drifts with no force on it
        f = alpha
        if const > 0.0:
            # removing const·√k of ‖v_nr‖ is removing const of its rms per point (Kaldor's
            # h·μ_const·√k/‖v_nr‖)
            nr2 = _nonrigid_norm2(mom, region_ptr, region_cells, k, xc, vc, w)
            if nr2 > 0.0:
                f = max(f, const * np.sqrt(size[k] / nr2))
        fit[k, 0:3] = xc
        fit[k, 3:6] = vc
        fit[k, 6:9] = w
        fit[k, 9] = min(1.0, f) * shares[k]


@njit(parallel=True)
def _apply_fits(x, v, free, mom, fit, cell_ptr, cell_points, cell_rptr, cell_regions):
    """Change the velocities v (P, 3) [m/s] of each cell's free points by its regions'
    non-rigid parts, in parallel by cell: Σ_k f_k·(v − vc_k − w_k × (x − xc_k)) =
    F·v − B − W × (x − x̄), with fit (R, 10) from _region_fits and x̄ the cell's centroid."""
    for c in prange(cell_ptr.shape[0] - 1):
        F = 0.0
        B0 = B1 = B2 = W0 = W1 = W2 = 0.0
        for q in range(cell_rptr[c], cell_rptr[c + 1]):
            k = cell_regions[q]
            f = fit[k, 9]
            if f == 0.0:
                continue
            r0 = mom[c, 17] - fit[k, 0]
            r1 = mom[c, 18] - fit[k, 1]
            r2 = mom[c, 19] - fit[k, 2]
            F += f
            B0 += f * (fit[k, 3] + fit[k, 7] * r2 - fit[k, 8] * r1)
            B1 += f * (fit[k, 4] + fit[k, 8] * r0 - fit[k, 6] * r2)
            B2 += f * (fit[k, 5] + fit[k, 6] * r1 - fit[k, 7] * r0)
            W0 += f * fit[k, 6]
            W1 += f * fit[k, 7]
            W2 += f * fit[k, 8]
        if F == 0.0:
            continue
        for q in range(cell_ptr[c], cell_ptr[c + 1]):
            p = cell_points[q]
            if not free[p]:
                continue
            e0 = x[p, 0] - mom[c, 17]
            e1 = x[p, 1] - mom[c, 18]
            e2 = x[p, 2] - mom[c, 19]
            v0 = F * v[p, 0] - B0 - (W1 * e2 - W2 * e1)
            v1 = F * v[p, 1] - B1 - (W2 * e0 - W0 * e2)
            v2 = F * v[p, 2] - B2 - (W0 * e1 - W1 * e0)
            v[p, 0] -= v0
            v[p, 1] -= v1
            v[p, 2] -= v2


@njit
def _filter(x, v, mass, free, shares, size, region_ptr, region_cells, cell_ptr, cell_points,
            cell_rptr, cell_regions, alpha, const):
    """The filter's kernel (FilterRegions): the cells' moments, the regions' rigid fits and
    strengths from them, then each cell's points change by the sum of its regions' changes;
    each stage in parallel, every sum in a fixed order (the same at every thread count)."""
    mom = np.empty((cell_ptr.shape[0] - 1, 33))
    _cell_moments(x, v, mass, cell_ptr, cell_points, mom)
    fit = np.zeros((shares.shape[0], 10))
    _region_fits(mom, shares, size, region_ptr, region_cells, alpha, const, fit)
    _apply_fits(x, v, free, mom, fit, cell_ptr, cell_points, cell_rptr, cell_regions)
