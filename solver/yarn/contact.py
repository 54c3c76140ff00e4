"""Yarn–yarn contact: Kaldor's penalty energy and damping between sampled segments, and the
clearance check of the step ([Kaldor2011] §4.2.2–4.2.3, eq. 4.7, 4.8, 4.10).

Candidate segment pairs come from the shared bounding-box tree (solver/collision/bvh.py): a
segment (a, b) is stored as the degenerate triangle (a, b, b), its box grown by the yarn radius,
so two boxes overlap whenever the segments may be closer than a diameter.

Pairs of segments of the same yarn that are near each other along it never count as a contact:
a straight or gently bent yarn is always within a diameter of itself there. ``neighbours``
excludes pairs whose arc-length gap (between their nearest ends, in rest length) is below
``NEIGHBOUR_GAP`` yarn diameters; every other pair is a "non-neighbouring" pair, the ones whose
clearance the step guarantees and the tests check.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit, prange
from ..collision.bvh import TriangleTree
from ..collision.closest import segment_segment
from ..collision.vector import load

# Arc-length gap, in yarn diameters, below which two segments of one yarn are neighbours. A
# yarn bent back on itself with a bend radius of one yarn radius (tighter than any knit loop)
# touches itself after π/2 diameters of arc, so 2 diameters excludes no real contact.
NEIGHBOUR_GAP = 2.0


@njit
def _penalty(d):
    """f(d) = 1/d² + d² − 2 and f′(d) for d = distance / diameter < 1 (eq. 4.8)."""
    d2 = d * d
    return 1.0 / d2 + d2 - 2.0, -2.0 / (d2 * d) + 2.0 * d


@njit
def _excluded(i, j, seg_yarn, seg_arc, seg_len, gap):
    """True if segments i and j belong to one yarn and are within ``gap`` [m] along it."""
    if seg_yarn[i] != seg_yarn[j]:
        return False
    if seg_arc[i] <= seg_arc[j]:
        between = seg_arc[j] - (seg_arc[i] + seg_len[i])
    else:
        between = seg_arc[i] - (seg_arc[j] + seg_len[j])
    return between < gap


@njit
def contact_forces(x, v, seg, seg_len, seg_yarn, seg_arc, pairs, radius, k_contact, k_dn,
                   k_dt, n_quad, force, stiffness):
    """Add the contact penalty and damping forces of candidate segment pairs to ``force``.

    Each segment is sampled at n_quad midpoints (weight 1/n_quad); a sample pair closer than a
    diameter 2r gets E = k_contact·ℓi·ℓj·w·f(dist/2r) (eq. 4.7) and the damping of eq. 4.10,
    −2·ℓi·ℓj·w·(k_dt·Δv + (k_dn − k_dt)(n̂·Δv)n̂) on the second sample (opposite on the first).

    Args:
        x, v: positions [m] and velocities [m/s] (P, 3).
        seg: (S, 2) point indices; seg_len: rest lengths ℓ [m] (S,); seg_yarn (S,) yarn index;
            seg_arc (S,) arc length [m] along its yarn where the segment starts.
        pairs: (K, 2) candidate segment pairs.
        radius: r [m]; k_contact [N/m]; k_dn, k_dt [kg/(m²·s)]; n_quad samples per segment.
        force: (P, 3) [N], added to.
        stiffness: (P,) [N/m], added to: each point's share of the penalty's stiffness along the
            contact normal, k·ℓi·ℓj·w·f″(d)/(2r)² with f″ = 6/d⁴ + 2, for the stable step.

    Returns:
        (energy [J], number of sample pairs in contact, smallest d = dist/2r seen (1 if none)).
    """
    diameter = 2.0 * radius
    gap = NEIGHBOUR_GAP * diameter
    w = 1.0 / (n_quad * n_quad)
    energy = 0.0
    touching = 0
    d_min = 1.0
    for k in range(pairs.shape[0]):
        i = pairs[k, 0]
        j = pairs[k, 1]
        if _excluded(i, j, seg_yarn, seg_arc, seg_len, gap):
            continue
        a0, a1 = seg[i, 0], seg[i, 1]
        b0, b1 = seg[j, 0], seg[j, 1]
        scale = seg_len[i] * seg_len[j] * w
        for qa in range(n_quad):
            s = (qa + 0.5) / n_quad
            for qb in range(n_quad):
                t = (qb + 0.5) / n_quad
                dx = (1 - t) * x[b0, 0] + t * x[b1, 0] - (1 - s) * x[a0, 0] - s * x[a1, 0]
                dy = (1 - t) * x[b0, 1] + t * x[b1, 1] - (1 - s) * x[a0, 1] - s * x[a1, 1]
                dz = (1 - t) * x[b0, 2] + t * x[b1, 2] - (1 - s) * x[a0, 2] - s * x[a1, 2]
                dist = np.sqrt(dx * dx + dy * dy + dz * dz)
                if dist >= diameter or dist <= 1e-12 * diameter:
                    continue
                d = dist / diameter
                f, fp = _penalty(d)
                energy += k_contact * scale * f
                touching += 1
                d_min = min(d_min, d)
                kk = k_contact * scale * (6.0 / (d * d * d * d) + 2.0) / (diameter * diameter)
                stiffness[a0] += (1 - s) * kk
                stiffness[a1] += s * kk
                stiffness[b0] += (1 - t) * kk
                stiffness[b1] += t * kk
                nx, ny, nz = dx / dist, dy / dist, dz / dist
                # −dE/d(dist): positive pushes the second sample away from the first
                push = -k_contact * scale * fp / diameter
                uvx = (1 - t) * v[b0, 0] + t * v[b1, 0] - (1 - s) * v[a0, 0] - s * v[a1, 0]
                uvy = (1 - t) * v[b0, 1] + t * v[b1, 1] - (1 - s) * v[a0, 1] - s * v[a1, 1]
                uvz = (1 - t) * v[b0, 2] + t * v[b1, 2] - (1 - s) * v[a0, 2] - s * v[a1, 2]
                vn = nx * uvx + ny * uvy + nz * uvz
                c = 2.0 * scale
                fx = push * nx - c * (k_dt * uvx + (k_dn - k_dt) * vn * nx)
                fy = push * ny - c * (k_dt * uvy + (k_dn - k_dt) * vn * ny)
                fz = push * nz - c * (k_dt * uvz + (k_dn - k_dt) * vn * nz)
                force[b0, 0] += (1 - t) * fx
                force[b0, 1] += (1 - t) * fy
                force[b0, 2] += (1 - t) * fz
                force[b1, 0] += t * fx
                force[b1, 1] += t * fy
                force[b1, 2] += t * fz
                force[a0, 0] -= (1 - s) * fx
                force[a0, 1] -= (1 - s) * fy
                force[a0, 2] -= (1 - s) * fz
                force[a1, 0] -= s * fx
                force[a1, 1] -= s * fy
                force[a1, 2] -= s * fz
    return energy, touching, d_min


@njit(parallel=True)
def _samples(x, v, seg, n_quad, xs, vs):
    """Positions xs and velocities vs (S, n_quad, 3) of every segment's contact samples (its
    n_quad midpoints), computed once per pass instead of once per sample pair."""
    for k in prange(seg.shape[0]):
        a, b = seg[k, 0], seg[k, 1]
        for q in range(n_quad):
            s = (q + 0.5) / n_quad
            for r in range(3):
                xs[k, q, r] = (1 - s) * x[a, r] + s * x[b, r]
                vs[k, q, r] = (1 - s) * v[a, r] + s * v[b, r]


@njit(parallel=True)
def segment_motion(x, x0, seg, centre, motion):
    """How each segment has moved from x0 to x (P, 3) [m], for ``approach``: motion (S, 5)
    [m] holds its first point's displacement u_k (3), the largest distance of its points'
    displacements from u_k, and from the common displacement ``centre`` (3,)."""
    for k in prange(seg.shape[0]):
        a = seg[k, 0]
        b = seg[k, 1]
        du = 0.0
        ea = 0.0
        eb = 0.0
        for r in range(3):
            ua = x[a, r] - x0[a, r]
            ub = x[b, r] - x0[b, r]
            motion[k, r] = ua
            du += (ub - ua) * (ub - ua)
            ea += (ua - centre[r]) * (ua - centre[r])
            eb += (ub - centre[r]) * (ub - centre[r])
        motion[k, 3] = np.sqrt(du)
        motion[k, 4] = np.sqrt(max(ea, eb))


@njit(inline="always")
def approach(motion, i, j):
    """The most [m] segments i and j can have come closer since their motion (segment_motion)
    began: the distance of two segments changes by at most the largest displacement of their
    points from any common one, taken as the common centre's or segment i's first point's."""
    dx = motion[j, 0] - motion[i, 0]
    dy = motion[j, 1] - motion[i, 1]
    dz = motion[j, 2] - motion[i, 2]
    own = motion[i, 3] + motion[j, 3] + np.sqrt(dx * dx + dy * dy + dz * dz)
    return min(own, motion[i, 4] + motion[j, 4])


