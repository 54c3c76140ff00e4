"""Continuous collision detection: the earliest time two moving primitives touch.

Every vertex moves linearly over the step, x(t) = x0 + t·(x1 − x0), t in [0, 1]. A vertex can
only cross a triangle, or an edge another edge, at a time when the four points are coplanar:
f(t) = (x1(t) × x2(t))·x3(t) = 0, a cubic ([Provot1997]; [Vo2006] eq.4.8/4.10; [Liu2012] eq.4;
keys in docs/references.md). The cubic's roots are isolated robustly ([Vo2006] §6.1 reports that
plain Cardano fails): the roots of
f' split [0, 1] into monotone pieces, each sign change is bisected to full precision, and at
every candidate time (roots, and the interval ends and critical points where the points are
within ``tol`` of coplanar, i.e. grazing contacts) the exact distance between the primitives
decides: a contact is a time when it is at most ``tol``. When the four points stay coplanar the
whole step (parallel or in-plane motion, where the cubic vanishes identically) the distance is
sampled and refined instead.

Primitive kinds and the order of their four points:
    VERTEX_FACE: a = the vertex, (b, c, d) = the triangle.
    EDGE_EDGE:   (a, b) = first edge, (c, d) = second edge.
Results are weights w (4,) with Σ w = 0 such that Σ w·x is the vector from the second primitive's
closest point to the first's (for VERTEX_FACE: w = (1, −β_b, −β_c, −β_d)), and a unit normal n
oriented so the first primitive starts on its positive side.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from .closest import point_triangle, segment_segment
from .vector import add, cross, dot, norm, scale, sub

VERTEX_FACE = 0
EDGE_EDGE = 1

NO_HIT = -1.0
_BISECTIONS = 64      # halvings of a root bracket (reaches double precision well before)
_SAMPLES = 16         # samples of the distance when the motion stays coplanar
_FLAT = 1e-12         # cubic coefficients below this times scale³ vanish identically


@njit(fastmath=False, inline="always")
def _at(p0, p1, t):
    return (p0[0] + t * (p1[0] - p0[0]), p0[1] + t * (p1[1] - p0[1]),
            p0[2] + t * (p1[2] - p0[2]))


@njit(fastmath=False)
def gap(kind, t, a0, b0, c0, d0, a1, b1, c1, d1):
    """Squared distance [m²] between the primitives at time t and the weights w of the closest
    points (see the module docstring): returns (d², w0, w1, w2, w3)."""
    a, b, c, d = _at(a0, a1, t), _at(b0, b1, t), _at(c0, c1, t), _at(d0, d1, t)
    if kind == VERTEX_FACE:
        d2, wb, wc, wd = point_triangle(a, b, c, d)
        return d2, 1.0, -wb, -wc, -wd
    d2, s, u = segment_segment(a, b, c, d)
    return d2, 1.0 - s, s, u - 1.0, -u


@njit(fastmath=False, inline="always")
def _frame(kind, a, b, c, d):
    """The three vectors whose triple product is the coplanarity function."""
    if kind == VERTEX_FACE:
        return sub(c, b), sub(d, b), sub(a, b)
    return sub(b, a), sub(d, c), sub(c, a)


@njit(fastmath=False)
def cubic_coefficients(kind, a0, b0, c0, d0, a1, b1, c1, d1):
    """Coefficients (k0, k1, k2, k3) of f(t) = k0 + k1·t + k2·t² + k3·t³ [m³], the triple
    product that vanishes when the four points are coplanar, and a length scale [m]."""
    x1, x2, x3 = _frame(kind, a0, b0, c0, d0)
    e1, e2, e3 = _frame(kind, a1, b1, c1, d1)
    v1, v2, v3 = sub(e1, x1), sub(e2, x2), sub(e3, x3)
    c12 = cross(x1, x2)
    mid = add(cross(x1, v2), cross(v1, x2))
    cvv = cross(v1, v2)
    k0 = dot(c12, x3)
    k1 = dot(c12, v3) + dot(mid, x3)
    k2 = dot(mid, v3) + dot(cvv, x3)
    k3 = dot(cvv, v3)
    size = max(norm(x1), norm(x2), norm(x3), norm(v1), norm(v2), norm(v3))
    return k0, k1, k2, k3, size


@njit(fastmath=False, inline="always")
def _poly(k0, k1, k2, k3, t):
    return ((k3 * t + k2) * t + k1) * t + k0


@njit(fastmath=False)
def _critical_points(k1, k2, k3):
    """Roots of f'(t) = k1 + 2·k2·t + 3·k3·t² inside (0, 1), ascending; 2.0 marks none."""
    qa, qb, qc = 3.0 * k3, 2.0 * k2, k1
    r1, r2 = 2.0, 2.0
    big = max(abs(qa), abs(qb), abs(qc))
    if big == 0.0:
        return r1, r2
    if abs(qa) <= 1e-14 * big:
        if qb != 0.0:
            r1 = -qc / qb
    else:
        disc = qb * qb - 4.0 * qa * qc
        if disc >= 0.0:
            q = -0.5 * (qb + np.copysign(np.sqrt(disc), qb))
            r1 = q / qa
            r2 = qc / q if q != 0.0 else 2.0
    if not (0.0 < r1 < 1.0):
        r1 = 2.0
    if not (0.0 < r2 < 1.0):
        r2 = 2.0
    if r2 < r1:
        r1, r2 = r2, r1
    return r1, r2


