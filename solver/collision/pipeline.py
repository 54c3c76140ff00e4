"""The collision pipeline run after every step of every model ([Bridson2002] in
docs/references.md).

A step is the straight path of every vertex from x0 to x1 = x0 + h·u; colliders move in
straight lines between their states at the start and end of the step. The pipeline edits u
(and the end velocity v1) until that path is free of collisions:

1. proximity: cloth vertices near spheres and planes, and vertex–face / edge–edge pairs near
   mesh colliders or other cloth (self-collision) that would end closer than their contact
   distance are pushed apart along the direction between their closest points at the end
   (narrow_phase.REPULSION), with friction (response.py, analytic.py);
2. continuous collisions: pairs that still touch during the step (ccd.py) get impulses that
   leave a small gap; detection repeats on the corrected path until nothing touches;
3. rigid impact zones if that does not settle within a few rounds (impact_zones.py).

Then x1 = x0 + h·u. Hard-pinned vertices never move; collider points have infinite mass.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from ..model import ClothModel
from ..spec import Collider
from ..topology import welds
from .analytic import contact_records, predicted_contacts, sphere_face_records
from .bvh import TriangleTree
from .colliders import ColliderSet, ColliderState
from .constraints import ContactSet, merge_deepest
from .features import mesh_features
from .impact_zones import ImpactZones
from .inside import InsideTest
from .intersections import analytic_depth, count_intersections
from .narrow_phase import (CONTINUOUS, D0, GAP, MU, NX, RECORD, REPULSION, UX,
                           PairTester, closest_per_vertex, vertex_face_records)
from .response import apply_contacts, position_constraints

PROXIMITY_PASSES = 20   # most Gauss–Seidel sweeps over the proximity contacts
SETTLED = 1e-3          # ... which stop once no contact moves by this fraction of its gap
CCD_ROUNDS = 8          # detect-and-respond rounds before impact zones take over
ZONE_ROUNDS = 50        # impact-zone growth rounds before the step gives up (and reports it)
ANALYTIC_CCD_GAP = 0.1  # fraction of a sphere's/plane's gap enforced during the CCD rounds
# [m] growth of the candidate boxes, so that later rounds and repeated resolves of a step reuse
# the pairs: fewer tree queries, with the same drape bit for bit (docs/solver.md,
# "Candidate pair reuse")
SLACK = 2e-3
# Cloth–cloth contacts predicted at a step's start can also enter the implicit solve, as
# collider contacts do. Off: they cut the resolves repeated after the strain limiter, but the
# self-colliding drape took longer with them (more implicit solves; docs/solver.md,
# "Cloth–cloth contacts inside the implicit solve")
SELF_CONTACTS_IN_SOLVE = False
# The strain limiter run between repeated resolves of a step holds that step's contacts too
# (as position constraints, strain_limit.py), so that it does not pull cloth back into the
# body that the next resolve then pushes it out of again (docs/solver.md, "Strain rounds after
# collisions")
CONTACTS_IN_LIMITER = True


@dataclass
class CollisionStats:
    """What the collision pipeline did over some steps (summed by ``add``).

    ``pushed``, ``collisions``, ``impact_zones`` and ``strain_rounds`` count how often the
    fail-safes after the step fired; ``solve_contacts`` and ``contact_sets`` the implicit
    solve's own contact (forces/contact.py), which should carry the work so that they rarely
    do.

    Attributes:
        contacts: proximity contacts found (vertex–collider, vertex–face, edge–edge), whether
            or not they needed a push.
        pushed: cloth vertices whose path the proximity pass changed.
        collisions: continuous collisions handled.
        impact_zones: rigid zones formed.
        unresolved: collisions left when the step gave up (should stay 0).
        strain_rounds: strain-limiter passes repeated after the pipeline's pushes.
        solve_contacts: contact pairs pressing at the end of the implicit solve, summed over
            steps.
        contact_sets: contact sets found (collision/contact_pairs.py; reused otherwise).
    """

    contacts: int = 0
    pushed: int = 0
    collisions: int = 0
    impact_zones: int = 0
    unresolved: int = 0
    strain_rounds: int = 0
    solve_contacts: int = 0
    contact_sets: int = 0

    def add(self, other: "CollisionStats") -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


@dataclass(frozen=True)
class IntersectionReport:
    """Independent checks of a state (intersections.py).

    Attributes:
        deepest_penetration_m: deepest cloth vertex inside a sphere, behind a plane or inside
            a collider mesh (by its winding number, inside.py) [m].
        self_intersections: intersecting pairs of cloth triangles that share no vertex.
        collider_crossings: intersecting (cloth triangle, collider triangle) pairs.
    """

    deepest_penetration_m: float
    self_intersections: int
    collider_crossings: int


class CollisionHandler:
    """Collisions of one cloth with its colliders and itself.

    Args:
        model: the cloth.
        colliders: the spec's colliders.
        self_collision: also keep the cloth from passing through itself.
        fps, frames: for the colliders' motion.
    """

    def __init__(self, model: ClothModel, colliders: tuple[Collider, ...], self_collision: bool,
                 fps: float, frames: int):
        self.model = model
        self.self_collision = bool(self_collision)
        self.colliders = ColliderSet(colliders, model.thickness, fps, frames)
        c = self.colliders
        V = model.vertex_count
        self.V = V
        Vc = c.mesh_vertex_count
        tris = np.concatenate([model.triangles, c.mesh_tris + V]).astype(np.int64)
        self.T = len(model.triangles)
        self.features = mesh_features(tris, V + Vc)
        f = self.features
        self.group = np.concatenate([np.full(V, -1, np.int64), c.mesh_group])
        self._mesh_count = int(self.group.max()) + 1
        self.mass = np.concatenate([model.mass, np.zeros(Vc)])
        # a seam's two vertices are one point to the contact tests (topology.welds): contact
        # between the faces around a seam would push it open against its own force
        self.weld = np.concatenate([welds(model.seams, V), np.arange(V, V + Vc)])
        self.tester = PairTester(f.tris, f.own_vertices, f.own_edges, f.edges, self.group,
                                 model.thickness, model.cloth_friction, c.mesh_gap, c.mesh_mu,
                                 self.weld)
        self.cloth_tree = TriangleTree(model.triangles, model.rest_positions)
        rest = c.state(0).mesh_positions
        self.collider_tree = TriangleTree(c.mesh_tris, rest)
        # inside/outside of the mesh colliders, closed, open or in touching parts
        self.inside = InsideTest(c)
        # the contact prediction's tree (_nearby_collider_faces): the same tree, boxes of the
        # collider triangles' paths without padding, queried with cloth vertices' path boxes
        # grown by the largest contact distance (and a rounding margin: the exact filter
        # follows)
        self._prediction_tree = TriangleTree(c.mesh_tris, rest)
        self._prediction_at = None
        self._prediction_pad = float(np.max(c.mesh_gap, initial=0.0)) * (1.0 + 1e-6) + 1e-9
        # cloth vertices that the triangle-pair tests test (owned by a triangle: features.py)
        own = f.own_vertices[:self.T]
        self._owned = np.unique(own[own >= 0])
        self._pair_cache = None
        # True while a path is resolved against the cloth itself only (``resolve_self``)
        self._self_only = False
        # cloth vertices in a cloth–cloth contact or collision on the last resolved path
        self.self_contact_vertices = np.zeros(V, bool)
        # ... and in a contact or collision with a collider (sphere, plane or mesh)
        self.collider_contact_vertices = np.zeros(V, bool)
        # (V,) bool or None: cloth vertices left out of cloth–cloth contacts while the cloth is
        # being untangled (self_untangle.py)
        self.excluded = None
        self._cloth_pad = np.full(self.T, 0.5 * model.thickness)
        self._collider_pad = c.mesh_thickness[c.mesh_group[c.mesh_tris[:, 0]]] \
            if c.has_mesh else np.zeros(0)
        # spheres small against the cloth's triangles can poke between the vertices: their
        # contacts are also tested against the triangles' interiors
        # (a triangle of circumradius ρ with its corners on the sphere dips ρ²/(2r) inside)
        longest = float(np.max(model.edge_rest_length, initial=0.0))
        self._sphere_faces = longest ** 2 / (2.0 * np.maximum(c.sphere_radius, 1e-300)) \
            >= ANALYTIC_CCD_GAP * c.sphere_gap
        # the contacts and collisions of the step being resolved as position constraints on
        # the cloth (response.position_constraints), gathered over its repeated resolves
        self._step_constraints = []

    @property
    def active(self) -> bool:
        """False when there is nothing to collide with."""
        return self.self_collision or self.colliders.has_mesh or self.colliders.has_analytic

    def resolve(self, x0: np.ndarray, x1: np.ndarray, v1: np.ndarray, inv_mass: np.ndarray,
                h: float, c0: ColliderState, c1: ColliderState,
                moved: np.ndarray | None = None) -> CollisionStats:
        """Make the step x0 → x1 collision-free, in place on x1 and v1.

        Args:
            x0, x1: cloth positions at the start and end of the step [m], (V, 3).
            v1: cloth velocities at the end of the step [m/s], (V, 3).
            inv_mass: (V,) [1/kg]; 0 for vertices that must not move (hard pins).
            h: step [s]. c0, c1: collider states at the start and end of the step.
            moved: (V,) bool, for a repeated resolve of the same step: the cloth vertices whose
                end moved since the last one left the step free of crossings. Mesh pairs
                (self and collider) without such a vertex are not tested again; spheres and
                planes always are.
        """
        stats = CollisionStats()
        if not self.active:
            return stats
        V = self.V
        P0 = np.concatenate([x0, c0.mesh_positions])
        U = np.concatenate([(x1 - x0) / h, (c1.mesh_positions - c0.mesh_positions) / h])
        W = np.concatenate([v1, U[V:]])
        im = np.concatenate([inv_mass, np.zeros(len(U) - V)])
        # 1. proximity: everything in one projected Gauss–Seidel, so that stacked contacts
        # (cloth on cloth on a collider) support each other
        if moved is not None:
            moved = np.concatenate([moved, np.zeros(len(U) - V, bool)]).astype(np.uint8)
        idx, rec, analytic, pending = self._contacts(REPULSION, 1.0, P0, U, im, h, c0, c1,
                                                     moved)
        if moved is None:  # every pair is tested: the marks start afresh
            self.self_contact_vertices[:] = False
            self.collider_contact_vertices[:] = False
            self._step_constraints = []
        self._mark_contacts(idx, analytic)
        self._keep_constraints(idx, rec, P0, U, h)
        stats.contacts += len(idx)
        pushed = np.zeros(len(U), np.uint8)
        if len(idx):
            before = U.copy()
            apply_contacts(idx, rec, U, W, im, h, PROXIMITY_PASSES,
                           SETTLED * float(rec[:, GAP].min()) / h)
            pushed = np.any(U != before, axis=1).astype(np.uint8)
            stats.pushed += int(pushed[:V].sum())

        # 2. continuous collisions. The proximity pass found the mesh pairs that touch on the
        # path it was given; of those, the pairs the pushes left alone keep that answer and only
        # pairs with a pushed point are tested again. After the first round only pairs whose
        # path changed are tested.
        retest = pushed
        if pending is not None:
            keep = ~pushed[pending[0]].any(axis=1)
            pending = (pending[0][keep], pending[1][keep])
        hits = 0
        for _ in range(CCD_ROUNDS):
            idx, rec, analytic, _ = self._contacts(CONTINUOUS, ANALYTIC_CCD_GAP, P0, U, im,
                                                   h, c0, c1, retest, known=pending)
            self._mark_contacts(idx, analytic)
            self._keep_constraints(idx, rec, P0, U, h)
            pending = None
            hits = len(idx)
            if hits == 0:
                break
            stats.collisions += hits
            before = U.copy()
            apply_contacts(idx, rec, U, W, im, h, 1, 0.0)
            retest = np.any(U != before, axis=1).astype(np.uint8)
        # 3. impact zones: what still collides moves rigidly (with a collider it touches)
        if hits:
            zones = ImpactZones(len(P0))
            for rnd in range(ZONE_ROUNDS + 1):
                idx, rec, analytic, _ = self._contacts(CONTINUOUS, ANALYTIC_CCD_GAP, P0, U, im,
                                                       h, c0, c1)
                if len(idx) == 0:
                    break
                if rnd == ZONE_ROUNDS:
                    zones.freeze(U, W, im)  # the last resort
                    stats.unresolved = len(idx)
                    break
                stats.collisions += len(idx)
                zones.merge(idx[~analytic], rec[~analytic, :4])
                zones.hold(idx[analytic, 0], rec[analytic, UX:UX + 3])
                stats.impact_zones = zones.apply(P0, U, W, self.mass, im)
        x1[:] = x0 + h * U[:V]
        v1[:] = W[:V]
        return stats

    def resolve_self(self, x0: np.ndarray, x1: np.ndarray, inv_mass: np.ndarray,
                     state: ColliderState) -> CollisionStats:
        """Make the straight move x0 → x1 of the cloth (V, 3) [m] free of cloth–cloth
        collisions, in place on x1, ignoring the colliders (held at ``state``): a cloth that
        starts clear of itself and is moved out of a collider by positions (untangle.py) stays
        clear of itself. inv_mass (V,) [1/kg]: 0 for vertices that must not move."""
        if not self.self_collision:
            return CollisionStats()
        self._self_only = True
        try:
            return self.resolve(x0, x1, np.zeros_like(x1), inv_mass, 1.0, state, state)
        finally:
            self._self_only = False

    def _keep_constraints(self, idx, rec, P0, U, h) -> None:
        """Add records (idx (K, 4), rec (K, RECORD)) of the path P0 → P0 + h·U to the step's
        position constraints. They are made into constraints only when step_constraints is
        called: most steps run no strain round and never need them."""
        if CONTACTS_IN_LIMITER and len(idx):
            # U is pushed further in place; the constraints read only the collider points' rows
            self._step_constraints.append((idx, rec, P0, U.copy(), h))

    def step_constraints(self):
        """The contacts and collisions of the last resolved step, as one-sided constraints on
        the cloth's end positions for strain_limit.apply_strain_limit: (idx, w, n, c,
        tolerance [m], reject [m]: the smallest contact distance; a limiter that leaves a
        contact violated by more has pulled the cloth into a body), or None without any."""
        parts = self._step_constraints
        if not parts:
            return None
        # A pair found again by a later resolve of the step is held once per time found:
        # keeping only its first or latest record left the tight sleeve of test_collision.py
        # 4-16 rounds a frame instead of 1-2
        made = [position_constraints(idx, rec, P0, U, h, self.V)
                for idx, rec, P0, U, h in parts]
        gap = min(float(p[1][:, GAP].min()) for p in parts)
        return (*(np.concatenate([m[k] for m in made]) for k in range(4)), SETTLED * gap, gap)

    def _mark_contacts(self, idx: np.ndarray, analytic: np.ndarray) -> None:
        """Add the cloth vertices of cloth–cloth records (idx (K, 4), analytic (K,) bool) to
        self_contact_vertices and those of collider records to collider_contact_vertices."""
        if len(idx) == 0:
            return
        V = self.V
        self.collider_contact_vertices[idx[analytic, 0]] = True
        rows = idx[~analytic]
        cloth = np.all(rows < V, axis=1)  # no collider-mesh point
        held = rows[~cloth].reshape(-1)
        self.collider_contact_vertices[held[held < V]] = True
        if self.self_collision:
            self.self_contact_vertices[rows[cloth].reshape(-1)] = True

    def _contacts(self, mode, analytic_scale, P0, U, im, h, c0, c1, moved=None, known=None):
        """All contacts (REPULSION) or collisions (CONTINUOUS) of the path P0 → P0 + h·U:
        (idx, records, True where a record is against a sphere or plane, pending); the spheres
        and planes ask for analytic_scale times their gap; moved: see _detect.
        REPULSION also finds the mesh pairs' collisions on the same path: pending = (idx,
        records) of those (None without mesh pairs). CONTINUOUS: ``known`` (idx, records) are
        mesh collisions found already, and only mesh pairs with a point flagged in ``moved``
        are tested."""
        parts = []
        c = self.colliders
        V = self.V
        if c.has_analytic and not self._self_only:
            parts.append(contact_records(P0[:V], U[:V], im[:V], h, c0.sphere_centers,
                                         c1.sphere_centers, c.sphere_radius, c.sphere_gap,
                                         c.sphere_mu, c0.plane_points, c1.plane_points,
                                         c.plane_normal, c.plane_gap, c.plane_mu,
                                         analytic_scale))
            k = self._sphere_faces
            if k.any():
                parts.append(sphere_face_records(
                    self.model.triangles, P0[:V], U[:V], im[:V], h, c0.sphere_centers[k],
                    c1.sphere_centers[k], c.sphere_radius[k], c.sphere_gap[k], c.sphere_mu[k],
                    ANALYTIC_CCD_GAP))
        n_analytic = sum(len(p[0]) for p in parts)
        pending = None
        if self.self_collision or (c.has_mesh and not self._self_only):
            if known is not None:
                parts.append(known)
            if mode == REPULSION:
                found, pending = self._detect(mode, P0, U, im, h, moved=moved,
                                              with_collisions=True)
                parts.append(found)
            elif moved is None or moved.any():
                parts.append(self._detect(mode, P0, U, im, h, moved=moved))
        if not parts:
            return np.zeros((0, 4), np.int64), np.zeros((0, RECORD)), np.zeros(0, bool), pending
        idx = np.concatenate([p[0] for p in parts])
        rec = np.concatenate([p[1] for p in parts])
        return idx, rec, np.arange(len(idx)) < n_analytic, pending

    def contact_constraints(self, x0: np.ndarray, v_pred: np.ndarray, inv_mass: np.ndarray,
                            h: float, c0: ColliderState, c1: ColliderState,
                            near: float = np.inf, touch: float | None = None,
                            released: np.ndarray | None = None) -> ContactSet:
        """Cloth vertices whose path x0 + t·h·v_pred reaches a collider's contact distance this
        step, one contact each (the deepest), for the implicit solve (constraints.py).

        Args:
            x0: positions (V, 3) [m]; v_pred: velocities (V, 3) [m/s].
            inv_mass: (V,); h: step [s]; c0, c1: collider states at the start and end.
            near: only vertices that start within (1 + near) times the contact distance.
            touch: also every vertex that starts within (1 + touch) times the contact distance,
                whatever v_pred says (it leaves out the cloth's own forces), except the
                ``released`` ones (vertex indices).
        """
        c = self.colliders
        V = self.V
        groups = []
        touching = np.zeros(V, bool)
        if touch is not None:
            touching[:] = True
            if released is not None:
                touching[released] = False
        else:
            touch = -np.inf
        if c.has_analytic:
            best = np.empty(V)
            normal = np.zeros((V, 3))
            vel = np.zeros(V)
            surf = np.zeros((V, 3))
            fric = np.zeros(V)
            start = np.zeros(V)
            gap = np.zeros(V)
            predicted_contacts(x0, v_pred, inv_mass, h, c0.sphere_centers, c1.sphere_centers,
                               c.sphere_radius, c.sphere_gap, c.sphere_mu, c0.plane_points,
                               c1.plane_points, c.plane_normal, c.plane_gap, c.plane_mu, best,
                               normal, vel, surf, fric, start, gap)
            # only vertices with a prediction: the others (pinned, or no sphere or plane to
            # reach) keep a zero gap, and an infinite near or touch times it is NaN
            i = np.flatnonzero(np.isfinite(best))
            i = i[((best[i] < 0.0) & (start[i] <= near * gap[i]))
                  | (touching[i] & (start[i] <= touch * gap[i]))]
            groups.append((i, best[i], normal[i], vel[i], surf[i], fric[i]))
        if c.has_mesh:
            P0 = np.concatenate([x0, c0.mesh_positions])
            U = np.concatenate([v_pred, (c1.mesh_positions - c0.mesh_positions) / h])
            im = np.concatenate([inv_mass, np.zeros(len(U) - V)])
            idx, rec = self._nearby_collider_faces(P0, P0 + h * U, im)
            # per vertex and collider, the face closest at the start: the direction to a farther
            # face's closest point (on its boundary) runs along the surface, and predicting
            # along it made cloth sliding over a faceted sphere look as if it dived in; the
            # deepest of those predictions was kept, and held vertices far above the sphere
            # (docs/solver.md, "Contact prediction")
            pick = closest_per_vertex(idx[:, 0], self.group[idx[:, 1]], rec[:, D0], V,
                                      self._mesh_count)
            idx, rec = idx[pick], rec[pick]
            n = rec[:, NX:NX + 3]
            w = rec[:, :4]
            surface = -np.einsum("kj,kjd->kd", w[:, 1:], U[idx[:, 1:]])
            rel = U[idx[:, 0]] - surface
            margin = rec[:, D0] + h * np.sum(rel * n, axis=1) - rec[:, GAP]
            start = rec[:, D0] - rec[:, GAP]
            keep = ((margin < 0.0) & (start <= near * rec[:, GAP])) \
                | (touching[idx[:, 0]] & (start <= touch * rec[:, GAP]))
            idx, rec, n, surface, margin = idx[keep], rec[keep], n[keep], surface[keep], \
                margin[keep]
            target = (rec[:, GAP] - rec[:, D0]) / h + np.sum(surface * n, axis=1)
            groups.append((idx[:, 0], margin, n, target, surface, rec[:, MU]))
        found = merge_deepest(groups)
        if self.self_collision and SELF_CONTACTS_IN_SOLVE:
            # a collider contact keeps its vertex: the cloth–cloth one is against a side whose
            # motion is only predicted
            found = found.union(merge_deepest([self._self_constraints(x0, v_pred, inv_mass,
                                                                      h, c0, c1, near)]))
        return found

    def _nearby_collider_faces(self, P0: np.ndarray, P1: np.ndarray, im: np.ndarray):
        """NEARBY records (idx (K, 4), rec (K, RECORD)) of the cloth vertices against the mesh
        colliders' faces on the path P0 → P1 (cloth points, then collider points, (N, 3) [m];
        im (N,) [1/kg]): the records that ``_detect(NEARBY, ...)`` finds through triangle
        pairs, each vertex's in the same order (its candidate faces in the collider tree's
        leaf order), from one query of the collider tree per cloth vertex: no cloth tree refit,
        no triangle pairs, no boxes of the cloth's other features (docs/solver.md, "Contact
        prediction"). The collider tree is refitted only when the colliders' path changed (the
        repeated predictions of a step share it)."""
        V = self.V
        C0, C1 = P0[V:], P1[V:]
        at = self._prediction_at
        if at is None or not (np.array_equal(at[0], C0) and np.array_equal(at[1], C1)):
            self._prediction_tree.refit(C0, C1, np.zeros(len(self._prediction_tree)))
            self._prediction_at = (C0.copy(), C1.copy())
        v = self._owned
        x0, x1 = P0[v], P1[v]
        pairs = self._prediction_tree.box_pairs(np.minimum(x0, x1) - self._prediction_pad,
                                                np.maximum(x0, x1) + self._prediction_pad)
        vertex = v[pairs[:, 0]]
        face = pairs[:, 1] + self.T
        found = np.empty(len(pairs), bool)
        rec = np.empty((len(pairs), RECORD))
        t = self.tester
        vertex_face_records(vertex, face, P0, P1, t.tris, self.group, t.group_gap, t.group_mu,
                            im, found, rec)
        corners = t.tris[face[found]]
        return np.column_stack([vertex[found], corners]), rec[found]

    def _self_constraints(self, x0, v_pred, inv_mass, h, c0, c1, near):
        """Cloth–cloth contacts for the implicit solve, as candidates for merge_deepest
        (vertices, margin, normals, target, surface velocity, friction): a cloth point that
        starts within (1 + near) times the contact distance of another cloth primitive and,
        moving along v_pred (V, 3) [m/s] against that primitive's own predicted motion, would
        end closer than it. The primitive's motion stays as predicted in the solve (the filter
        constrains one vertex), which is why these are only the first line: the collision
        pipeline still tests every pair after the step. Friction is left to the pipeline (a
        sticking vertex would be held to a predicted velocity)."""
        V = self.V
        P0 = np.concatenate([x0, c0.mesh_positions])
        U = np.concatenate([v_pred, (c1.mesh_positions - c0.mesh_positions) / h])
        im = np.concatenate([inv_mass, np.zeros(len(U) - V)])
        # (the last call's path is the solved one: the resolve after the solve reuses its pairs)
        idx, rec = self._detect(REPULSION, P0, U, im, h)
        # cloth pairs only; the first point is a vertex (vertex–face) or an edge's end nearest
        # the other edge (edge–edge, weight 1): it gets the contact, the other side's point is
        # Σ w·x over the last three
        w = rec[:, :4]
        mine = (idx < V).all(axis=1) & (w[:, 0] == 1.0) \
            & (rec[:, D0] <= (1.0 + near) * rec[:, GAP])
        idx, rec, w = idx[mine], rec[mine], w[mine]
        n = rec[:, NX:NX + 3]
        surface = -np.einsum("kj,kjd->kd", w[:, 1:], U[idx[:, 1:]])
        rel = U[idx[:, 0]] - surface
        margin = rec[:, D0] + h * np.sum(rel * n, axis=1) - rec[:, GAP]
        # only a point that itself moves towards the other side: one that the other side
        # comes down onto would be pushed ahead of it: the lower of two sheets dropped onto each
        # other went 1.25 mm into the floor's contact distance so (docs/solver.md,
        # "Cloth–cloth contacts inside the implicit solve")
        keep = (margin < 0.0) & (np.sum(U[idx[:, 0]] * n, axis=1) < 0.0)
        idx, rec, n, surface, margin = idx[keep], rec[keep], n[keep], surface[keep], margin[keep]
        target = (rec[:, GAP] - rec[:, D0]) / h + np.sum(surface * n, axis=1)
        return idx[:, 0], margin, n, target, surface, np.zeros(len(idx))

    def _detect(self, mode, P0, U, im, h, with_self=True, moved=None, with_collisions=False):
        """Contacts (REPULSION, NEARBY) or collisions (CONTINUOUS) on the path P0 → P0 + h·U;
        with ``moved`` (N,) only pairs with a point flagged there. with_collisions
        (REPULSION): (contacts, collisions), both (idx, records).

        The candidate triangle pairs come from boxes grown by SLACK and are reused while the
        start P0 is the same (by value) and no end position has moved more than SLACK since: a
        later round of the same step or a repeated resolve of it then needs no tree query.
        Keys by value let several times more calls reuse pairs than keys by object identity
        did (docs/solver.md, "Candidate pair reuse")."""
        P1 = P0 + h * U
        V = self.V
        with_self = with_self and self.self_collision
        with_colliders = self.colliders.has_mesh and not self._self_only
        # one entry: the pairs of the kinds asked for, with the path they were found for
        kinds = (with_self, with_colliders)
        pairs = self._reused(self._pair_cache, kinds, P0, P1)
        if pairs is None:
            self.cloth_tree.refit(P0[:V], P1[:V], self._cloth_pad + SLACK)
            found = [self.cloth_tree.self_pairs()] if with_self else []
            if with_colliders:
                self.collider_tree.refit(P0[V:], P1[V:], self._collider_pad + SLACK)
                found.append(self.cloth_tree.pairs_with(self.collider_tree))
                found[-1][:, 1] += self.T
            pairs = np.concatenate(found) if len(found) > 1 else found[0]
            self._pair_cache = (kinds, P0.copy(), P1, pairs)
        if with_collisions:
            return tuple(self._without_excluded(*found)
                         for found in self.tester.run_with_collisions(pairs, P0, P1, im, moved))
        return self._without_excluded(*self.tester.run(mode, pairs, P0, P1, im, moved))

    @staticmethod
    def _reused(entry, kinds, P0, P1):
        """The candidate pairs of a cache entry (kinds, start, end, pairs) if it holds the
        kinds of pairs asked for (the cloth's own, those against the colliders) and covers the
        path P0 → P1: the same start by value, and no end position more than SLACK from its
        end; else None."""
        if entry is None:
            return None
        held, start, end, pairs = entry
        if held == kinds and start.shape == P0.shape \
                and float(np.max(np.abs(P1 - end), initial=0.0)) <= SLACK \
                and np.array_equal(start, P0):
            return pairs
        return None

    def _without_excluded(self, idx: np.ndarray, rec: np.ndarray):
        """The records (idx (K, 4), rec (K, RECORD)) less the cloth–cloth ones with a vertex in
        ``excluded``: layers still passed through each other are not held the wrong way round
        while they are untangled (self_untangle.py)."""
        if self.excluded is None or len(idx) == 0:
            return idx, rec
        keep = ~(np.all(idx < self.V, axis=1)
                 & self.excluded[np.minimum(idx, self.V - 1)].any(axis=1))
        return idx[keep], rec[keep]

    def report(self, x: np.ndarray, state: ColliderState) -> IntersectionReport:
        """Independent intersection checks of cloth positions x [m] (V, 3) against itself and
        the colliders in ``state``."""
        c = self.colliders
        depth = analytic_depth(x, state.sphere_centers, c.sphere_radius, state.plane_points,
                               c.plane_normal) if c.has_analytic else 0.0
        zero = np.zeros(self.T)
        self.cloth_tree.refit(x, x, zero)
        tris = self.model.triangles
        # counted in one descent of the trees, without listing the candidate pairs: the count
        # of intersecting_pair_mask over self_pairs() and pairs_with(), pair for pair
        # (docs/solver.md, "Frame report")
        selfx = count_intersections(self.cloth_tree, self.cloth_tree, tris, tris, x, x,
                                    self.weld)
        crossings = 0
        if c.has_mesh:
            X = state.mesh_positions
            self.collider_tree.refit(X, X, np.zeros(len(c.mesh_tris)))
            crossings = count_intersections(self.cloth_tree, self.collider_tree, tris,
                                            c.mesh_tris, x, X, np.zeros(0, np.int64))
            depth = max(depth, float(self.inside.depths(x, X).max(initial=0.0)))
        return IntersectionReport(float(depth), int(selfx), int(crossings))