# The normal force friction takes from a sample pair is the penalty's push, but at most the push
# at this distance (in diameters): pressed closer, two yarns grip no harder. Without the cap,
# friction held yarns in the spot where the contact pressed them hardest, where the grip that
# holds them grows with the press, and a hanging rib's loops pinched shut within a second.
GRIP_DEPTH = 0.6
# −f′(GRIP_DEPTH), the cap on −f′ (d³ as a product, the value numba's d ** 3 gives in a kernel)
GRIP_PUSH = 2.0 / (GRIP_DEPTH * GRIP_DEPTH * GRIP_DEPTH) - 2.0 * GRIP_DEPTH

# Fixed pieces of the candidate list a contact pass works through in parallel, each summing
# into its own force buffer: the sums, hence the results, are the same at every thread count.
# More pieces balance the threads better but cost a buffer of (P, 4) each to clear and add.
PASS_CHUNKS = 8


@njit(parallel=True)
def _measure_skipped(x, seg, seg_len, seg_yarn, seg_arc, pairs, reach, diameter, margin,
                     closest_measured, size, c_best):
    """contact_pass's second look: the exact distance of every pair whose distance may be
    below ``closest_measured`` [m] (reach + margin, the bounds at x), folded into each piece's
    c_best (squared)."""
    gap = NEIGHBOUR_GAP * diameter
    K = pairs.shape[0]
    for c in prange(c_best.shape[0]):
        best = c_best[c]
        for k in range(c * size, min(K, (c + 1) * size)):
            i = pairs[k, 0]
            j = pairs[k, 1]
            if reach[k] + margin[k] < closest_measured and \
                    not _excluded(i, j, seg_yarn, seg_arc, seg_len, gap):
                d2, _, _ = segment_segment(load(x, seg[i, 0]), load(x, seg[i, 1]),
                                           load(x, seg[j, 0]), load(x, seg[j, 1]))
                best = min(best, d2)
        c_best[c] = best


