"""Yarn dynamics (solver/yarn/): rods, contact, the refined step, the non-rigid filter."""

import dataclasses

import numpy as np
import pytest

from solver.params import ParameterError, YarnParams
from solver.yarn.contact import _penalty, clearance
from solver.yarn import knit_swatch, loop_regions
from solver.yarn.damping import filter_nonrigid
from solver.yarn.dynamics import GUARD
from solver.yarn.rods import (Segments, bending_matrix, curvature_force, lumped_masses,
                              point_segments, project_lengths, rest_curvature)
from yarns import D, P, relaxed_swatch, solver, straight, swatch_solver


def test_yarn_params_validate_and_convert_kaldor():
    assert P.radius == pytest.approx(0.125e-2)                  # 0.125 cm
    assert P.linear_density == pytest.approx(0.006e-3 / 1e-2)   # 0.006 g/cm
    assert P.contact_stiffness == pytest.approx(3250e-3)        # 3250 g/s²
    assert 0.1 <= P.contact_damping_normal <= 0.5               # 0.01–0.05 g/(cm²·s)
    assert 0.01 <= P.contact_damping_tangential <= 0.05         # 0.001–0.005 g/(cm²·s)
    with pytest.raises(ParameterError) as err:
        YarnParams.from_mapping({"radius": -1.0})
    assert err.value.key == "yarn.radius"
    with pytest.raises(ParameterError):
        YarnParams.from_mapping({"twist": 1.0})


def test_penalty_vanishes_smoothly_at_one_diameter():
    f, fp = _penalty(1.0)
    assert f == pytest.approx(0.0, abs=1e-12) and fp == pytest.approx(0.0, abs=1e-12)
    f, fp = _penalty(0.5)
    assert f == pytest.approx(4 + 0.25 - 2) and fp == pytest.approx(-16 + 1)


def test_bending_energy_of_an_arc_is_half_b_kappa_squared_length():
    n, R = 41, 0.02
    theta = np.linspace(0, 1.0, n)
    x = np.stack([R * np.cos(theta), R * np.sin(theta), np.zeros(n)], axis=1)
    s = Segments.of(np.array([0, n]), x)
    K = bending_matrix(s, n, 1e-6)
    energy = 0.5 * sum(x[:, r] @ (K @ x[:, r]) for r in range(3))
    L = s.rest.sum()
    # the interior points carry the curvature over L minus half a segment at each end
    assert energy == pytest.approx(0.5 * 1e-6 / R**2 * (L - s.rest[0]), rel=2e-3)
    # a straight yarn has none
    y = straight(10, 0.01)
    K = bending_matrix(Segments.of(np.array([0, 10]), y), 10, 1e-6)
    assert abs(sum(y[:, r] @ (K @ y[:, r]) for r in range(3))) < 1e-9 * energy  # round-off


def test_fast_projection_restores_lengths_in_a_few_iterations():
    rng = np.random.default_rng(0)
    x = straight(30, 0.03)
    s = Segments.of(np.array([0, 30]), x)
    x = x + rng.normal(scale=5e-5, size=x.shape)   # 5 % of a segment: more than a step moves
    inv = np.ones(30)
    inv[0] = 0.0   # pinned
    x0 = x[0].copy()
    its, _ = project_lengths(x, inv, s.seg, s.rest, np.zeros(29), np.zeros(29), 1e-9, 20,
                             np.zeros((0, 2), np.int64), np.zeros(0))
    assert its <= 7     # (17 % violation at the start; quadratic at the end, 1e-6 -> 1e-10)
    assert np.abs(s.lengths(x) / s.rest - 1).max() < 1e-9
    assert (x[0] == x0).all()


def test_fast_projection_with_glued_ends_converges_as_fast_as_without():
    """Kaldor's glue ties in the same Newton system as the segments (a bordered tridiagonal
    solve): a knit with its two yarn ends tied converges in as few iterations as without the
    ties, and keeps the ties too (projected apart, they needed 10-11 iterations to 1e-6)."""
    sw = knit_swatch("rib2x2", 6, 6, 5.6e-3, 4.2e-3, P.radius, edges=False)
    s = Segments.of(sw.yarn_offsets, sw.positions)
    rng = np.random.default_rng(1)
    start = sw.positions + rng.normal(scale=1e-5, size=sw.positions.shape)
    inv = np.ones(len(start))
    inv[sw.top_course] = 0.0
    start[sw.top_course] = sw.positions[sw.top_course]
    tie_len = np.linalg.norm(sw.positions[sw.ties[:, 1]] - sw.positions[sw.ties[:, 0]], axis=1)
    assert len(sw.ties) == 2
    runs = {}
    for name, ties, lengths in (("tied", sw.ties, tie_len),
                                ("free", np.zeros((0, 2), np.int64), np.zeros(0))):
        x = start.copy()
        its, _ = project_lengths(x, inv, s.seg, s.rest, np.zeros(len(s.rest)),
                                 np.zeros(len(s.rest)), 1e-9, 40, ties, lengths)
        runs[name] = (its, x)
    its, x = runs["tied"]
    assert its <= runs["free"][0] + 1 and its <= 5
    assert np.abs(s.lengths(x) / s.rest - 1).max() < 1e-9
    got = np.linalg.norm(x[sw.ties[:, 1]] - x[sw.ties[:, 0]], axis=1)
    assert np.abs(got / tie_len - 1).max() < 1e-9
    assert (x[sw.top_course] == sw.positions[sw.top_course]).all()


