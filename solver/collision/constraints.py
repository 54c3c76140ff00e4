"""Collider contacts and their friction as constraints of the implicit solve ([Baraff1998] §5 in
docs/references.md).

Why inside the solve: correcting positions only after a large step lets the elastic forces act
as if the collider were absent. A vertex stopped by the collider is held back from neighbours
that kept falling, so a coarse cloth landing at frame-sized steps came out badly stretched, and
left to the next step those stretched edges pulled the cloth back into the collider, which
pushed it out again: the cycle pumped energy until the cloth tore through. Friction applied
after the solve does the same tangentially: it stops the contact vertices but not their
neighbours, stretching the cloth by about μ·g·h² per step (docs/solver.md, "Contacts
inside the implicit solve").

So the vertices that reach a collider during the step get, in the solve:
* a *normal* constraint (filter S = I − n·nᵀ, normal velocity prescribed) so that they end the
  step at the contact distance, moving with the surface; and
* Coulomb friction: *sticking* vertices are held completely (S = 0, velocity = the surface's),
  *sliding* ones feel the kinetic friction impulse μ·J against their sliding direction as a
  known impulse in the solve, with J the normal reaction.

The contact set, the modes and J form an active set, solved again (from the same start) while
it changes (solvers/contact_solves.py): vertices whose solved path still reaches a
collider are added; a sticking vertex whose tangential reaction exceeds μ·J slides; a sliding
one whose friction could stop it sticks; a contact whose reaction pulls (J < 0) is released.
Modes carry over from one step to the next, so a resting or steadily sliding cloth needs one
solve per step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

CHANGE = 0.25  # relative change of a kinetic friction impulse that calls for another solve


@dataclass
class ContactSet:
    """Cloth vertices constrained by colliders for one step.

    Attributes:
        vertices: (K,) cloth vertex indices (distinct).
        normals: (K, 3) unit normals pointing away from the collider.
        target: (K,) prescribed normal velocity [m/s] (ends the step at the contact distance).
        surface_velocity: (K, 3) velocity of the collider surface at the contact [m/s].
        friction: (K,) Coulomb coefficients.
        stick: (K,) True where static friction holds the vertex to the surface.
        impulse: (K, 3) kinetic friction impulse over the step on sliding vertices [N·s].
        reaction: (K, 3) impulse the constraints supplied in the last solve [N·s].
    """

    vertices: np.ndarray
    normals: np.ndarray
    target: np.ndarray
    surface_velocity: np.ndarray
    friction: np.ndarray
    stick: np.ndarray = None
    impulse: np.ndarray = None
    reaction: np.ndarray = field(default=None, repr=False)

    def __post_init__(self):
        K = len(self.vertices)
        if self.stick is None:
            self.stick = np.zeros(K, bool)
        if self.impulse is None:
            self.impulse = np.zeros((K, 3))
        if self.reaction is None:
            self.reaction = np.zeros((K, 3))

    def __len__(self) -> int:
        return len(self.vertices)

    def without(self, drop: np.ndarray) -> "ContactSet":
        """These contacts less the rows where ``drop`` (K,) is True."""
        return self._rows(~drop) if np.any(drop) else self

    def _rows(self, keep: np.ndarray) -> "ContactSet":
        return ContactSet(self.vertices[keep], self.normals[keep], self.target[keep],
                          self.surface_velocity[keep], self.friction[keep], self.stick[keep],
                          self.impulse[keep], self.reaction[keep])

    @staticmethod
    def concat(a: "ContactSet", b: "ContactSet") -> "ContactSet":
        return ContactSet(*(np.concatenate([getattr(a, k), getattr(b, k)]) for k in
                            ("vertices", "normals", "target", "surface_velocity", "friction",
                             "stick", "impulse", "reaction")))

    def union(self, other: "ContactSet") -> "ContactSet":
        """These contacts plus those of other at vertices not already here."""
        return ContactSet.concat(self, other._rows(~np.isin(other.vertices, self.vertices)))

    def estimate_modes(self, v: np.ndarray, mass: np.ndarray) -> None:
        """Friction modes from a predicted velocity v (V, 3) [m/s], ignoring the cloth's own
        forces: the normal impulse J that brings the normal velocity to its target, then
        stick if the tangential momentum is at most μ·J, else slide with μ·J against it
        (exact for a lone vertex landing or resting on a surface)."""
        if not len(self):
            return
        i, n = self.vertices, self.normals
        rel = v[i] - self.surface_velocity
        J = mass[i] * np.maximum(self.target - np.sum(v[i] * n, axis=1), 0.0)
        pt = mass[i][:, None] * (rel - np.sum(rel * n, axis=1)[:, None] * n)
        lpt = np.linalg.norm(pt, axis=1)
        bound = self.friction * J
        self.stick = (lpt <= bound) & (bound > 0.0)
        self.impulse = np.where(self.stick[:, None], 0.0,
                                -pt * (bound / np.where(lpt > 0, lpt, 1.0))[:, None])

    def inherit(self, previous: "ContactSet | None", v: np.ndarray, mass: np.ndarray) -> None:
        """Friction modes: the previous step's mode and impulse where the vertex was in contact
        then (steady contact needs no re-solve), else estimated from v (estimate_modes)."""
        self.estimate_modes(v, mass)
        if previous is None or not len(previous) or not len(self):
            return
        order = np.argsort(previous.vertices)
        pos = np.searchsorted(previous.vertices[order], self.vertices)
        pos = np.minimum(pos, len(order) - 1)
        match = previous.vertices[order[pos]] == self.vertices
        src = order[pos[match]]
        self.stick[match] = previous.stick[src]
        self.impulse[match] = previous.impulse[src]

    def constrain(self, filt: np.ndarray, v: np.ndarray, v_tilde: np.ndarray,
                  mass: np.ndarray) -> np.ndarray:
        """Set the solver's filters (V, 3, 3) and prescribed velocities in v (V, 3) [m/s];
        returns v_tilde (the velocity the solve's momentum balance starts from, (V, 3)) with
        the kinetic friction impulses added."""
        if not len(self):
            return v_tilde
        i, n = self.vertices, self.normals
        normal_only = np.eye(3) - n[:, :, None] * n[:, None, :]
        filt[i] = np.where(self.stick[:, None, None], 0.0, normal_only)
        U = self.surface_velocity
        held = U - np.sum(U * n, axis=1)[:, None] * n + self.target[:, None] * n
        slid = v[i] + (self.target - np.sum(v[i] * n, axis=1))[:, None] * n
        v[i] = np.where(self.stick[:, None], held, slid)
        out = v_tilde.copy()
        out[i] += self.impulse / mass[i][:, None]
        return out

    def tangential(self, r: np.ndarray) -> np.ndarray:
        """r (V, 3) without what the constraints take up: the normal component at the
        contacts, everything at sticking ones (a copy)."""
        out = r.copy()
        i, n = self.vertices, self.normals
        out[i] -= np.sum(r[i] * n, axis=1)[:, None] * n
        out[i[self.stick]] = 0.0
        return out

    def release(self, filt: np.ndarray, residual: np.ndarray) -> None:
        """Free the filters again and keep the reactions: residual h·f − M·Δv (V, 3) [N·s] at
        the solution is minus the impulse the constraints supplied."""
        if not len(self):
            return
        filt[self.vertices] = np.eye(3)
        self.reaction = -residual[self.vertices]

    def update(self, v: np.ndarray, mass: np.ndarray,
               release: bool = True) -> tuple["ContactSet", bool]:
        """Friction modes consistent with the last solve (end velocities v (V, 3)); with
        release, contacts whose reaction pulls are dropped (else they stay, without friction).

        Returns (the new set, whether it differs enough to solve again).
        """
        if not len(self):
            return self, False
        i, n, mu = self.vertices, self.normals, self.friction
        J = np.sum(self.reaction * n, axis=1)  # normal reaction [N·s]
        pulling = J < 0.0
        bound = mu * np.maximum(J, 0.0)
        # sticking: the tangential reaction is what static friction had to supply
        rt = self.reaction - J[:, None] * n
        lrt = np.linalg.norm(rt, axis=1)
        slips = self.stick & (lrt > bound * (1.0 + 1e-9))
        # sliding: the tangential momentum it would have without friction
        U = self.surface_velocity
        rel = v[i] - U
        vt = rel - np.sum(rel * n, axis=1)[:, None] * n
        free = mass[i][:, None] * vt - self.impulse
        lfree = np.linalg.norm(free, axis=1)
        stops = ~self.stick & (lfree <= bound) & (bound > 0.0)
        new_stick = (self.stick & ~slips) | stops
        impulse = np.zeros_like(self.impulse)
        sliding = ~new_stick
        dir_slip = np.where(slips[:, None], -rt / np.where(lrt > 0, lrt, 1.0)[:, None],
                            free / np.where(lfree > 0, lfree, 1.0)[:, None])
        impulse[sliding] = -(bound[:, None] * dir_slip)[sliding]
        changed = bool(np.any(pulling) or np.any(new_stick != self.stick)
                       or np.any(np.linalg.norm(impulse - self.impulse, axis=1)
                                 > CHANGE * np.maximum(bound, 1e-300)))
        out = ContactSet(i, n, self.target, U, mu, new_stick, impulse, self.reaction)
        return (out._rows(~pulling) if release and np.any(pulling) else out), changed


def merge_deepest(groups: list[tuple[np.ndarray, ...]]) -> ContactSet:
    """One contact per vertex from candidate lists (vertices, margin, normals, target,
    surface velocity, friction): the one with the most negative margin (deepest predicted)."""
    parts = [np.concatenate([g[k] for g in groups]) for k in range(6)] if groups else None
    if parts is None or len(parts[0]) == 0:
        return ContactSet(np.zeros(0, np.int64), np.zeros((0, 3)), np.zeros(0), np.zeros((0, 3)),
                          np.zeros(0))
    vert, margin = parts[0], parts[1]
    order = np.lexsort((margin, vert))
    vert_sorted = vert[order]
    first = np.ones(len(order), bool)
    first[1:] = vert_sorted[1:] != vert_sorted[:-1]
    pick = order[first]
    return ContactSet(vert[pick].astype(np.int64), parts[2][pick], parts[3][pick],
                      parts[4][pick], parts[5][pick])