@njit(inline="always")
def _closest_direction(x, a0, a1, b0, b1, cs, ct):
    """Unit vector (3 floats) from segment (a0, a1)'s point at parameter cs to segment (b0, b1)'s
    at ct, positions x (P, 3) [m]: the direction onto which a pair's grip is summed (zero if the
    points coincide)."""
    mx = (1 - ct) * x[b0, 0] + ct * x[b1, 0] - (1 - cs) * x[a0, 0] - cs * x[a1, 0]
    my = (1 - ct) * x[b0, 1] + ct * x[b1, 1] - (1 - cs) * x[a0, 1] - cs * x[a1, 1]
    mz = (1 - ct) * x[b0, 2] + ct * x[b1, 2] - (1 - cs) * x[a0, 2] - cs * x[a1, 2]
    ml = np.sqrt(mx * mx + my * my + mz * mz)
    if ml > 0.0:
        mx, my, mz = mx / ml, my / ml, mz / ml
    return mx, my, mz


@njit(inline="always")
def _penalty_terms(dd, dia, inv_dia):
    """The penalty of eq. 4.8 at a sample pair dd = dist² [m²] apart, in contact distance dia
    [m] (inv_dia = 1/dia), from one root and one division (_penalty's values, to rounding).

    Returns:
        (1/dist [1/m], d = dist/dia, f(d) = 1/d² + d² − 2, f″(d) = 6/d⁴ + 2, f′(d) = −2/d³ + 2d),
        all but the first dimensionless.
    """
    dist = np.sqrt(dd)
    inv = 1.0 / dist
    d = dist * inv_dia
    id1 = dia * inv
    id2 = id1 * id1
    return inv, d, id2 + d * d - 2.0, 6.0 * id2 * id2 + 2.0, -2.0 * id2 * id1 + 2.0 * d


@njit(inline="always")
def _sample_force(nx, ny, nz, push, uvx, uvy, uvz, c_t, c_n):
    """The force (fx, fy, fz) [N] on the second sample of a touching sample pair: the
    penalty's ``push`` [N] along the unit normal n (from the first sample to the second) and the
    damping of eq. 4.10, −c_t·Δv − c_n·(n·Δv)·n, with Δv = (uvx, uvy, uvz) [m/s] the second
    sample's velocity relative to the first and c_t, c_n [N·s/m]."""
    vn = c_n * (nx * uvx + ny * uvy + nz * uvz)
    return (push * nx - c_t * uvx - vn * nx, push * ny - c_t * uvy - vn * ny,
            push * nz - c_t * uvz - vn * nz)


