"""The yarn step's speed-ups keep its results: the fused contact pass equals the separate force
and clearance kernels, candidate pairs reused within their margin change nothing but rounding,
and a knit steps bit-identically at one and two threads (solver/yarn/contact.py, dynamics.py;
docs/yarn.md, "Speed")."""

import numba
import numpy as np
import pytest

from solver.params import YarnParams
from solver.yarn import YarnSimulation, knit_swatch, loop_regions
from solver.yarn.contact import SegmentTree, contact_forces, contact_pass, min_clearance

P = YarnParams()
two_threads = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2,
                                 reason="numba runs one thread here")


def _swatch(n=4):
    sw = knit_swatch("rib2x2", n, n, 5.6e-3, 4.2e-3, P.radius)
    # squeezed along the wale so the courses press into each other: many contacts
    x = sw.positions * np.array([1.0, 0.8, 1.0])
    return sw, x


def _hanging(sw, x, **kw):
    top = sw.top_course
    return YarnSimulation(x, sw.yarn_offsets, P, pins=top, ties=sw.ties,
                          gravity=(0.0, -9.81, 0.0), regions=loop_regions(sw.loops, 4, 4), **kw)


def test_fused_contact_pass_equals_forces_and_clearance():
    sw, x = _swatch()
    sim = YarnSimulation(x, sw.yarn_offsets, P)
    s = sim.segments
    rng = np.random.default_rng(0)
    v = rng.normal(size=x.shape) * 0.05
    pairs = SegmentTree(s.seg, x, P.radius, 0.5 * P.radius).pairs(x)
    args = (x, v, s.seg, s.rest, s.yarn, s.arc, pairs, P.radius, P.contact_stiffness,
            P.contact_damping_normal, P.contact_damping_tangential, 4)
    f1, k1 = np.zeros_like(x), np.zeros(len(x))
    e1, n1, d1 = contact_forces(*args, f1, k1)
    gap1 = min_clearance(x, s.seg, s.rest, s.yarn, s.arc, pairs, 2 * P.radius)
    f2, k2 = np.zeros_like(x), np.zeros(len(x))
    e2, n2, d2, gap2 = contact_pass(*args, f2, k2, np.zeros(len(pairs)),
                                    np.zeros((len(pairs), 2)))
    assert n1 == n2 > 100
    assert e2 == pytest.approx(e1, rel=1e-12)
    assert d2 == pytest.approx(d1, rel=1e-12) and gap2 == pytest.approx(gap1, rel=1e-12)
    assert np.abs(f2 - f1).max() <= 1e-12 * np.abs(f1).max()
    assert np.abs(k2 - k1).max() <= 1e-12 * np.abs(k1).max()


def test_reused_candidate_pairs_change_only_rounding():
    sw, x = _swatch()
    fresh = _hanging(sw, x, pair_margin=0.0)      # pairs found anew every step
    reused = _hanging(sw, x, pair_margin=0.5)
    for sim in (fresh, reused):
        for _ in range(60):
            sim.step()
    assert np.abs(reused.x - fresh.x).max() < 1e-9
    assert reused.stats.min_clearance == pytest.approx(fresh.stats.min_clearance, rel=1e-6)


@two_threads
def test_knit_steps_bit_identically_at_one_and_two_threads():
    sw, x = _swatch()
    before = numba.get_num_threads()
    out = []
    try:
        for n in (1, 2):
            numba.set_num_threads(n)
            sim = _hanging(sw, x)
            for _ in range(40):
                sim.step()
            out.append(sim.x.copy())
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(out[0], out[1])


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
    assert ladder.stats.min_clearance >= ladder.guard * 2 * P.radius
