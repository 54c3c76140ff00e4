"""Explicit Provot mass-spring cloth: short stable steps, several times slower than Implicit.

Its steps are as short as stability asks: thousands a frame for stiff fabrics (cotton at 2 cm
edges), which costs several times the implicit model's time (docs/benchmarks.md, "Cloth
started through bodies").

Springs: structural (polygon edges), shear (polygon diagonals) and, for bending, either angular
springs across every edge (the dihedral hinge energy; default) or Provot's skip-one flexion
springs (they resist bending only at second order in the angle, so they cannot honour a bending
stiffness; kept for comparison with [Provot1995] and [Vo2006]). Integrators: symplectic Euler
(Vo's "explicit Euler", [Vo06-E2]), velocity Verlet and classical RK4 ([Hairer2006]; keys in
docs/references.md).

The step is the largest the integrator keeps stable. Damping rates grow as 1/edge² and
stiffness rates only as 1/edge, so on fine meshes damping would set it. When it would cut the
step to less than a quarter, the step becomes implicit–explicit Euler whatever the integrator:
v* = v + h·M⁻¹·f(x, 0) with the undamped forces, then the damping f = D·v implicitly,
(M − h·D)·v⁺ = M·v*, then x⁺ = x + h·v⁺. Stable for h·ω < 2 whatever the damping (damping
after the position update would halve that), so the step is chosen by stiffness alone; a
higher-order integrator gains nothing while damping dominates the motion.
"""

from __future__ import annotations

import math

import numpy as np

from ..forces.bending import bending_terms
from ..forces.springs import spring_terms
from ..linalg.cg import mpcg
from ..linalg.incomplete_cholesky import IncompleteCholesky
from ..linalg.sparse import add_scaled_identity
from ..model import ClothModel
from ..params import SolverSettings
from ..system import ForceSystem
from .base import ClothSolver, FrameTargets, StepInfo, StepLimitError


def gershgorin_rates(K: np.ndarray, D: np.ndarray, row_ptr: np.ndarray, inv_mass: np.ndarray
                     ) -> tuple[float, float]:
    """Upper bounds of the largest ω² [1/s²] of M⁻¹K and γ [1/s] of M⁻¹D (Gershgorin rows).

    Only rows of moving vertices (inv_mass > 0) count.
    """
    rows = np.repeat(np.arange(len(row_ptr) - 1), np.diff(row_ptr))
    absk = np.abs(K).sum(axis=2)  # (nnzb, 3): row sums of each block
    absd = np.abs(D).sum(axis=2)
    V = len(row_ptr) - 1
    rk = np.zeros((V, 3))
    rd = np.zeros((V, 3))
    np.add.at(rk, rows, absk)
    np.add.at(rd, rows, absd)
    omega2 = float(np.max(rk.max(axis=1) * inv_mass)) if V else 0.0
    gamma = float(np.max(rd.max(axis=1) * inv_mass)) if V else 0.0
    return omega2, gamma


def largest_rates(K: np.ndarray, D: np.ndarray, asm, inv_mass: np.ndarray
                  ) -> tuple[float, float]:
    """Largest eigenvalues ω² of −M⁻¹K and γ of −M⁻¹D over moving vertices, by Lanczos
    ([Lanczos1950]).

    Gershgorin row sums (``gershgorin_rates``) overestimate them about tenfold on bending
    hinges, which would cost tenfold substeps. Lanczos converges from below, so the result is
    raised by 5%; if it fails to converge the Gershgorin bound is used.
    """
    from scipy.sparse.linalg import ArpackError, ArpackNoConvergence, LinearOperator, eigsh

    from ..linalg.sparse import bsr_matvec

    scale = np.sqrt(inv_mass)
    V = len(inv_mass)
    tmp_in = np.zeros((V, 3))
    tmp_out = np.zeros((V, 3))

    def largest(blocks):
        def mv(y):
            tmp_in[:] = (y.reshape(V, 3) * scale[:, None])
            bsr_matvec(asm.row_ptr, asm.col, blocks, tmp_in, tmp_out)
            return -(tmp_out * scale[:, None]).ravel()

        op = LinearOperator((3 * V, 3 * V), matvec=mv, dtype=np.float64)
        v0 = np.ones(3 * V)  # fixed start vector: deterministic substep counts
        return float(eigsh(op, k=1, which="LA", tol=1e-3, v0=v0, maxiter=2000,
                           return_eigenvectors=False)[0])

    if V < 4 or not np.any(inv_mass > 0):
        return gershgorin_rates(K, D, asm.row_ptr, inv_mass)
    try:
        rates = [1.05 * max(largest(b), 0.0) if np.any(b) else 0.0 for b in (K, D)]
        return rates[0], rates[1]
    except (ArpackNoConvergence, ArpackError):
        return gershgorin_rates(K, D, asm.row_ptr, inv_mass)


