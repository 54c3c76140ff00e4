"""The implicit solve's contact pairs (forces/contact.py), kept from step to step.

A *contact set* holds every feature pair (vertex–face both ways, edge–edge) of cloth against
cloth and cloth against collider meshes that was within its contact distance plus a margin M
at reference positions, with its distance there. It is found by the same trees and narrow phase
as the collision pipeline (static boxes at the reference grown by half the distance each, then
narrow_phase's WITHIN test: features sharing a vertex or sewn together never pair, the bounding
spheres reject most candidates before the exact distance). Cloth vertices against collider faces
are not in it: they are the solve's collider constraints (constraints.py).

The set is reused while no point has moved from the reference by more than
(M − (d̂ − gap))/2, counting this step's predicted motion: two features move apart or together
by at most the sum of their points' displacements, so a pair outside the set cannot come within
its activation distance d̂ this step. Displacements are measured against the cloth's mean one
(the bound holds for any common shift subtracted from all points), so cloth falling as a whole
keeps its set. A pile at rest keeps its set for many steps, so contact
costs it what the solve of the pairs costs, not a search per step. The margin is chosen at each
rebuild from the fastest predicted motion (about REBUILD_STEPS steps of it, within
[MARGIN_MIN, MARGIN_MAX]; set_margin).

Each step, the pairs that can reach d̂ (a bound from the reference distance, the points'
displacements since and their predicted motion first, then the exact closest points at the
step's start) get their weights and normal at the start, frozen for the step. A pair found
crossed (its closest direction reversed while nearer than its contact distance) keeps the
normal it had, so the energy pushes it back the way it came rather than locking the crossing.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._jit import njit, prange
from .bvh import TriangleTree
from .intersections import intersecting_pair_mask
from .ccd import VERTEX_FACE, gap
from .narrow_phase import D0, GAP, MU, NX, UX, WITHIN, MIN_DISTANCE

# d̂ = the contact distance + ACTIVATION × the cloth's thickness: a resting layer's equilibrium
# (d̂ less its load over κ, micrometres) stays outside the contact distance, so the pipeline after
# the step pushes nothing, and the cloth rests no visibly farther from a body.
ACTIVATION = 0.5
# κ = STIFFNESS · m / h² for a pair of effective mass m: a point landing at speed u stops
# within h·u/(1 + STIFFNESS) of d̂ in one step (docs/solver.md, "Contact inside the solve").
STIFFNESS = 1.0e3
FRICTION_SPEED = 1.0e-3  # [m/s] ε_v: static friction creeps at most this fast
# A cloth vertex lying on another layer is not also held at a collider's contact distance: the
# collider contacts (constraints.py) would prescribe it the lower layer's place, and the
# pipeline after the step pushed the two apart again every step (shielded below). It lies on
# a layer when a cloth–cloth pair of the step, in which it weighs at least SHIELD_WEIGHT, has
# the other side within SHIELD_COS (45°) of the collider's normal beneath it.
SHIELD_WEIGHT = 0.25
SHIELD_COS = 0.7
MARGIN_MIN = 2.0e-3      # [m]
# [m]: bounds the set's size when the cloth moves fast. Such a set is searched at every step,
# and the search grows with M (docs/solver.md, "Contact inside the solve"); motion of
# centimetres per step outruns any margin of millimetres, so a larger M buys little coverage.
MARGIN_MAX = 5.0e-3
REBUILD_STEPS = 4        # steps of the fastest predicted motion a new margin allows for
REACH = 2.0              # predicted motion × REACH: the solved motion may exceed the prediction


def set_margin(activation: float, reach: float) -> float:
    """A new set's margin M [m] for the activation share d̂ − gap ``activation`` [m] and the
    fastest predicted motion ``reach`` [m] of a step (already scaled by REACH): about
    REBUILD_STEPS steps of it within [MARGIN_MIN, MARGIN_MAX], but never below the activation
    share plus MARGIN_MIN: thick cloth (d̂ − gap above MARGIN_MAX) would otherwise leave pairs
    already pressing out of the set."""
    return float(np.clip(activation + 2.0 * REBUILD_STEPS * reach, MARGIN_MIN,
                         max(MARGIN_MAX, activation + MARGIN_MIN)))


@dataclass
class ContactState:
    """The contact set carried from step to step (and saved with a frame for its retries).

    Attributes:
        ref: (N, 3) the points' positions when the set was found [m] (None: no set yet).
        margin: M [m]. idx: (S, 4) the pairs' points; kind: (S,) VERTEX_FACE / EDGE_EDGE;
        distance: (S,) at ref [m]; normal: (S, 3) the last normal used; gap: (S,) contact
        distances [m]; mu: (S,) friction.
        rebuilds: sets found so far.
        pierced: (V,) the cloth vertices of triangles a collider passed through when the set
            was found (no cloth–collider pair of theirs is in it).
    """

    ref: np.ndarray | None = None
    margin: float = 0.0
    idx: np.ndarray = field(default_factory=lambda: np.zeros((0, 4), np.int64))
    kind: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    distance: np.ndarray = field(default_factory=lambda: np.zeros(0))
    normal: np.ndarray = field(default_factory=lambda: np.zeros((0, 3)))
    gap: np.ndarray = field(default_factory=lambda: np.zeros(0))
    mu: np.ndarray = field(default_factory=lambda: np.zeros(0))
    rebuilds: int = 0
    pierced: np.ndarray | None = None


@dataclass(frozen=True)
class StepPairs:
    """The contact pairs of one step (forces/contact.py's arguments).

    Attributes:
        idx (K, 4), w (K, 4), n (K, 3): points, weights and normals, frozen for the step.
        d0: (K,) separation along n at the step's start [m]; dhat: (K,) activation distance;
        kappa: (K,) [N/m]; mu: (K,); lam: (K,) the normal force at the start [N].
        rows: (K,) each pair's row in the contact set (ContactState.idx).
    """

    idx: np.ndarray
    w: np.ndarray
    n: np.ndarray
    d0: np.ndarray
    dhat: np.ndarray
    kappa: np.ndarray
    mu: np.ndarray
    lam: np.ndarray
    rows: np.ndarray

    def __len__(self) -> int:
        return len(self.idx)


@njit(inline="always")
def _most(a, b, c, d, kind, values):
    """(largest over the first primitive's points, over the second's) of values (N,)."""
    if kind == VERTEX_FACE:
        return values[a], max(values[b], max(values[c], values[d]))
    return max(values[a], values[b]), max(values[c], values[d])


@njit(inline="always")
def _apart_by(step, i, j):
    dx = step[i, 0] - step[j, 0]
    dy = step[i, 1] - step[j, 1]
    dz = step[i, 2] - step[j, 2]
    return np.sqrt(dx * dx + dy * dy + dz * dz)


@njit(inline="always")
def _relative_reach(a, b, c, d, kind, step):
    """Largest predicted motion [m] of a point of the pair's first primitive relative to one of
    its second: the most their separation can change this step (step: (N, 3) displacements)."""
    m = max(_apart_by(step, a, c), _apart_by(step, a, d))
    if kind == VERTEX_FACE:
        return max(m, _apart_by(step, a, b))
    return max(m, max(_apart_by(step, b, c), _apart_by(step, b, d)))


@njit(parallel=True)
def step_geometry(idx, kind, distance, normal, gaps, P0, moved, step, reach, activation, keep,
                  w, n, d0):
    """For every pair of the set: keep[k] when it can come within its activation distance
    this step, with its weights w (K, 4), normal n (K, 3) and separation d0 (K,) at P0.

    moved: (N,) each point's displacement from the set's reference [m] (less a shift common to
    all); step: (N, 3) its predicted displacement this step [m], of which the pair's relative
    one times ``reach`` (REACH) is how far its separation may change. The normal of a kept pair
    is written back into ``normal`` (the set's memory of which side each pair is on)."""
    for k in prange(idx.shape[0]):
        a, b, c, d = idx[k, 0], idx[k, 1], idx[k, 2], idx[k, 3]
        ma, mb = _most(a, b, c, d, kind[k], moved)
        far = gaps[k] + activation + reach * _relative_reach(a, b, c, d, kind[k], step)
        keep[k] = False
        if distance[k] - ma - mb > far:
            continue
        pa = (P0[a, 0], P0[a, 1], P0[a, 2])
        pb = (P0[b, 0], P0[b, 1], P0[b, 2])
        pc = (P0[c, 0], P0[c, 1], P0[c, 2])
        pd = (P0[d, 0], P0[d, 1], P0[d, 2])
        d2, w0, w1, w2, w3 = gap(kind[k], 0.0, pa, pb, pc, pd, pa, pb, pc, pd)
        sep = np.sqrt(d2)
        vx = w0 * pa[0] + w1 * pb[0] + w2 * pc[0] + w3 * pd[0]
        vy = w0 * pa[1] + w1 * pb[1] + w2 * pc[1] + w3 * pd[1]
        vz = w0 * pa[2] + w1 * pb[2] + w2 * pc[2] + w3 * pd[2]
        ox, oy, oz = normal[k, 0], normal[k, 1], normal[k, 2]
        nx, ny, nz = ox, oy, oz
        if sep > max(1e-3 * gaps[k], MIN_DISTANCE * 1e-3):
            mx, my, mz = vx / sep, vy / sep, vz / sep
            # reversed while nearer than the contact distance: crossed, keep the side it had
            if not (mx * ox + my * oy + mz * oz < 0.0 and sep < gaps[k]):
                nx, ny, nz = mx, my, mz
        s0 = nx * vx + ny * vy + nz * vz
        if s0 > far:
            continue
        keep[k] = True
        w[k, 0], w[k, 1], w[k, 2], w[k, 3] = w0, w1, w2, w3
        n[k, 0], n[k, 1], n[k, 2] = nx, ny, nz
        normal[k, 0], normal[k, 1], normal[k, 2] = nx, ny, nz
        d0[k] = s0


def shielded(pairs: StepPairs | None, V: int, vertices: np.ndarray,
             normals: np.ndarray) -> np.ndarray:
    """(K,) True where a cloth vertex with a collider contact (vertices (K,), normals (K, 3)
    pointing away from the collider) lies on another layer of the cloth between it and the
    collider: a cloth–cloth pair of the step has the other side beneath it (module constants
    SHIELD_WEIGHT, SHIELD_COS). The pair's energy holds it on that layer."""
    out = np.zeros(len(vertices), bool)
    if pairs is None or not len(vertices):
        return out
    cloth = np.all(pairs.idx < V, axis=1)
    j = pairs.idx[cloth].ravel()
    w = pairs.w[cloth].ravel()
    row = np.full(V, -1, np.int64)
    row[vertices] = np.arange(len(vertices))
    r = row[j]
    sel = (r >= 0) & (np.abs(w) >= SHIELD_WEIGHT)
    # the direction from the pair's other side to this point: ±n by the side it is on
    away = np.repeat(pairs.n[cloth], 4, axis=0)[sel] * np.sign(w[sel])[:, None]
    under = np.sum(away * normals[r[sel]], axis=1) > SHIELD_COS
    out[r[sel][under]] = True
    return out


class ContactPairs:
    """Finds and keeps the contact set of one cloth (see module docstring).

    Args:
        handler: the cloth's CollisionHandler (its features, pair tester, welds, colliders).
    """

    def __init__(self, handler):
        self.handler = handler
        model = handler.model
        self.V = handler.V
        self.cloth_tree = TriangleTree(model.triangles, model.rest_positions)
        c = handler.colliders
        self.collider_tree = TriangleTree(c.mesh_tris, c.state(0).mesh_positions)
        self._cloth_pad = np.full(len(model.triangles), 0.5 * model.thickness)
        self._collider_pad = handler._collider_pad
        self.activation = ACTIVATION * model.thickness  # d̂ − gap [m]

    @property
    def active(self) -> bool:
        """False when there is nothing for the energy to hold apart."""
        return self.handler.self_collision or self.handler.colliders.has_mesh

    def step(self, state: ContactState, x0: np.ndarray, v_pred: np.ndarray,
             inv_mass: np.ndarray, h: float, c0, c1) -> StepPairs | None:
        """The pairs of a step from x0 (V, 3) with predicted velocities v_pred [m/s], collider
        states c0, c1 at its start and end; updates ``state`` (a new set when the old one no
        longer covers the step). None when no pair can touch."""
        hd = self.handler
        V = self.V
        P0 = np.concatenate([x0, c0.mesh_positions])
        P1 = np.concatenate([x0 + h * v_pred, c1.mesh_positions])
        # Only relative motion brings features together: displacements are measured against
        # the cloth's mean one (a bound for any common shift), so cloth falling as a whole
        # keeps its set and its pairs' reach small.
        step = P1 - P0
        reach = REACH * np.linalg.norm(step - step[:V].mean(axis=0), axis=1)
        moved = None
        if state.ref is not None and state.ref.shape == P0.shape:
            shift = P0 - state.ref
            moved = np.linalg.norm(shift - shift[:V].mean(axis=0), axis=1)
            limit = 0.5 * (state.margin - self.activation)
            if float(np.max(moved + reach, initial=0.0)) > limit:
                moved = None
        if moved is None:
            self._rebuild(state, P0, inv_mass, float(np.max(reach, initial=0.0)))
            moved = np.zeros(len(P0))
        S = len(state.idx)
        if S == 0:
            return None
        keep = np.zeros(S, np.bool_)
        w, n, d0 = np.zeros((S, 4)), np.zeros((S, 3)), np.zeros(S)
        step_geometry(state.idx, state.kind, state.distance, state.normal, state.gap, P0,
                      moved, step, REACH, self.activation, keep, w, n, d0)
        k = np.flatnonzero(keep)
        idx = state.idx[k]
        if hd.excluded is not None and len(k):  # layers still through each other (untangling)
            cloth = np.all(idx < V, axis=1)
            bad = cloth & hd.excluded[np.minimum(idx, V - 1)].any(axis=1)
            k, idx = k[~bad], idx[~bad]
        im = np.concatenate([inv_mass, np.zeros(len(P0) - V)])
        w = w[k]
        inv = np.sum(w * w * im[idx], axis=1)
        ok = inv > 0.0
        if not ok.all():
            k, idx, w, inv = k[ok], idx[ok], w[ok], inv[ok]
        if len(k) == 0:
            return None
        kappa = STIFFNESS / (inv * h * h)
        dhat = state.gap[k] + self.activation
        lam = kappa * np.maximum(dhat - d0[k], 0.0)
        return StepPairs(idx, w, n[k], d0[k], dhat, kappa, state.mu[k], lam, k)

    def _rebuild(self, state: ContactState, P0: np.ndarray, inv_mass: np.ndarray,
                 reach: float) -> None:
        """A new contact set at P0 whose margin allows for about REBUILD_STEPS steps of the
        fastest predicted motion ``reach`` (already scaled by REACH) [m]."""
        hd = self.handler
        V = self.V
        margin = set_margin(self.activation, reach)
        self.cloth_tree.refit(P0[:V], P0[:V], self._cloth_pad + 0.5 * margin)
        pairs = []
        if hd.self_collision:
            pairs.append(self.cloth_tree.self_pairs(cull_flat_at=P0[:V]))
        if hd.colliders.has_mesh:
            self.collider_tree.refit(P0[V:], P0[V:], self._collider_pad + 0.5 * margin)
            cross = self.cloth_tree.pairs_with(self.collider_tree)
            # A collider through a cloth triangle (a post left through the sheet after
            # untangling) is on no side of it: pairs of that triangle's features would push its
            # edges away from the collider's edge inside it in every direction and tear it.
            # They are left to the collision pipeline after the step.
            pierced = np.zeros(V, bool)
            if len(cross):
                hit = intersecting_pair_mask(cross, hd.model.triangles, hd.colliders.mesh_tris,
                                             P0[:V], P0[V:], np.zeros(0, np.int64)) > 0
                pierced[hd.model.triangles[cross[hit, 0]].ravel()] = True
                tris = hd.model.triangles  # and the ring round them, which wraps the collider
                pierced[tris[pierced[tris].any(axis=1)].ravel()] = True
                cross = cross[~np.isin(cross[:, 0], cross[hit, 0])]
            state.pierced = pierced if pierced.any() else None
            cross[:, 1] += hd.T
            pairs.append(cross)
        pairs = np.concatenate(pairs) if pairs else np.zeros((0, 2), np.int64)
        im = np.concatenate([inv_mass, np.zeros(len(P0) - V)])
        idx, rec = hd.tester.run(WITHIN, pairs, P0, P0, im, margin=margin)
        if state.pierced is not None and len(idx):
            drop = np.any(idx >= V, axis=1) & state.pierced[np.minimum(idx, V - 1)].any(axis=1)
            idx, rec = idx[~drop], rec[~drop]
        state.ref = P0.copy()
        state.margin = margin
        state.idx = idx
        state.kind = rec[:, UX].astype(np.int64)
        state.distance = rec[:, D0].copy()
        state.normal = np.ascontiguousarray(rec[:, NX:NX + 3])
        state.gap = rec[:, GAP].copy()
        state.mu = rec[:, MU].copy()
        state.rebuilds += 1
