"""Rigid impact zones, the fail-safe of the collision pipeline ([Provot1997]; [Bridson2002];
keys in docs/references.md).

When impulses cannot clear a cluster of collisions, the points involved are merged into zones
(zones that share points or collide with each other merge, and keep growing until the step is
clean) and each zone moves rigidly: its vertices get the velocity field v_cm + ω × (x0 − x_cm)
that keeps the zone's linear and angular momentum. That motion maps the start configuration by
an invertible affine map at every instant of the step, so no two elements of one zone can cross
each other. A zone that holds a point that cannot move (a hard pin or a collider vertex) or a
vertex touching a sphere or plane takes the mean motion of those instead: exact for static or
translating colliders and pins. If the zones still collide after many rounds, their vertices
stay where they started (``freeze``), which is collision-free when the colliders do not move.
"""

from __future__ import annotations

import numpy as np


class ImpactZones:
    """Disjoint sets of points that move together for the rest of a step.

    Args:
        point_count: number of points (cloth and collider vertices).
    """

    def __init__(self, point_count: int):
        self.parent = np.arange(point_count)
        self.active = np.zeros(point_count, bool)
        self.anchor = np.full((point_count, 3), np.nan)  # velocity of a collider it touches

    def hold(self, points: np.ndarray, velocity: np.ndarray) -> None:
        """Points touching an analytic collider moving with ``velocity`` (K, 3) [m/s]: their
        zones move with it."""
        self.active[points] = True
        self.anchor[points] = velocity

    def _find(self, i: int) -> int:
        p = self.parent
        root = i
        while p[root] != root:
            root = p[root]
        while p[i] != root:
            p[i], i = root, p[i]
        return root

    def merge(self, idx: np.ndarray, weights: np.ndarray) -> None:
        """Unite the points of each collision (rows of idx (K, 4) with non-zero weight)."""
        for row, w in zip(idx, weights):
            members = [int(i) for i, wi in zip(row, w) if wi != 0.0]
            if not members:
                continue
            self.active[members] = True
            r0 = self._find(members[0])
            for i in members[1:]:
                r = self._find(i)
                if r != r0:
                    lo, hi = min(r, r0), max(r, r0)  # deterministic root: the lowest index
                    self.parent[hi] = lo
                    r0 = lo

    def zones(self) -> list[np.ndarray]:
        """Point indices of each zone, in ascending order of their lowest point."""
        pts = np.nonzero(self.active)[0]
        roots = np.array([self._find(int(i)) for i in pts], dtype=np.int64)
        order = np.argsort(roots, kind="stable")
        pts, roots = pts[order], roots[order]
        cuts = np.nonzero(np.diff(roots))[0] + 1
        return np.split(pts, cuts) if len(pts) else []

    def apply(self, x0: np.ndarray, u: np.ndarray, v1: np.ndarray, mass: np.ndarray,
              inv_mass: np.ndarray) -> int:
        """Give every zone its rigid motion (u and v1 of its movable points); returns the
        number of zones."""
        zones = self.zones()
        for z in zones:
            movable = z[inv_mass[z] > 0.0]
            if len(movable) == 0:
                continue
            fixed = z[inv_mass[z] <= 0.0]
            held = movable[~np.isnan(self.anchor[movable, 0])]
            if len(fixed) or len(held):
                vel = np.concatenate([u[fixed], self.anchor[held]]).mean(axis=0)
                vel = np.broadcast_to(vel, (len(movable), 3))
            else:
                vel = _rigid_velocity(x0[movable], u[movable], mass[movable])
            u[movable] = vel
            v1[movable] = vel
        return len(zones)

    def freeze(self, u: np.ndarray, v1: np.ndarray, inv_mass: np.ndarray) -> None:
        """The last resort: every movable point of a zone stays where it started."""
        pts = np.nonzero(self.active & (inv_mass > 0.0))[0]
        u[pts] = 0.0
        v1[pts] = 0.0


def _rigid_velocity(x: np.ndarray, v: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Velocities v_cm + ω × r of the rigid motion with the same momentum and angular momentum
    as (x, v, m) about the centre of mass."""
    M = m.sum()
    xc = (m[:, None] * x).sum(axis=0) / M
    vc = (m[:, None] * v).sum(axis=0) / M
    r = x - xc
    L = (m[:, None] * np.cross(r, v - vc)).sum(axis=0)
    inertia = (m * np.sum(r * r, axis=1)).sum() * np.eye(3) - (m[:, None, None] * r[:, :, None]
                                                                * r[:, None, :]).sum(axis=0)
    omega = np.linalg.pinv(inertia, rcond=1e-12) @ L  # collinear zones have a singular inertia
    return vc + np.cross(omega, r)
