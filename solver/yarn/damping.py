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
    """Regions (loop_regions) laid out for ``filter_regions``: their CSR point lists, each
    region's share s_k (module docstring) and the transposed lists, the regions holding each
    point in increasing order, so that the filter's changes are summed point by point in
    parallel in the order a loop over the regions would add them."""

    ptr: np.ndarray             # (R + 1,)
    points: np.ndarray          # (N,)
    share: np.ndarray           # (R,)
    point_ptr: np.ndarray       # (P + 1,)
    point_regions: np.ndarray   # (N,)

    @classmethod
    def of(cls, ptr: np.ndarray, points: np.ndarray, n_points: int,
           least: bool = True) -> "FilterRegions":
        """The layout of regions (ptr, points) over n_points points; ``least`` as
        ``filter_nonrigid``'s."""
        ptr = np.ascontiguousarray(ptr, np.int64)
        points = np.ascontiguousarray(points[:ptr[-1]], np.int64)
        share = np.empty(len(ptr) - 1)
        _shares(ptr, points, n_points, least, share)
        region = np.repeat(np.arange(len(ptr) - 1), np.diff(ptr))
        order = np.argsort(points, kind="stable")   # by point, each point's regions in order
        point_ptr = np.zeros(n_points + 1, np.int64)
        np.cumsum(np.bincount(points, minlength=n_points), out=point_ptr[1:])
        return cls(ptr, points, share, point_ptr, region[order])


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
    _filter(x, v, mass, free, r.ptr, r.points, r.share, r.point_ptr, r.point_regions, alpha,
            const)


@njit(parallel=True)
def _filter(x, v, mass, free, ptr, points, shares, point_ptr, point_regions, alpha, const):
    """The filter's kernel: the regions' rigid fits and strengths are computed in parallel
    from the velocities before the filter, then each point's changes are summed in parallel
    in region order (point_regions), so the result is the same at every thread count."""
    R = ptr.shape[0] - 1
    # per region: centre of mass, its velocity, angular velocity, strength (0: skip)
    fit = np.zeros((R, 10))
    for k in prange(R):
        m_tot = 0.0
        xc = np.zeros(3)
        vc = np.zeros(3)
        for q in range(ptr[k], ptr[k + 1]):
            p = points[q]
            m_tot += mass[p]
            for r in range(3):
                xc[r] += mass[p] * x[p, r]
                vc[r] += mass[p] * v[p, r]
        if m_tot <= 0.0:
            continue
        xc /= m_tot
        vc /= m_tot
        ang = np.zeros(3)
        inertia = np.zeros((3, 3))
        for q in range(ptr[k], ptr[k + 1]):
            p = points[q]
            m = mass[p]
            r0, r1, r2 = x[p, 0] - xc[0], x[p, 1] - xc[1], x[p, 2] - xc[2]
            u0, u1, u2 = v[p, 0] - vc[0], v[p, 1] - vc[1], v[p, 2] - vc[2]
            ang[0] += m * (r1 * u2 - r2 * u1)
            ang[1] += m * (r2 * u0 - r0 * u2)
            ang[2] += m * (r0 * u1 - r1 * u0)
            rr = r0 * r0 + r1 * r1 + r2 * r2
            rv = (r0, r1, r2)
            for a in range(3):
                inertia[a, a] += m * rr
                for b in range(3):
                    inertia[a, b] -= m * rv[a] * rv[b]
        # a region's inertia is never singular unless its points are collinear; the small
        # diagonal term keeps that case finite (it then damps the spin about that line)
        tr = inertia[0, 0] + inertia[1, 1] + inertia[2, 2]
        for a in range(3):
            inertia[a, a] += 1e-9 * tr + 1e-300
        w = _solve3(inertia, ang)
        # one strength for the whole region: the region's momentum and angular momentum are
        # those of its rigid fit, so a uniform fraction of (v − v_rigid) sums to nothing in
        # both. α/count[p] per point, as eq. 4.11 reads, does not: at a swatch's edges the
        # counts differ within a region, and a free swatch drifts with no force on it
        share = shares[k]
        f = alpha
        if const > 0.0:
            # ‖v_nr‖ over the region's 3k velocities; removing const·√k of it is removing
            # const of its rms per point (Kaldor's h·μ_const·√k/‖v_nr‖)
            nr2 = 0.0
            for q in range(ptr[k], ptr[k + 1]):
                p = points[q]
                r0, r1, r2 = x[p, 0] - xc[0], x[p, 1] - xc[1], x[p, 2] - xc[2]
                u0 = v[p, 0] - (vc[0] + w[1] * r2 - w[2] * r1)
                u1 = v[p, 1] - (vc[1] + w[2] * r0 - w[0] * r2)
                u2 = v[p, 2] - (vc[2] + w[0] * r1 - w[1] * r0)
                nr2 += u0 * u0 + u1 * u1 + u2 * u2
            if nr2 > 0.0:
                f = max(f, const * np.sqrt((ptr[k + 1] - ptr[k]) / nr2))
        fit[k, 0:3] = xc
        fit[k, 3:6] = vc
        fit[k, 6:9] = w
        fit[k, 9] = min(1.0, f) * share
    for p in prange(x.shape[0]):
        if not free[p]:
            continue
        d0 = d1 = d2 = 0.0
        for q in range(point_ptr[p], point_ptr[p + 1]):
            k = point_regions[q]
            f = fit[k, 9]
            if f == 0.0:
                continue
            r0, r1, r2 = x[p, 0] - fit[k, 0], x[p, 1] - fit[k, 1], x[p, 2] - fit[k, 2]
            vr0 = fit[k, 3] + fit[k, 7] * r2 - fit[k, 8] * r1
            vr1 = fit[k, 4] + fit[k, 8] * r0 - fit[k, 6] * r2
            vr2 = fit[k, 5] + fit[k, 6] * r1 - fit[k, 7] * r0
            d0 -= f * (v[p, 0] - vr0)
            d1 -= f * (v[p, 1] - vr1)
            d2 -= f * (v[p, 2] - vr2)
        v[p, 0] += d0
        v[p, 1] += d1
        v[p, 2] += d2
