"""What every cloth model shares: state, pins, stepping interface and blow-up detection."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..collision.colliders import ColliderFrame
from ..collision.constraints import ContactSet
from ..collision.pipeline import CollisionHandler, CollisionStats
from ..model import ClothModel
from ..params import SolverSettings
from ..strain_limit import apply_strain_limit, tethers


class BlowUpError(RuntimeError):
    """The state became non-finite or a vertex exceeded the speed limit."""


@dataclass
class FrameTargets:
    """Pin goal positions at the start and end of a frame [m].

    Attributes:
        hard0, hard1: (Ph, 3) positions of hard-pinned vertices.
        soft0, soft1: (Ps, 3) goal positions of soft pins.
        colliders: collider states at the start and end of the frame (None: no colliders).
    """

    hard0: np.ndarray
    hard1: np.ndarray
    soft0: np.ndarray
    soft1: np.ndarray
    colliders: "ColliderFrame | None" = None  # collider states at the start and end

    def at(self, s: float) -> tuple[np.ndarray, np.ndarray]:
        """Linearly interpolated (hard, soft) targets at fraction s in [0, 1] of the frame."""
        return ((1 - s) * self.hard0 + s * self.hard1, (1 - s) * self.soft0 + s * self.soft1)


@dataclass
class StepInfo:
    """What one frame cost: substeps taken and solver iterations (CG or limiter passes)."""

    substeps: int
    iterations: int


class ClothSolver:
    """Base class: holds x, v and advances them one frame at a time.

    Args:
        model: rest-state data (positions start at the rest shape).
        settings: numerical options.
        gravity: [m/s²], (3,).
    """

    name = "base"

    def __init__(self, model: ClothModel, settings: SolverSettings, gravity: np.ndarray):
        self.model = model
        self.settings = settings
        self.gravity = np.asarray(gravity, dtype=np.float64)
        self.x = model.rest_positions.copy()
        self.v = np.zeros_like(self.x)
        free = model.free_mask
        self.inv_mass = np.where(free, 1.0 / np.where(model.mass > 0, model.mass, 1.0), 0.0)
        # vertices that never move under forces: hard pins and massless (loose) vertices
        self.fixed = np.nonzero(~free)[0]
        self._tethers = None  # built on first use of the strain limit
        self.collisions: CollisionHandler | None = None  # set by the simulation
        self.collision_stats = CollisionStats()  # summed since the last reset
        self._contacts: ContactSet | None = None  # collider contacts of the current step

    def _predict_contacts(self, h: float, targets: FrameTargets, s0: float, s1: float) -> None:
        """Find the collider contacts an implicit step over fractions s0 → s1 of the frame
        should enforce as constraints (collision/constraints.py) into self._contacts."""
        c = self.collisions
        self._contacts = None
        if c is None or not (c.colliders.has_analytic or c.colliders.has_mesh):
            return
        frame = targets.colliders if targets.colliders is not None else c.colliders.frame(1)
        found = c.contact_constraints(self.x, self.v + h * self.gravity, self.inv_mass, h,
                                      frame.at(s0), frame.at(s1))
        self._contacts = found if len(found) else None

    def _resolve_collisions(self, x_start: np.ndarray, h: float, targets: FrameTargets,
                            s0: float, s1: float) -> bool:
        """Make the step x_start → self.x (fractions s0 → s1 of the frame) collision-free;
        called last in every substep. Returns True if positions changed."""
        c = self.collisions
        if c is None or not c.active:
            return False
        frame = targets.colliders if targets.colliders is not None else c.colliders.frame(1)
        stats = c.resolve(x_start, self.x, self.v, self.inv_mass, h, frame.at(s0), frame.at(s1))
        self.collision_stats.add(stats)
        return stats.contacts + stats.collisions > 0

    def step_frame(self, t: float, frame_dt: float, targets: FrameTargets,
                   wind: np.ndarray) -> StepInfo:
        """Advance x, v by one frame of length frame_dt [s] starting at time t [s]."""
        raise NotImplementedError

    def _limit_strain(self, dt: float) -> int:
        """Apply the material's strain limit after a step of length dt; returns passes."""
        s = self.model.material.max_strain
        if s is None:
            return 0
        m = self.model
        if self._tethers is None:
            pos = m.rest_positions
            graph = np.concatenate([m.edges, m.diagonals])
            length = np.linalg.norm(pos[graph[:, 1]] - pos[graph[:, 0]], axis=1)
            self._tethers = tethers(graph, length, m.vertex_count, self.fixed)
        return apply_strain_limit(self.x, self.v, dt, m.edges, m.edge_rest_length,
                                  self.inv_mass, self._tethers, s,
                                  self.settings.strain_limit_iterations)

    def check_finite(self) -> None:
        """Raise BlowUpError if the state is non-finite or runaway."""
        if not (np.all(np.isfinite(self.x)) and np.all(np.isfinite(self.v))):
            raise BlowUpError("positions or velocities became NaN/infinite")
        speed = float(np.sqrt(np.max(np.sum(self.v * self.v, axis=1)))) if len(self.v) else 0.0
        if speed > self.settings.max_speed:
            raise BlowUpError(f"a vertex reached {speed:.3g} m/s "
                              f"(limit solver.max_speed = {self.settings.max_speed:g} m/s)")

    def _pin(self, hard: np.ndarray, hard_vel: np.ndarray) -> None:
        """Put hard-pinned vertices on their targets with the targets' velocity."""
        hp = self.model.hard_pins
        self.x[hp] = hard
        self.v[hp] = hard_vel