def test_a_ties_solve_skips_only_what_is_zero():
    """A tie's column of the border is solved only where A⁻¹ has not decayed to zero
    (rods._thomas_solve_sparse): on a long chain with a yarn break and a pinned stretch
    (off = 0), rows at both ends, close together and far apart, it equals the full Thomas
    solve bit for bit and is zero outside the intervals it reports."""
    from solver.yarn.rods import _thomas_factor, _thomas_solve, _thomas_solve_sparse

    rng = np.random.default_rng(3)
    S = 6000
    diag = 2.0 + rng.random(S)
    off = -rng.uniform(0.5, 0.95, S)       # decays a few tenths per row, as in a knit
    off[[2500, 4000, 4001, 4002]] = 0.0    # a yarn's end; a pinned stretch
    cp, inv_den = np.empty(S), np.empty(S)
    _thomas_factor(diag, off, cp, inv_den)
    for rows in ([0, 1], [S - 1], [3, 2490, 5999], [1200, 1201, 1203, 4001], [4500]):
        r = np.zeros(S)
        r[rows] = rng.normal(size=len(rows))
        full = r.copy()
        _thomas_solve(off, cp, inv_den, full)
        window = np.zeros((len(rows), 2), np.int64)
        _thomas_solve_sparse(off, cp, inv_den, r, np.array(sorted(rows)), window)
        assert (r == full).all()
        inside = np.zeros(S, bool)
        for lo, hi in window:
            inside[lo:hi] = True
        assert (full[~inside] == 0.0).all() and inside.sum() < S // 2


def test_free_fall_is_undamped_and_lengths_hold():
    """A bent yarn falling freely: gravity only, no contact; the non-rigid filter and the
    projection leave the centre of mass falling at g."""
    n = 40
    t = np.linspace(0, 3.0, n)
    x = np.stack([0.01 * np.cos(t), 0.01 * np.sin(t), np.zeros(n)], axis=1)
    sim = solver(x, [0, n], P, gravity=(0, 0, -9.81))
    m = sim.model.mass / sim.model.mass.sum()
    c0 = m @ sim.x
    sim.advance(0.02)
    drop = c0[2] - (m @ sim.x)[2]
    # symplectic Euler falls ½·g·t·(t + h) after n steps of h
    assert drop == pytest.approx(0.5 * 9.81 * sim.time * (sim.time + sim.h), rel=1e-9)
    s = sim.model.segments
    assert np.abs(s.lengths(sim.x) / s.rest - 1).max() < 1e-6


def test_pinned_yarn_swings_and_keeps_its_length():
    x = straight(25, 0.05)
    sim = solver(x, [0, 25], P, pins=[0], gravity=(0, 0, -9.81))
    sim.advance(0.05)
    assert (sim.x[0] == x[0]).all()
    assert sim.x[-1, 2] < -0.005                        # it swings down
    assert np.isfinite(sim.x).all()
    assert sim.stats.worst_violation < 1e-6
    assert sim.yarn_lengths()[0] == pytest.approx(0.05, rel=1e-6)


def test_crossing_yarns_never_pass_through_and_fast_ones_refine_the_step():
    """A yarn thrown at 3 m/s against a crossing one pinned at both ends bounces off it; the
    step is halved where a full one would let it jump closer than the guard."""
    a = straight(21, 0.02, start=(-0.01, 0.0, 0.0))
    b = straight(21, 0.02, start=(0.0, -0.01, 1.5 * D), direction=(0, 1, 0))
    x = np.vstack([a, b])
    params = dataclasses.replace(P, contact_stiffness=30.0)
    sim = solver(x, [0, 21, 42], params, pins=[0, 20], gravity=(0, 0, 0))
    sim.v[21:, 2] = -3.0
    closest = np.inf
    for _ in range(200):
        sim.step()
        closest = min(closest, sim.clearance())
        # b stays above a: the centre of b never gets below the centre of a
        assert sim.x[31, 2] > sim.x[10, 2]
    assert closest >= GUARD * D
    assert sim.stats.refinements + sim.stats.stability_refinements > 0
    assert sim.v[21:, 2].mean() > 0.0                   # it bounced


