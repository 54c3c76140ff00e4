"""Scenarios with known answers, run against every model.

Each test states the physics it checks; tolerances are those of the discretisation (first-order
time stepping, the mesh's spatial error), not fudge factors.
"""

import dataclasses

import numpy as np
import pytest

from solver import (ClothSetup, MaterialParams, PolyMesh, SimulationSpec, SolverSettings, Wind,
                    grid_mesh, load_preset)
from solver.diagnostics import kinetic_energy
from solver.model import build_model
from solver.solvers.base import BlowUpError, FrameTargets
from solver.solvers import CLOTH_MODELS, make_solver
from scenarios import (SOFT, cantilever_strip, hanging_cloth, hanging_strip,
                              hanging_strip_extension, heavy_elastica_tip_drop)
from solver.simulation import simulate

G = 9.81


def settings(model, **kw):
    return SolverSettings(model=model, **kw)


def _undamped(m):
    return dataclasses.replace(m, stretch_damping=0.0, shear_damping=0.0, bend_damping=0.0,
                               air_drag=0.0)


@pytest.mark.parametrize("model,kw", [("implicit", {}), ("mass_spring", {}),
                                      ("mass_spring", {"integrator": "velocity_verlet"}),
                                      ("mass_spring", {"integrator": "rk4"})])
def test_free_fall_matches_half_g_t_squared(model, kw):
    spec = SimulationSpec(ClothSetup(grid_mesh((0.2, 0.2), (5, 5), (0, 0, 0)), SOFT),
                          settings(model, **kw), frames=24)
    r = simulate(spec)
    t = 1.0
    drop = -r.positions[-1][:, 2]
    n = sum(f.substeps for f in r.frames)
    h = t / n
    # first-order schemes (symplectic/implicit Euler) overshoot by exactly g·t·h/2;
    # Verlet and RK4 are exact for constant acceleration
    bound = 0.5 * G * t * h * (1 + 1e-9) if kw.get("integrator") not in ("velocity_verlet", "rk4") \
        else 1e-9
    # the implicit solve is iterative: allow its relative residual (the CG tolerance) on one
    # frame's Δv
    tol = spec.settings.cg_tolerance * G / 24 if model == "implicit" else 1e-12
    assert np.all(np.abs(drop - 0.5 * G * t * t) <= bound + tol)
    assert np.ptp(drop) <= tol  # it falls as a rigid body: no internal force arises
    # implicit: the PCG multiplies with a float32 copy of the matrix (cg.mpcg), so a rigid
    # fall keeps float32 rounding as strain (measured 1e-7), far below anything visible
    assert r.frames[-1].max_strain < (1e-6 if model == "implicit" else 1e-9)


@pytest.mark.parametrize("model", CLOTH_MODELS)
def test_air_drag_gives_terminal_velocity(model):
    """A horizontal sheet falls at v_t = ρ·g/air_drag once drag balances weight."""
    mat = dataclasses.replace(SOFT, air_drag=1.0)
    spec = SimulationSpec(ClothSetup(grid_mesh((0.2, 0.2), (4, 4), (0, 0, 0)), mat),
                          settings(model), frames=48)
    r = simulate(spec)
    v = (r.positions[-1][:, 2] - r.positions[-2][:, 2]) * 24.0
    v_t = mat.area_density * G / mat.air_drag  # 1.962 m/s, time constant 0.2 s
    np.testing.assert_allclose(-v, v_t, rtol=2e-3)


@pytest.mark.parametrize("model", CLOTH_MODELS)
def test_hanging_strip_stretches_by_rho_g_l2_over_2k(model):
    mat = dataclasses.replace(SOFT, stretch_damping=0.5)
    r = simulate(hanging_strip(mat, settings(model), frames=48))
    assert r.error is None
    bottom = r.positions[-1][:3, 2].mean()  # the bottom row hung from z = 0 to −1 m
    expected = hanging_strip_extension(mat, 1.0)
    assert expected == pytest.approx(0.01962)
    np.testing.assert_allclose(-bottom - 1.0, expected, rtol=0.01)


