"""Time stepping of yarns ([Kaldor2011] §4.3; docs/yarn.md).

One step of length h, Kaldor's Figure 4.3 with the bending made implicit:

1. explicit forces at the start of the step: gravity and yarn–yarn contact with its damping
   (contact.py), v* = v + h·M⁻¹·f;
2. bending, whose energy is quadratic (rods.bending_matrix), by backward Euler:
   (M + h²K)·v⁺ = M·v* − h·K·x, one prefactored sparse solve (pinned points eliminated); it is
   the stiffest force on millimetre segments and would otherwise need ~20× smaller steps;
3. x⁺ = x + h·v⁺; Coulomb friction between touching yarns (contact.apply_friction, with the
   normal forces of step 1) and the colliders (colliders.py) correct x⁺; then the segment
   lengths are projected back onto their rest lengths by fast projection
   (rods.project_lengths, Kaldor §4.3.1), v⁺ = (x⁺ − x)/h;
4. the step is checked: if any non-neighbouring pair of segments ended closer than
   g = ``guard``·(2r), or any point moved by δ ≥ g, it is thrown away and done as two half
   steps, recursively (at most ``max_halvings`` times; then YarnStepError). ``refinements``
   counts the halvings. This is a guarantee, not a heuristic: points move linearly within a
   step, so two segments' relative motion is at most 2δ, and their distance at any moment of
   the step is at least max(d₀ − 2δτ, d₁ − 2δ(1 − τ)) ≥ (d₀ + d₁)/2 − δ > 0 for distances
   d₀, d₁ ≥ g at its ends: no yarn passes through another, and none comes closer than g − δ
   at any moment.

5. Kaldor's velocity filter of non-rigid motion (damping.py) over the given regions, with the
   yarn's μ_prop and μ_const, or, given ``nonrigid_alpha`` (the relaxation), the proportional
   one of eq. 4.11 with α per step scaled to the step length from his α per step of
   1/11800 s.

A step is also refined when it is too long for the explicit contact force to be stable: h must
stay below sqrt(m_i / k_i) at every point, k_i its share of the contact stiffness (symplectic
Euler is stable to 2/ω, and a pair of points touching has ω² ≤ 2·k_i/m_i, so this is 0.71 of
the limit: a margin for the penalty stiffening within the step); these halvings are counted apart (``stability_refinements``) from those that prevent passing through.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as spla

from .._jit import njit
from ..params import YarnParams
from ..spec import Collider
from .contact import SegmentTree, apply_friction, contact_pass, min_clearance, near_pairs
from .damping import filter_nonrigid
from .stability import ContactFrequency, contact_springs
from .colliders import YarnColliders
from .rods import Segments, bending_matrix, lumped_masses, project_lengths

# The longest step; where the contact is too stiff for it (most of the time in a worsted knit),
# steps are shortened to 0.71 of the explicit contact's stability limit as estimated by
# stability.ContactFrequency: about 1/10,500 s in a 42 × 32 stockinette hanging from its top,
# against Kaldor's fixed 1/11800 s for his stretch scene (Table 4.2). A whole number of steps per
# frame at 24, 25 and 30 fps (400, 384, 320). Positions differ from 1/24000 s by the
# first-order time error (docs/yarn.md, "Speed").
DEFAULT_TIME_STEP = 1.0 / 9600.0
# Most fast-projection iterations per step (to 1e-6 relative): a 42 × 32 hanging swatch and a
# 5 × 5 seed stitch pinned along its top course need 4 (3 solves and the check); 40 leaves
# room for a collider's push far larger than a step's motion
PROJECTION_ITERATIONS = 40
# Inverse mass, as a share of its own, of a point a collider pushed in this step, for the
# length projection that follows (docs/yarn.md, "Colliders")
COLLIDER_MASS_SHARE = 0.1
# Rounds of collider push and length projection per step where there are colliders: the second
# round takes out what the first push left (a 5 × 5 rib landing at 2.4 m/s: 1.0 % strain with
# one round at 1/12000 s, docs/yarn.md, "Colliders")
COLLIDER_ROUNDS = 2
# Share of symplectic Euler's stability limit 2/ω_max at which the contact is stepped: the
# margin of the Gershgorin bound's h = sqrt(m/k) (0.71 of its limit) for the penalty stiffening
# within the step
STABILITY_MARGIN = 0.71
# Factorizations of the bending solve kept, by step length (step_toward uses one or two a frame)
FACTOR_CACHE = 6
# Rungs per halving of the ladder of shortened steps (step_toward): h·2^(−j/LADDER_RUNGS)
LADDER_RUNGS = 8
# Contact passes per estimate of the contact's highest frequency (stability.ContactFrequency)
ESTIMATE_EVERY = 8
# Kaldor's step, to which his per-step filter strengths α refer (Table 4.1, 4.2).
KALDOR_STEP = 1.0 / 11800.0


@njit
def _spread(x, x0):
    """Largest distance [m] of the displacements x − x0 (P, 3) from the centre of their
    bounding box: how far the points moved apart from a common translation."""
    lo = np.full(3, np.inf)
    hi = np.full(3, -np.inf)
    for p in range(x.shape[0]):
        for r in range(3):
            d = x[p, r] - x0[p, r]
            lo[r] = min(lo[r], d)
            hi[r] = max(hi[r], d)
    c = 0.5 * (lo + hi)
    best = 0.0
    for p in range(x.shape[0]):
        dd = 0.0
        for r in range(3):
            d = x[p, r] - x0[p, r] - c[r]
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


class YarnStepError(RuntimeError):
    """A step could not be made without yarns passing through each other."""


@dataclass
class StepStats:
    """Counters since the simulation started."""

    steps: int = 0              # accepted steps (of any length)
    refinements: int = 0        # halvings of a step that would have let yarns pass through
    stability_refinements: int = 0  # halvings of a step too long for the contact stiffness
    projection_iterations: int = 0
    worst_violation: float = 0.0  # largest relative length error left by a projection
    min_clearance: float = np.inf  # smallest non-neighbour distance after a step [m]


class YarnSimulation:
    """Yarns under gravity, bending, inextensibility and yarn–yarn contact.

    Args:
        positions: (P, 3) yarn points [m].
        yarn_offsets: (Y + 1,) where each yarn's points start.
        params: the yarn.
        pins: indices of points held still (default none).
        ties: (T, 2) point pairs glued at their initial distance (Kaldor's glue constraints on
            yarn ends; stitches.Swatch.ties), default none.
        rest: (S,) rest segment lengths [m] (default: as in ``positions``).
        gravity: (3,) [m/s²].
        time_step: h [s] of an unrefined step.
        n_quad: contact samples per segment (Kaldor: 10–20 per spline segment; a polyline
            segment is shorter, a third of a yarn diameter or less at the usual gauges).
        guard: g/(2r): a step must end with every non-neighbouring pair at least g apart and
            move no point by g or more (otherwise it is halved).
        axial_stiffness: None for inextensible yarns (hard constraints); a value EA [N] makes
            the yarns linearly elastic with that stiffness (the relaxation's linear yarns).
        damping_rate: viscous damping of all motion [1/s] (0 in simulation; heavy in the
            relaxation).
        regions: (ptr, points) of the non-rigid damping (damping.loop_regions), or None.
        nonrigid_alpha: None for the filter with ``params.nonrigid_damping`` and
            ``params.nonrigid_friction`` (damping.py); a number for Kaldor's proportional
            filter of eq. 4.11 with that α per step of 1/11800 s (Table 4.1: 0.3 in the
            relaxation).
        colliders: YarnColliders (spheres, planes, meshes; colliders.py), or None: points
            are pushed out of them inside the step, with their friction.
        floor: shorthand for one more collider, a horizontal plane (a table) at z = floor [m]
            with friction ``friction`` μ and no thickness; None for none.
        pair_margin: candidate segment pairs are found with boxes grown by r + pair_margin·r
            and reused until the points have moved apart by pair_margin·r (contact.SegmentTree).
            A wider margin rebuilds less often but hands the contact pass more pairs: the
            first frame of a 42 × 32 swatch hanging from its top took 15.6–16.6, 15.1 and
            16.1–16.9 s at margins 0.1, 0.3 and 0.6, at steps of 1/12000 s (docs/yarn.md).
    """

    def __init__(self, positions, yarn_offsets, params: YarnParams, pins=None, ties=None,
                 rest=None,
                 gravity=(0.0, 0.0, -9.81), time_step: float = DEFAULT_TIME_STEP,
                 n_quad: int = 4, guard: float = 0.1, max_halvings: int = 8, axial_stiffness: float | None = None,
                 damping_rate: float = 0.0, regions=None, nonrigid_alpha: float | None = None,
                 colliders: YarnColliders | None = None, floor: float | None = None,
                 friction: float = 0.5, pair_margin: float = 0.3,
                 estimate_frequency: bool = True):
        self.x = np.array(positions, dtype=np.float64)
        self.v = np.zeros_like(self.x)
        self.yarn_offsets = np.asarray(yarn_offsets, dtype=np.int64)
        self.params = params
        self.segments = Segments.of(self.yarn_offsets, self.x, rest)
        P = len(self.x)
        self.mass = lumped_masses(self.segments, P, params.linear_density)
        self.free = np.ones(P, bool)
        if pins is not None:
            self.free[np.asarray(pins, dtype=np.int64)] = False
        self.inv_mass = np.where(self.free, 1.0 / self.mass, 0.0)
        self.ties = np.zeros((0, 2), np.int64) if ties is None else \
            np.asarray(ties, dtype=np.int64).reshape(-1, 2)
        self.tie_len = np.linalg.norm(self.x[self.ties[:, 1]] - self.x[self.ties[:, 0]], axis=1)
        self.gravity = np.asarray(gravity, dtype=np.float64)
        self.h = float(time_step)
        self.n_quad = int(n_quad)
        self.guard = float(guard)
        self.max_halvings = int(max_halvings)
        self.axial_stiffness = axial_stiffness
        self.damping_rate = float(damping_rate)
        self.regions = regions
        self.nonrigid_alpha = None if nonrigid_alpha is None else float(nonrigid_alpha)
        if floor is not None:
            table = Collider(kind="plane", point=np.array([0.0, 0.0, float(floor)]),
                             normal=np.array([0.0, 0.0, 1.0]), thickness=0.0,
                             friction=float(friction))
            extra = () if colliders is None else tuple(colliders.colliders)
            colliders = YarnColliders(extra + (table,), params.radius,
                                      *((colliders.set.fps, colliders.set.frames)
                                        if colliders is not None else (1.0, 1)))
        self.colliders = colliders
        if colliders is not None:
            self._check_start_outside(colliders)
        # forces, projection multipliers and length of the last accepted step (pin_reaction)
        self._last: tuple[np.ndarray, np.ndarray, float] | None = None
        self._stiffness = np.zeros(len(self.x))
        # the candidate pairs and the positions they were found at (reused within the margin)
        self._pairs_at: tuple | None = None   # (x₀, pairs, their distances at x₀)
        self._margin = float(pair_margin) * params.radius
        # contact forces at the end of the last tried step: an accepted step's end is the next
        # step's start, so its check computes the next step's forces in the same pass
        self._contact_at: tuple | None = None
        self.K = bending_matrix(self.segments, P, params.bend_stiffness).tocsc()
        self._factors: OrderedDict[float, object] = OrderedDict()
        self._frequency = ContactFrequency(self.mass, self.free) if estimate_frequency else None
        self._bound: tuple | None = None   # (contact pass it was found from, stable step)
        self._counted = 0                  # contact passes made
        self._ratio = 1.0                  # stable step over the Gershgorin bound's
        self.tree = SegmentTree(self.segments.seg, self.x, params.radius, self._margin)
        self.time = 0.0
        self.stats = StepStats()
        self.contact_energy = 0.0

    def _check_start_outside(self, colliders: YarnColliders) -> None:
        """ValueError if the colliders would push a free point at the start by the guard or
        more: the first step would crowd its yarns together and fail with a message about
        yarns, not about where the swatch was put."""
        x = self.x.copy()
        colliders.project(self.x, x, self.inv_mass, 0.0, 0.0)
        deepest = float(np.sqrt(((x - self.x) ** 2).sum(axis=1)).max(initial=0.0))
        if deepest >= self.guard * 2.0 * self.params.radius:
            raise ValueError(
                f"the yarn starts {1e3 * deepest:.3g} mm inside a collider's reach (its surface "
                f"plus its thickness plus the yarn radius {1e3 * self.params.radius:.3g} mm): "
                "start the swatch further from the collider or make the collider thinner")

    # -- pieces of a step ------------------------------------------------------------------
    def _factor(self, h: float):
        """LU of (M + h²K) over the free points, cached for the last FACTOR_CACHE step
        lengths (a frame uses one or two)."""
        f = self._factors.get(h)
        if f is None:
            idx = np.nonzero(self.free)[0]
            A = sp.diags(self.mass) + (h * h) * self.K
            f = spla.splu(A[idx][:, idx].tocsc())
            self._factors[h] = f
            if len(self._factors) > FACTOR_CACHE:
                self._factors.popitem(last=False)
        else:
            self._factors.move_to_end(h)
        return f

    def _compliance(self, h: float) -> np.ndarray:
        if self.axial_stiffness is None:
            return np.zeros(len(self.segments.rest))
        k = self.axial_stiffness / self.segments.rest       # N/m per segment
        return 1.0 / (k * h * h)

    def _contact(self, x: np.ndarray, v: np.ndarray):
        """(contact force (P, 3) [N], stiffness shares (P,) [N/m], energy [J], clearance [m],
        candidate pairs, their normal forces [N] and closest-point parameters, for friction)
        at (x, v), by one contact.contact_pass; the last result is kept and reused for the
        same positions, velocities and segments (compared by value: arrays changed in place
        must not reuse it). The relaxation shrinks the rest lengths a little every step
        (3e-4 relative): the forces of its steps use those of the step before."""
        c = self._contact_at
        if (c is not None and c[3] is self.segments.seg and np.array_equal(c[0], x)
                and np.array_equal(c[1], v)):
            return c[2]
        p = self.params
        s = self.segments
        f = np.zeros_like(x)
        k = np.zeros(len(x))
        pairs, found_at, slack = self._pairs(x)
        fn = np.empty(len(pairs))
        st = np.empty((len(pairs), 2))
        # the stiffness moments are for the estimate of the contact's highest frequency only,
        # made from every ESTIMATE_EVERY-th pass (without them a pass is ~7 % cheaper)
        mo = np.empty((len(pairs), 6)) if self._frequency is not None and \
            self._counted % ESTIMATE_EVERY == 0 else None
        self._counted += 1
        energy, _, _, gap = contact_pass(
            x, v, s.seg, s.rest, s.yarn, s.arc, pairs, p.radius, p.contact_stiffness,
            p.contact_damping_normal, p.contact_damping_tangential, self.n_quad, f, k, fn, st,
            mo, found_at, slack)
        out = (f, k, energy, gap, pairs, fn, st, mo)
        self._contact_at = (x.copy(), v.copy(), out, self.segments.seg)
        return out

    def forces(self, x: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Gravity and yarn–yarn contact (penalty and damping) [N] (P, 3) at (x, v)."""
        fc, k, self.contact_energy = self._contact(x, v)[:3]
        self._stiffness = k
        return self.mass[:, None] * self.gravity[None, :] + fc

    def stable_step(self) -> float:
        """Longest stable step [s] for the contact of the last force evaluation: 0.71 of the
        limit 2/ω_max of symplectic Euler (a margin for the penalty stiffening within the
        step), ω_max from stability.ContactFrequency's estimate, but never less than by the
        Gershgorin bound ω² ≤ max 2·k_i/m_i nor more than twice that. The estimate is made
        from every ``ESTIMATE_EVERY``-th contact pass (those that keep the stiffness moments);
        in between, its ratio to the Gershgorin bound carries over (the bound follows the
        stiffest spot from pass to pass)."""
        c = self._contact_at
        if self._bound is not None and self._bound[0] is c:
            return self._bound[1]
        k = self._stiffness[self.free]
        if not (k > 0).any():
            return np.inf
        safe = float(np.sqrt(self.mass[self.free][k > 0] / k[k > 0]).min())
        _, _, _, _, pairs, _, st, mo = c[2]
        if mo is not None:
            lam = self._frequency.estimate(
                contact_springs(c[0], self.segments.seg, pairs, st, mo))
            self._ratio = 1.0 if lam <= 0.0 else \
                min(2.0, max(1.0, STABILITY_MARGIN * 2.0 / np.sqrt(lam) / safe))
        h = safe * self._ratio
        self._bound = (c, h)
        return h

    def _pairs(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        """Candidate segment pairs at x: those found at earlier positions x₀ while every point
        has moved the same to within the margin since (a superset of the pairs within 2r, see
        SegmentTree: a common translation changes no distance, so a falling swatch keeps its
        pairs), else found anew at x; only pairs that can come within a diameter before the
        next search are kept (contact.near_pairs). Also their distances at x₀ and how much
        closer any two segments can have come since x₀: contact_pass skips the pairs too far
        to touch."""
        at = self._pairs_at
        spread = -1.0 if at is None or at[0].shape != x.shape else _spread(x, at[0])
        if spread < 0.0 or spread >= self._margin:
            s = self.segments
            # only the pairs that can come within a diameter before the next search (slack
            # below 2·margin) are kept: 44 % of what the tree finds in a 42 × 32 knit
            found, found_at = near_pairs(x, s.seg, s.rest, s.yarn, s.arc, self.tree.pairs(x),
                                         2.0 * self.params.radius,
                                         2.0 * (self.params.radius + self._margin))
            self._pairs_at = (x.copy(), found, found_at)
            return found, found_at, 0.0
        x0, found, found_at = at
        return found, found_at, 2.0 * spread

    def clearance(self, x: np.ndarray | None = None) -> float:
        """Smallest distance [m] between non-neighbouring segments (2r if none closer)."""
        x = self.x if x is None else x
        s = self.segments
        return float(min_clearance(x, s.seg, s.rest, s.yarn, s.arc, self._pairs(x)[0],
                                   2.0 * self.params.radius))

    def _try(self, h: float):
        """One unrefined step of length h from the current state: (x, v, clearance, largest
        move, ok, projection iterations, violation, (forces, multipliers, h)), or None if h is
        too long for the contact."""
        x, v = self.x, self.v
        f = self.forces(x, v)
        if h > self.stable_step():
            return None
        vs = v + h * self.inv_mass[:, None] * f
        rhs = self.mass[:, None] * vs - h * (self.K @ x)
        vn = np.zeros_like(v)
        idx = np.nonzero(self.free)[0]
        vn[idx] = self._factor(h).solve(np.ascontiguousarray(rhs[idx]))
        xn = x + h * vn
        if self.params.friction > 0.0:
            _, _, _, _, pairs, fn, st, _ = self._contact_at[2]   # forces(x, v)'s pass, above
            apply_friction(x, xn, self.inv_mass, self.segments.seg, pairs, fn, st, h,
                           self.params.friction)
        inv_mass = self.inv_mass
        pushed = np.zeros(len(x), bool)
        its = 0
        for _ in range(1 if self.colliders is None else COLLIDER_ROUNDS):
            if self.colliders is not None:
                before = xn.copy()
                self.colliders.project(x, xn, self.inv_mass, self.time, self.time + h)
                # points a collider pushed are heavy to the length projection, so it moves
                # their free neighbours rather than pulling them back in (and the push after it
                # then stretching their segments: 1.8 % in a swatch landing at 2.4 m/s,
                # docs/yarn.md)
                pushed |= np.any(xn != before, axis=1)
                if pushed.any():
                    inv_mass = np.where(pushed, COLLIDER_MASS_SHARE * self.inv_mass,
                                        self.inv_mass)
            lam = np.zeros(len(self.segments.rest))
            n, worst = project_lengths(xn, inv_mass, self.segments.seg, self.segments.rest,
                                       self._compliance(h), lam, 1e-6, PROJECTION_ITERATIONS,
                                       self.ties, self.tie_len)
            its += n
        if self.colliders is not None:
            # again: the length projection may have pulled a point back in by a fraction of
            # its length error; the next step's projection takes the rest out
            self.colliders.project(x, xn, self.inv_mass, self.time, self.time + h)
        vn = (xn - x) / h
        if self.damping_rate > 0:
            vn /= 1.0 + self.damping_rate * h
        if self.regions is not None:
            if self.nonrigid_alpha is None:
                alpha = -np.expm1(-h * self.params.nonrigid_damping)
                const = h * self.params.nonrigid_friction
            else:
                alpha = 1.0 - (1.0 - self.nonrigid_alpha) ** (h / KALDOR_STEP)
                const = 0.0
            if alpha > 0.0 or const > 0.0:
                filter_nonrigid(xn, vn, self.mass, self.free, self.regions[0],
                                self.regions[1], alpha, const)
        gap = self._contact(xn, vn)[3]
        moved = _largest_move(x, xn)
        g = self.guard * 2.0 * self.params.radius
        ok = bool(np.isfinite(xn).all() and gap >= g and moved < g)
        return xn, vn, gap, moved, ok, its, worst, (f, lam, h)

    def _advance(self, h: float, depth: int) -> None:
        tried = self._try(h)
        if tried is None:   # too long for the contact stiffness: halve, counted apart
            if depth >= self.max_halvings:
                raise YarnStepError(f"t = {self.time:.6f} s: contact too stiff for a step of "
                                    f"{h:.3g} s")
            self.stats.stability_refinements += 1
            self._advance(h / 2, depth + 1)
            self._advance(h / 2, depth + 1)
            return
        xn, vn, gap, moved, ok, its, worst, last = tried
        if not ok:
            if depth >= self.max_halvings:
                D = 2.0 * self.params.radius
                raise YarnStepError(
                    f"t = {self.time:.6f} s: a step of {h:.3g} s still brings yarns within "
                    f"{gap / D:.3f} diameters and moves a point {moved / D:.3g} diameters "
                    f"(the guard is {self.guard} diameters for both)")
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
        if self.axial_stiffness is None:
            st.worst_violation = max(st.worst_violation, worst)
        st.min_clearance = min(st.min_clearance, gap)

    # -- public ----------------------------------------------------------------------------
    def step(self) -> None:
        """Advance by one step h (refined into halves where yarns would pass through)."""
        self._advance(self.h, 0)

    def step_toward(self, end: float) -> bool:
        """One step toward the time ``end`` [s]; True once the simulation has reached it.

        The steps left to ``end`` are made equal and no longer than h, or, where the contact
        is too stiff for h, than the longest of h·2^(−j/n) (n = ``LADDER_RUNGS``) within its
        stable step: a tight spot costs a few per cent more steps, not twice as many as
        halving, and no step is shorter than half of that unless ``end`` is closer than it.
        A last step cut short to land on ``end`` would be a hazard: a collider's push or a
        projection's correction divided by a step of a microsecond is a velocity of
        kilometres per second (a rib cuff swinging back into a ball failed so; docs/yarn.md,
        "Speed")."""
        left = end - self.time
        if left <= 1e-9 * self.h:
            return True
        self.forces(self.x, self.v)   # the start's contact pass, which _try reuses
        bound = self.stable_step()
        rung = self.h
        j = 0
        while rung > bound and j < LADDER_RUNGS * self.max_halvings:
            j += 1
            rung = self.h * 2.0 ** (-j / LADDER_RUNGS)
        h = left / max(1, int(np.ceil(left / rung - 1e-9)))
        for known in self._factors:     # the same step as the last one, to rounding
            if abs(known - h) <= 1e-9 * h and left - known > 1e-9 * self.h:
                h = known
                break
        self._advance(h, 0)
        return end - self.time <= 1e-9 * self.h

    def advance(self, duration: float) -> None:
        """Advance by ``duration`` [s] in steps of ``step_toward``."""
        end = self.time + duration
        while not self.step_toward(end):
            pass

    def pin_reaction(self, points) -> np.ndarray:
        """Force [N] (3,) the yarns exerted on the pinned ``points`` in the last step: contact,
        length constraints (fast projection's multipliers, λ_k·e_k/h² per segment end) and
        bending (−K·x). The force a clamp holding them feels; gravity on them excluded."""
        if self._last is None:
            return np.zeros(3)
        f, lam, h = self._last
        pts = np.zeros(len(self.x), bool)
        pts[np.asarray(points, dtype=np.int64)] = True
        seg = self.segments.seg
        e = (self.x[seg[:, 1]] - self.x[seg[:, 0]]) / self.segments.rest[:, None]
        tension = lam[:, None] * e / (h * h)   # the projection moves b by +e·λ/m_b, a by −
        total = (f[pts] - self.mass[pts, None] * self.gravity).sum(axis=0)
        total += tension[pts[seg[:, 1]]].sum(axis=0) - tension[pts[seg[:, 0]]].sum(axis=0)
        total -= (self.K @ self.x)[pts].sum(axis=0)
        return total

    def yarn_lengths(self) -> np.ndarray:
        """Current length [m] of each yarn (Y,)."""
        lengths = self.segments.lengths(self.x)
        return np.bincount(self.segments.yarn, weights=lengths,
                           minlength=len(self.yarn_offsets) - 1)