def test_nonrigid_filter_keeps_rigid_motion_and_damps_the_rest():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(12, 3)) * 1e-3
    m = np.full(12, 1e-6)
    free = np.ones(12, bool)
    ptr = np.array([0, 8, 12])
    pts = np.concatenate([np.arange(8), np.arange(6, 12)])
    omega = np.array([3.0, -1.0, 2.0])
    v = np.array([0.1, 0.2, -0.3]) + np.cross(omega, x)
    v0 = v.copy()
    filter_nonrigid(x, v, m, free, ptr, pts, 0.7)
    assert np.allclose(v, v0, atol=1e-12)
    # one region: the non-rigid part shrinks by (1 − α) per pass, momentum is kept
    one = (np.array([0, 12]), np.arange(12))
    w0 = rng.normal(size=(12, 3))
    w1 = w0.copy()
    filter_nonrigid(x, w1, m, free, *one, 0.7)
    w2 = w1.copy()
    filter_nonrigid(x, w2, m, free, *one, 0.7)
    assert np.allclose(w2 - w1, 0.3 * (w1 - w0), atol=1e-9)
    assert np.allclose(m @ w1, m @ w0, atol=1e-15)
    assert np.allclose((m[:, None] * np.cross(x, w1)).sum(0),
                       (m[:, None] * np.cross(x, w0)).sum(0), atol=1e-15)
    assert np.linalg.norm(w1 - w0) > 0.1 * np.linalg.norm(w0)
    # overlapping regions whose points sit in different numbers of regions (a swatch's edges):
    # momentum and angular momentum are still kept (each region damps with one strength)
    w3 = w0.copy()
    filter_nonrigid(x, w3, m, free, ptr, pts, 0.7)
    assert np.allclose(m @ w3, m @ w0, atol=1e-15)
    assert np.allclose((m[:, None] * np.cross(x, w3)).sum(0),
                       (m[:, None] * np.cross(x, w0)).sum(0), atol=1e-15)