@pytest.mark.parametrize("preconditioner", ["jacobi", "factor", "incomplete_cholesky"])
def test_settle_reaches_the_hanging_strip_equilibrium(preconditioner):
    r = simulate(hanging_strip(SOFT, settings("implicit", settle=True, substeps=4,
                                              preconditioner=preconditioner), frames=8))
    np.testing.assert_allclose(-r.positions[-1][:3, 2].mean() - 1.0,
                               hanging_strip_extension(SOFT, 1.0), rtol=1e-3)
    assert r.frames[-1].kinetic_energy_j == 0.0


def test_the_preconditioner_changes_the_cost_not_the_motion():
    runs = {p: simulate(hanging_cloth(9, SOFT, settings("implicit", preconditioner=p,
                                                        cg_tolerance=1e-8), frames=12))
            for p in ("jacobi", "factor", "incomplete_cholesky")}
    a = runs["jacobi"].positions
    assert np.abs(a[-1] - a[0]).max() > 0.1  # the cloth swings
    cost = {p: sum(f.iterations for f in r.frames) for p, r in runs.items()}
    for p in ("factor", "incomplete_cholesky"):
        np.testing.assert_allclose(a, runs[p].positions, atol=1e-6)
        assert cost[p] < cost["jacobi"]


STIFF_STRIP = MaterialParams(area_density=0.2, stretch_stiffness=2e4, shear_stiffness=100.0,
                             bend_stiffness=4e-3, stretch_damping=0.02, shear_damping=0.0,
                             bend_damping=4e-5, air_drag=0.5)


def _tip_drop(result, nx):
    x = result.positions[-1]
    return -x[np.arange(len(x)) % nx == nx - 1][:, 2].mean()


@pytest.mark.parametrize("nx,ny,rtol", [(11, 3, 0.015), (21, 5, 0.004), (41, 9, 0.001)])
def test_implicit_cantilever_matches_heavy_elastica_under_refinement(nx, ny, rtol):
    """Large-deflection cantilever (tip drop ≈ 35% of its length) against the elastica ODE
    clamped where the pins end. The tolerances shrink fourfold per halving of the cell: the
    error is second order (1.1, 0.25, 0.07 %). Counting the clamp hinge's pinned wing too gave
    first order (20, 8.9, 4.2 %: the strip acted as if clamped half a cell earlier)."""
    spec, free_length = cantilever_strip(STIFF_STRIP, settings("implicit", substeps=4),
                                         nx=nx, ny=ny, frames=72)
    r = simulate(spec)
    ref = heavy_elastica_tip_drop(free_length, STIFF_STRIP)
    assert ref > 0.3 * free_length
    assert r.frames[-1].kinetic_energy_j < 1e-9  # at rest
    np.testing.assert_allclose(_tip_drop(r, nx), ref, rtol=rtol)


def test_mass_spring_cantilever_matches_heavy_elastica():
    mat = dataclasses.replace(STIFF_STRIP, air_drag=2.0)  # settles within the 2 s simulated
    spec, free_length = cantilever_strip(mat, settings("mass_spring"), nx=11, ny=3, frames=48)
    r = simulate(spec)
    assert r.frames[-1].kinetic_energy_j < 1e-9
    np.testing.assert_allclose(_tip_drop(r, 11), heavy_elastica_tip_drop(free_length, mat),
                               rtol=0.015)


def test_flexion_springs_bend_less_than_a_bending_stiffness_predicts():
    """Flexion springs are quartic in the angle: at small curvature they barely resist."""
    mat = dataclasses.replace(STIFF_STRIP, bend_stiffness=4e-2, bend_damping=4e-4)
    spec, free_length = cantilever_strip(mat, settings("mass_spring", bending="flexion"),
                                         nx=11, ny=3, frames=24)
    r = simulate(spec)
    assert r.error is None
    linear = mat.area_density * G * free_length ** 4 / (8 * mat.bend_stiffness)
    assert _tip_drop(r, 11) > 2 * linear


def _swing(model_kw, mat, frames=24, fps=24.0, n=9):
    """A cloth held along one edge, released from horizontal: it swings down like a pendulum."""
    g = grid_mesh((0.3, 0.3), (n, n), (0.0, 0.0, 0.0))
    pins = np.arange(n)  # the edge j = 0
    spec = SimulationSpec(ClothSetup(g, mat, pins), SolverSettings(**model_kw),
                          frames=frames, fps=fps)
    return simulate(spec)


