"""The yarn step's speed-ups keep its results: the fused contact pass equals the separate force
and clearance kernels, candidate pairs reused within their margin change nothing but rounding,
and a knit steps bit-identically at one and two threads (solver/yarn/contact.py, dynamics.py;
docs/yarn.md, "Speed")."""

import numba
import numpy as np
import pytest

from solver.params import YarnParams
from solver.yarn import knit_swatch, loop_regions
from solver.yarn.damping import filter_nonrigid
from solver.yarn.dynamics import GUARD, Stepping
from solver.collision.closest import segment_segment
from solver.yarn.contact import (NEIGHBOUR_GAP, SegmentTree, contact_forces, contact_pass,
                                 min_clearance, near_pairs, segment_motion)
from solver.yarn.stability import ContactFrequency, add_contact_stiffness, contact_springs
from yarns import relaxed_swatch, solver, swatch_solver

# Kaldor's contact: these scenes start pressed together (a squeezed rib, yarns crossing 0.6
# diameters apart), and the contact's stiffness is what is measured, not a rest state
P = YarnParams(contact_rest=0.0)
two_threads = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2,
                                 reason="numba runs one thread here")


def _swatch(n=4):
    sw = knit_swatch("rib2x2", n, n, 5.6e-3, 4.2e-3, P.radius, edges=False)
    # squeezed along the wale so the courses press into each other: many contacts
    x = sw.positions * np.array([1.0, 0.8, 1.0])
    return sw, x


def _hanging(sw, x, pair_margin=0.3, **kw):
    return solver(x, sw.yarn_offsets, P, pins=sw.top_course, swatch=sw,
                  gravity=(0.0, -9.81, 0.0), stepping=Stepping(pair_margin=pair_margin), **kw)


def test_fused_contact_pass_equals_forces_and_clearance():
    sw, x = _swatch()
    sim = solver(x, sw.yarn_offsets, P)
    s = sim.segments
    rng = np.random.default_rng(0)
    v = rng.normal(size=x.shape) * 0.05
    pairs = SegmentTree(s.seg, x, P.radius, 0.5 * P.radius).pairs(x)
    args = (x, v, s.seg, s.rest, s.yarn, s.arc, pairs, P.radius, P.contact_stiffness,
            P.contact_damping_normal, P.contact_damping_tangential, 4)
    f1, k1 = np.zeros_like(x), np.zeros(len(x))
    e1, n1, d1 = contact_forces(*args, f1, k1)
    # every pair touching within a diameter, as contact_forces
    args = args[:7] + (np.full(len(pairs), 2 * P.radius),) + args[7:]
    gap1 = min_clearance(x, s.seg, s.rest, s.yarn, s.arc, pairs, 2 * P.radius)
    f2, k2 = np.zeros_like(x), np.zeros(len(x))
    e2, n2, d2, gap2 = contact_pass(*args, f2, k2, np.zeros(len(pairs)),
                                    np.zeros((len(pairs), 2)), np.zeros((len(pairs), 6)))
    assert n1 == n2 > 100
    assert e2 == pytest.approx(e1, rel=1e-12)
    assert d2 == pytest.approx(d1, rel=1e-12) and gap2 == pytest.approx(gap1, rel=1e-12)
    assert np.abs(f2 - f1).max() <= 1e-12 * np.abs(f1).max()
    assert np.abs(k2 - k1).max() <= 1e-12 * np.abs(k1).max()
    # the passes that skip the stiffness moments (all but the frequency estimate's) agree
    f3, k3 = np.zeros_like(x), np.zeros(len(x))
    e3, n3, d3, gap3 = contact_pass(*args, f3, k3, np.zeros(len(pairs)),
                                    np.zeros((len(pairs), 2)), None)
    assert (n3, d3, gap3) == (n2, d2, gap2) and e3 == pytest.approx(e2, rel=1e-14)
    assert np.abs(f3 - f2).max() <= 1e-14 * np.abs(f2).max()
    assert np.abs(k3 - k2).max() <= 1e-14 * np.abs(k2).max()


def test_near_pairs_keeps_the_non_neighbours_within_the_limit_in_order():
    sw, x = _swatch()
    s = solver(x, sw.yarn_offsets, P).segments
    D = 2 * P.radius
    cand = SegmentTree(s.seg, x, P.radius, 0.5 * P.radius).pairs(x)
    limit = 1.3 * D
    expect = []
    for i, j in cand:   # the definition, pair by pair
        same_yarn = s.yarn[i] == s.yarn[j]
        lo, hi = (i, j) if s.arc[i] <= s.arc[j] else (j, i)
        if same_yarn and s.arc[hi] - (s.arc[lo] + s.rest[lo]) < NEIGHBOUR_GAP * D:
            continue
        d2, _, _ = segment_segment(*(tuple(x[q]) for q in (s.seg[i, 0], s.seg[i, 1],
                                                             s.seg[j, 0], s.seg[j, 1])))
        if np.sqrt(d2) < limit:
            expect.append((i, j, np.sqrt(d2)))
    kept, at = near_pairs(x, s.seg, s.rest, s.yarn, s.arc, cand, D, limit)
    assert 100 < len(expect) < len(cand)
    assert np.array_equal(kept, np.array([(i, j) for i, j, _ in expect]))
    assert np.allclose(at, [d for _, _, d in expect], rtol=1e-12, atol=0)