def test_revised_filter_stops_slow_non_rigid_motion_and_brakes_fast_motion_by_a_constant():
    """Kaldor §4.5.2: below h·μ_const of rms non-rigid speed a block's non-rigid motion is
    removed entirely (the knit comes to rest in finite time); above it at least that much is
    removed per step, and at least the proportional h·μ_prop; rigid motion is kept."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(16, 3)) * 1e-3
    m = np.full(16, 1e-6)
    free = np.ones(16, bool)
    one = (np.array([0, 16]), np.arange(16))
    rigid = np.array([0.1, 0.0, 0.0]) + np.cross([0.0, 0.0, 2.0], x)
    noise = rng.normal(size=(16, 3))
    fit = noise.copy()
    filter_nonrigid(x, fit, m, free, *one, 1.0)          # α = 1 leaves the rigid fit
    noise -= fit                                          # purely non-rigid
    for speed, removed in ((1e-4, None), (1.0, 1e-3)):
        w = rigid + speed * noise / np.sqrt((noise ** 2).sum(axis=1).mean())
        filter_nonrigid(x, w, m, free, *one, 0.01, 1e-3)
        left = np.sqrt(((w - rigid) ** 2).sum(axis=1).mean())
        if removed is None:
            assert left < 1e-5 * speed                # slow: stopped in one step
        else:
            assert left == pytest.approx(speed - 0.01 * speed, rel=1e-3)  # proportional wins
        assert np.allclose(m @ w, m @ rigid, atol=1e-15)
    w = rigid + 0.05 * noise / np.sqrt((noise ** 2).sum(axis=1).mean())
    filter_nonrigid(x, w, m, free, *one, 0.01, 1e-3)    # 1e-3 > 0.01·0.05: the constant wins
    assert np.sqrt(((w - rigid) ** 2).sum(axis=1).mean()) == pytest.approx(0.049, rel=1e-3)


def test_bending_force_is_the_gradient_of_its_energy_and_has_no_torque():
    """½·B·Σ|g − R(x)·ḡ|²/l̄ about a rest curvature carried in each point's frame: the bending
    matrix, the frozen-frame force and the frame's turning (curvature_force) together are its
    exact gradient (central differences), and they exert no net torque on a yarn."""
    n, B = 24, 1e-8
    s_ = np.linspace(0, 4 * np.pi, n)
    rest_x = np.stack([np.cos(s_), np.sin(s_), 0.2 * s_ + 0.1 * np.sin(3 * s_)], 1) * 1e-3
    seg = Segments.of(np.array([0, n]), rest_x)
    si, so = point_segments(seg.seg, n)
    gbar = rest_curvature(rest_x, seg.seg, si, so, seg.rest)
    x = rest_x + np.random.default_rng(1).normal(size=rest_x.shape) * 5e-5
    K = bending_matrix(seg, n, B)
    inner = (si >= 0) & (so >= 0)
    lbar = np.where(inner, 0.5 * (seg.rest[si] + seg.rest[so]), 1.0)

    def energy(y):
        now = rest_curvature(y, seg.seg, si, so, seg.rest)   # g in its frame: |g − Rḡ| = |now − ḡ|
        return 0.5 * B * (((now - gbar) ** 2).sum(axis=1) / lbar)[inner].sum()

    frozen = -(K @ x)
    curvature_force(x, seg.seg, si, so, seg.rest, gbar, B, frozen, turn=False)
    f = -(K @ x)
    curvature_force(x, seg.seg, si, so, seg.rest, gbar, B, f)
    eps = 1e-9
    grad = np.zeros_like(x)
    for i in range(n):
        for r in range(3):
            e = np.zeros_like(x)
            e[i, r] = eps
            grad[i, r] = (energy(x + e) - energy(x - e)) / (2 * eps)
    scale = np.abs(grad).max()
    assert np.abs(f + grad).max() < 1e-6 * scale
    assert np.abs(frozen + grad).max() > 1e-2 * scale           # the frozen frame alone is not
    torque = np.cross(x, f).sum(axis=0)
    assert np.abs(torque).max() < 1e-9 * scale * 1e-3


def test_loop_blocks_tile_the_swatch_and_regions_overlap_one_loop_apart():
    loops = np.repeat(np.arange(7 * 5), 3)               # 7 stitches × 5 courses, 3 points each
    ptr, pts = loop_regions(loops, 7, 5, size=4, stride=None)   # 4 × 4 blocks: 2 × 2 of them
    assert len(ptr) - 1 == 4 and np.array_equal(np.sort(pts), np.arange(len(loops)))
    ptr, pts = loop_regions(loops, 7, 5)                 # the default: 2 × 2, one loop apart
    assert len(ptr) - 1 == 6 * 4 and np.all(np.diff(ptr) == 2 * 2 * 3)


def test_a_free_swatch_with_no_force_on_it_stays_where_it_is():
    """Nothing pushes a knit floating without gravity: its momentum stays zero and its centre
    of mass where it was (the filter once pushed a free 8 × 8 rib 40 mm in 0.1 s)."""
    sw, setup, _ = relaxed_swatch("rib2x2", 6, duration=0.01, settle=0.0)
    sim = swatch_solver(sw, setup)
    m = sim.model.mass
    centre = m @ sim.x / m.sum()
    sim.advance(0.02)
    assert np.abs(m @ sim.v).max() < 1e-12
    assert np.abs(m @ sim.x / m.sum() - centre).max() < 1e-9


def test_lumped_mass_is_the_yarn_mass():
    x = straight(11, 0.1)
    s = Segments.of(np.array([0, 11]), x)
    assert lumped_masses(s, 11, P.linear_density).sum() == pytest.approx(0.1 * 6e-4)


def test_clearance_ignores_neighbours_along_the_yarn():
    x = straight(50, 0.05)
    s = Segments.of(np.array([0, 50]), x)
    assert clearance(x, s.seg, s.rest, s.yarn, s.arc, P.radius) == pytest.approx(D)


@pytest.mark.parametrize("mu", [0.0, 0.3])
def test_friction_slows_a_yarn_sliding_across_another_and_keeps_momentum(mu):
    """Two crossing yarns pressed together (0.8 diameter apart) while one slides along the
    other: Coulomb friction takes some of the sliding away while they touch, none without it,
    and never changes the total momentum."""
    # Kaldor's contact: the yarns start pressed together, not resting so (contact_rest 0)
    p = dataclasses.replace(P, friction=mu, contact_rest=0.0)
    a = np.c_[np.linspace(-0.01, 0.01, 21), np.zeros(21), np.zeros(21)]
    b = np.c_[np.zeros(21), np.linspace(-0.01, 0.01, 21), np.full(21, 0.8 * D)]
    sim = solver(np.r_[a, b], [0, 21, 42], p, gravity=(0, 0, 0))
    sim.v[21:, 0] = 0.2
    m = sim.model.mass
    momentum = m @ sim.v
    sim.advance(0.002)
    sliding = sim.v[21:, 0].mean() - sim.v[:21, 0].mean()
    if mu == 0.0:
        assert sliding == pytest.approx(0.2, rel=2e-3)
    else:
        assert sliding < 0.19                       # measured 0.166
    assert np.abs(m @ sim.v - momentum).max() < 1e-15
