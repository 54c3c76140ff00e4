"""Baraff & Witkin implicit cloth: triangle stretch/shear, dihedral bending, one global solve.

Each step linearises the forces once and solves (M − h·D − h²·K)·Δv = b over all vertices with
the filtered PCG (linalg/cg.py); hard pins enter as prescribed velocity changes. The step is
implicit Euler: [Volino2000]'s λ-blend towards a second-order rule was tried and dropped, as it
fed energy into swinging cloth (docs/solver.md, "Midpoint blend"; keys in brackets are in
docs/references.md). Option:

* ``settle``: quasi-static relaxation ([Volino2000]'s "fast draping", §2.7):
  (M − τ²K)·Δx = τ²·f, v = 0, with a large pseudo-time τ (SETTLE_PSEUDO_STEP) so each iteration
  is nearly a Newton step on the potential energy; M keeps the system definite, and no vertex
  moves more than half the shortest rest edge per iteration so a folded start cannot jump
  through itself.
"""

from __future__ import annotations

import numpy as np

from ..collision.contact_pairs import FRICTION_SPEED, ContactPairs, ContactState, shielded
from ..forces.bending import bending_terms
from ..forces.contact import add_pair_blocks, contact_terms
from ..forces.membrane import membrane_terms
from ..linalg.cg import dot3, mpcg
from ..linalg.deflation import RecycledSpace
from ..linalg.incomplete_cholesky import IncompleteCholesky
from ..linalg.preconditioner import BlockJacobi, LaggedFactor
from ..linalg.sparse import (add_scaled_identity, copy_blocks, extend_pattern,
                             point_block_slots, scatter_blocks)
from ..model import ClothModel
from ..params import QUALITIES, SolverSettings
from ..system import ForceSystem
from .base import BlowUpError, ClothSolver, FrameTargets, StepInfo
from .contact_solves import ContactSolves

# Steps per frame at quality Final unless the settings say otherwise (the qualities' bundles,
# params.QUALITIES, hold each quality's count). With 2 Newton iterations and a CG tolerance of
# 1e-3, 2 steps are both cheaper and closer to a converged run than 1 step with 4 iterations
# at 1e-4 (docs/solver.md, "Default substeps").
DEFAULT_SUBSTEPS = QUALITIES["final"]["substeps"]
SETTLE_PSEUDO_STEP = 1.0  # s: τ of the settle iteration (larger = closer to Newton)
# With self-collision, layers are pushed apart after the solve; when the cloth's parts move
# relative to each other by more than a fraction of an edge per step (the settings'
# self_contact_motion, from the quality; this is Final's), those pushes stretch the cloth, so
# the implicit model then takes more substeps (at most MAX_SELF_CONTACT_SUBSTEPS). Only edges
# with an end in self-contact on the last step count: the pushes act there, and counting every
# edge let cloth sliding fast off a sphere, nowhere near its other layers, set several substeps
# for nothing (docs/solver.md, "Self-contact substeps").
SELF_CONTACT_MOTION = QUALITIES["final"]["self_contact_motion"]
MAX_SELF_CONTACT_SUBSTEPS = 16