def _total_energy(r):
    return np.array([f.kinetic_energy_j + f.elastic_energy_j + f.potential_energy_j
                     for f in r.frames])


def test_undamped_symplectic_run_conserves_energy():
    """Symplectic Euler: energy error bounded (no drift) and first order in the step."""
    mat = _undamped(dataclasses.replace(SOFT, stretch_stiffness=200.0, bend_stiffness=1e-5))
    errors = []
    for substeps in (2000, 4000):
        r = _swing({"model": "mass_spring", "integrator": "symplectic_euler",
                    "substeps": substeps}, mat)
        e = _total_energy(r)
        swing = max(f.kinetic_energy_j for f in r.frames)
        assert swing > 0.02  # it really swings: 0.3 m cloth falling from horizontal
        errors.append(np.ptp(e))
    assert errors[0] < 1e-3 * swing
    assert 1.6 < errors[0] / errors[1] < 2.5


def test_implicit_euler_dissipates_energy():
    """[Volino2000] §2.8 (docs/references.md): implicit Euler damps an undamped swing
    numerically (and never gains much)."""
    mat = _undamped(dataclasses.replace(SOFT, stretch_stiffness=500.0, bend_stiffness=1e-5))
    euler = _swing({"model": "implicit"}, mat)
    e = _total_energy(euler)
    swing = max(f.kinetic_energy_j for f in euler.frames)
    # backward Euler dissipates (exactly so only for convex energies; allow 2% of the swing)
    assert np.all(e <= e[0] + 0.02 * swing)
    assert e[0] - e[-1] > 0.05 * swing


def test_implicit_euler_damps_a_linear_oscillator_as_its_amplification_factor_says():
    """One stretch mode, ω·h = 0.1, 200 steps: implicit Euler's amplification factor
    1/(1 + iωh) keeps E_end/E_0 = (1 + (ωh)²)^−200 = 0.137 of the energy.

    A unit right triangle with two corners pinned; the free corner stretches the weft only,
    a linear oscillator with ω² = k·A/m_corner = 3·0.5/(1·0.5/3) = 9.
    """
    mat = MaterialParams(area_density=1.0, stretch_stiffness=3.0, shear_stiffness=0.0,
                         bend_stiffness=0.0, stretch_damping=0.0, shear_damping=0.0,
                         bend_damping=0.0, air_drag=0.0)
    rest = PolyMesh.from_faces(np.array([[0.0, 0, 0], [1, 0, 0], [0, 1, 0]]), [[0, 1, 2]])
    model = build_model(ClothSetup(rest, mat, np.array([0, 1])))
    solver = make_solver(model, SolverSettings(model="implicit", substeps=1, cg_tolerance=1e-12),
                         np.zeros(3))
    solver.x[2, 1] += 1e-4  # small amplitude: the membrane is linear to 1e-4
    h = 0.1 / 3.0
    pins = model.rest_positions[[0, 1]]
    targets = FrameTargets(pins, pins, np.zeros((0, 3)), np.zeros((0, 3)))
    energy = []
    for _ in range(201):
        solver.system.internal(solver.x, solver.v)
        energy.append(solver.system.elastic_energy() + kinetic_energy(model.mass, solver.v))
        solver.step_frame(0.0, h, targets, np.zeros((3, 3)))
    assert energy[-1] / energy[0] == pytest.approx(1.01 ** -200, abs=0.01)


def test_implicit_is_stable_at_one_step_per_frame_with_stiff_fabric():
    stiff = MaterialParams(area_density=0.3, stretch_stiffness=1e5, shear_stiffness=1e3,
                           bend_stiffness=2e-5, stretch_damping=0.0, shear_damping=0.0,
                           bend_damping=0.0, air_drag=0.0)
    # Newton to convergence: measured 1.1% strain with 4 iterations (0.04% with 8); one
    # linearisation per step, as Baraff & Witkin do, reached 39%
    r = _swing({"model": "implicit", "substeps": 1, "newton_iterations": 4,
                "cg_tolerance": 1e-4}, stiff, frames=48, n=17)
    assert r.error is None
    assert all(f.substeps == 1 for f in r.frames)
    assert max(f.max_strain for f in r.frames) < 0.02
    e = _total_energy(r)
    assert np.all(e <= e[0] + 1e-9)
    # The defaults (2 steps per frame, 2 Newton iterations each) dissipate too, with fewer CG
    # iterations (measured 2,074 against 4,865). Two Newton iterations at *one* step per frame
    # do not: +6e-4 J in the first frame, 22% of the largest kinetic energy (measured).
    r = _swing({"model": "implicit"}, stiff, frames=48, n=17)
    assert r.error is None
    assert max(f.max_strain for f in r.frames) < 0.02
    e = _total_energy(r)
    assert np.all(e <= e[0] + 1e-9)