def stable_step(omega2: float, gamma: float, integrator: str) -> float:
    """Largest stable step [s] of a damped oscillator x'' = −ω²x − γx' for the integrator.

    Symplectic Euler and velocity Verlet need h²ω² + 2hγ < 4 (Jury criterion, [Jury1964] in
    docs/references.md); RK4's stability region reaches 2.78 on the real axis and 2.83 on the
    imaginary axis.
    """
    if omega2 <= 0 and gamma <= 0:
        return math.inf
    if integrator == "rk4":
        return 2.78 / (math.sqrt(max(omega2, 0.0)) + gamma)
    if omega2 <= 0:
        return 2.0 / gamma
    return (-gamma + math.sqrt(gamma * gamma + 4.0 * omega2)) / omega2


# Damping is split off and integrated implicitly when it would make the stable step shorter
# than this fraction of the undamped one: an implicit–explicit step, with its CG solve, costs
# several explicit ones (docs/solver.md, "Explicit step and damping").
DAMPING_SPLIT = 0.25
DAMPING_CG_TOLERANCE = 1e-6  # relative residual of the damping solve (its matrix is M − h·D)


# Collisions are resolved once per collision step, the straight path of every vertex over
# several substeps ([Bridson2002]'s handling works on whatever path the internal dynamics
# produced): a collision step ends when a vertex has moved COLLISION_TRAVEL of the smallest
# contact distance (along an axis) since the last one, after COLLISION_STEP [s] at most, and at
# the end of the frame. A cotton sheet with 2 cm edges is stable at 1/25,000 s, and the whole
# pipeline after every one of those steps was nearly all of a frame's time on a mesh body.
# Longer collision steps let a resting cloth sink a little further into the contact distance
# between pushes (about g·step²/2), and those pushes set it vibrating: 1 ms leaves it at rest
# (docs/solver.md, "Explicit model with colliders").
COLLISION_TRAVEL = 0.5
COLLISION_STEP = 1e-3
TOUCHING = 0.1  # vertices within 1.1 times their contact distance of a collider are held


class Touching:
    """Vertices touching colliders over one collision step, held by ``_hold`` at each substep.

    Attributes:
        contacts: their ContactSet (normals, surface velocity, friction; its target says how
            far each starts from its contact distance over ``span``).
        x0: their positions at the step's start (K, 3) [m]; start_gap: (K,) [m] how far each
            starts outside its contact distance; elapsed: time since the start [s].
    """

    def __init__(self, contacts, x0: np.ndarray, span: float):
        self.contacts = contacts
        self.x0 = x0
        vs = np.einsum("ij,ij->i", contacts.surface_velocity, contacts.normals)
        self.start_gap = -(contacts.target - vs) * span
        self.elapsed = 0.0


