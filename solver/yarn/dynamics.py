"""Time stepping of yarns ([Kaldor2011] §4.3, §4.5.3, Figure 4.12; docs/yarn.md).

``YarnSolver`` steps a YarnModel (model.py) as the cloth solvers step a ClothModel: it holds
the state (positions, velocities, time), takes the simulation's SolverSettings and is listed in
the solver registry as "yarn". One step of length h, Kaldor's revised order (Fig. 4.12) with
the bending implicit and the guarantees below:

1. forces at the start of the step: gravity, yarn–yarn contact with its damping (contact.py)
   and the rest curvature's part of the bending (rods.curvature_force),
   v* = v + h·M⁻¹·f;
2. the bending's quadratic part (rods.bending_matrix) and the soft pins' goal springs by
   backward Euler: (M + h²(K + K_pin))·v = M·v* − h·K·x − h·K_pin·(x − goal), one prefactored
   sparse solve over the free points (hard pins move to their targets); the bending is the
   stiffest force on millimetre segments and would otherwise need ~20× shorter steps;
3. x⁺ = x + h·v, then the segment lengths (and the glue ties) are projected back onto their
   rest lengths by fast projection (rods.project_lengths, Kaldor §4.3.1): the velocity
   (x⁺ − x)/h is now the constrained one;
4. on it, Coulomb friction between touching yarns (contact.apply_friction, with the normal
   forces of step 1) and then Kaldor's non-rigid velocity filter (damping.py) in two passes
   (2 × 2-loop regions, then 4 × 4), removing h·μ/(1 + h·μ) of the non-rigid velocity over
   both (``filter_shares``: a held region creeps at the same speed at every step) and at
   least Kaldor's constant μ_const·h: the filter acts before the positions move (Kaldor: "to
   allow the cloth to come to rest"), so a region the filter holds stays still;
5. x⁺ = x + h·v again; colliders (colliders.py) push points out, with their friction, and the
   lengths are projected once more so that every step ends with the lengths within 1e-6
   (a point a collider pushed weighs ten times its mass in that projection, so it moves its
   free neighbours rather than being pulled back in); v = (x⁺ − x)/h.

A step is thrown away and done as two halves (recursively, at most ``MAX_HALVINGS`` times;
then YarnStepError, or YarnCrushedError where a collider presses yarn into pinned yarn or into
another collider: the pair then closes at the collider's speed at every step length) when any
non-neighbouring pair of segments would end closer than g = ``GUARD``·2r or any point would
move by g or more (``StepStats.refinements``). This is a guarantee, not a heuristic: points
move linearly within a step, so two segments' distance at any moment of it is at least
(d₀ + d₁)/2 − δ > 0 for end distances d₀, d₁ ≥ g and moves δ < g: no yarn passes through
another.

Step length: at most the settings' ``time_step`` (1/4800 s), and, where the contact is stiffer,
the longest of h·2^(−j/8) within 0.71 of symplectic Euler's stability limit 2/ω_max of the
explicit contact (ω_max estimated by stability.ContactFrequency); the steps of a frame are
equal so that none is cut to a sliver to land on the frame (``step_toward``).
"""

from __future__ import annotations

import copy
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from .._jit import njit
from ..params import SolverSettings
from ..results import FrameReport
from ..solvers.base import BlowUpError, CrushedError, StepInfo
from .colliders import YarnColliders
from .contact import (SegmentTree, apply_friction, closest_pair, contact_pass, min_clearance,
                      near_pairs, segment_motion)
from .damping import FilterRegions, filter_regions
from .model import YarnModel
from .rods import (BendingWork, ProjectionWork, Segments, curvature_force, project_lengths,
                   rest_curvature)
from .stability import ContactFrequency, contact_springs