@pytest.mark.parametrize("model", CLOTH_MODELS)
def test_strain_limit_holds_its_bound(model):
    limit = 0.05
    mat = dataclasses.replace(SOFT, stretch_stiffness=10.0, max_strain=limit)
    free = simulate(hanging_cloth(9, dataclasses.replace(mat, max_strain=None), settings(model),
                                  size=0.5, frames=24))
    assert max(f.max_strain for f in free.frames) > 2 * limit  # the limit matters here
    r = simulate(hanging_cloth(9, mat, settings(model), size=0.5, frames=24))
    assert r.error is None
    assert max(f.max_strain for f in r.frames) <= limit * (1 + 2e-3)


@pytest.mark.parametrize("model", CLOTH_MODELS)
def test_pins_stay_put_and_moving_pins_follow_their_targets(model):
    spec = hanging_cloth(7, SOFT, settings(model), size=0.3, frames=12)
    r = simulate(spec)
    pins = spec.cloth.pin_indices
    assert np.array_equal(r.positions[:, pins], np.broadcast_to(r.positions[0, pins],
                                                                r.positions[:, pins].shape))
    # now move them: a circle of radius 5 cm over the 12 frames
    t = np.linspace(0, 2 * np.pi, 13)
    offset = 0.05 * np.stack([np.cos(t) - 1, np.sin(t), np.zeros_like(t)], 1)
    targets = r.positions[0, pins][None] + offset[:, None, :]
    moving = dataclasses.replace(spec, cloth=dataclasses.replace(spec.cloth, pin_targets=targets))
    r2 = simulate(moving)
    np.testing.assert_allclose(r2.positions[:, pins], targets, atol=1e-12)
    assert np.abs(r2.positions[-1] - r.positions[-1]).max() > 1e-3  # the cloth was dragged


@pytest.mark.parametrize("model", CLOTH_MODELS)
def test_soft_pins_pull_towards_their_targets(model):
    spec = hanging_cloth(7, SOFT, settings(model), size=0.3, frames=24)
    w = np.array([0.5, 0.5])
    soft = dataclasses.replace(spec, cloth=dataclasses.replace(spec.cloth, pin_weights=w))
    r = simulate(soft)
    pins = spec.cloth.pin_indices
    sag = np.linalg.norm(r.positions[-1, pins] - r.positions[0, pins], axis=1)
    assert np.all(sag > 1e-4)          # not held exactly
    assert np.all(sag < 0.2)           # but held: free fall would drop 4.9 m
    assert r.error is None


def test_mass_spring_raises_substeps_to_stay_stable():
    mat = dataclasses.replace(SOFT, stretch_stiffness=2000.0)
    r = simulate(hanging_cloth(9, mat, settings("mass_spring", substeps=1), size=0.3, frames=6))
    assert r.error is None
    assert all(f.substeps > 10 for f in r.frames)
    more = simulate(hanging_cloth(9, mat, settings("mass_spring", substeps=5000), size=0.3,
                                  frames=2))
    assert all(f.substeps == 5000 for f in more.frames)


def test_blow_up_stops_with_the_frame_and_keeps_earlier_frames():
    spec = hanging_cloth(5, SOFT, settings("implicit", max_speed=1.0), size=0.3, frames=24)
    r = simulate(spec)
    assert r.error is not None and r.error.startswith("frame ")
    bad = int(r.error.split()[1].rstrip(":"))
    assert 1 < bad <= 24
    assert len(r.positions) == bad and len(r.frames) == bad - 1
    assert np.all(np.isfinite(r.positions))


@pytest.mark.parametrize("model", CLOTH_MODELS)
def test_bakes_are_bit_identical(model):
    spec = hanging_cloth(9, SOFT, settings(model), size=0.3, frames=6)
    a, b = simulate(spec), simulate(spec)
    assert a.positions.tobytes() == b.positions.tobytes()