class MassSpringSolver(ClothSolver):
    """Explicit mass-spring cloth (see module docstring)."""

    name = "mass_spring"
    carried = ("_accel",)  # velocity Verlet's acceleration at the end of the last step

    def __init__(self, model: ClothModel, settings: SolverSettings, gravity: np.ndarray):
        super().__init__(model, settings, gravity)
        flexion = settings.bending == "flexion"
        self.system = ForceSystem(model, hinges=None if flexion else bending_terms(model),
                                  springs=spring_terms(model, flexion=flexion), psd=False)
        self._accel = None  # cached acceleration for velocity Verlet
        self.last_stable_step = math.inf
        self.split_damping = False  # set per frame by substeps_for
        self._damping_solver = None  # (filter, preconditioner), built on first use

    def substeps_for(self, frame_dt: float, soft0: np.ndarray) -> int:
        """Substeps per frame: the user's count, raised if needed to stay stable."""
        s = self.system
        K, D = s.jacobians(self.x, self.v, self.gravity, np.zeros_like(self.x), soft0)
        omega2, gamma = largest_rates(K, D, s.asm, self.inv_mass)
        integrator = self.settings.integrator
        damped, undamped = stable_step(omega2, gamma, integrator), stable_step(omega2, 0.0,
                                                                               integrator)
        self.split_damping = damped < DAMPING_SPLIT * undamped
        self.last_stable_step = undamped if self.split_damping else damped
        # a frame retried after a blow-up takes step_refinement times finer steps
        needed = self.step_refinement * math.ceil(
            frame_dt / (self.settings.stability_safety * self.last_stable_step))
        if needed > self.settings.max_substeps:
            raise StepLimitError(
                f"the mass_spring model needs {needed:,} substeps per frame to stay stable "
                f"here (stable step {self.last_stable_step:.2e} s), more than max_substeps = "
                f"{self.settings.max_substeps:,}; use the implicit model, a lower stiffness or "
                "a coarser mesh, or raise max_substeps")
        return max(1, needed, self.step_refinement * (self.settings.substeps or 1))

    def _accel_at(self, x, v, wind, soft):
        if self.split_damping:  # the forces at rest velocity; damping follows in _damp
            v = self._zero_v
        self.system.evaluate(x, v, self.gravity, wind, soft)
        return self.system.force * self.inv_mass[:, None]

    def _imex_euler(self, h, wind, soft) -> int:
        """One implicit–explicit Euler step (see the module docstring); returns the damping
        solve's CG iterations."""
        self.v += h * self._accel_at(self.x, self.v, wind, soft)
        iterations = self._damp(h, wind, soft)
        self.x += h * self.v
        return iterations

    def _damp(self, h, wind, soft) -> int:
        """The split-off damping over a step h: v ← (M − h·D)⁻¹·M·v at the current positions
        (backward Euler on the linear damping forces f = D·v, stable for any h), fixed
        vertices left as they are. Returns the CG iterations."""
        s, m = self.system, self.model
        if self._damping_solver is None:
            filt = np.repeat(np.eye(3)[None], m.vertex_count, axis=0)
            filt[self.fixed] = 0.0
            self._damping_solver = (filt, IncompleteCholesky(s.asm, self.fixed))
            mass = m.mass.copy()
            mass[self.fixed[m.mass[self.fixed] == 0]] = 1.0  # keep their blocks invertible
            self._solve_mass = mass
        filt, pc = self._damping_solver
        s.evaluate(self.x, self.v, self.gravity, wind, soft, jac=(0.0, -h))  # J = −h·D
        A = s.J.astype(np.float64)
        add_scaled_identity(A, s.asm.diag, self._solve_mass)
        pc.refresh(A, None, self.x, filt)
        rhs = m.mass[:, None] * self.v
        z = self.v.copy()  # fixed vertices keep their velocity
        v = self.v.copy()
        it, _ = mpcg(s.asm, A, rhs, filt, z, pc, np.ones(m.vertex_count), DAMPING_CG_TOLERANCE,
                     self.settings.cg_max_iterations, v)
        self.v = v
        return it

    def step_frame(self, t: float, frame_dt: float, targets: FrameTargets,
                   wind: np.ndarray) -> StepInfo:
        n = self.substeps_for(frame_dt, targets.soft0)
        h = frame_dt / n
        pin_vel = (targets.hard1 - targets.hard0) / frame_dt
        passes = 0
        step = {"symplectic_euler": self._symplectic_euler, "velocity_verlet": self._verlet,
                "rk4": self._rk4}[self.settings.integrator]
        self._zero_v = np.zeros_like(self.v)
        travel = self._collision_travel()
        steps = max(1, int(COLLISION_STEP / h))
        x_start, first = self.x.copy(), 0
        touching = self._touching(targets, frame_dt, 0.0, min(steps, n) / n)
        for k in range(n):
            _, soft = targets.at((k + 1) / n)
            if self.split_damping:
                passes += self._imex_euler(h, wind, soft)
                self._accel = None  # Verlet's cached acceleration is of another step
            else:
                step(h, wind, soft)
            if touching is not None and self._hold(touching, h):
                self._accel = None
            hard, _ = targets.at((k + 1) / n)
            self._pin(hard, pin_vel)
            limited = self._limit_strain(h)
            passes += limited
            if limited:
                self._accel = None  # positions moved: the cached Verlet acceleration is stale
            # the collision step: the path since the last one, once it is long enough
            if k + 1 < n and k + 1 - first < steps \
                    and float(np.max(np.abs(self.x - x_start), initial=0.0)) < travel:
                continue
            span = (k + 1 - first) * h
            if self._resolve_collisions(x_start, span, targets, first / n, (k + 1) / n):
                self._accel = None
            x_start, first = self.x.copy(), k + 1
            if first < n:
                touching = self._touching(targets, frame_dt, first / n, min(first + steps, n) / n)
        self.check_finite()
        return StepInfo(substeps=n, iterations=passes)

    def _touching(self, targets: FrameTargets, frame_dt: float, s0: float, s1: float):
        """The vertices within 1 + TOUCHING times their contact distance from a collider at
        the start of a collision step (fractions s0 → s1 of the frame of frame_dt [s]): a
        Touching, or None."""
        c = self.collisions
        if c is None or not (c.colliders.has_mesh or c.colliders.has_analytic):
            return None
        frame = targets.colliders if targets.colliders is not None else c.colliders.frame(1)
        span = (s1 - s0) * frame_dt
        found = c.contact_constraints(self.x, self.v, self.inv_mass, span, frame.at(s0),
                                      frame.at(s1), near=-1.0, touch=TOUCHING)
        if len(found) == 0:
            return None
        return Touching(found, self.x[found.vertices].copy(), span)

    def _hold(self, touching: "Touching", h: float) -> bool:
        """After a substep of h [s]: each vertex touching a collider is kept at its contact
        distance from the collider's tangent plane (moving with the surface), loses its velocity
        into it, and its sliding is slowed by μ times the velocity taken (Coulomb friction), in
        place. Returns True if anything changed."""
        t = touching
        t.elapsed += h
        c = t.contacts
        i, n = c.vertices, c.normals
        vs = np.einsum("ij,ij->i", c.surface_velocity, n)
        depth = -(t.start_gap + np.einsum("ij,ij->i", self.x[i] - t.x0, n) - vs * t.elapsed)
        rel = self.v[i] - c.surface_velocity
        into = np.minimum(np.einsum("ij,ij->i", rel, n), 0.0)
        hit = ((depth > 0.0) | (into < 0.0)) & (self.inv_mass[i] > 0.0)
        if not hit.any():
            return False
        i, n, rel, into = i[hit], n[hit], rel[hit], into[hit]
        tangent = rel - np.einsum("ij,ij->i", rel, n)[:, None] * n
        speed = np.linalg.norm(tangent, axis=1)
        # into < 0: friction takes μ·|into| of the sliding speed
        keep = np.maximum(speed + c.friction[hit] * into, 0.0) / np.maximum(speed, 1e-300)
        slow = (keep - 1.0)[:, None] * tangent
        self.v[i] += slow - into[:, None] * n
        self.x[i] += h * slow + np.maximum(depth[hit], 0.0)[:, None] * n
        return True

    def _collision_travel(self) -> float:
        """How far [m] a vertex may move between two collision steps: COLLISION_TRAVEL of the
        smallest contact distance (cloth to collider, and cloth to cloth with self-collision);
        0 without colliders (then every substep ends one, which costs nothing)."""
        c = self.collisions
        if c is None or not c.active:
            return 0.0
        cols = c.colliders
        gaps = [cols.sphere_gap, cols.plane_gap, cols.mesh_gap]
        if c.self_collision:
            gaps.append([self.model.thickness])
        gap = np.concatenate([np.asarray(g, dtype=np.float64).ravel() for g in gaps])
        return COLLISION_TRAVEL * float(gap.min()) if len(gap) else 0.0

    def _symplectic_euler(self, h, wind, soft):
        a = self._accel_at(self.x, self.v, wind, soft)
        self.v += h * a
        self.x += h * self.v

    def _verlet(self, h, wind, soft):
        a0 = self._accel if self._accel is not None else self._accel_at(self.x, self.v, wind, soft)
        v_half = self.v + 0.5 * h * a0
        self.x += h * v_half
        a1 = self._accel_at(self.x, v_half, wind, soft)
        self.v = v_half + 0.5 * h * a1
        self._accel = a1

    def _rk4(self, h, wind, soft):
        # every stage evaluates velocity-dependent forces (drag, damping) at its own velocity,
        # the consistency Vo's RK4 wind test lacked ([Vo2006] §7.2.1)
        x0, v0 = self.x.copy(), self.v.copy()
        a1 = self._accel_at(x0, v0, wind, soft)
        x2, v2 = x0 + 0.5 * h * v0, v0 + 0.5 * h * a1
        a2 = self._accel_at(x2, v2, wind, soft)
        x3, v3 = x0 + 0.5 * h * v2, v0 + 0.5 * h * a2
        a3 = self._accel_at(x3, v3, wind, soft)
        x4, v4 = x0 + h * v3, v0 + h * a3
        a4 = self._accel_at(x4, v4, wind, soft)
        self.x = x0 + (h / 6.0) * (v0 + 2 * v2 + 2 * v3 + v4)
        self.v = v0 + (h / 6.0) * (a1 + 2 * a2 + 2 * a3 + a4)