@njit(inline="always")
def _pair_samples(xs, vs, i, j, n_quad, dia, push_scale, grip, c_t, c_n, mx, my, mz,
                  moments):
    """The contact of segments i and j's sample pairs closer than their contact distance ``dia``.

    Args:
        xs, vs: sample positions [m] and velocities [m/s] (S, n_quad, 3) (``_samples``).
        push_scale: k·ℓi·ℓj·w/dia [N], the penalty's push per unit of −f′(d); grip: the most
            −f′(d) the grip takes from one sample pair (GRIP_PUSH).
        c_t = 2·ℓi·ℓj·w·k_dt, c_n = 2·ℓi·ℓj·w·(k_dn − k_dt) [N·s/m] (eq. 4.10).
        (mx, my, mz): unit direction of the segments' closest points.
        moments: only whether it is None matters: None leaves the second moments 0.

    Returns:
        ((f, s·f, t·f): the sums over the touching samples of the force f [N] on the second
        segment's sample and of its shares s·f, t·f of the segments' second ends (3 floats
        each), (the same sums of f″(d) weighted by 1, s, t, s², t², s·t), Σf(d), the grip [N]
        (the pushes, each capped, along (mx, my, mz)), touching samples, least d = dist/dia
        (1 if none)).
    """
    d2pair = dia * dia
    inv_dia = 1.0 / dia
    ftx = fty = ftz = fsx = fsy = fsz = fbx = fby = fbz = 0.0
    kt = ks = kb = kss = ktt = kst = 0.0
    e_pair = f_normal = 0.0
    touching = 0
    d_low = 1.0
    for qa in range(n_quad):
        s = (qa + 0.5) / n_quad
        for qb in range(n_quad):
            dx = xs[j, qb, 0] - xs[i, qa, 0]
            dy = xs[j, qb, 1] - xs[i, qa, 1]
            dz = xs[j, qb, 2] - xs[i, qa, 2]
            dd = dx * dx + dy * dy + dz * dz
            if dd >= d2pair or dd <= 1e-24 * d2pair:
                continue
            t = (qb + 0.5) / n_quad
            inv, d, f, kk, fp = _penalty_terms(dd, dia, inv_dia)
            e_pair += f
            touching += 1
            d_low = min(d_low, d)
            kt += kk
            ks += s * kk
            kb += t * kk
            if moments is not None:
                kss += s * s * kk
                ktt += t * t * kk
                kst += s * t * kk
            nx, ny, nz = dx * inv, dy * inv, dz * inv
            push = -push_scale * fp     # −dE/d(dist) > 0 pushes the second sample away
            f_normal += min(push, push_scale * grip) * (nx * mx + ny * my + nz * mz)
            fx, fy, fz = _sample_force(nx, ny, nz, push, vs[j, qb, 0] - vs[i, qa, 0],
                                       vs[j, qb, 1] - vs[i, qa, 1], vs[j, qb, 2] - vs[i, qa, 2],
                                       c_t, c_n)
            ftx += fx
            fty += fy
            ftz += fz
            fsx += s * fx
            fsy += s * fy
            fsz += s * fz
            fbx += t * fx
            fby += t * fy
            fbz += t * fz
    return ((ftx, fty, ftz, fsx, fsy, fsz, fbx, fby, fbz), (kt, ks, kb, kss, ktt, kst), e_pair,
            f_normal, touching, d_low)


@njit(inline="always")
def _add_shares(buf, a0, a1, b0, b1, f, kq, kscale):
    """Add a pair's force shares [N] and stiffness shares [N/m] to a piece's buffer (P, 4).

    ``f`` and ``kq`` are _pair_samples' sums: the second segment's samples take f, its second
    end t·f and its first f − t·f; the first segment's the opposite, by s; the stiffness shares
    follow the same weights times kscale = k·ℓi·ℓj·w/dia² [N/m]."""
    ftx, fty, ftz, fsx, fsy, fsz, fbx, fby, fbz = f
    kt, ks, kb = kq[0], kq[1], kq[2]
    buf[a0, 0] += fsx - ftx
    buf[a0, 1] += fsy - fty
    buf[a0, 2] += fsz - ftz
    buf[a0, 3] += (kt - ks) * kscale
    buf[a1, 0] -= fsx
    buf[a1, 1] -= fsy
    buf[a1, 2] -= fsz
    buf[a1, 3] += ks * kscale
    buf[b0, 0] += ftx - fbx
    buf[b0, 1] += fty - fby
    buf[b0, 2] += ftz - fbz
    buf[b0, 3] += (kt - kb) * kscale
    buf[b1, 0] += fbx
    buf[b1, 1] += fby
    buf[b1, 2] += fbz
    buf[b1, 3] += kb * kscale


@njit(inline="always")
def _touching_pair(x, xs, vs, seg, seg_len, k, i, j, cs, ct, dia, k_contact, k_dn, k_dt,
                   n_quad, w, buf, normal_force, moments):
    """The contact of pair k (segments i, j, closest points at parameters cs, ct, closer than
    its contact distance ``dia`` [m]; w = 1/n_quad², a sample pair's weight; other arguments as
    contact_pass): its forces and stiffness shares added to the piece's buf (P, 4), its grip
    written to normal_force[k] [N] and, unless moments is None, its stiffness moments to
    moments[k] (6,) [N/m].

    Returns:
        (energy [J], touching sample pairs, least d = dist/dia of its samples (1 if none)).
    """
    a0, a1, b0, b1 = seg[i, 0], seg[i, 1], seg[j, 0], seg[j, 1]
    mx, my, mz = _closest_direction(x, a0, a1, b0, b1, cs, ct)
    scale = seg_len[i] * seg_len[j] * w
    push_scale = k_contact * scale * (1.0 / dia)
    f, kq, e_pair, f_normal, touching, d_low = _pair_samples(
        xs, vs, i, j, n_quad, dia, push_scale, GRIP_PUSH, 2.0 * scale * k_dt,
        2.0 * scale * (k_dn - k_dt), mx, my, mz, moments)
    if touching == 0:
        return 0.0, 0, 1.0
    kscale = k_contact * scale / (dia * dia)
    if moments is not None:
        for r in range(6):
            moments[k, r] = kq[r] * kscale
    normal_force[k] = f_normal
    _add_shares(buf, a0, a1, b0, b1, f, kq, kscale)
    return k_contact * scale * e_pair, touching, d_low