@pytest.mark.parametrize("model", CLOTH_MODELS)
def test_wind_pushes_cloth_downwind_and_turbulence_is_seeded(model):
    mat = dataclasses.replace(SOFT, air_drag=0.5)
    base = hanging_cloth(7, mat, settings(model), size=0.3, frames=24)
    calm = simulate(base).positions[-1]
    # across the cloth, which hangs in the XZ plane: air pushes through the normal
    # (a wind along the hanging cloth only rubs its faces, tests/test_air.py)
    windy = dataclasses.replace(base, wind=Wind(velocity=np.array([0.0, 3.0, 0.0])))
    assert simulate(windy).positions[-1][:, 1].mean() > calm[:, 1].mean() + 0.01
    gusty = dataclasses.replace(base, wind=Wind(velocity=np.array([3.0, 0, 0]), turbulence=1.0,
                                                seed=1))
    g1, g2 = simulate(gusty).positions[-1], simulate(gusty).positions[-1]
    g3 = simulate(dataclasses.replace(gusty, wind=dataclasses.replace(gusty.wind, seed=2)))
    assert np.array_equal(g1, g2)
    assert np.abs(g1 - g3.positions[-1]).max() > 1e-4


def test_a_wind_per_frame_acts_from_its_frame_on():
    """wind_frames[f] acts from frame f to f + 1 (an animated wind field in Blender): the frames
    before the wind changes are those of the steady wind, the later ones differ."""
    mat = dataclasses.replace(SOFT, air_drag=0.5)
    base = hanging_cloth(7, mat, settings("implicit"), size=0.3, frames=6)
    steady = Wind(velocity=np.array([1.0, 0.0, 0.0]))
    a = simulate(dataclasses.replace(base, wind=steady)).positions
    same = simulate(dataclasses.replace(base, wind_frames=(steady,) * 7)).positions
    assert a.tobytes() == same.tobytes()
    gust = Wind(velocity=np.array([6.0, 0.0, 0.0]))
    b = simulate(dataclasses.replace(base, wind_frames=(steady,) * 3 + (gust,) * 4)).positions
    assert b[:4].tobytes() == a[:4].tobytes()  # frames 0-3: the steady wind
    assert b[-1][:, 0].mean() > a[-1][:, 0].mean() + 1e-3  # then blown further
    with pytest.raises(ValueError, match="wind_frames: 3 winds for 6 frames"):
        dataclasses.replace(base, wind_frames=(steady,) * 3)


@pytest.mark.parametrize("model", CLOTH_MODELS)
def test_pieces_simulated_together_move_as_they_do_alone(model):
    """Two cloths of different materials and pins in one simulation: each piece's motion is
    the one it has when simulated alone (no collisions between them here). Not bit-equal: the
    step size (mass_spring) and the solver's convergence tests are shared by all pieces."""
    stiff = dataclasses.replace(SOFT, stretch_stiffness=200.0, area_density=0.3, air_drag=0.4)
    a = ClothSetup(grid_mesh((1.0, 1.0), (7, 7), (0.0, 0.0, 1.0)), SOFT, np.array([42, 48]))
    b = ClothSetup(grid_mesh((0.6, 0.6), (5, 5), (3.0, 0.0, 1.0)), stiff, np.array([20]),
                   pin_weights=np.array([0.5]))
    st = settings(model, substeps=8) if model == "mass_spring" else settings(model)
    together = simulate(SimulationSpec((a, b), st, frames=6))
    alone = [simulate(SimulationSpec(c, st, frames=6)) for c in (a, b)]
    assert together.error is None
    assert len(together.positions[0]) == 49 + 25
    for piece, ref in zip(np.split(together.positions, [49], axis=1), alone):
        motion = np.abs(ref.positions[-1] - ref.positions[0]).max()
        assert motion > 0.05
        np.testing.assert_allclose(piece, ref.positions, atol=0.01 * motion)
    np.testing.assert_array_equal(build_model((a, b)).piece_offsets, [0, 49, 74])