# The longest step where the settings give none: a whole number of steps per frame at 24, 25
# and 30 fps (200, 192, 160); the contact shortens it in a tight knit. A hanging rib ends a
# second at it and at half of it within about a millimetre (docs/yarn.md, "At rest and
# hanging": the step-convergence check that chose it).
DEFAULT_TIME_STEP = 1.0 / 4800.0
# Kaldor's step, to which his per-step filter strengths α refer (Table 4.1, 4.2).
KALDOR_STEP = 1.0 / 11800.0
# Contact samples per segment (Kaldor: 10–20 per spline segment, which is three of ours).
N_QUAD = 4
# g/(2r): no non-neighbouring pair ends a step closer, no point moves so far in one.
GUARD = 0.1
MAX_HALVINGS = 8
# Candidate pairs' margin (Stepping.pair_margin), in yarn radii
PAIR_MARGIN = 0.3
# Most fast-projection iterations per step (to 1e-6 relative); a collider's push can be far
# larger than a step's motion.
PROJECTION_ITERATIONS = 40
PROJECTION_TOLERANCE = 1e-6
# Inverse mass, as a share of its own, of a point a collider pushed in this step, for the
# length projection that follows (docs/yarn.md, "What is built": colliders).
COLLIDER_MASS_SHARE = 0.1
# Rounds of collider push and length projection per step where there are colliders: the
# second takes out what the first push left.
COLLIDER_ROUNDS = 2
# Share of symplectic Euler's stability limit 2/ω_max at which the contact is stepped: a margin
# for the penalty stiffening within the step.
STABILITY_MARGIN = 0.71
# Factorizations of the implicit solve kept, by step length (a frame uses one or two).
FACTOR_CACHE = 6
# Rungs per halving of the ladder of shortened steps (step_toward): h·2^(−j/LADDER_RUNGS).
LADDER_RUNGS = 8
# Contact passes per estimate of the contact's highest frequency (stability.ContactFrequency).
ESTIMATE_EVERY = 8



class YarnStepError(BlowUpError):
    """A step could not be made without yarns passing through each other."""


class YarnCrushedError(YarnStepError, CrushedError):
    """A collider squeezes yarn against pinned yarn or against another collider: pinned points
    are not pushed and colliders do not give way, so a collider moving into them closes the gap
    of the yarn it carries at its own speed, whatever the step (not retried)."""


@dataclass
class StepStats:
    """Counters since the solver started."""

    steps: int = 0              # accepted steps (of any length)
    refinements: int = 0        # halvings of a step that would have let yarns pass through
    stability_refinements: int = 0  # halvings of a step too long for the contact stiffness
    projection_iterations: int = 0
    worst_violation: float = 0.0  # largest relative length error left by a projection
    min_clearance: float = np.inf  # smallest non-neighbour distance after a step [m]


@dataclass(frozen=True)
class Stepping:
    """How the step is made beyond the settings: what Kaldor's relaxation changes (relax.py)
    and the candidate pairs' margin; the defaults simulate.

    Attributes:
        axial_stiffness: None for inextensible yarns; EA [N] for linear yarns (one compliant
            projection per step).
        damping_rate: viscous damping of all motion [1/s] (Kaldor's k_global).
        filter_alpha: None for the yarn's filter; a number for Kaldor's proportional filter of
            eq. 4.11 over the small regions only, with that α per step of 1/11800 s.
        friction: whether the yarn's friction acts.
        pair_margin: candidate segment pairs come from boxes grown by r + pair_margin·r and
            are kept until the points have moved apart by pair_margin·r (contact.SegmentTree);
            a wider margin searches less often but hands every contact pass more pairs.
    """

    axial_stiffness: float | None = None
    damping_rate: float = 0.0
    filter_alpha: float | None = None
    friction: bool = True
    pair_margin: float = PAIR_MARGIN


def filter_shares(h: float, small: float, large: float) -> tuple[float, float]:
    """Shares of the non-rigid velocity the filter's two passes remove in a step of h [s], for
    the rates μ_small, μ_large [1/s] (YarnParams.nonrigid_damping, nonrigid_damping_large).

    Backward Euler, not exp(−h·μ): the filter acts on the velocity that already holds the
    step's impulse h·a, so a region held against a steady force a creeps at
    v = (1 − α)·h·a/α, which is a/μ, the same at every step, only for α = h·μ/(1 + h·μ); shares
    exp(−h·μ) made a loaded knit creep 2.4× slower than a/μ at the model's step and 1.5× at
    half of it: a hanging knit's result depended on the step. The small
    regions' motion is non-rigid in the large ones too, so the first pass takes
    h·μ_s/(1 + h·(μ_s + μ_l)) and the second h·μ_l/(1 + h·μ_l): motion filtered by both keeps
    (1 − α_s)(1 − α_l) = 1/(1 + h·(μ_s + μ_l)), motion rigid within the small regions
    1/(1 + h·μ_l)."""
    return h * small / (1.0 + h * (small + large)), h * large / (1.0 + h * large)


@njit
def _spread(x, x0, centre):
    """Largest distance [m] of the displacements x − x0 (P, 3) from the centre of their
    bounding box, written to ``centre`` (3,): how far the points moved apart from a common
    translation."""
    lo = np.full(3, np.inf)
    hi = np.full(3, -np.inf)
    for p in range(x.shape[0]):
        for r in range(3):
            d = x[p, r] - x0[p, r]
            lo[r] = min(lo[r], d)
            hi[r] = max(hi[r], d)
    for r in range(3):
        centre[r] = 0.5 * (lo[r] + hi[r])
    best = 0.0
    for p in range(x.shape[0]):
        dd = 0.0
        for r in range(3):
            d = x[p, r] - x0[p, r] - centre[r]
            dd += d * d
        best = max(best, dd)
    return np.sqrt(best)