# Not inlined: inside contact_pass's parallel loop its callees' returned tuples failed numba's
# array analysis (an AssertionError, numba 0.68); one call per piece costs nothing measurable.
@njit
def _contact_piece(x, xs, vs, seg, seg_len, seg_yarn, seg_arc, pairs, reach, start, stop,
                   diameter, k_contact, k_dn, k_dt, n_quad, buf, normal_force, closest,
                   moments, margin, motion):
    """contact_pass over the pairs start:stop in order, adding into the piece's buf (P, 4).

    With ``motion`` (Kaldor's scheduler, [Kaldor2011] §6.3.1), a pair whose distance bound
    margin[k] − approach(motion, i, j) stays positive cannot touch: it is skipped without its
    distance, margin[k] keeps that bound, and the least distance it can have (reach + bound, if
    under a diameter) is remembered for contact_pass's second look. Every pair measured gets
    margin[k] = its distance − reach[k].

    Returns:
        (energy [J], touching sample pairs, least d = dist/reach (1 if none), least squared
        distance measured [m²] (diameter² if none closer), least distance [m] a skipped
        non-neighbour pair can have within a diameter (inf if none)).
    """
    gap = NEIGHBOUR_GAP * diameter
    w = 1.0 / (n_quad * n_quad)    # a sample pair's weight
    energy = 0.0
    touching = 0
    d_low = 1.0
    best = diameter * diameter
    low = np.inf
    for k in range(start, stop):
        i = pairs[k, 0]
        j = pairs[k, 1]
        normal_force[k] = 0.0
        if moments is not None:
            moments[k, 0] = 0.0
        if motion is not None:
            bound = margin[k] - approach(motion, i, j)
            if bound > 0.0:
                margin[k] = bound
                lowest = reach[k] + bound     # the least distance it can have [m]
                if lowest < low and lowest < diameter and \
                        not _excluded(i, j, seg_yarn, seg_arc, seg_len, gap):
                    low = lowest
                continue
        if _excluded(i, j, seg_yarn, seg_arc, seg_len, gap):
            continue
        d2, cs, ct = segment_segment(load(x, seg[i, 0]), load(x, seg[i, 1]),
                                     load(x, seg[j, 0]), load(x, seg[j, 1]))
        if motion is not None:
            margin[k] = np.sqrt(d2) - reach[k]
        closest[k, 0] = cs
        closest[k, 1] = ct
        if d2 >= diameter * diameter:
            continue
        best = min(best, d2)
        if d2 >= reach[k] * reach[k]:
            continue
        e, n, d = _touching_pair(x, xs, vs, seg, seg_len, k, i, j, cs, ct, reach[k], k_contact,
                                 k_dn, k_dt, n_quad, w, buf, normal_force, moments)
        energy += e
        touching += n
        d_low = min(d_low, d)
    return energy, touching, d_low, best, low


