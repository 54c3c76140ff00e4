"""What every cloth model shares: state, pins, stepping interface and blow-up detection."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..collision.colliders import ColliderFrame
from ..collision.constraints import ContactSet
from ..collision.pipeline import CollisionHandler, CollisionStats
from ..diagnostics import edge_strain
from ..model import ClothModel
from ..params import SolverSettings
from ..strain_limit import apply_strain_limit, tethers


CONTACT_SOLVES = 3  # implicit solves per step at most while collider contacts are found
# Contacts are predicted only for vertices that start within (1 + CONTACT_NEAR) times their
# contact distance: predicting approaching ones from their velocity plus gravity prescribed
# landings that the cloth's own forces would have slowed (the constraints then pulled), and
# the active set flip-flopped; those are found from the solved path instead.
CONTACT_NEAR = 0.5
# Vertices that start within (1 + CONTACT_TOUCH) times their contact distance are constrained
# whatever their predicted motion, unless their reaction pulled in the previous step (then they
# are free to leave): predicted from velocity and gravity alone, cloth wrapped below a sphere's
# equator (gravity along the surface) was left out, pulled 1-2 cm into the collider by its own
# tension within one step, and the collision pipeline's push-back stretched it by 20-90%, step
# after step (measured, 31 x 31 denim on a 32 x 16 UV sphere).
CONTACT_TOUCH = 0.1
CONTACT_RESOLVE = 0.05  # re-solve only when the solved path reaches this many new contacts
# With self-collision, layers are pushed apart after the solve; when the cloth's parts move
# relative to each other by more than this fraction of an edge per step, those pushes stretch
# the cloth (measured: 40-190% strain at 1 step per frame on a strip piling up), so the
# implicit model then takes more substeps (at most MAX_SELF_CONTACT_SUBSTEPS). Only edges with
# an end in self-contact on the last step count: the pushes act there, and counting every edge
# let cloth sliding fast off a sphere, nowhere near its other layers, set 3-10 substeps
# (measured on the sphere drape with self-collision, 24 frames: 49x49 1.96 -> 1.44 s, 65x65
# 3.2-4.0 -> 2.8-3.6 s in four alternating pairs, 97x97 14.6 -> 9.1 s, 129x129 17.5-18.6 ->
# 15.4 s in two; the same 5.1% max strain, mean strain 0.2-0.4% either way, no penetration or
# self-intersection). The 1 m strip piling onto the floor (tests/test_collision.py) took a
# different path: 131 instead of 120 substeps over 36 frames, its largest mean strain 7.1% ->
# 4.4% (docs/benchmarks.md, "Session 9").
SELF_CONTACT_MOTION = 0.5
MAX_SELF_CONTACT_SUBSTEPS = 16
# The collision pipeline's pushes act on single vertices and can stretch their edges far past
# the strain limit (measured: 20-90% where the solve had pulled cloth 1-2 cm into a faceted
# sphere, 10% at a self-contact fold). While an edge then exceeds the limit by more than
# STRAIN_SLACK of it, the limiter runs again and the pipeline once more on the same step, at
# most STRAIN_ROUNDS times (max strain of the sphere-and-floor demo sheet 14-17% -> 6-8% with
# one round alone, measured over three wind seeds). Since the repeated pipeline tests only the
# pairs the limiter moved, tight rounds are cheap: slack 20% and 3 rounds left the 2 m cotton
# drape with self-collision at 5.7% (4k) and 5.9% (16k vertices); 2% and 8 rounds at 5.07% and
# 5.09% over 24 frames, for 2-10% more time per frame. Longer runs still spiked where 8 rounds ran
# out (65x65 over 72 frames: 5.56%; 129x129 over 36: 5.38%); 16 rounds hold both at 5.10% at no
# measurable cost. A few folds never settle (57x57 over 60 frames: 5.41% with 8 rounds, 5.18% with
# 16, 5.20% with 32): there the pushes that keep the layers apart and the limit disagree.
STRAIN_SLACK = 0.02
STRAIN_ROUNDS = 16
# A material without a strain limit still must not be stretched by collision pushes: those
# rounds then hold edges to this strain (a 2 m cloth draped over a 32x16 mesh sphere spiked to
# 29% at 1k and 122% at 4k vertices without it; measured, docs/benchmarks.md).
COLLISION_STRAIN_GUARD = 0.1
_STEP_STATE = ("x_prev", "v_prev")  # what an implicit step replaces besides x and v


class BlowUpError(RuntimeError):
    """The state became non-finite or a vertex exceeded the speed limit."""


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
        self._last_contacts: ContactSet | None = None  # and of the previous one
        self._released: np.ndarray | None = None  # its vertices whose reaction pulled
        self._warm_start: np.ndarray | None = None  # first guess of a repeated implicit solve

    def _step_with_contacts(self, step: Callable[[], int], h: float, targets: FrameTargets,
                            s0: float, s1: float) -> int:
        """Run ``step()`` (one implicit step over fractions s0 → s1 of the frame; returns its
        iterations) with collider contacts and friction as constraints in self._contacts
        (collision/constraints.py): first those predicted from each vertex's velocity plus
        gravity, with the friction modes of the previous step; then, while the solved path
        reaches a collider at other vertices, solved again from the same start with those
        added and the friction modes updated (at most CONTACT_SOLVES). Releases (reactions
        that pull) and mode changes alone wait for the next step: stiff cloth on a curved
        collider flip-flopped between releasing and re-adding within a step, always taking
        the most solves (measured), for what is at most one step of adhesion or friction lag. A step replaces self.x, self.v (and the
        attributes in _STEP_STATE) without writing into the old arrays, so restoring them
        restarts it."""
        c = self.collisions
        self._contacts = None
        if c is None or not (c.colliders.has_analytic or c.colliders.has_mesh):
            return step()
        frame = targets.colliders if targets.colliders is not None else c.colliders.frame(1)
        c0, c1 = frame.at(s0), frame.at(s1)
        start = {k: getattr(self, k) for k in ("x", "v", *_STEP_STATE) if hasattr(self, k)}
        x0, mass = self.x, self.model.mass
        v_pred = self.v + h * self.gravity
        found = c.contact_constraints(x0, v_pred, self.inv_mass, h, c0, c1, near=CONTACT_NEAR,
                                      touch=CONTACT_TOUCH, released=self._released)
        found.inherit(self._last_contacts, v_pred, mass)
        self._contacts = found if len(found) else None
        iters = step()
        for _ in range(CONTACT_SOLVES - 1):
            solved = (self.x - x0) / h
            reached = c.contact_constraints(x0, solved, self.inv_mass, h, c0, c1)
            reached.estimate_modes(solved, mass)
            current = None if self._contacts is None \
                else self._contacts.update(self.v, mass, release=False)[0]
            merged = reached if current is None else current.union(reached)
            have = 0 if current is None else len(current)
            if len(merged) - have <= CONTACT_RESOLVE * have:
                break  # a few stragglers are left to the collision pipeline; friction modes
                # and releases that changed take effect at the next step
            guess = self.v  # the last solution: the repeated solve starts next to its answer
            for k, value in start.items():
                setattr(self, k, value)
            self._contacts = merged if len(merged) else None
            self._warm_start = guess
            try:
                iters += step()
            finally:
                self._warm_start = None
        self._last_contacts = None if self._contacts is None \
            else self._contacts.update(self.v, mass)[0]
        self._released = None if self._contacts is None else np.setdiff1d(
            self._contacts.vertices, self._last_contacts.vertices)
        return iters

    def _substeps_for_self_contact(self, frame_dt: float, n: int) -> int:
        """Substeps for a frame (at least n) so that no edge with an end in self-contact on the
        last step moves its ends relative to each other by more than SELF_CONTACT_MOTION of its
        rest length per step, at the current velocities (self-collision only)."""
        c = self.collisions
        if c is None or not c.self_collision:
            return n
        touched = c.self_contact_vertices
        e = self.model.edges
        near = touched[e[:, 0]] | touched[e[:, 1]]
        if not near.any():
            return n
        e, rest = e[near], self.model.edge_rest_length[near]
        rel = np.linalg.norm(self.v[e[:, 1]] - self.v[e[:, 0]], axis=1) * frame_dt
        need = float(np.max(rel / (SELF_CONTACT_MOTION * rest)))
        return max(n, min(MAX_SELF_CONTACT_SUBSTEPS, int(np.ceil(need))))

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
            for _ in range(STRAIN_ROUNDS):
                before = self.x.copy()
                if not self._limit_strain(h, only_if_over=True):
                    break
                # A resolve leaves every pair free of crossings on its path, so the next one
                # need only test pairs the strain limiter moved: about 1% of the vertices on
                # the 65x65 self-colliding drape (measured).
                moved = None if stats.unresolved else np.any(self.x != before, axis=1)
                stats = c.resolve(x_start, self.x, self.v, self.inv_mass, h, c0, c1, moved)
                self.collision_stats.add(stats)
        return touched

    def step_frame(self, t: float, frame_dt: float, targets: FrameTargets,
                   wind: np.ndarray) -> StepInfo:
        """Advance x, v by one frame of length frame_dt [s] starting at time t [s]."""
        raise NotImplementedError

    def _limit_strain(self, dt: float, only_if_over: bool = False) -> int:
        """Apply the material's strain limit after a step of length dt; returns passes.
        only_if_over: do nothing (return 0) unless an edge exceeds the limit by more than
        STRAIN_SLACK of it."""
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