def test_pairs_skipped_by_their_distance_bound_change_nothing():
    """Kaldor's scheduler (contact_pass's ``margin`` and ``motion``): a pair is skipped while a
    lower bound of its distance, its last one less the most its segments can have come closer
    since, keeps it out of reach. Moved twice on from where the pairs were found (a
    translation, a stretch and jitter, so that some pairs part, others close in), the passes
    with the bounds give the same forces bit for bit and the same clearance as passes that
    measure every pair, their bounds hold, and a pair measured once is skipped on a small
    move where its first bound would not have let it be."""
    sw, x0 = _swatch()
    s = solver(x0, sw.yarn_offsets, P).segments
    D = 2 * P.radius
    found, found_at = near_pairs(x0, s.seg, s.rest, s.yarn, s.arc,
                                 SegmentTree(s.seg, x0, P.radius, 0.3 * P.radius).pairs(x0),
                                 D, 2.6 * P.radius)
    reach = np.full(len(found), 0.9 * D)
    rng = np.random.default_rng(1)
    shift = np.array([0.01, -0.02, 0.003])
    x1 = x0 * np.array([1.0, 1.03, 1.0]) + shift + rng.normal(scale=0.02 * D, size=x0.shape)
    x2 = x1 + rng.normal(scale=0.002 * D, size=x0.shape)
    v = rng.normal(size=x0.shape) * 0.05

    def run(x, margin, moved):
        out = (np.zeros_like(x), np.zeros(len(x)), np.zeros(len(found)),
               np.zeros((len(found), 2)))
        got = contact_pass(x, v, s.seg, s.rest, s.yarn, s.arc, found, reach, P.radius,
                           P.contact_stiffness, P.contact_damping_normal,
                           P.contact_damping_tangential, 4, *out, None, margin, moved)
        return got, out

    def motion(x, start, centre):
        out = np.empty((len(s.seg), 5))
        segment_motion(x, start, s.seg, centre, out)
        return out

    margin = found_at - reach
    first = margin - np.minimum(*(lambda m: (
        m[found[:, 0], 3] + m[found[:, 1], 3]
        + np.linalg.norm(m[found[:, 1], :3] - m[found[:, 0], :3], axis=1),
        m[found[:, 0], 4] + m[found[:, 1], 4]))(motion(x2, x0, shift)))
    for x, start, centre in ((x1, x0, shift), (x2, x1, np.zeros(3))):
        (e1, n1, d1, gap1), (f1, k1, fn1, cl1) = run(x, None, None)
        (e2, n2, d2, gap2), (f2, k2, fn2, cl2) = run(x, margin, motion(x, start, centre))
        assert n1 > 100 and (n1, d1, gap1) == (n2, d2, gap2) and e2 == e1
        assert np.array_equal(f1, f2) and np.array_equal(k1, k2)
        assert np.array_equal(fn1, fn2)
        assert np.array_equal(cl1[fn1 > 0], cl2[fn1 > 0])   # friction's closest points
        exact = np.array([np.sqrt(segment_segment(*(tuple(x[q]) for q in (
            s.seg[i, 0], s.seg[i, 1], s.seg[j, 0], s.seg[j, 1])))[0]) for i, j in found])
        assert np.all(margin <= exact - reach + 1e-15)        # the bounds hold
    # the second pass skipped pairs the bound from x0 would have measured
    assert ((first <= 0) & (margin > 0) & (margin < exact - reach)).sum() > 0.1 * len(found)
    assert (margin > 0).sum() > 0.3 * len(found)


def _filter_by_definition(x, v, mass, free, ptr, pts, alpha, const):
    """The non-rigid filter region by region, as damping.py's docstring defines it."""
    count = np.bincount(pts[:ptr[-1]], minlength=len(x))
    dv = np.zeros_like(v)
    for k in range(len(ptr) - 1):
        q = pts[ptr[k]:ptr[k + 1]]
        m = mass[q]
        xc = m @ x[q] / m.sum()
        vc = m @ v[q] / m.sum()
        r, u = x[q] - xc, v[q] - vc
        inertia = (m * (r * r).sum(1)).sum() * np.eye(3) - (m[:, None] * r).T @ r
        inertia += (1e-9 * np.trace(inertia) + 1e-300) * np.eye(3)
        w = np.linalg.solve(inertia, (m[:, None] * np.cross(r, u)).sum(0))
        nonrigid = v[q] - (vc + np.cross(w, r))
        f = max(alpha, const * np.sqrt(len(q) / (nonrigid ** 2).sum())) if const else alpha
        dv[q] -= min(1.0, f) * (1.0 / count[q]).min() * nonrigid
    return v + np.where(free[:, None], dv, 0.0)