@njit(parallel=True)
def contact_pass(x, v, seg, seg_len, seg_yarn, seg_arc, pairs, reach, radius, k_contact, k_dn,
                 k_dt, n_quad, force, stiffness, normal_force, closest, moments, margin=None,
                 motion=None):
    """``contact_forces`` and ``min_clearance`` in one pass over the candidate pairs, in
    ``PASS_CHUNKS`` fixed pieces in parallel (_contact_piece), each adding into a buffer of its
    own, the buffers then added in piece order: the result is the same at every thread count.
    A pair's exact segment distance is the clearance and rejects it before sampling when it is
    a diameter or more; samples are interpolated once per segment (_samples).

    Arguments and units as ``contact_forces``, except that pair k touches within its own
    contact distance reach[k] [m] (RestContacts.reach: 2r, or less for a pair pressed together
    at rest): a sample pair's penalty is f(dist/reach), its stiffness scales as 1/reach². Also
    written per pair: ``normal_force`` (K,) [N], the grip for ``apply_friction`` (the pushes,
    each at most its value at GRIP_DEPTH, along the closest points' direction; 0 if it does
    not touch); ``closest`` (K, 2), the closest points' segment parameters (s, t) of every pair
    measured (every touching one is); ``moments`` (K, 6) [N/m] or None (not computed), for
    stability.contact_springs: over the touching samples, Σ k_q·(1, s, t, s², t², s·t) with
    k_q = k·ℓi·ℓj·w·f″(d)/reach² (only column 0 is written, as 0, where it does not touch).

    Kaldor's scheduler if ``margin`` (K,) [m] is given: a lower bound of each pair's distance
    less its reach where ``motion`` (S, 5) starts (segment_motion; at the pair search, the
    distance near_pairs found less the reach); pairs it proves apart are skipped
    (_contact_piece) and it is updated in place to a bound at x. The clearance stays exact:
    a skipped pair whose bound is below the closest distance measured is measured afterwards.

    Returns:
        (energy [J], sample pairs in contact, smallest d = dist/reach of the samples (1 if
        none), clearance [m]: smallest non-neighbour segment distance, 2r if none is closer).
    """
    diameter = 2.0 * radius
    S = seg.shape[0]
    xs = np.empty((S, n_quad, 3))
    vs = np.empty((S, n_quad, 3))
    _samples(x, v, seg, n_quad, xs, vs)
    K = pairs.shape[0]
    C = PASS_CHUNKS
    size = (K + C - 1) // C
    buf = np.zeros((C, x.shape[0], 4))     # per piece: force (3) [N] and stiffness share [N/m]
    c_energy = np.zeros(C)
    c_touch = np.zeros(C, np.int64)
    c_dmin = np.ones(C)
    c_best = np.full(C, diameter * diameter)
    c_low = np.full(C, np.inf)
    for c in prange(C):
        c_energy[c], c_touch[c], c_dmin[c], c_best[c], c_low[c] = _contact_piece(
            x, xs, vs, seg, seg_len, seg_yarn, seg_arc, pairs, reach, c * size,
            min(K, (c + 1) * size), diameter, k_contact, k_dn, k_dt, n_quad, buf[c],
            normal_force, closest, moments, margin, motion)
    closest_measured = np.sqrt(c_best.min())
    if motion is not None and c_low.min() < closest_measured:
        _measure_skipped(x, seg, seg_len, seg_yarn, seg_arc, pairs, reach, diameter, margin,
                         closest_measured, size, c_best)
    for p in prange(x.shape[0]):    # point by point in piece order: the same sums at any threads
        for c in range(C):
            for r in range(3):
                force[p, r] += buf[c, p, r]
            stiffness[p] += buf[c, p, 3]
    energy = 0.0
    touching = 0
    d_min = 1.0
    best = diameter * diameter
    for c in range(C):     # in piece order: the same sums at every thread count
        energy += c_energy[c]
        touching += c_touch[c]
        d_min = min(d_min, c_dmin[c])
        best = min(best, c_best[c])
    return energy, touching, d_min, np.sqrt(best)


@njit
def apply_friction(x, xn, inv_mass, seg, pairs, normal_force, closest, h, mu):
    """Coulomb friction between touching yarn segments over one step, in place on the end
    positions xn (P, 3) [m] (a position-level correction, as for colliders, with
    [Kaldor2011]'s remark that yarn friction is what his velocity filter stands in for).

    For each touching pair (``normal_force`` > 0, from ``contact_pass`` at the step's start
    x), the motion of its closest points relative to each other over the step, x → xn, is
    split along the closest points' direction at x; its tangential part d_t would need an
    impulse |d_t|/(h·W) to stop (W: the pair's inverse mass at those points), and friction
    gives at most μ·h·f_n: the whole of d_t is removed (sticking) or that fraction of it
    (sliding), spread over the four points by their weights and inverse masses, so momentum
    is kept. Pairs are taken in order, one after another (the result is the same at every
    thread count). Returns the number of pairs that stuck."""
    stuck = 0
    n = np.empty(3)
    r = np.empty(3)
    for k in range(pairs.shape[0]):
        fn = normal_force[k]
        if fn <= 0.0:
            continue
        i = pairs[k, 0]
        j = pairs[k, 1]
        a0, a1, b0, b1 = seg[i, 0], seg[i, 1], seg[j, 0], seg[j, 1]
        s = closest[k, 0]
        t = closest[k, 1]
        wa0, wa1, wb0, wb1 = 1.0 - s, s, 1.0 - t, t
        W = (wa0 * wa0 * inv_mass[a0] + wa1 * wa1 * inv_mass[a1]
             + wb0 * wb0 * inv_mass[b0] + wb1 * wb1 * inv_mass[b1])
        if W <= 0.0:
            continue
        for c in range(3):
            n[c] = (wb0 * x[b0, c] + wb1 * x[b1, c]) - (wa0 * x[a0, c] + wa1 * x[a1, c])
            r[c] = (wb0 * (xn[b0, c] - x[b0, c]) + wb1 * (xn[b1, c] - x[b1, c])
                    - wa0 * (xn[a0, c] - x[a0, c]) - wa1 * (xn[a1, c] - x[a1, c]))
        nl = np.sqrt(n[0] * n[0] + n[1] * n[1] + n[2] * n[2])
        if nl <= 0.0:
            continue
        rn = (r[0] * n[0] + r[1] * n[1] + r[2] * n[2]) / (nl * nl)
        for c in range(3):
            r[c] -= rn * n[c]
        rt = np.sqrt(r[0] * r[0] + r[1] * r[1] + r[2] * r[2])
        if rt <= 0.0:
            continue
        frac = mu * h * fn * h * W / rt
        if frac >= 1.0:
            frac = 1.0
            stuck += 1
        for c in range(3):
            d = frac * r[c] / W
            xn[a0, c] += wa0 * inv_mass[a0] * d
            xn[a1, c] += wa1 * inv_mass[a1] * d
            xn[b0, c] -= wb0 * inv_mass[b0] * d
            xn[b1, c] -= wb1 * inv_mass[b1] * d
    return stuck


