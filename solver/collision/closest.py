"""Closest points between a point and a triangle, and between two segments ([Ericson2005] §5.1.5
and §5.1.9 in docs/references.md), for the proximity and continuous tests.

Both handle degenerate input (zero-area triangles, zero-length or parallel segments) and return
weights rather than points, so a caller can spread an impulse over the primitive's vertices.
"""

from __future__ import annotations

from .._jit import njit
from .vector import dot, sub

# Relative size below which a triangle counts as degenerate (zero area) or two segments as
# parallel; the result is then taken from the edges, which is exact for those cases.
_DEGENERATE = 1e-14


@njit(inline="always")
def _clamp01(s):
    return 0.0 if s < 0.0 else (1.0 if s > 1.0 else s)


@njit(fastmath=False)
def segment_segment(p1, q1, p2, q2):
    """Closest points of segments p1q1 and p2q2 (3-tuples, metres).

    Returns:
        (squared distance [m²], s, t): the closest points are p1 + s·(q1 − p1) and
        p2 + t·(q2 − p2), s, t in [0, 1]. Parallel segments get a point of their overlap.
    """
    d1 = sub(q1, p1)
    d2 = sub(q2, p2)
    r = sub(p1, p2)
    a = dot(d1, d1)
    e = dot(d2, d2)
    f = dot(d2, r)
    if a <= 1e-300 and e <= 1e-300:
        s = 0.0
        t = 0.0
    elif a <= 1e-300:
        s = 0.0
        t = _clamp01(f / e)
    else:
        c = dot(d1, r)
        if e <= 1e-300:
            t = 0.0
            s = _clamp01(-c / a)
        else:
            b = dot(d1, d2)
            denom = a * e - b * b
            if denom > _DEGENERATE * a * e:
                s = _clamp01((b * f - c * e) / denom)
            else:
                # parallel: the middle of the overlap of p2q2's projection onto p1q1
                s0 = _clamp01(-c / a)
                s1 = _clamp01((b - c) / a)
                s = 0.5 * (s0 + s1)
            t = (b * s + f) / e
            if t < 0.0:
                t = 0.0
                s = _clamp01(-c / a)
            elif t > 1.0:
                t = 1.0
                s = _clamp01((b - c) / a)
    dx = p1[0] + s * d1[0] - p2[0] - t * d2[0]
    dy = p1[1] + s * d1[1] - p2[1] - t * d2[1]
    dz = p1[2] + s * d1[2] - p2[2] - t * d2[2]
    return dx * dx + dy * dy + dz * dz, s, t


@njit(fastmath=False)
def point_triangle(p, a, b, c):
    """Closest point of triangle abc to p (3-tuples, metres).

    Returns:
        (squared distance [m²], wa, wb, wc): the closest point is wa·a + wb·b + wc·c with
        barycentric weights wa + wb + wc = 1, all >= 0.
    """
    ab = sub(b, a)
    ac = sub(c, a)
    ap = sub(p, a)
    d1 = dot(ab, ap)
    d2 = dot(ac, ap)
    wa, wb, wc = 1.0, 0.0, 0.0
    done = False
    if d1 <= 0.0 and d2 <= 0.0:
        done = True  # vertex region a
    if not done:
        bp = sub(p, b)
        d3 = dot(ab, bp)
        d4 = dot(ac, bp)
        if d3 >= 0.0 and d4 <= d3:
            wa, wb, wc = 0.0, 1.0, 0.0
            done = True
        if not done:
            vc = d1 * d4 - d3 * d2
            if vc <= 0.0 and d1 >= 0.0 and d3 <= 0.0 and d1 - d3 > 0.0:
                v = d1 / (d1 - d3)  # edge ab
                wa, wb, wc = 1.0 - v, v, 0.0
                done = True
            if not done:
                cp = sub(p, c)
                d5 = dot(ab, cp)
                d6 = dot(ac, cp)
                if d6 >= 0.0 and d5 <= d6:
                    wa, wb, wc = 0.0, 0.0, 1.0
                    done = True
                if not done:
                    vb = d5 * d2 - d1 * d6
                    if vb <= 0.0 and d2 >= 0.0 and d6 <= 0.0 and d2 - d6 > 0.0:
                        w = d2 / (d2 - d6)  # edge ac
                        wa, wb, wc = 1.0 - w, 0.0, w
                        done = True
                    if not done:
                        va = d3 * d6 - d5 * d4
                        e1 = d4 - d3
                        e2 = d5 - d6
                        if va <= 0.0 and e1 >= 0.0 and e2 >= 0.0 and e1 + e2 > 0.0:
                            w = e1 / (e1 + e2)  # edge bc
                            wa, wb, wc = 0.0, 1.0 - w, w
                            done = True
                        if not done:
                            area2 = va + vb + vc
                            n2 = dot(ab, ab) * dot(ac, ac)
                            if area2 > _DEGENERATE * n2 and area2 > 0.0:
                                wb = vb / area2  # face interior
                                wc = vc / area2
                                wa = 1.0 - wb - wc
                            else:
                                return _degenerate_point_triangle(p, a, b, c)
    dx = p[0] - (wa * a[0] + wb * b[0] + wc * c[0])
    dy = p[1] - (wa * a[1] + wb * b[1] + wc * c[1])
    dz = p[2] - (wa * a[2] + wb * b[2] + wc * c[2])
    return dx * dx + dy * dy + dz * dz, wa, wb, wc


@njit(fastmath=False)
def _degenerate_point_triangle(p, a, b, c):
    """Closest point of a zero-area triangle: the best of its three edges."""
    d, _, t = segment_segment(p, p, a, b)
    best, wa, wb, wc = d, 1.0 - t, t, 0.0
    d, _, t = segment_segment(p, p, b, c)
    if d < best:
        best, wa, wb, wc = d, 0.0, 1.0 - t, t
    d, _, t = segment_segment(p, p, a, c)
    if d < best:
        best, wa, wb, wc = d, 1.0 - t, 0.0, t
    return best, wa, wb, wc