class ImplicitSolver(ClothSolver):
    """Implicit Baraff–Witkin cloth (see module docstring)."""

    name = "implicit"
    # the collider contacts' history, the deflation space and the contact set
    carried = ("contacts", "recycled", "contact_state")

    def __init__(self, model: ClothModel, settings: SolverSettings, gravity: np.ndarray):
        settings = settings.resolved()  # the quality's values where the settings leave them
        super().__init__(model, settings, gravity)
        ic = settings.preconditioner == "incomplete_cholesky"
        self.system = ForceSystem(model, membrane=membrane_terms(model),
                                  hinges=bending_terms(model), psd=True, factor_matrix=ic,
                                  constant_hinge_jacobian=True)
        V = model.vertex_count
        # The solve's matrix: the evaluation writes −h²·K − h·D (or −τ²·K) into J, _add_mass
        # completes it in place, and the next evaluation overwrites it.
        self.A = self.system.J
        self.filt = np.repeat(np.eye(3)[None], V, axis=0)
        self.filt[self.fixed] = 0.0
        self.z = np.zeros((V, 3))
        self.rhs = np.zeros((V, 3))
        self.dv = np.zeros((V, 3))
        # residual norm weights: M⁻¹ on moving vertices (mass 1 for massless ones, filtered)
        self._weights = 1.0 / np.where(model.mass > 0, model.mass, 1.0)
        kind = {"factor": LaggedFactor, "incomplete_cholesky": IncompleteCholesky,
                "jacobi": BlockJacobi}[settings.preconditioner]
        if kind is IncompleteCholesky:
            # IC(0) of M − h²·K − h·D with the hinges' couplings scaled down (their diagonal
            # blocks whole): see linalg/incomplete_cholesky.py
            self._factor_input = self.system.J_factor
        else:
            self._factor_input = self.A
        self._precond_kind = kind
        self.precond = self._preconditioner(self.system.asm, model.rest_positions)
        # The PCG's products are memory-bound: float32 products halve their time, and move the
        # result less than the CG tolerance does. A reused factor's point is an exact solve:
        # float64 there (docs/solver.md, "float32 PCG products").
        self._product_dtype = np.float64 if kind is LaggedFactor else np.float32
        # M on A's diagonal; fixed massless vertices (filtered out of the solve) get 1 so that
        # their block stays invertible
        self._diag_mass = model.mass.copy()
        self._diag_mass[self.fixed[model.mass[self.fixed] == 0]] = 1.0
        self.last_residual = 0.0
        lengths = model.edge_rest_length[model.edge_rest_length > 0]
        self._shortest_edge = float(lengths.min()) if len(lengths) else np.inf
        self.contacts = ContactSolves(state=("x", "v"))
        self.recycled = RecycledSpace(settings.recycled_corrections)
        self.newton_count = 0  # Newton iterations so far (a contact re-solve's count too)
        # Contact as an energy of the solve (forces/contact.py): the set carried across steps,
        # the finder (built on first use: the collisions are attached after construction),
        # the step's pairs and the matrix pattern extended by their couplings
        self.contact_state = ContactState()
        self._finder: ContactPairs | None = None
        self._pairs = None
        self._pair_H = None
        self._pressing = 0  # pairs pressing (d < d̂) at the last evaluation
        self._colliders_end = None  # (end positions, velocities) of the collider points
        # (the set's pairs, ExtendedPattern, their slots (S, 16), preconditioner, A, its matrix)
        self._extended = None
        self._pair_slots = None  # the step's pairs' slots in it (K, 16)
        # True when the step's pairs couple only points the elements already couple (cloth
        # against a collider mesh: the points of one cloth triangle or edge): their blocks then
        # go straight into A on the elements' pattern, with its own preconditioner.
        self._in_pattern = False
        self._buffers: dict[str, np.ndarray] = {}  # _buffer's arrays

    def _preconditioner(self, asm, positions):
        """A preconditioner of the settings' kind for the pattern ``asm``; IC(0) is ordered
        in two domains split across the cloth at ``positions`` (V, 3) [m], so that it factors
        and solves on two threads (linalg/incomplete_cholesky.py, two_domains)."""
        if self._precond_kind is IncompleteCholesky:
            return IncompleteCholesky(asm, self.fixed, positions=positions)
        return self._precond_kind(asm, self.fixed)

    def _buffer(self, name: str, shape: tuple, dtype) -> np.ndarray:
        """A work array of ``shape`` whose memory is kept for the next call with ``name``
        (contents undefined): a contact set searched at every step makes matrices of a new
        size every step, and fresh arrays of megabytes cost their page faults each time."""
        size = int(np.prod(shape))
        buf = self._buffers.get(name)
        if buf is None or buf.dtype != dtype or len(buf) < size:
            buf = self._buffers[name] = np.empty(size + size // 4, dtype)
        return buf[:size].reshape(shape)

    def _add_mass(self) -> None:
        """A = M + J, with J = −h²·K − h·D (or −τ²·K) from the last evaluation; the
        preconditioner's matrix gets the same diagonal blocks."""
        diag = self.system.asm.diag
        add_scaled_identity(self.A, diag, self._diag_mass)
        if self._factor_input is not self.A:
            copy_blocks(self._factor_input, self.A, diag)
        if self._pairs is not None and self._in_pattern:
            pairs, slots = self._pairs, self._pair_slots
            add_pair_blocks(slots, pairs.w, self._pair_H, self.A)
            if self._factor_input is not self.A:
                add_pair_blocks(slots, pairs.w, self._pair_H, self._factor_input)

    def _solve(self, key, x) -> int:
        """Δv from A·Δv = rhs; ``key`` identifies the kind of matrix (a factor made for another
        key is refreshed first)."""
        st = self.settings
        asm, A, F, pc = self._system_with_contacts()
        if not (np.isfinite(self.rhs).all() and np.isfinite(A).all()):
            raise BlowUpError("non-finite forces or stiffness in the implicit solve")
        before = pc.factorizations
        pc.refresh(F, key, x, self.filt)
        guess = self.dv.copy()
        blocks = A
        if A.dtype != self._product_dtype:
            blocks = self._buffer("products", A.shape, self._product_dtype)
            np.copyto(blocks, A, casting="same_kind")
        deflation = self.recycled.deflation(asm, blocks, self.filt)
        args = (asm, blocks, self.rhs, self.filt, self.z, pc, self._weights,
                st.cg_tolerance, st.cg_max_iterations, self.dv, self._product_dtype, deflation)
        it, res = mpcg(*args)
        if res > st.cg_tolerance and pc.factorizations == before:
            pc.stale = True  # a stale factor failed to converge: refactor and solve again
            pc.refresh(F, key, x, self.filt)
            self.dv[:] = guess
            more, res = mpcg(*args)
            it += more
        pc.report_iterations(it)
        self.recycled.remember(self.dv - guess)
        self.last_residual = res
        return it

    def _system_with_contacts(self):
        """(pattern, A, the preconditioner's matrix, preconditioner) of the solve: the
        elements' own, or, with contact pairs this step, both matrices on the pattern extended
        by the pairs' couplings with their blocks added (forces/contact.py)."""
        if self._pairs is None or self._in_pattern:  # (pair blocks, if any, added in _add_mass)
            return self.system.asm, self.A, self._factor_input, self.precond
        _, ext, _, pc, A, F = self._extended
        pairs, slots = self._pairs, self._pair_slots
        scatter_blocks(self.A, ext.base_slot, A)
        add_pair_blocks(slots, pairs.w, self._pair_H, A)
        if F is not A:
            scatter_blocks(self._factor_input, ext.base_slot, F)
            add_pair_blocks(slots, pairs.w, self._pair_H, F)
        return ext.asm, A, F, pc

    def _prepare_contacts(self, h: float, targets: FrameTargets, s0: float, s1: float) -> None:
        """The step's contact pairs (collision/contact_pairs.py) and, when their couplings
        changed, the extended matrix pattern and a preconditioner for it."""
        c = self.collisions
        self._pairs = None
        if c is None or self.settings.settle or not self.settings.contact_energy:
            return
        if self._finder is None:
            self._finder = ContactPairs(c)
        if not self._finder.active:
            return
        frame = targets.colliders if targets.colliders is not None else c.colliders.frame(1)
        c0, c1 = frame.at(s0), frame.at(s1)
        sets = self.contact_state.rebuilds
        pairs = self._finder.step(self.contact_state, self.x, self.v + h * self.gravity,
                                  self.inv_mass, h, c0, c1)
        self.collision_stats.contact_sets += self.contact_state.rebuilds - sets
        if pairs is None:
            return
        self._pairs = pairs
        self._pair_H = np.zeros((len(pairs), 3, 3))
        self._colliders_end = (c1.mesh_positions, (c1.mesh_positions - c0.mesh_positions) / h)
        V = self.model.vertex_count
        slots = np.empty((len(pairs), 16), np.int64)
        asm = self.system.asm
        self._in_pattern = point_block_slots(asm.row_ptr, asm.col,
                                             np.where(pairs.idx < V, pairs.idx, -1), slots)
        if self._in_pattern:
            self._pair_slots = slots
            return
        # The pattern holds the couplings of every pair of the set, so it (and the
        # preconditioner built for it) lasts as long as the set; a pair out of reach this step
        # adds nothing to its blocks.
        every = self.contact_state.idx
        if self._extended is None or not np.array_equal(self._extended[0], every):
            ext = extend_pattern(self.system.asm, every)
            slots = ext.slots(every)
            pc = self._preconditioner(ext.asm, self.x)
            if self._extended is not None:  # a factor's shift carries over (IC(0): SHIFT_HOLD)
                for k in ("_first_shift", "_held"):
                    if hasattr(pc, k):
                        setattr(pc, k, getattr(self._extended[3], k))
            # (filled by _system_with_contacts, which writes every block first)
            A = self._buffer("extended", (len(ext.asm.col), 3, 3), self.A.dtype)
            F = A if self._factor_input is self.A \
                else self._buffer("extended_factor", A.shape, A.dtype)
            self._extended = (every.copy(), ext, slots, pc, A, F)
        self._pair_slots = np.ascontiguousarray(self._extended[2][pairs.rows])

    def shielded(self, contacts) -> np.ndarray:
        """(K,) True for the collider contacts (constraints.ContactSet) of vertices that lie on
        another layer of cloth this step: the contact energy holds them there, and a collider
        constraint would prescribe them the lower layer's place (contact_pairs.shielded)."""
        return shielded(self._pairs, self.model.vertex_count, contacts.vertices,
                        contacts.normals)

    def _substeps_for_self_contact(self, frame_dt: float, n: int) -> int:
        """Substeps for a frame (at least n) so that no edge with an end in self-contact on the
        last step moves its ends relative to each other by more than the settings'
        self_contact_motion of its rest length per step, at the current velocities
        (self-collision only)."""
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
        need = float(np.max(rel / (self.settings.self_contact_motion * rest)))
        return max(n, min(MAX_SELF_CONTACT_SUBSTEPS, int(np.ceil(need))))

    def step_frame(self, t: float, frame_dt: float, targets: FrameTargets,
                   wind: np.ndarray) -> StepInfo:
        n = self.step_refinement * self._substeps_for_self_contact(frame_dt, self.settings.substeps)
        h = frame_dt / n
        iters = 0
        newton0 = self.newton_count
        for k in range(n):
            hard, soft = targets.at((k + 1) / n)
            x_start = self.x.copy()
            if self.settings.settle:
                iters += self._settle_step(h, hard, soft, wind)
            else:
                self._prepare_contacts(h, targets, k / n, (k + 1) / n)
                pin_vel = (targets.hard1 - targets.hard0) / frame_dt
                iters += self.contacts.step(
                    self, lambda: self._dynamic_step(h, hard, soft, wind, pin_vel), h, targets,
                    k / n, (k + 1) / n)
                if self._pairs is not None:  # the last evaluation was at the solution
                    self.collision_stats.solve_contacts += self._pressing
            iters += self._limit_strain(h) if not self.settings.settle else 0
            self._resolve_collisions(x_start, h, targets, k / n, (k + 1) / n)
        self.check_finite()
        return StepInfo(substeps=n, iterations=iters,
                        newton_iterations=self.newton_count - newton0)

    def _dynamic_step(self, h, hard, soft, wind, pin_vel) -> int:
        """One implicit Euler step, solved by Newton iterations.

        Residual R(v₁) = M(v₁ − ṽ) − h·f(x₀ + h·v₁, v₁) with ṽ = v₀ (plus friction impulses);
        its Jacobian is M − h·D − h²·K at x₁ = x₀ + h·v₁.
        A single linearisation (Baraff & Witkin's one step) lets vertices next to pins move
        sideways at no first-order cost and overstretch under fast rotation; re-linearising
        until the update is below ``newton_tolerance`` of the shortest edge removes that.
        """
        s, m, st = self.system, self.model, self.settings
        x0, v0 = self.x, self.v
        base_x = x0  # x₁ = base_x + h·v₁
        v_tilde = v0
        M = m.mass[:, None]
        fx = self.fixed
        target = x0.copy()
        target[m.hard_pins] = hard
        guess = self.contacts.warm_start
        v1 = (v0 if guess is None else guess).copy()  # Newton's guess
        v1[fx] = (target[fx] - base_x[fx]) / h  # fixed vertices land exactly on their targets
        contacts = self.contacts.current  # collider contacts: normal velocity prescribed like pins
        if contacts is not None:
            v_tilde = contacts.constrain(self.filt, v1, v_tilde, m.mass)  # + friction impulses
        iters = 0
        free_w = np.where(self.inv_mass > 0, self.inv_mass, 0.0)[:, None]

        jac = (-h * h, -h)  # J = −h²·∂f/∂x − h·∂f/∂v
        pairs = self._pairs

        def residual(v, with_jac=False):
            """h·f(x₁, v) − M(v − ṽ), and its M⁻¹-weighted squared norm; with_jac
            also leaves the Jacobian part of the next solve's matrix in A."""
            s.evaluate(base_x + h * v, v, self.gravity, wind, soft, jac if with_jac else None)
            if pairs is not None:  # contact pairs: forces and their blocks (forces/contact.py)
                xc, vc = self._colliders_end
                self._pressing = contact_terms(
                    pairs.idx, pairs.w, pairs.n, pairs.dhat, pairs.kappa, pairs.mu, pairs.lam,
                    FRICTION_SPEED, len(v), base_x + h * v, xc, v, vc, jac[0], jac[1],
                    with_jac, s.force, self._pair_H)[1]
            r = h * s.force - M * (v - v_tilde)
            rf = r if contacts is None else contacts.tangential(r)  # reactions are not errors
            return r, float(np.sum(free_w * rf * rf))

        # Each evaluation that may start a Newton iteration also writes that iteration's
        # matrix, so a step of n iterations costs n + 1 evaluations, not 2n + 1.
        res, norm = residual(v1, with_jac=True)
        # Preview's test (newton_residual): a later iteration runs only while the residual is
        # still above that fraction of the step's start (norms are squared: compare squares)
        stop = st.newton_residual ** 2 * norm
        for it in range(st.newton_iterations):
            if it > 0 and norm < stop:
                break
            self.newton_count += 1
            self._add_mass()
            self.rhs[:] = res
            self.z[:] = 0.0
            iters += self._solve(("dynamic", h), base_x + h * v1)
            more = it + 1 < st.newton_iterations
            alpha, trial_res, trial_norm = self._line_search(residual, v1, res, more)
            v1 += alpha * self.dv
            res, norm = trial_res, trial_norm
            if np.max(np.abs(self.dv)) * alpha * h <= st.newton_tolerance * self._shortest_edge:
                break
        self.dv[:] = 0.0  # next step's Newton correction starts from zero
        if contacts is not None:
            contacts.release(self.filt, res)  # keeps the reactions for the friction modes
        self.x = base_x + h * v1
        self.v = v1
        self.v[m.hard_pins] = pin_vel
        return iters

    def _line_search(self, residual, v1, res, with_jac):
        """Step length α along the Newton direction d = self.dv: (α, residual, its norm), the
        residual evaluated at v1 + α·d (with its Jacobian if with_jac).

        Implicit Euler's v₁ minimises the incremental potential
        Φ(v) = ½(v − ṽ)ᵀM(v − ṽ) + h·(elastic energy at x₀ + h·v) + ... whose gradient is
        −R(v), so φ(α) = Φ(v₁ + α·d) has slope φ′(α) = −R(v₁ + α·d)·d, negative at α = 0
        because the clamped Jacobian is positive definite. Backtracking on Φ (sufficient
        decrease, with φ(α) − φ(0) from the trapezoid rule on φ′) accepts the Newton step
        whenever the energy drops, and otherwise moves to the root of the secant of φ′.
        Backtracking on |R| instead cut the first frames' steps to tiny fractions (R grows
        while the energy falls as slack cloth goes taut), so Newton stalled at its iteration
        cap (docs/solver.md, "Line search").
        """
        d = self.dv
        g0 = -dot3(res, d)
        alpha = 1.0
        for attempt in range(8):
            trial_res, trial_norm = residual(v1 + alpha * d, with_jac)
            if not g0 < 0.0:  # no descent (e.g. a zero step): take it as it is
                break
            g1 = -dot3(trial_res, d)
            if 0.5 * alpha * (g0 + g1) <= 1e-4 * alpha * g0 or attempt == 7:
                break
            alpha *= min(0.9, max(0.1, g0 / (g0 - g1)))
        return alpha, trial_res, trial_norm

    def _settle_step(self, h, hard, soft, wind) -> int:
        s, m = self.system, self.model
        zero = np.zeros_like(self.v)
        tau = SETTLE_PSEUDO_STEP
        s.evaluate(self.x, zero, self.gravity, wind, soft, jac=(-tau * tau, 0.0))
        self._add_mass()
        self.rhs[:] = tau * tau * s.force
        self.z[:] = 0.0
        self.z[m.hard_pins] = hard - self.x[m.hard_pins]
        it = self._solve(("settle", tau), self.x)
        step = np.linalg.norm(self.dv, axis=1)
        cap = 0.5 * self._shortest_edge
        scale = np.where(step > cap, cap / np.maximum(step, 1e-300), 1.0)
        scale[m.hard_pins] = 1.0
        self.x = self.x + self.dv * scale[:, None]
        self.v = zero
        return it