def test_non_finite_forces_inside_the_implicit_solve_stop_as_a_blow_up():
    """A NaN that arises inside the solve (here: an absurd rest state slipped past the mesh
    checks) ends the run with a blow-up message, not a crash inside a kernel."""
    spec = hanging_cloth(5, SOFT, settings("implicit"), frames=3)
    sim_model = build_model(spec.cloth)
    solver = make_solver(sim_model, spec.settings, spec.gravity)
    solver.v[3] = np.nan
    targets = FrameTargets(sim_model.rest_positions[sim_model.hard_pins],
                           sim_model.rest_positions[sim_model.hard_pins], np.zeros((0, 3)),
                           np.zeros((0, 3)))
    with pytest.raises(BlowUpError, match="non-finite"):
        solver.step_frame(0.0, 1 / 24, targets, np.zeros_like(solver.x))


@pytest.mark.parametrize("model", CLOTH_MODELS)
def test_a_cloth_hung_from_two_corners_stays_mirror_symmetric(model):
    """No diagonal is preferred: the implicit membrane averages both splits of every quad (one
    split alone left a 1% left–right drift) and the springs use both diagonals. Solved tightly,
    so that the solver's own tolerance does not hide a bias: 1e-6 of the motion."""
    n = 9
    settings = SolverSettings(model=model, cg_tolerance=1e-10, newton_iterations=20,
                              newton_tolerance=1e-9)
    r = simulate(hanging_cloth(n, SOFT if model == "mass_spring" else load_preset("cotton"),
                               settings, size=0.4, frames=12))
    assert r.error is None
    p = r.positions
    i, j = np.arange(n * n) % n, np.arange(n * n) // n
    mirrored = p[:, j * n + (n - 1 - i)] * np.array([-1.0, 1.0, 1.0])
    motion = np.abs(p - p[0]).max()
    assert motion > 0.01
    assert np.abs(p - mirrored).max() < 1e-6 * motion


@pytest.mark.parametrize("model", CLOTH_MODELS)
def test_the_grain_turns_with_the_uv_map_or_the_grain_direction(model):
    """An anisotropic cloth (weft a quarter of the warp) turned 90° in the world, its UV map
    (or its grain direction) turned with it, moves exactly as before, turned. Without them the
    warp stays along world X and the turned cloth moves differently."""
    n = 7
    mat = dataclasses.replace(SOFT, stretch_stiffness=60.0, stretch_stiffness_weft=15.0) \
        if model == "mass_spring" else dataclasses.replace(
            load_preset("cotton"), stretch_stiffness=4000.0, stretch_stiffness_weft=1000.0)
    grid = grid_mesh((0.3, 0.3), (n, n), (0.0, 0.0, 0.0))
    uv = grid.positions[grid.face_indices, :2] + 0.15
    turn = np.array([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
    turned = PolyMesh(grid.positions @ turn.T, grid.face_indices, grid.face_offsets)
    pins = np.array([0, n - 1])  # the row j = 0: the cloth swings down about it
    settings = SolverSettings(model=model, cg_tolerance=1e-10, newton_iterations=20,
                              newton_tolerance=1e-9)

    def run(mesh, **grain):
        r = simulate(SimulationSpec(ClothSetup(mesh, mat, pins, **grain), settings, frames=8))
        assert r.error is None
        return r.positions

    base = run(grid, uv=uv)
    motion = np.abs(base - base[0]).max()
    for grain in ({"uv": uv}, {"grain": turn @ np.array([1.0, 0.0, 0.0])}):
        np.testing.assert_allclose(run(turned, **grain), base @ turn.T, atol=1e-6 * motion)
    np.testing.assert_allclose(run(grid, grain=np.array([1.0, 0.0, 0.0])), base,
                               atol=1e-6 * motion)  # the grid's U runs along world X
    assert np.abs(run(turned) - base @ turn.T).max() > 1e-3 * motion


def test_damping_does_not_set_the_explicit_step():
    """Damping rates grow as 1/edge², so on fine meshes they would set the explicit step; the
    mass-spring model then integrates damping implicitly and stiffness alone sets the step:
    a heavily damped strip takes as many substeps as an undamped one (113 before, 17 now)."""
    def substeps(damping):
        mat = dataclasses.replace(SOFT, stretch_damping=damping)
        r = simulate(hanging_strip(mat, settings("mass_spring"), frames=2))
        assert r.error is None
        return [f.substeps for f in r.frames]

    assert max(substeps(0.5)) <= 1.1 * max(substeps(0.0))
