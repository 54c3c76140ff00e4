"""A frame that blows up is simulated again from its start with steps half as long
(solver/simulation.py, MAX_RETRIES): the start is restored exactly, the retries are reported,
and a frame that finer steps cannot rescue stops with the usual error.

No scene was found that blows up at the default steps of either model (stiff cloth in 300 to
3000 m/s wind, 1 s frames with one step and one Newton iteration, fast-spinning pins, explicit
steps at the stability limit: all ran), so the blow-up is made to depend on the step length:
the solver's own step runs, then the state is made non-finite whenever that step is longer than
a threshold (raising BlowUpError as check_finite would), as an instability that shorter steps
avoid would.
"""

import dataclasses

import numpy as np
import pytest

from scenarios import SOFT, hanging_cloth
from solver import Collider, SolverSettings, simulate
from solver.simulation import MAX_RETRIES, Simulation
from solver.solvers.base import BlowUpError
from solver.solvers.implicit import ImplicitSolver
from solver.solvers.mass_spring import MassSpringSolver

FRAMES = 6


def _scene(model):
    """A cloth hanging from two corners that swings into a sphere (contacts carried from step
    to step); the explicit model with velocity Verlet (its acceleration is carried too)."""
    st = SolverSettings(model=model, integrator="velocity_verlet")
    spec = hanging_cloth(7, dataclasses.replace(SOFT, air_drag=0.3), st, size=0.3,
                         frames=FRAMES)
    sphere = Collider(kind="sphere", center=(0.15, 0.0, 0.85), radius=0.1)
    return dataclasses.replace(spec, colliders=(sphere,))


def _unstable_above(monkeypatch, cls, method, frames, longest):
    """Make ``cls``'s step ``method`` blow up on the given frames when its step is longer than
    ``longest`` [s] (after it has run, so the failed try changes everything a step changes)."""
    real_frame, real_step = cls.step_frame, getattr(cls, method)

    def step_frame(self, t, dt, targets, wind):
        self.test_frame = round(t * 24.0) + 1
        return real_frame(self, t, dt, targets, wind)

    def step(self, h, *args):
        out = real_step(self, h, *args)
        if self.test_frame in frames and h > longest:
            raise BlowUpError(f"test: a step of {h:.3g} s is too long")
        return out

    monkeypatch.setattr(cls, "step_frame", step_frame)
    monkeypatch.setattr(cls, method, step)


@pytest.mark.parametrize("model", ["implicit", "mass_spring"])
def test_a_frame_that_blows_up_is_retried_from_its_start_with_finer_steps(model, monkeypatch):
    reference = Simulation(_scene(model))  # the same schedule of steps, without failures
    while not reference.done:
        reference._refinement = {3: 4, 4: 2}.get(reference.frame + 1, 1)
        assert reference.step() is not None
    normal = simulate(_scene(model))
    cls, method = ((ImplicitSolver, "_dynamic_step") if model == "implicit"
                   else (MassSpringSolver, "_verlet"))
    steps = normal.frames[2].substeps
    # frame 3 blows up unless its steps are at most a quarter of the usual ones
    _unstable_above(monkeypatch, cls, method, {3}, 0.3 / (24.0 * steps))
    r = simulate(_scene(model))
    assert r.error is None
    assert [f.retries for f in r.frames] == [0, 0, 2, 0, 0, 0]
    # frame 3 took steps of a quarter; frame 4 starts at half of them and works, frame 5 is
    # back to the solver's own steps
    assert [f.step_refinement for f in r.frames] == [1, 1, 4, 2, 1, 1]
    assert r.frames[2].substeps == 4 * steps
    assert r.report()["totals"]["retries"] == 2
    # the failed tries left no trace: the same steps without failures give the same bits
    assert r.positions.tobytes() == reference.result.positions.tobytes()
    assert np.all(np.isfinite(r.positions))
    assert not np.array_equal(r.positions, normal.positions)  # frame 3 really was re-stepped
    # and sanely so: the 0.3 m cloth swings into the sphere, where steps of another length
    # part it from the usual bake by up to 2 cm by the last frame
    np.testing.assert_allclose(r.positions, normal.positions, atol=0.03)


def test_a_frame_that_finer_steps_cannot_rescue_stops_with_the_error(monkeypatch):
    _unstable_above(monkeypatch, ImplicitSolver, "_dynamic_step", {4}, 0.0)
    r = simulate(_scene("implicit"))
    assert r.error == (
        "frame 4: simulation blew up (test: a step of 0.0026 s is too long, after "
        f"{MAX_RETRIES} retries with steps down to 1/{2 ** MAX_RETRIES} of the first); frames "
        "0-3 are kept. Try more substeps, the implicit model, or a lower stiffness.")
    assert len(r.frames) == 3 and r.positions.shape[0] == 4
    assert np.all(np.isfinite(r.positions))
    assert r.report()["totals"]["retries"] == 0  # no frame completed after a retry


def test_a_speed_limit_that_finer_steps_do_not_change_still_stops_the_bake():
    """Free fall passes 1 m/s at any step: the retries cannot help and the error stays."""
    st = SolverSettings(model="implicit", max_speed=1.0)
    r = simulate(hanging_cloth(5, SOFT, st, size=0.3, frames=24))
    assert r.error is not None and "a vertex reached" in r.error
    assert f"after {MAX_RETRIES} retries with steps down to 1/8 of the first" in r.error


def test_explicit_retries_stop_at_max_substeps(monkeypatch):
    """A retry that would need more than max_substeps steps is not tried: the blow-up
    stands, saying why."""
    st = SolverSettings(model="mass_spring", integrator="velocity_verlet", max_substeps=40)
    spec = hanging_cloth(5, SOFT, st, size=0.3, frames=3)
    _unstable_above(monkeypatch, MassSpringSolver, "_verlet", {2}, 0.0)
    r = simulate(spec)
    assert simulate(dataclasses.replace(spec, frames=1)).frames[0].substeps == 14
    # 14 steps fail, 28 fail, 56 would be more than 40
    assert r.error.startswith("frame 2: simulation blew up (test: a step of 0.00149 s is too "
                              "long; a retry with steps of 1/4 would need more than "
                              "max_substeps)")


@pytest.mark.parametrize("model", ["implicit", "mass_spring"])
def test_a_normal_bake_reports_no_retries(model):
    r = simulate(_scene(model))
    assert r.error is None
    assert all(f.retries == 0 and f.step_refinement == 1 for f in r.frames)
    assert r.report()["totals"]["retries"] == 0


def test_the_cli_progress_line_names_a_retried_frame(capsys):
    from solver.cli import _print_progress
    _print_progress({"frame": 3, "frames": 6, "wall_time_s": 0.002, "max_strain": 0.01,
                     "retries": 2, "step_refinement": 4})
    _print_progress({"frame": 4, "frames": 6, "wall_time_s": 0.002, "max_strain": 0.01,
                     "retries": 0, "step_refinement": 2})
    assert capsys.readouterr().err.splitlines() == [
        "frame 3/6  2.0 ms  max strain 1.0%  blew up, retried 2x (steps 1/4)",
        "frame 4/6  2.0 ms  max strain 1.0%"]