def test_filter_assembled_from_cells_equals_its_definition():
    """damping.FilterRegions: the regions' fits from their cells' moments and each cell's
    points changed together give the filter of the definition, for both passes' regions of a
    swatch with edges, pinned points, the proportional and the constant part."""
    sw = knit_swatch("rib2x2", 5, 4, 5.6e-3, 4.2e-3, P.radius)
    courses, stitches = sw.purl.shape
    rng = np.random.default_rng(2)
    x = sw.positions + np.array([0.3, -0.2, 0.1])     # away from the origin, as a hung knit
    v = rng.normal(scale=0.01, size=x.shape) + np.cross([2.0, -1.0, 0.5], x)
    mass = rng.uniform(0.5e-6, 1.5e-6, len(x))
    free = np.ones(len(x), bool)
    free[sw.top_course] = False
    for size, stride, alpha, const in ((2, 1, 0.4, 5e-4), (4, 2, 0.2, 0.0), (2, 1, 0.05, 3e-3)):
        ptr, pts = loop_regions(sw.loops, stitches, courses, size=size, stride=stride)
        expect = _filter_by_definition(x, v, mass, free, ptr, pts, alpha, const)
        got = v.copy()
        filter_nonrigid(x, got, mass, free, ptr, pts, alpha, const)
        assert np.abs(got - expect).max() <= 1e-12 * np.abs(expect - v).max()
        assert np.abs(expect - v).max() > 1e-3 * np.abs(v).max()


def test_reused_candidate_pairs_change_only_rounding():
    sw, x = _swatch()
    fresh = _hanging(sw, x, pair_margin=0.0)      # pairs found anew every step
    reused = _hanging(sw, x, pair_margin=0.5)
    for sim in (fresh, reused):
        for _ in range(60):
            sim.step()
    assert np.abs(reused.x - fresh.x).max() < 1e-9
    assert reused.stats.min_clearance == pytest.approx(fresh.stats.min_clearance, rel=1e-6)


def _at_one_and_two_threads(run):
    """run() at one numba thread, then at two (the caller's count restored after)."""
    before = numba.get_num_threads()
    try:
        out = []
        for n in (1, 2):
            numba.set_num_threads(n)
            out.append(run())
        return out
    finally:
        numba.set_num_threads(before)


def _stepped(sim, steps):
    for _ in range(steps):
        sim.step()
    return sim.x.copy()


@two_threads
def test_knit_steps_bit_identically_at_one_and_two_threads():
    sw, x = _swatch()
    one, two = _at_one_and_two_threads(lambda: _stepped(_hanging(sw, x), 40))
    assert np.array_equal(one, two)


@two_threads
def test_a_relaxed_knit_with_its_rest_contacts_steps_bit_identically_at_one_and_two_threads():
    """The default contact (contact_rest 1, contact.RestContacts), relaxation included: the
    Blender bake and the worker run a knit at different thread counts and must agree."""
    def run():
        sw, setup, _ = relaxed_swatch("rib2x2", 4)
        assert setup.yarn.contact_rest > 0
        sim = swatch_solver(sw, setup, gravity=(0.0, -9.81, 0.0), pins=sw.top_course)
        return setup.positions, _stepped(sim, 60)

    (start, one), (_, two) = _at_one_and_two_threads(run)
    assert np.array_equal(one, two)
    assert np.abs(one - start).max() > 1e-6  # it really moved [m]


def test_a_step_too_long_for_the_contact_is_shortened_on_a_ladder_and_frames_land_exactly():
    sw, x = _swatch()
    ladder, halved = (_hanging(sw, x, time_step=1.0 / 4000.0) for _ in range(2))
    ladder.forces(ladder.x, ladder.v)
    assert ladder.stable_step() < ladder.h / 4    # the squeezed rib is far too stiff for h
    ladder.advance(0.004)
    for _ in range(16):     # step(): each step of h halved until stable
        halved.step()
    assert ladder.time == pytest.approx(0.004, rel=1e-12)
    assert halved.time == pytest.approx(0.004, rel=1e-12)
    assert ladder.stats.stability_refinements == 0 < halved.stats.stability_refinements
    assert ladder.stats.steps < 0.8 * halved.stats.steps
    # a frame whose length is no whole number of steps lands exactly too
    ladder.advance(1.0 / 240.0)
    assert ladder.time == pytest.approx(0.004 + 1.0 / 240.0, rel=1e-12)
    assert ladder.stats.min_clearance >= GUARD * 2 * P.radius


