"""Damping of non-rigid motion: Kaldor's velocity filter over patches of loops ([Kaldor2011]
§4.2.3 eq. 4.11, §4.3.3; D9 of the seeds digest).

The knit is covered by fixed, overlapping regions of loops. Each step, for every region, the
rigid velocity v_rigid(x) = v_cm + ω × (x − x_cm) is computed from the region's momentum and
angular momentum (I·ω = L), and every point's velocity is moved towards it:
Δv = −β_k·(v − v_rigid), where β_k = α·mean over the region's points of 1/r_p and r_p is how
many regions hold point p. Eq. 4.11 divides by each point's own r_p; one strength per region
instead keeps the region's momentum and angular momentum (those of its rigid fit), which the
per-point form does not where r_p differs within a region (a swatch's edges). An interior
point, in four interior regions, is still damped by α in all. All Δv are computed first and
then applied together, as Kaldor does. Rigid motion of a region (free fall, a swing) is not
damped at all, only the motion of loops relative to their neighbours: it stands in for the
friction of the yarn's fuzz, which a frictionless penalty contact lacks. Kaldor's second, larger
pass (α_large over bigger regions) and his "constant amount at low speed" variant are not built.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit


def loop_regions(loop_of_point: np.ndarray, stitches: int, courses: int,
                 size: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """Overlapping regions of size × size loops (stride one loop), as CSR point lists.

    Args:
        loop_of_point: (P,) loop index j·stitches + i of every point (stitches.Swatch.loops).
    Returns:
        (ptr (R + 1,), points): region k holds points[ptr[k]:ptr[k + 1]].
    """
    by_loop = [[] for _ in range(stitches * courses)]
    for p, loop in enumerate(loop_of_point):
        by_loop[loop].append(p)
    ptr, pts = [0], []
    for j in range(max(1, courses - size + 1)):
        for i in range(max(1, stitches - size + 1)):
            members = [p for jj in range(j, min(courses, j + size))
                       for ii in range(i, min(stitches, i + size))
                       for p in by_loop[jj * stitches + ii]]
            pts.extend(members)
            ptr.append(len(pts))
    return np.array(ptr, np.int64), np.array(pts, np.int64)


@njit
def filter_nonrigid(x, v, mass, free, ptr, points, alpha):
    """Kaldor's eq. 4.11 as a velocity filter, in place on v (P, 3) [m/s].

    Args:
        x: (P, 3) [m]; mass: (P,) [kg]; free: (P,) bool (pinned points keep their velocity).
        ptr, points: the regions (loop_regions).
        alpha: fraction of the non-rigid velocity removed per application, in [0, 1].
    """
    P = x.shape[0]
    count = np.zeros(P)
    for k in range(ptr.shape[0] - 1):
        for q in range(ptr[k], ptr[k + 1]):
            count[points[q]] += 1.0
    dv = np.zeros((P, 3))
    inertia = np.empty((3, 3))
    for k in range(ptr.shape[0] - 1):
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
        inertia[:, :] = 0.0
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
        w = np.linalg.solve(inertia, ang)
        # one strength for the whole region: the region's momentum and angular momentum are
        # those of its rigid fit, so a uniform fraction of (v − v_rigid) sums to nothing in
        # both. α/count[p] per point, as eq. 4.11 reads, does not: at a swatch's edges the
        # counts differ within a region and a free 8 × 8 rib gained 4.4e-4 kg·m/s, its
        # centroid drifting 40 mm in 0.1 s with no force on it (docs/yarn.md)
        f = 0.0
        for q in range(ptr[k], ptr[k + 1]):
            f += 1.0 / count[points[q]]
        f *= alpha / (ptr[k + 1] - ptr[k])
        for q in range(ptr[k], ptr[k + 1]):
            p = points[q]
            if not free[p]:
                continue
            r0, r1, r2 = x[p, 0] - xc[0], x[p, 1] - xc[1], x[p, 2] - xc[2]
            vr0 = vc[0] + w[1] * r2 - w[2] * r1
            vr1 = vc[1] + w[2] * r0 - w[0] * r2
            vr2 = vc[2] + w[0] * r1 - w[1] * r0
            dv[p, 0] -= f * (v[p, 0] - vr0)
            dv[p, 1] -= f * (v[p, 1] - vr1)
            dv[p, 2] -= f * (v[p, 2] - vr2)
    for p in range(P):
        for r in range(3):
            v[p, r] += dv[p, r]