@njit
def _largest_move(x, xn):
    """Largest distance [m] between x and xn (P, 3)."""
    best = 0.0
    for p in range(x.shape[0]):
        dd = 0.0
        for r in range(3):
            d = xn[p, r] - x[p, r]
            dd += d * d
        best = max(best, dd)
    return np.sqrt(best)


class YarnSolver:
    """Yarns under gravity, bending, inextensibility, contact, friction and colliders.

    Args:
        model: the yarns (build_yarn_model).
        settings: SolverSettings (``time_step``: the longest step).
        gravity: (3,) [m/s²].
        colliders: YarnColliders, or None.
        stepping: the relaxation's changes to the step (relax.py); default: simulate.
    """

    name = "yarn"
    step_refinement = 1   # the longest step is time_step / step_refinement (retried frames)
    # what one step hands to the next besides x and v (saved for a frame's retry)
    carried = ("time", "stats", "rest", "_frequency", "_ratio", "_counted")
    # the yarn is not moved out of colliders before a frame: it is refused if it starts
    # inside one (``check_start_outside``); its colliders are its own (colliders.py)
    untangles = False
    collisions = None

    def __init__(self, model: YarnModel, settings: SolverSettings | None = None,
                 gravity=(0.0, 0.0, -9.81), colliders: YarnColliders | None = None,
                 stepping: Stepping = Stepping()):
        self.model = model
        self.settings = settings if settings is not None else SolverSettings(model="yarn")
        self.gravity = np.asarray(gravity, dtype=np.float64)
        self.stepping = stepping
        self.colliders = colliders
        self.x = model.rest_positions.copy()
        self.v = np.zeros_like(self.x)
        self.time = 0.0
        self.stats = StepStats()
        # the segments' target lengths (the relaxation shrinks them; rest lengths otherwise)
        self.rest = model.segments.rest.copy()
        free = model.free_mask
        self.free = free
        self.inv_mass = np.where(free, 1.0 / model.mass, 0.0)
        self._soft_k = np.zeros(model.vertex_count)
        self._soft_k[model.soft_pins] = model.soft_pin_stiffness
        self._targets = None     # (t, dt, FrameTargets) of the frame being stepped
        self._last: tuple | None = None   # forces, multipliers, h of the last step
        self._stiffness = np.zeros(model.vertex_count)
        self._pairs_at: tuple | None = None   # (x₀, pairs, their margins, their reach)
        self._passed_at: np.ndarray | None = None   # x of the last contact pass
        self._margin = stepping.pair_margin * model.radius
        self._contact_at: tuple | None = None
        self._layouts: dict = {}   # the filter's regions laid out (_laid_out)
        self._projection_work = None   # project_lengths' scratch arrays
        self._bending_work = None      # curvature_force's
        self._forces_at: tuple | None = None   # (the contact pass, forces(x, v)) of the last
        self._factors: OrderedDict[float, object] = OrderedDict()
        self._frequency = ContactFrequency(model.mass, free)
        self._bound: tuple | None = None
        self._counted = 0
        self._ratio = 1.0
        self.tree = SegmentTree(model.segments.seg, self.x, model.radius, self._margin)
        self.contact_energy = 0.0
        if colliders is not None:
            self.check_start_outside()

    # -- the frame loop's door (simulation.Simulation) ------------------------------------
    def frame_report(self, frame: int, wall: float, info: StepInfo, gravity):
        """The frame's FrameReport (simulation.py): the largest relative change of a
        segment's length as its strain, the energies (the bending about the rest curvature as
        elastic energy with the contact's), the touching pairs as collision pairs, the deepest
        a yarn point lies inside a collider, the steps halved and the closest yarns so far."""
        m = self.model
        s = m.segments
        strain = np.abs(s.lengths(self.x) / s.rest - 1.0)
        pairs = self._contact(self.x, self.v)[5]
        depth = 0.0 if self.colliders is None else self.colliders.depth(self.x, self.time)
        return FrameReport(
            frame=frame, wall_time_s=wall, substeps=info.substeps, iterations=info.iterations,
            max_strain=float(strain.max()), mean_strain=float(strain.mean()),
            kinetic_energy_j=float(0.5 * (m.mass * (self.v ** 2).sum(axis=1)).sum()),
            elastic_energy_j=float(self.contact_energy + self.bending_energy()),
            potential_energy_j=float(-(m.mass * (self.x @ np.asarray(gravity))).sum()),
            collision_pairs=int((pairs > 0).sum()), deepest_penetration_m=depth,
            halved_steps=info.iterations, closest_yarns_m=float(self.stats.min_clearance))

    @property
    def h(self) -> float:
        """The longest step [s]."""
        step = self.settings.time_step or DEFAULT_TIME_STEP
        return step / self.step_refinement

    def step_frame(self, t: float, frame_dt: float, targets=None, wind=None) -> StepInfo:
        """Advance from time t by one frame of frame_dt [s], the pins following ``targets``
        (solver.solvers.base.FrameTargets; None: they stay). The wind does not act on yarns."""
        before = self.stats.steps
        self._targets = None if targets is None else (t, frame_dt, targets)
        try:
            end = t + frame_dt
            while not self.step_toward(end):
                pass
        finally:
            self._targets = None
        return StepInfo(substeps=self.stats.steps - before,
                        iterations=self.stats.refinements)

    def save_frame_state(self) -> dict:
        return {k: copy.deepcopy(getattr(self, k)) for k in ("x", "v") + self.carried}

    def restore_frame_state(self, state: dict) -> None:
        for k, value in state.items():
            setattr(self, k, copy.deepcopy(value))
        self._contact_at = self._bound = self._pairs_at = self._forces_at = None

    def check_start_outside(self) -> None:
        """ValueError if the colliders would push a free point at the start by the guard or
        more: the first step would crowd its yarns together and fail with a message about
        yarns, not about where the swatch was put."""
        x = self.x.copy()
        self.colliders.project(self.x, x, self.inv_mass, 0.0, 0.0)
        deepest = float(np.sqrt(((x - self.x) ** 2).sum(axis=1)).max(initial=0.0))
        r = self.model.radius
        if deepest >= GUARD * 2.0 * r:
            raise ValueError(
                f"the yarn starts {1e3 * deepest:.3g} mm inside a collider's reach (its surface "
                f"plus its thickness plus the yarn radius {1e3 * r:.3g} mm): start the swatch "
                "further from the collider or make the collider thinner")

    # -- pieces of a step ------------------------------------------------------------------
    @property
    def segments(self) -> Segments:
        """The segments with their current target lengths."""
        s = self.model.segments
        return s if self.rest is s.rest else Segments(s.seg, self.rest, s.yarn, s.arc)

    def _pin_goals(self, time: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(hard pins' positions (Ph, 3), their velocity (Ph, 3), soft pins' goals (Ps, 3)) at
        ``time`` [s], from the frame's targets (linear within the frame)."""
        m = self.model
        if self._targets is None:
            return self.x[m.hard_pins], np.zeros((len(m.hard_pins), 3)), \
                m.rest_positions[m.soft_pins]
        t0, dt, tg = self._targets
        hard, soft = tg.at(min(1.0, max(0.0, (time - t0) / dt)))
        return hard, (tg.hard1 - tg.hard0) / dt, soft

    def _factor(self, h: float):
        """LU of M + h²(K + K_pin) over the free points, cached for the last FACTOR_CACHE
        step lengths."""
        f = self._factors.get(h)
        if f is None:
            idx = np.nonzero(self.free)[0]
            A = sp.diags(self.model.mass + (h * h) * self._soft_k) \
                + (h * h) * self.model.bend_matrix
            f = spla.splu(A[idx][:, idx].tocsc())
            self._factors[h] = f
            if len(self._factors) > FACTOR_CACHE:
                self._factors.popitem(last=False)
        else:
            self._factors.move_to_end(h)
        return f

    def _compliance(self, h: float) -> np.ndarray:
        if self.stepping.axial_stiffness is None:
            return np.zeros(len(self.rest))
        k = self.stepping.axial_stiffness / self.rest       # N/m per segment
        return 1.0 / (k * h * h)

    def _contact(self, x: np.ndarray, v: np.ndarray):
        """(contact force (P, 3) [N], stiffness shares (P,) [N/m], energy [J], clearance [m],
        candidate pairs, their normal forces [N], closest-point parameters, stiffness moments)
        at (x, v), by one contact.contact_pass; the last result is reused for the same
        positions, velocities and target lengths (compared by value)."""
        c = self._contact_at
        if (c is not None and np.array_equal(c[0], x) and np.array_equal(c[1], v)
                and np.array_equal(c[3], self.rest)):
            return c[2]
        p = self.model.params
        s = self.segments
        f = np.zeros_like(x)
        k = np.zeros(len(x))
        pairs, margin, motion, reach = self._pairs(x)
        fn = np.empty(len(pairs))
        st = np.empty((len(pairs), 2))
        # the stiffness moments feed the estimate of the contact's highest frequency only,
        # made from every ESTIMATE_EVERY-th pass (without them a pass is cheaper)
        mo = np.empty((len(pairs), 6)) if self._counted % ESTIMATE_EVERY == 0 else None
        self._counted += 1
        energy, _, _, gap = contact_pass(
            x, v, s.seg, s.rest, s.yarn, s.arc, pairs, reach, p.radius, p.contact_stiffness,
            p.contact_damping_normal, p.contact_damping_tangential, N_QUAD, f, k, fn, st,
            mo, margin, motion)
        out = (f, k, energy, gap, pairs, fn, st, mo)
        self._contact_at = (x.copy(), v.copy(), out, self.rest.copy())
        self._passed_at = self._contact_at[0]    # where the margins now hold
        return out

    def forces(self, x: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Gravity, yarn–yarn contact (penalty and damping) and the rest curvature's bending
        force [N] (P, 3) at (x, v); the last result is reused for the contact pass it was made
        from (the same positions, velocities and target lengths): a step asks twice, once for
        its length and once to make it."""
        m = self.model
        fc, k, self.contact_energy = self._contact(x, v)[:3]
        self._stiffness = k
        made = self._forces_at
        if made is not None and made[0] is self._contact_at:
            return made[1]
        f = m.mass[:, None] * self.gravity[None, :] + fc
        s = self.segments
        if self._bending_work is None:
            self._bending_work = BendingWork(len(x))
        curvature_force(x, s.seg, m.seg_in, m.seg_out, s.rest, m.rest_curvature,
                        m.params.bend_stiffness, f, self._bending_work)
        f.flags.writeable = False
        self._forces_at = (self._contact_at, f)
        return f

    def stable_step(self) -> float:
        """Longest stable step [s] for the contact of the last force evaluation: 0.71 of the
        limit 2/ω_max of symplectic Euler, ω_max from stability.ContactFrequency's estimate,
        never less than by the Gershgorin bound ω² ≤ max 2·k_i/m_i nor more than twice that.
        Between estimates, their ratio to the Gershgorin bound carries over."""
        c = self._contact_at
        if self._bound is not None and self._bound[0] is c:
            return self._bound[1]
        k = self._stiffness[self.free]
        if not (k > 0).any():
            return np.inf
        mass = self.model.mass[self.free]
        safe = float(np.sqrt(mass[k > 0] / k[k > 0]).min())
        _, _, _, _, pairs, _, st, mo = c[2]
        if mo is not None:
            lam = self._frequency.estimate(
                contact_springs(c[0], self.model.segments.seg, pairs, st, mo))
            self._ratio = 1.0 if lam <= 0.0 else \
                min(2.0, max(1.0, STABILITY_MARGIN * 2.0 / np.sqrt(lam) / safe))
        h = safe * self._ratio
        self._bound = (c, h)
        return h

    def _pairs(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Candidate segment pairs at x: those found at earlier positions x₀ while every point
        has moved the same to within the margin since (a common translation changes no
        distance, so a falling swatch keeps them), else found anew; only pairs that can come
        within a diameter before the next search are kept (contact.near_pairs). Also a lower
        bound of each one's distance less its contact distance where the last contact pass
        was (updated in place by it: Kaldor's scheduler, contact.contact_pass), how each
        segment has moved since (contact.segment_motion) and their contact distances."""
        at = self._pairs_at
        centre = np.zeros(3)
        spread = -1.0 if at is None or at[0].shape != x.shape else _spread(x, at[0], centre)
        if spread < 0.0 or spread >= self._margin:
            s = self.segments
            r = self.model.radius
            found, found_at = near_pairs(x, s.seg, s.rest, s.yarn, s.arc, self.tree.pairs(x),
                                         2.0 * r, 2.0 * (r + self._margin))
            reach = self.model.rest_contacts.reach(found, r, self.model.params.contact_rest)
            self._pairs_at = (x.copy(), found, found_at - reach, reach)
            self._passed_at = self._pairs_at[0]
            return found, self._pairs_at[2], np.zeros((len(s.seg), 5)), reach
        _, found, margin, reach = at
        seg = self.model.segments.seg
        motion = np.empty((len(seg), 5))
        centre = np.zeros(3)
        _spread(x, self._passed_at, centre)
        segment_motion(x, self._passed_at, seg, centre, motion)
        return found, margin, motion, reach

    def clearance(self, x: np.ndarray | None = None) -> float:
        """Smallest distance [m] between non-neighbouring segments (2r if none closer)."""
        x = self.x if x is None else x
        s = self.segments
        return float(min_clearance(x, s.seg, s.rest, s.yarn, s.arc, self._pairs(x)[0],
                                   2.0 * self.model.radius))

    def _project(self, xn: np.ndarray, inv_mass: np.ndarray, h: float):
        """Project the segment lengths and ties of xn in place; (iterations, violation before
        the last solve, multipliers λ (S,))."""
        m = self.model
        lam = np.zeros(len(self.rest))
        if self._projection_work is None:
            self._projection_work = ProjectionWork(len(self.rest), len(m.ties), len(xn))
        its, worst = project_lengths(xn, inv_mass, m.segments.seg, self.rest,
                                     self._compliance(h), lam, PROJECTION_TOLERANCE,
                                     PROJECTION_ITERATIONS, m.ties, m.tie_rest,
                                     self._projection_work)
        return its, worst, lam

    def _unconstrained(self, x, v, f, h, goals):
        """Steps 1–2 of the module docstring: the velocity after the explicit forces, the
        implicit bending and the soft pins (hard pins: their targets' velocity)."""
        m = self.model
        hard_x, hard_v, soft_goal = goals
        vs = v + h * self.inv_mass[:, None] * f
        rhs = m.mass[:, None] * vs - h * (m.bend_matrix @ x)
        if len(m.soft_pins):
            rhs[m.soft_pins] -= h * m.soft_pin_stiffness[:, None] \
                * (x[m.soft_pins] - soft_goal)
        vn = np.zeros_like(v)
        vn[m.hard_pins] = (hard_x - x[m.hard_pins]) / h
        if len(m.hard_pins) and np.any(vn[m.hard_pins]):
            # the moving pins' share of the free points' bending over the step
            rhs -= (h * h) * (m.bend_matrix @ np.where(self.free[:, None], 0.0, vn))
        idx = np.nonzero(self.free)[0]
        vn[idx] = self._factor(h).solve(np.ascontiguousarray(rhs[idx]))
        return vn

    def _filter(self, x: np.ndarray, v: np.ndarray, h: float) -> None:
        """Kaldor's non-rigid velocity filter on v in place (damping.py): the yarn's two
        passes, or the relaxation's proportional one; and the relaxation's viscous damping."""
        m, st = self.model, self.stepping
        if st.damping_rate > 0.0:
            v /= 1.0 + st.damping_rate * h
        if m.regions is None:
            return
        p = m.params
        if st.filter_alpha is not None:
            passes = ((m.regions, 1.0 - (1.0 - st.filter_alpha) ** (h / KALDOR_STEP), 0.0),)
        else:
            small, large = filter_shares(h, p.nonrigid_damping, p.nonrigid_damping_large)
            passes = ((m.regions, small, h * p.nonrigid_friction), (m.large_regions, large, 0.0))
        least = st.filter_alpha is None
        for regions, alpha, const in passes:
            if alpha > 0.0 or const > 0.0:
                filter_regions(x, v, m.mass, self.free, self._laid_out(regions, least), alpha,
                               const)

    def _laid_out(self, regions: tuple, least: bool) -> FilterRegions:
        """The filter's regions (ptr, points) of the model, laid out once (FilterRegions)."""
        key = (id(regions), least)
        if key not in self._layouts:   # the model is frozen: its regions stay
            self._layouts[key] = (regions, FilterRegions.of(*regions, self.model.vertex_count,
                                                            least))
        return self._layouts[key][1]

    def _try(self, h: float):
        """One unrefined step of length h from the current state: (x, v, clearance, largest
        move, ok, projection iterations, violation, (forces, multipliers, h), the points a
        collider pushed (P,) bool or None), or None if h is too long for the contact."""
        x, v, m = self.x, self.v, self.model
        f = self.forces(x, v)
        if h > self.stable_step():
            return None
        goals = self._pin_goals(self.time + h)
        hard = m.hard_pins
        xn = x + h * self._unconstrained(x, v, f, h, goals)
        xn[hard] = goals[0]
        its, worst, lam = self._project(xn, self.inv_mass, h)
        if m.params.friction > 0.0 and self.stepping.friction:
            _, _, _, _, pairs, fn, st, _ = self._contact_at[2]   # forces(x, v)'s pass
            apply_friction(x, xn, self.inv_mass, m.segments.seg, pairs, fn, st, h,
                           m.params.friction)
        vn = (xn - x) / h
        self._filter(xn, vn, h)
        xn = x + h * vn
        xn[hard] = goals[0]
        inv_mass, pushed = self.inv_mass, None
        for _ in range(1 if self.colliders is None else COLLIDER_ROUNDS):
            if self.colliders is not None:
                before = xn.copy()
                self.colliders.project(x, xn, self.inv_mass, self.time, self.time + h)
                moved = np.any(xn != before, axis=1)
                pushed = moved if pushed is None else pushed | moved
                if pushed.any():
                    inv_mass = np.where(pushed, COLLIDER_MASS_SHARE * self.inv_mass,
                                        self.inv_mass)
            n, worst, lam2 = self._project(xn, inv_mass, h)
            its += n
            lam += lam2
        if self.colliders is not None:
            # the projection may have pulled a point back in by a fraction of its length
            # error; the next step's projection takes the rest out
            self.colliders.project(x, xn, self.inv_mass, self.time, self.time + h)
        vn = (xn - x) / h
        gap = self._contact(xn, vn)[3]
        moved = _largest_move(x, xn)
        g = GUARD * 2.0 * m.radius
        ok = bool(np.isfinite(xn).all() and gap >= g and moved < g)
        return xn, vn, gap, moved, ok, its, worst, (f, lam, h), pushed

    def _advance(self, h: float, depth: int) -> None:
        tried = self._try(h)
        if tried is None:   # too long for the contact stiffness: halve, counted apart
            if depth >= MAX_HALVINGS:
                raise YarnStepError(f"t = {self.time:.6f} s: contact too stiff for a step of "
                                    f"{h:.3g} s")
            self.stats.stability_refinements += 1
            self._advance(h / 2, depth + 1)
            self._advance(h / 2, depth + 1)
            return
        xn, vn, gap, moved, ok, its, worst, last, pushed = tried
        if not ok:
            if depth >= MAX_HALVINGS:
                D = 2.0 * self.model.radius
                crushed = self._crushed(xn, pushed, gap, moved, h)
                if crushed:
                    raise YarnCrushedError(f"t = {self.time:.6f} s: {crushed}")
                raise YarnStepError(
                    f"t = {self.time:.6f} s: a step of {h:.3g} s still brings yarns within "
                    f"{gap / D:.3f} diameters and moves a point {moved / D:.3g} diameters "
                    f"(the guard is {GUARD} diameters for both)")
            self.stats.refinements += 1
            self._advance(h / 2, depth + 1)
            self._advance(h / 2, depth + 1)
            return
        self.x, self.v = xn, vn
        self._last = last
        self.time += h
        st = self.stats
        st.steps += 1
        st.projection_iterations += its
        if self.stepping.axial_stiffness is None:
            st.worst_violation = max(st.worst_violation, worst)
        st.min_clearance = min(st.min_clearance, gap)

    def _crushed(self, xn: np.ndarray, pushed: np.ndarray | None, gap: float, moved: float,
                 h: float) -> str | None:
        """Why a step to xn (P, 3) [m] that failed the guard cannot be made shorter: yarn that
        a collider pushed in the step (``pushed`` (P,) bool) is squeezed from two sides that do
        not give way, a collider and the pinned points inside its reach (pins are not pushed)
        or two colliders, and either the closest pair is yarn held by one side against yarn
        held by the other (pinned, or within the guard of a collider's reach) or a point moved
        too far; None otherwise."""
        if pushed is None or not pushed.any():
            return None
        m = self.model
        s = m.segments
        D = 2.0 * m.radius
        g = GUARD * D
        t = self.time + h
        inside = int((self.colliders.reached(xn, t).any(axis=1) & ~self.free).sum())
        # the sides: the pins, where a collider reaches them, then each collider
        sides = np.column_stack((~self.free if inside else np.zeros(len(xn), bool),
                                 self.colliders.reached(xn, t, g)))
        touched = sides.any(axis=0)
        if np.count_nonzero(touched) < 2:
            return None
        blamed = None
        if gap < g:
            pairs = self._pairs(xn)[0]
            k, _ = closest_pair(xn, s.seg, s.rest, s.yarn, s.arc, pairs, D)
            if k >= 0:
                a = sides[s.seg[pairs[k, 0]]].any(axis=0)
                b = sides[s.seg[pairs[k, 1]]].any(axis=0)
                if a.any() and b.any() and np.count_nonzero(a | b) >= 2:
                    blamed = a | b
        if blamed is None and moved >= g:
            blamed = touched   # a point squeezed out between the sides need not touch either
        if blamed is None:
            return None
        how = (f"comes within {gap / D:.3f} diameters of other yarn and moves {moved / D:.3g} "
               f"diameters in a step of {h:.3g} s (the guard is {GUARD} diameters for both)")
        if blamed[0]:
            return (f"yarn crushed between a collider and pinned yarn: {inside} pinned points "
                    f"lie inside a collider's reach, and the yarn it pushes {how}. Pinned points "
                    "are not pushed, so a collider moving into them squeezes the yarn it "
                    "carries against them at its own speed, at any step: keep colliders clear "
                    "of the pins, or make the pins soft (pin weights below 1), which a collider "
                    "can push")
        i, j = np.nonzero(blamed[1:])[0][:2]
        kinds = [self.colliders.colliders[c].kind for c in (i, j)]
        which = f"two {kinds[0]}s" if kinds[0] == kinds[1] else f"a {kinds[0]} and a {kinds[1]}"
        return (f"yarn crushed between two colliders ({which}, colliders {i + 1} and {j + 1} "
                f"in the scene's order): the yarn between them {how}. Colliders do not give "
                "way, so where two leave the yarn less room than it needs no step keeps it "
                "apart: move the colliders apart or squeeze less (stop the one that presses "
                "before the yarn is flat); soft pins do not help here")

    # -- public ----------------------------------------------------------------------------
    def step(self) -> None:
        """Advance by one step h (refined into halves where yarns would pass through)."""
        self._advance(self.h, 0)

    def step_toward(self, end: float) -> bool:
        """One step toward the time ``end`` [s]; True once the solver has reached it.

        The steps left to ``end`` are made equal and no longer than h, or, where the contact
        is too stiff for h, than the longest of h·2^(−j/n) (n = ``LADDER_RUNGS``) within its
        stable step: a tight spot costs a few per cent more steps, not twice as many as
        halving. A last step cut short to land on ``end`` would be a hazard: a collider's push
        divided by a step of a microsecond is a velocity of kilometres per second."""
        h0 = self.h
        left = end - self.time
        if left <= 1e-9 * h0:
            return True
        self.forces(self.x, self.v)   # the start's contact pass, which _try reuses
        bound = self.stable_step()
        rung = h0
        j = 0
        while rung > bound and j < LADDER_RUNGS * MAX_HALVINGS:
            j += 1
            rung = h0 * 2.0 ** (-j / LADDER_RUNGS)
        h = left / max(1, int(np.ceil(left / rung - 1e-9)))
        for known in self._factors:     # the same step as the last one, to rounding
            if abs(known - h) <= 1e-9 * h and left - known > 1e-9 * h0:
                h = known
                break
        self._advance(h, 0)
        return end - self.time <= 1e-9 * h0

    def advance(self, duration: float) -> None:
        """Advance by ``duration`` [s] in steps of ``step_toward`` (pins stay)."""
        end = self.time + duration
        while not self.step_toward(end):
            pass

    def pin_reaction(self, points) -> np.ndarray:
        """Force [N] (3,) the yarns exerted on the pinned ``points`` in the last step: contact,
        length constraints (fast projection's multipliers, λ_k·e_k/h² per segment end) and
        bending. The force a clamp holding them feels; gravity on them excluded."""
        if self._last is None:
            return np.zeros(3)
        f, lam, h = self._last
        m = self.model
        pts = np.zeros(len(self.x), bool)
        pts[np.asarray(points, dtype=np.int64)] = True
        seg = m.segments.seg
        e = (self.x[seg[:, 1]] - self.x[seg[:, 0]]) / self.rest[:, None]
        tension = lam[:, None] * e / (h * h)   # the projection moves b by +e·λ/m_b, a by −
        total = (f[pts] - m.mass[pts, None] * self.gravity).sum(axis=0)
        total += tension[pts[seg[:, 1]]].sum(axis=0) - tension[pts[seg[:, 0]]].sum(axis=0)
        total -= (m.bend_matrix @ self.x)[pts].sum(axis=0)
        return total

    def bending_energy(self) -> float:
        """½·B·Σ|g − ḡ|²/l̄ [J] at the current positions (rods.py)."""
        m = self.model
        s = m.segments
        now = rest_curvature(self.x, s.seg, m.seg_in, m.seg_out, s.rest)
        share = np.zeros(len(self.x))
        inner = (m.seg_in >= 0) & (m.seg_out >= 0)
        share[inner] = 0.5 * (s.rest[m.seg_in[inner]] + s.rest[m.seg_out[inner]])
        w = np.divide(m.params.bend_stiffness, share, out=np.zeros_like(share),
                      where=share > 0)
        return float(0.5 * (w * ((now - m.rest_curvature) ** 2).sum(axis=1)).sum())

    def yarn_lengths(self) -> np.ndarray:
        """Current length [m] of each yarn (Y,)."""
        s = self.model.segments
        return np.bincount(s.yarn, weights=s.lengths(self.x),
                           minlength=len(self.model.yarn_offsets) - 1)
