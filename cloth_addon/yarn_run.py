"""A knit's yarn model over a bake's frames, one frame per ``step()``: the stepper the bake's
runner steps (runner.py), on a thread of Blender or in the worker process (worker.py), which
imports this module without Blender: nothing here imports bpy (yarn_bake.py reads the scene)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..solver import SolverSettings, YarnColliders, YarnSolver, YarnStepError, build_yarn_model
from .formats import frame_range
from .runner import UNFINISHED  # step(): the frame goes on at the next call

MODEL = "yarn"
# Longest a yarn step() runs before it returns UNFINISHED: the runner sees Stop and Cancel
# between slices (runner.py), not only between frames of seconds.
SLICE_S = 0.1


@dataclass
class YarnReport:
    """One frame's report, with the fields bake.py reads from the cloth models' reports."""

    frame: int
    wall_time_s: float
    max_strain: float          # largest relative change of a segment's length
    steps: int = 0
    refinements: int = 0       # steps halved so that no yarn passes through another
    retries: int = 0
    deepest_penetration_m: float = 0.0
    self_intersections: int = 0
    collider_crossings: int = 0
    untangled: int = 0
    tangled_pairs: int = 0
    threads: tuple = ()        # numba's thread counts the frame's slices ran with, in turn


@dataclass
class YarnResult:
    positions: np.ndarray      # (frames done + 1, P, 3) world [m]
    model_name: str = MODEL
    error: str | None = None
    frames: list = field(default_factory=list)


class YarnRun:
    """The yarn model over the bake's frames, one frame per ``step()`` (bake.Group.simulation):
    the yarns of ``setup`` (world [m], pins held where they start), gravity [m/s²]."""

    def __init__(self, setup, frames: int, gravity, fps: float, colliders=()):
        self.frames, self.fps = frames, float(fps)
        model = build_yarn_model(setup)
        self.colliders = YarnColliders(colliders, model.radius, fps, frames) \
            if colliders else None
        self.sim = YarnSolver(model, SolverSettings(model="yarn"), gravity, self.colliders)
        self._rest = model.segments.rest.copy()
        self._positions = [self.sim.x.copy()]
        self.result = YarnResult(np.array(self._positions))
        self._frame_steps = 0  # steps of the frame in progress done so far
        self._frame_start = (0, 0, 0.0)  # its stats at the start: steps, refinements, wall [s]
        self._frame_threads: tuple = ()  # numba's thread counts its slices ran with

    @property
    def frame(self) -> int:
        return len(self._positions) - 1

    @property
    def done(self) -> bool:
        return self.frame >= self.frames

    def step(self) -> YarnReport | None | object:
        """Simulate the next frame for at most ``SLICE_S`` of wall time: its report once the
        frame is done, ``UNFINISHED`` while it goes on (a yarn frame takes seconds, and the
        modal bake sees Esc and redraws its progress only between calls), None on failure
        (``result.error``). The frame's steps are those of ``YarnSolver.advance``."""
        f = self.frame + 1
        st = self.sim.stats
        if self._frame_steps == 0:
            self._frame_start = (st.steps, st.refinements, 0.0)
            self._frame_end = f / self.fps
        steps, refinements, wall = self._frame_start
        if self._frame_steps == 0:
            self._frame_threads = ()
        import numba  # loaded by the solver already (after it set OpenMP's spin count)
        count = numba.get_num_threads()  # this thread's (the runner's)
        if not self._frame_threads or self._frame_threads[-1] != count:
            self._frame_threads += (count,)
        t0 = time.perf_counter()
        try:
            while not self.sim.step_toward(self._frame_end):
                self._frame_steps += 1
                if time.perf_counter() - t0 > SLICE_S:
                    self._frame_start = (steps, refinements, wall + time.perf_counter() - t0)
                    return UNFINISHED
        except YarnStepError as err:
            self.result.error = f"frame {f}: {err}; frames {frame_range(0, f - 1)} are kept."
            return None
        self._frame_steps = 0
        if not np.isfinite(self.sim.x).all():
            self.result.error = f"frame {f}: the yarn's positions are not finite"
            return None
        strain = float(np.abs(self.sim.model.segments.lengths(self.sim.x) / self._rest
                              - 1.0).max())
        self._positions.append(self.sim.x.copy())
        self.result.positions = np.array(self._positions)
        depth = 0.0 if self.colliders is None else \
            self.colliders.depth(self.sim.x, self.sim.time)
        report = YarnReport(frame=f, wall_time_s=wall + time.perf_counter() - t0,
                            max_strain=strain, steps=st.steps - steps,
                            refinements=st.refinements - refinements,
                            deepest_penetration_m=depth, threads=self._frame_threads)
        self.result.frames.append(report)
        return report

    def closing_notes(self, names) -> list[str]:
        """What the bake's summary says once the last frame is done (runner.py)."""
        return [f"yarn {names[0]}: closest yarns {self.min_clearance_diameters:.2f} diameters "
                "apart"]

    @property
    def min_clearance_diameters(self) -> float:
        """Closest approach of two non-neighbouring segments so far, in yarn diameters."""
        return float(self.sim.stats.min_clearance / (2.0 * self.sim.model.radius))
