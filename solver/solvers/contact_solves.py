"""Collider contacts as constraints of the implicit solve (collision/constraints.py): which
vertices are constrained in a step, and when the step is solved again with more of them."""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..collision import pipeline
from ..collision.constraints import ContactSet
from .base import ClothSolver, FrameTargets

CONTACT_SOLVES = 3  # implicit solves per step at most while collider contacts are found
# Contacts are predicted only for vertices that start within (1 + CONTACT_NEAR) times their
# contact distance: predicting approaching ones from their velocity plus gravity prescribed
# landings that the cloth's own forces would have slowed (the constraints then pulled), and
# the active set flip-flopped; those are found from the solved path instead.
CONTACT_NEAR = 0.5
# Vertices that start within (1 + CONTACT_TOUCH) times their contact distance are constrained
# whatever their predicted motion, unless their reaction pulled in the previous step (then they
# are free to leave): predicted from velocity and gravity alone, cloth wrapped below a sphere's
# equator (gravity along the surface) was left out, pulled into the collider by its own
# tension within one step, and the collision pipeline's push-back stretched it, step after step
# (docs/solver.md, "Contact solves per step").
CONTACT_TOUCH = 0.1
CONTACT_RESOLVE = 0.05  # re-solve only when the solved path reaches this many new contacts


class ContactSolves:
    """Collider contacts of one implicit solver across its steps.

    Args:
        state: the solver's attributes a step replaces (x, v and any history), restored to
            solve a step again.
    """

    def __init__(self, state: tuple[str, ...]):
        self._state = state
        self.current: ContactSet | None = None  # constraints of the step being solved
        self.warm_start: np.ndarray | None = None  # first guess of a repeated solve
        self._last: ContactSet | None = None  # contacts at the end of the previous step
        self._released: np.ndarray | None = None  # its vertices whose reaction pulled

    def step(self, solver: ClothSolver, solve: Callable[[], int], h: float,
             targets: FrameTargets, s0: float, s1: float) -> int:
        """Run ``solve()`` (one implicit step of ``solver`` over fractions s0 → s1 of the frame;
        returns its iterations) with collider contacts and friction as constraints in
        ``current``: first those predicted from each vertex's velocity plus gravity, with the
        friction modes of the previous step; then, while the solved path reaches a collider at
        other vertices, solved again from the same start with those added and the friction
        modes updated (at most CONTACT_SOLVES). Releases (reactions that pull) and mode changes
        alone wait for the next step: stiff cloth on a curved collider flip-flopped between
        releasing and re-adding within a step, always taking the most solves, for what is at
        most one step of adhesion or friction lag. A step replaces the solver's state
        attributes without writing into the old arrays, so restoring them restarts it."""
        c = solver.collisions
        self.current = None
        if c is None or not (c.colliders.has_analytic or c.colliders.has_mesh
                             or (c.self_collision and pipeline.SELF_CONTACTS_IN_SOLVE)):
            return solve()
        frame = targets.colliders if targets.colliders is not None else c.colliders.frame(1)
        c0, c1 = frame.at(s0), frame.at(s1)
        start = {k: getattr(solver, k) for k in self._state}
        x0, mass = solver.x, solver.model.mass
        v_pred = solver.v + h * solver.gravity
        # vertices lying on another layer are held by the solve's cloth–cloth contact instead
        # (ImplicitSolver.shielded)
        shield = getattr(solver, "shielded", None)
        found = c.contact_constraints(x0, v_pred, solver.inv_mass, h, c0, c1, near=CONTACT_NEAR,
                                      touch=CONTACT_TOUCH, released=self._released)
        if shield is not None:
            found = found.without(shield(found))
        found.inherit(self._last, v_pred, mass)
        self.current = found if len(found) else None
        iters = solve()
        for _ in range(CONTACT_SOLVES - 1):
            solved = (solver.x - x0) / h
            reached = c.contact_constraints(x0, solved, solver.inv_mass, h, c0, c1)
            if shield is not None:
                reached = reached.without(shield(reached))
            reached.estimate_modes(solved, mass)
            current = None if self.current is None \
                else self.current.update(solver.v, mass, release=False)[0]
            merged = reached if current is None else current.union(reached)
            have = 0 if current is None else len(current)
            if len(merged) - have <= CONTACT_RESOLVE * have:
                break  # a few stragglers are left to the collision pipeline; friction modes
                # and releases that changed take effect at the next step
            guess = solver.v  # the last solution: the repeated solve starts next to its answer
            for k, value in start.items():
                setattr(solver, k, value)
            self.current = merged if len(merged) else None
            self.warm_start = guess
            try:
                iters += solve()
            finally:
                self.warm_start = None
        self._last = None if self.current is None \
            else self.current.update(solver.v, mass)[0]
        self._released = None if self.current is None else np.setdiff1d(
            self.current.vertices, self._last.vertices)
        return iters