@njit(fastmath=False)
def _bisect(k0, k1, k2, k3, lo, hi, flo):
    """A root of the cubic in [lo, hi] given a sign change (flo = f(lo))."""
    for _ in range(_BISECTIONS):
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        fm = _poly(k0, k1, k2, k3, mid)
        if fm == 0.0:
            return mid
        if (fm < 0.0) == (flo < 0.0):
            lo, flo = mid, fm
        else:
            hi = mid
    return 0.5 * (lo + hi)


@njit(fastmath=False)
def _near_plane(kind, t, a0, b0, c0, d0, a1, b1, c1, d1, f, tol):
    """True if the point/line is within tol of the other primitive's plane at time t."""
    x1, x2, _ = _frame(kind, _at(a0, a1, t), _at(b0, b1, t), _at(c0, c1, t), _at(d0, d1, t))
    return abs(f) <= tol * norm(cross(x1, x2))


@njit(fastmath=False)
def _touch(kind, t, a0, b0, c0, d0, a1, b1, c1, d1, tol2):
    return gap(kind, t, a0, b0, c0, d0, a1, b1, c1, d1)[0] <= tol2


@njit(fastmath=False)
def first_contact_time(kind, a0, b0, c0, d0, a1, b1, c1, d1, tol):
    """Earliest t in [0, 1] at which the primitives are within tol [m]; NO_HIT (−1) if never.

    Args:
        kind: VERTEX_FACE or EDGE_EDGE.
        a0..d0, a1..d1: the four points at the start and end of the step (3-tuples, metres).
        tol: contact distance [m] (> 0: exact-zero tests fail in floating point, [Vo2006] §6.1).
    """
    tol2 = tol * tol
    k0, k1, k2, k3, size = cubic_coefficients(kind, a0, b0, c0, d0, a1, b1, c1, d1)
    flat = _FLAT * size * size * size
    if abs(k0) <= flat and abs(k1) <= flat and abs(k2) <= flat and abs(k3) <= flat:
        return _coplanar_motion_contact(kind, a0, b0, c0, d0, a1, b1, c1, d1, tol)
    c_lo, c_hi = _critical_points(k1, k2, k3)
    lo, flo = 0.0, k0
    if _near_plane(kind, 0.0, a0, b0, c0, d0, a1, b1, c1, d1, flo, tol) \
            and _touch(kind, 0.0, a0, b0, c0, d0, a1, b1, c1, d1, tol2):
        return 0.0
    for piece in range(3):
        hi = c_lo if piece == 0 else (c_hi if piece == 1 else 1.0)
        if hi > 1.0:
            continue
        fhi = _poly(k0, k1, k2, k3, hi)
        if (flo < 0.0 < fhi) or (fhi < 0.0 < flo):
            root = _bisect(k0, k1, k2, k3, lo, hi, flo)
            if _touch(kind, root, a0, b0, c0, d0, a1, b1, c1, d1, tol2):
                return root
        if (fhi == 0.0 or _near_plane(kind, hi, a0, b0, c0, d0, a1, b1, c1, d1, fhi, tol)) \
                and _touch(kind, hi, a0, b0, c0, d0, a1, b1, c1, d1, tol2):
            return hi
        lo, flo = hi, fhi
    return NO_HIT


