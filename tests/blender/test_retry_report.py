"""A bake whose frame blows up at the usual step is retried with finer steps (solver/simulation.py)
and says so in its summary and log; one that finer steps cannot rescue stops with the error and
keeps the previous bake. The blow-up is made to depend on the step length as in
tests/test_retry.py (no scene of either model was found to blow up by itself)."""

from __future__ import annotations

import numpy as np
import pytest

import bpy
from scenes import addon, cloth, evaluated_world, key_state, same_key_state


def _unstable(monkeypatch, scene_frame, longest):
    """The implicit step of the simulation frame ending on ``scene_frame`` (bake from frame 1)
    blows up when longer than ``longest`` [s]."""
    solvers = addon().solver.solvers
    cls = solvers.implicit.ImplicitSolver
    real_frame, real_step = cls.step_frame, cls._dynamic_step

    def step_frame(self, t, dt, targets, wind):
        self.test_frame = round(t / dt) + 2  # the scene frame this one ends on
        return real_frame(self, t, dt, targets, wind)

    def step(self, h, *args):
        out = real_step(self, h, *args)
        if self.test_frame == scene_frame and h > longest:
            raise solvers.base.BlowUpError(f"test: a step of {h:.3g} s is too long")
        return out

    monkeypatch.setattr(cls, "step_frame", step_frame)
    monkeypatch.setattr(cls, "_dynamic_step", step)


def test_a_blown_up_frame_is_retried_and_reported(monkeypatch, capsys):
    obj = cloth(n=4, pins=[12, 15], frames=(1, 5))
    _unstable(monkeypatch, 3, 0.3 / 48)  # frame 3 needs a quarter of the usual half-frame step
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    report = bpy.context.scene.cloth_solver.last_report
    assert "; 2 retries with finer steps after a blow-up (frames 3)" in report
    log = capsys.readouterr().out
    line = next(line for line in log.splitlines() if "frame 3 of 1-5 Cloth: " in line)
    assert line.endswith(", blew up and retried 2x: steps 1/4 of the usual")
    first, last = evaluated_world(obj, 1), evaluated_world(obj, 5)
    assert np.all(np.isfinite(last)) and last[0, 2] < first[0, 2] - 0.01  # it falls


def test_a_frame_that_cannot_be_rescued_keeps_the_previous_bake(monkeypatch):
    obj = cloth(n=4, pins=[12, 15], frames=(1, 5))
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    evaluated_world(obj, 1)
    before = key_state(obj)
    _unstable(monkeypatch, 3, 0.0)
    # the message counts the simulation's frames: its frame 2 ends on scene frame 3
    with pytest.raises(RuntimeError, match=r"'Cloth': frame 2: simulation blew up \(test: a step "
                                           r".* after 3 retries with steps down to 1/8 of the "
                                           r"first\); frames 0-1 are kept"):
        bpy.ops.cloth_solver.bake()
    assert same_key_state(before, key_state(obj))