def _contact_matrix(sim):
    """Dense (3P, 3P) K_contact of stability.contact_springs at the last contact pass."""
    c = sim._contact_at[2]
    pts, W, nrm = contact_springs(sim._contact_at[0], sim.segments.seg, c[4], c[6], c[7])
    K = np.zeros((3 * len(sim.x), 3 * len(sim.x)))
    for m in range(len(pts)):
        nn = np.outer(nrm[m], nrm[m])
        for a in range(4):
            for b in range(4):
                pa, pb = pts[m, a], pts[m, b]
                K[3 * pa:3 * pa + 3, 3 * pb:3 * pb + 3] += W[m, a, b] * nn
    return K, (pts, W, nrm)


def test_contact_stiffness_is_the_penalty_force_derivative_along_the_normal():
    """Two yarns crossing at right angles 0.6 diameters apart: moving the upper one along the
    common normal by ε changes the sampled contact force by −K·ε to within what K leaves out
    (finite differences): K takes each sample's whole stiffness along the pair's normal, not
    its share along it, so it overstates the derivative (by a third here), on the safe side
    for the stable step it is used for."""
    D = 2 * P.radius
    x = np.array([[-2e-3, 0, 0], [-0.7e-3, 0, 0], [0.7e-3, 0, 0], [2e-3, 0, 0],
                  [0, -2e-3, 0.6 * D], [0, -0.7e-3, 0.6 * D], [0, 0.7e-3, 0.6 * D],
                  [0, 2e-3, 0.6 * D]])
    sim = solver(x, [0, 4, 8], P, rest_curvature=np.zeros((8, 3)))
    f0 = sim.forces(sim.x, sim.v).copy()
    K, springs = _contact_matrix(sim)
    u = np.zeros_like(x)
    u[4:, 2] = 1.0
    eps = 1e-7
    f1 = sim.forces(sim.x + eps * u, sim.v)
    df = (f1 - f0) / eps
    predicted = -(K @ u.ravel()).reshape(-1, 3)
    assert np.abs(predicted[:, 2]).max() > 0
    assert np.all(np.sign(df[:, 2]) == np.sign(predicted[:, 2]))
    ratio = predicted[:, 2] / df[:, 2]
    assert np.all(ratio >= 1.0) and np.all(ratio <= 1.8)
    out = np.zeros_like(x)
    add_contact_stiffness(u, *springs, 1.0, out)
    assert np.allclose(out.ravel(), K @ u.ravel())


def test_contact_frequency_estimate_is_below_the_highest_and_gershgorin_above_it():
    sw, x = _swatch()
    sim = _hanging(sw, x)
    sim.forces(sim.x, sim.v)
    K, springs = _contact_matrix(sim)
    mass = sim.model.mass
    free = np.repeat(sim.free, 3)
    s = np.repeat(mass, 3) ** -0.5
    lam = np.linalg.eigvalsh((s[:, None] * K * s[None, :])[free][:, free]).max()
    est = ContactFrequency(mass, sim.free).estimate(springs)
    assert 0.8 * lam <= est <= lam * (1 + 1e-9)
    gershgorin = (2 * sim._stiffness / mass)[sim.free].max()
    assert gershgorin >= lam
    # the step is 0.71 of 2/ω at the estimate, within [1, 2] of the Gershgorin one
    safe = np.sqrt(1.0 / (0.5 * gershgorin))
    assert sim.stable_step() == pytest.approx(
        min(2 * safe, max(safe, 0.71 * 2 / np.sqrt(est))), rel=1e-9)
    assert sim.stable_step() > 1.2 * safe


def test_no_step_is_cut_to_a_sliver_to_land_on_a_frame():
    """A frame end just past a whole number of steps is reached by equal steps, not by a last
    step of a few nanoseconds (a collider's push divided by it was kilometres per second)."""
    x = np.stack([np.linspace(0.0, 0.02, 21), np.zeros(21), np.zeros(21)], axis=1)
    sim = solver(x, [0, 21], P, pins=[0], time_step=1.0 / 9600.0)   # no contact
    taken = []
    advance = sim._advance

    def record(h, depth):
        if depth == 0:
            taken.append(h)
        advance(h, depth)

    sim._advance = record
    end = 2.0001 * sim.h
    while not sim.step_toward(end):
        pass
    assert sim.time == pytest.approx(end, rel=1e-12)
    assert len(taken) == 3 and min(taken) > 0.5 * sim.h
    assert max(taken) - min(taken) <= 1e-9 * sim.h