@njit(fastmath=False)
def _coplanar_motion_contact(kind, a0, b0, c0, d0, a1, b1, c1, d1, tol):
    """First contact when the four points stay coplanar: sample the distance, refine."""
    tol2 = tol * tol
    prev_t = 0.0
    best_t, best_d = 0.0, np.inf
    for k in range(_SAMPLES + 1):
        t = k / _SAMPLES
        d2 = gap(kind, t, a0, b0, c0, d0, a1, b1, c1, d1)[0]
        if d2 <= tol2:
            if k == 0:
                return 0.0
            lo, hi = prev_t, t  # first crossing of the contact distance inside (lo, hi]
            for _ in range(_BISECTIONS):
                mid = 0.5 * (lo + hi)
                if mid <= lo or mid >= hi:
                    break
                if gap(kind, mid, a0, b0, c0, d0, a1, b1, c1, d1)[0] <= tol2:
                    hi = mid
                else:
                    lo = mid
            return hi
        if d2 < best_d:
            best_t, best_d = t, d2
        prev_t = t
    # no sample touched: the closest approach may fall between samples (golden section)
    lo = max(0.0, best_t - 1.0 / _SAMPLES)
    hi = min(1.0, best_t + 1.0 / _SAMPLES)
    g = 0.5 * (np.sqrt(5.0) - 1.0)
    m1, m2 = hi - g * (hi - lo), lo + g * (hi - lo)
    f1 = gap(kind, m1, a0, b0, c0, d0, a1, b1, c1, d1)[0]
    f2 = gap(kind, m2, a0, b0, c0, d0, a1, b1, c1, d1)[0]
    for _ in range(40):
        if f1 <= tol2:
            return m1
        if f2 <= tol2:
            return m2
        if f1 < f2:
            hi, m2, f2 = m2, m1, f1
            m1 = hi - g * (hi - lo)
            f1 = gap(kind, m1, a0, b0, c0, d0, a1, b1, c1, d1)[0]
        else:
            lo, m1, f1 = m1, m2, f2
            m2 = lo + g * (hi - lo)
            f2 = gap(kind, m2, a0, b0, c0, d0, a1, b1, c1, d1)[0]
    return NO_HIT


@njit(fastmath=False)
def contact_normal(kind, t, w0, w1, w2, w3, a0, b0, c0, d0, a1, b1, c1, d1, tol):
    """Unit normal of a contact at time t with closest-point weights w.

    The normal is the triangle's (VERTEX_FACE) or the two edges' cross product (EDGE_EDGE) at
    time t; for degenerate triangles or parallel edges, the direction between the closest
    points at the start, else against the relative motion. It is oriented so that the first
    primitive starts on its positive side. A pair that starts in that plane (within 1e-3·tol)
    moves in-plane: it gets the direction between its closest points at the start, or, if it
    starts touching, the normal against its relative motion.
    """
    x1, x2, _ = _frame(kind, _at(a0, a1, t), _at(b0, b1, t), _at(c0, c1, t), _at(d0, d1, t))
    n = cross(x1, x2)
    ln = norm(n)
    rel0 = add(add(scale(a0, w0), scale(b0, w1)), add(scale(c0, w2), scale(d0, w3)))
    rel1 = add(add(scale(a1, w0), scale(b1, w1)), add(scale(c1, w2), scale(d1, w3)))
    motion = sub(rel1, rel0)
    if ln <= 1e-12 * norm(x1) * norm(x2) or ln <= 1e-300:
        n = rel0
        ln = norm(n)
        if ln <= 1e-3 * tol:
            n = scale(motion, -1.0)
            ln = norm(n)
            if ln <= 1e-300:
                return 0.0, 0.0, 1.0
    n = scale(n, 1.0 / ln)
    s0 = dot(n, rel0)
    if abs(s0) > 1e-3 * tol:
        if s0 < 0.0:
            n = scale(n, -1.0)
        return n[0], n[1], n[2]
    l0 = norm(rel0)
    if l0 > 1e-3 * tol:  # started in the plane, apart: in-plane motion, separate in-plane
        return rel0[0] / l0, rel0[1] / l0, rel0[2] / l0
    if dot(n, motion) > 0.0:
        n = scale(n, -1.0)
    return n[0], n[1], n[2]


@njit(fastmath=False)
def first_contact(kind, a0, b0, c0, d0, a1, b1, c1, d1, tol):
    """first_contact_time with the contact's weights and normal.

    Returns:
        (t, w0, w1, w2, w3, nx, ny, nz); t = NO_HIT (−1) when the primitives never come within
        tol during the step.
    """
    t = first_contact_time(kind, a0, b0, c0, d0, a1, b1, c1, d1, tol)
    if t < 0.0:
        return NO_HIT, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    _, w0, w1, w2, w3 = gap(kind, t, a0, b0, c0, d0, a1, b1, c1, d1)
    nx, ny, nz = contact_normal(kind, t, w0, w1, w2, w3, a0, b0, c0, d0, a1, b1, c1, d1,
                                tol)
    return t, w0, w1, w2, w3, nx, ny, nz