@njit(inline="always")
def _length(x, seg, i):
    """Length [m] of segment i at x."""
    a, b = seg[i, 0], seg[i, 1]
    return np.sqrt((x[b, 0] - x[a, 0]) ** 2 + (x[b, 1] - x[a, 1]) ** 2
                   + (x[b, 2] - x[a, 2]) ** 2)


@njit(parallel=True)
def near_pairs(x, seg, seg_len, seg_yarn, seg_arc, pairs, diameter, limit):
    """The candidate pairs (K, 2) that can touch before the next search, with their distances:
    those of non-neighbouring segments (of different yarns, or ``NEIGHBOUR_GAP`` diameters or
    more apart along one, which never count as a contact) whose exact segment–segment
    distance at x is below ``limit`` [m]. In a knit the tree's boxes (grown by r + margin)
    hand over many pairs farther apart and many neighbours (docs/yarn.md, "Speed"); the
    contact passes until the next search visit only what is kept.

    Returns:
        (kept pairs (N, 2) in their order in ``pairs``, their distances (N,) [m] at x).
    """
    K = pairs.shape[0]
    gap = NEIGHBOUR_GAP * diameter
    dist = np.empty(K)
    for k in prange(K):
        i = pairs[k, 0]
        j = pairs[k, 1]
        if _excluded(i, j, seg_yarn, seg_arc, seg_len, gap):
            dist[k] = np.inf
            continue
        # the midpoints' distance less the half lengths is a lower bound of the segments'
        # distance, and a cheap one: it rejects most of the far pairs
        dx = x[seg[j, 0], 0] + x[seg[j, 1], 0] - x[seg[i, 0], 0] - x[seg[i, 1], 0]
        dy = x[seg[j, 0], 1] + x[seg[j, 1], 1] - x[seg[i, 0], 1] - x[seg[i, 1], 1]
        dz = x[seg[j, 0], 2] + x[seg[j, 1], 2] - x[seg[i, 0], 2] - x[seg[i, 1], 2]
        reach = 2.0 * limit + _length(x, seg, i) + _length(x, seg, j)
        if dx * dx + dy * dy + dz * dz >= reach * reach:
            dist[k] = np.inf
            continue
        d2, _, _ = segment_segment(load(x, seg[i, 0]), load(x, seg[i, 1]),
                                   load(x, seg[j, 0]), load(x, seg[j, 1]))
        dist[k] = np.sqrt(d2)
    # compacted in fixed chunks (counted, then filled, in parallel): the same order at every
    # thread count
    chunks = 64
    size = (K + chunks - 1) // chunks
    count = np.zeros(chunks + 1, np.int64)
    for c in prange(chunks):
        n = 0
        for k in range(c * size, min(K, (c + 1) * size)):
            if dist[k] < limit:
                n += 1
        count[c + 1] = n
    for c in range(chunks):
        count[c + 1] += count[c]
    kept = np.empty((count[chunks], 2), pairs.dtype)
    kept_at = np.empty(count[chunks])
    for c in prange(chunks):
        n = count[c]
        for k in range(c * size, min(K, (c + 1) * size)):
            if dist[k] < limit:
                kept[n, 0] = pairs[k, 0]
                kept[n, 1] = pairs[k, 1]
                kept_at[n] = dist[k]
                n += 1
    return kept, kept_at


@njit
def closest_pair(x, seg, seg_len, seg_yarn, seg_arc, pairs, diameter):
    """The closest non-neighbouring pair among candidate pairs (exact segment–segment
    distance): (its row in pairs, its distance [m]); (−1, ``diameter``) if none is closer."""
    gap = NEIGHBOUR_GAP * diameter
    best = diameter * diameter
    at = -1
    for k in range(pairs.shape[0]):
        i = pairs[k, 0]
        j = pairs[k, 1]
        if _excluded(i, j, seg_yarn, seg_arc, seg_len, gap):
            continue
        d2, _, _ = segment_segment(load(x, seg[i, 0]), load(x, seg[i, 1]),
                                   load(x, seg[j, 0]), load(x, seg[j, 1]))
        if d2 < best:
            best, at = d2, k
    return at, np.sqrt(best)


