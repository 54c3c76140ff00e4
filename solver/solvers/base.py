"""What every cloth solver shares: state, pins, the strain limit, the collision pipeline after
each step, and blow-up detection. Each solver chooses its own time step (its own module)."""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np

from ..collision.colliders import ColliderFrame
from ..collision.pipeline import CollisionHandler, CollisionStats
from ..diagnostics import edge_strain
from ..model import ClothModel
from ..params import SolverSettings
from ..strain_limit import apply_strain_limit, tethers

# The collision pipeline's pushes act on single vertices and can stretch their edges far past
# the strain limit. While an edge then exceeds the limit by more than STRAIN_SLACK of it, the
# limiter runs again and the pipeline once more on the same step, at most STRAIN_ROUNDS times.
# Since the repeated pipeline tests only the pairs the limiter moved, tight rounds are cheap. A
# few folds never settle: there the pushes that keep the layers apart and the limit disagree
# (docs/solver.md, "Strain rounds after collisions").
STRAIN_SLACK = 0.02
STRAIN_ROUNDS = 16
# In those rounds a vertex the pipeline holds against a collider moves as if this many times
# heavier: the collider has the last word, so an edge from it to free cloth is shortened at the
# free end. Moved equally, the limiter pulled it back into a rising arm and the next resolve
# pushed it out again until the rounds ran out, stretching the sleeve over it.
HELD_MASS = 100.0
# A material without a strain limit still must not be stretched by collision pushes: those
# rounds then hold edges to this strain (without it a draped cloth spiked far past any fabric's
# stretch; docs/solver.md, "Strain rounds after collisions").
COLLISION_STRAIN_GUARD = 0.1


class BlowUpError(RuntimeError):
    """The state became non-finite or a vertex exceeded the speed limit (the simulation then
    retries the frame with finer steps: simulation.py, ``MAX_RETRIES``)."""


class CrushedError(BlowUpError):
    """The model is squeezed between things that do not give way (a collider moving into
    pinned points, two colliders closing on it): no shorter step can help, so the frame is
    not retried."""


class StepLimitError(RuntimeError):
    """A stable step would need more substeps per frame than the settings allow."""


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
    """What one frame cost: substeps taken, solver iterations (CG or limiter passes) and the
    implicit model's Newton iterations (0 for the others)."""

    substeps: int
    iterations: int
    newton_iterations: int = 0


class ClothSolver:
    """Base class: holds x, v and advances them one frame at a time.

    Args:
        model: rest-state data (positions start at the rest shape).
        settings: numerical options.
        gravity: [m/s²], (3,).
    """

    name = "base"
    # Retry hooks (simulation.py retries a frame that blew up with finer steps):
    # ``step_refinement`` multiplies the steps each solver takes per frame, and ``carried``
    # names the attributes besides x and v that one step hands to the next (saved at the start
    # of a frame and put back before a retry). Caches that change results only within a
    # solver tolerance (a reused preconditioner) are not carried.
    step_refinement = 1
    carried: tuple[str, ...] = ()

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

    def _resolve_collisions(self, x_start: np.ndarray, h: float, targets: FrameTargets,
                            s0: float, s1: float) -> bool:
        """Make the step x_start → self.x (fractions s0 → s1 of the frame) collision-free;
        called last in every substep. Returns True if positions changed."""
        c = self.collisions
        if c is None or not c.active:
            return False
        frame = targets.colliders if targets.colliders is not None else c.colliders.frame(1)
        c0, c1 = frame.at(s0), frame.at(s1)
        stats = c.resolve(x_start, self.x, self.v, self.inv_mass, h, c0, c1)
        self.collision_stats.add(stats)
        touched = stats.contacts + stats.collisions > 0
        if touched:
            held = c.collider_contact_vertices
            for _ in range(STRAIN_ROUNDS):
                before = self.x.copy()
                if not self._limit_strain(h, only_if_over=True, held=held,
                                          constraints=c.step_constraints):
                    break
                # A resolve leaves every pair free of crossings on its path, so the next one
                # need only test pairs the strain limiter moved: a small share of the vertices
                # (docs/solver.md, "Repeated resolves").
                moved = None if stats.unresolved else np.any(self.x != before, axis=1)
                stats = c.resolve(x_start, self.x, self.v, self.inv_mass, h, c0, c1, moved)
                stats.strain_rounds = 1
                self.collision_stats.add(stats)
        return touched

    def step_frame(self, t: float, frame_dt: float, targets: FrameTargets,
                   wind: np.ndarray) -> StepInfo:
        """Advance x, v by one frame of length frame_dt [s] starting at time t [s]."""
        raise NotImplementedError

    def save_frame_state(self) -> dict:
        """Copies of everything a frame's steps change and later steps read (x, v,
        ``carried``, the collision pipeline's step history), for ``restore_frame_state``."""
        state = {k: copy.deepcopy(getattr(self, k)) for k in ("x", "v") + self.carried}
        c = self.collisions
        if c is not None:
            state["collisions"] = (c.self_contact_vertices.copy(), c._pair_cache)
        return state

    def restore_frame_state(self, state: dict) -> None:
        """Put back what ``save_frame_state`` saved (``state`` stays usable for another
        retry)."""
        for k, value in state.items():
            if k != "collisions":
                setattr(self, k, copy.deepcopy(value))
        if "collisions" in state:
            touched, pairs = state["collisions"]
            self.collisions.self_contact_vertices[:] = touched
            self.collisions._pair_cache = pairs  # replaced, never written into, by a step

    def _limit_strain(self, dt: float, only_if_over: bool = False,
                      held: np.ndarray | None = None, constraints=None) -> int:
        """Apply the material's strain limit after a step of length dt; returns passes.
        only_if_over: do nothing (return 0) unless an edge exceeds the limit by more than
        STRAIN_SLACK of it. held: (V,) bool, vertices that move as if HELD_MASS times
        heavier. constraints: one-sided constraints held with the limit (apply_strain_limit),
        or None, or a function returning them (called only when the limiter runs)."""
        s = self.model.max_strain
        if s is None:
            if not only_if_over:  # only the collision rounds guard unlimited materials
                return 0
            s = COLLISION_STRAIN_GUARD
        m = self.model
        if only_if_over and not np.any(edge_strain(self.x, m.edges, m.edge_rest_length)
                                       > s * (1.0 + STRAIN_SLACK)):
            return 0
        if self._tethers is None:
            pos = m.rest_positions
            graph = np.concatenate([m.edges, m.diagonals])
            length = np.linalg.norm(pos[graph[:, 1]] - pos[graph[:, 0]], axis=1)
            self._tethers = tethers(graph, length, m.vertex_count, self.fixed)
        if callable(constraints):
            constraints = constraints()
        inv_mass = self.inv_mass
        if held is not None and held.any():
            inv_mass = np.where(held, inv_mass / HELD_MASS, inv_mass)
        return apply_strain_limit(self.x, self.v, dt, m.edges, m.edge_rest_length,
                                  inv_mass, self._tethers, s,
                                  self.settings.strain_limit_iterations, constraints,
                                  STRAIN_SLACK)

    def elastic_energy(self) -> float:
        """Energy stored in the cloth's elastic terms at the current positions [J]
        (``self.system`` is each solver's ForceSystem; its energy-only kernels)."""
        return self.system.energy(self.x)

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