@njit
def min_clearance(x, seg, seg_len, seg_yarn, seg_arc, pairs, diameter):
    """Smallest distance [m] between non-neighbouring segments among candidate pairs (exact
    segment–segment distance); ``diameter`` if no pair is closer than that."""
    return closest_pair(x, seg, seg_len, seg_yarn, seg_arc, pairs, diameter)[1]


def pair_keys(pairs: np.ndarray, n_segments: int) -> np.ndarray:
    """(K,) int64 key of each segment pair (K, 2), the same for (i, j) and (j, i)."""
    lo = np.minimum(pairs[:, 0], pairs[:, 1]).astype(np.int64)
    hi = np.maximum(pairs[:, 0], pairs[:, 1]).astype(np.int64)
    return lo * n_segments + hi


class RestContacts:
    """The yarns' contact in the rest state: the non-neighbouring segment pairs closer than a
    diameter there (sorted keys, pair_keys) and their distances there [m].

    A relaxed knit's yarns press into each other (its closest pairs a quarter of a diameter
    apart): Kaldor's penalty then pushes with many times the yarn's weight that no tension or
    bend balances, and the knit creeps open (docs/yarn.md, "Rest state"). Taking part of that
    overlap as the pair's rest (the yarns flattened against each other, as fibres do where
    yarns cross) makes the rest state's contact push no more: each such pair touches only
    within ``reach``, and with share 1 it pushes only when pressed closer than it rests."""

    def __init__(self, keys: np.ndarray, distance: np.ndarray, n_segments: int):
        self.keys = keys
        self.distance = distance
        self.n_segments = n_segments

    @classmethod
    def of(cls, x: np.ndarray, seg: np.ndarray, seg_len: np.ndarray, seg_yarn: np.ndarray,
           seg_arc: np.ndarray, radius: float) -> "RestContacts":
        """The contacts of the yarns at rest at x (P, 3) [m]."""
        diameter = 2.0 * radius
        kept, at = near_pairs(x, seg, seg_len, seg_yarn, seg_arc,
                              SegmentTree(seg, x, radius).pairs(x), diameter, diameter)
        keys = pair_keys(kept, len(seg))
        order = np.argsort(keys, kind="stable")
        return cls(keys[order], at[order], len(seg))

    def reach(self, pairs: np.ndarray, radius: float, share: float) -> np.ndarray:
        """(K,) contact distance [m] of each segment pair (K, 2): 2r, less ``share`` of how far
        inside 2r the pair lay at rest."""
        diameter = 2.0 * radius
        out = np.full(len(pairs), diameter)
        if share <= 0.0 or len(self.keys) == 0 or len(pairs) == 0:
            return out
        keys = pair_keys(pairs, self.n_segments)
        at = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        hit = self.keys[at] == keys
        out[hit] = diameter - share * (diameter - self.distance[at[hit]])
        return out


class SegmentTree:
    """The bounding-box tree of solver/collision/bvh.py over yarn segments.

    Args:
        seg: (S, 2) point indices of the segments.
        positions: (P, 3) [m] positions that shape the tree (the layout).
        radius: yarn radius [m]; every box is grown by it.
        margin: extra growth [m]: the pairs found at x stay a superset of the pairs within 2r
            while no point has moved ``margin`` from x (each segment moves at most that, so a
            pair's distance shrinks by at most 2·margin), so they can be reused until then.
    """

    def __init__(self, seg: np.ndarray, positions: np.ndarray, radius: float,
                 margin: float = 0.0):
        tris = np.stack([seg[:, 0], seg[:, 1], seg[:, 1]], axis=1)
        self._tree = TriangleTree(tris, positions)
        self._pad = np.full(len(seg), float(radius) + float(margin))

    def pairs(self, x0: np.ndarray, x1: np.ndarray | None = None) -> np.ndarray:
        """Segment pairs (K, 2) whose boxes (swept from x0 to x1, grown by r) overlap."""
        self._tree.refit(x0, x0 if x1 is None else x1, self._pad)
        return self._tree.self_pairs()


def clearance(x: np.ndarray, seg: np.ndarray, seg_len: np.ndarray, seg_yarn: np.ndarray,
              seg_arc: np.ndarray, radius: float, tree: SegmentTree | None = None) -> float:
    """Smallest distance [m] between non-neighbouring yarn segments (2r if none is closer)."""
    tree = tree if tree is not None else SegmentTree(seg, x, radius)
    return float(min_clearance(x, seg, seg_len, seg_yarn, seg_arc, tree.pairs(x), 2.0 * radius))
