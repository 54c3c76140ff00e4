"""Baraff & Witkin implicit cloth: triangle stretch/shear, dihedral bending, one global solve.

Each step linearises the forces once and solves (M − h·D − h²·K)·Δv = b over all vertices with
the filtered PCG (cg.py); hard pins enter as prescribed velocity changes. Options:

* ``midpoint_blend`` λ: blends implicit Euler (λ = 0) with the implicit midpoint rule over
  [t − h, t + h] (λ = 1) as Volino & Magnenat-Thalmann propose, in the corrected form derived in
  the digest (errata 8): x₁ = x₀ − λ(x₀ − x₋₁) + h(v₁ + λv₋₁) and
  v₁ = (1 − λ)(v₀ + h·a(x₁, v₁)) + λ(v₋₁ + 2h·a(x̄, v̄)) with x̄ = (x₁ + x₋₁)/2. Linearising about
  (x₀, v₀) gives the same matrix as implicit Euler and
  b = (1 + λ)h·f + h²K(v₀ + λv₋₁) − 2λh·K(x₀ − x₋₁) − λ(M + hD)(v₀ − v₋₁).
* ``settle``: quasi-static relaxation (Volino's "fast draping"): (M − h²K)·Δx = h²·f, v = 0.
"""

from __future__ import annotations

import numpy as np

from ..cg import mpcg
from ..model import ClothModel, bending_terms, membrane_terms
from ..params import SolverSettings
from ..sparse import bsr_matvec
from ..system import ForceSystem
from .base import ClothSolver, FrameTargets, StepInfo


class ImplicitSolver(ClothSolver):
    """Implicit Baraff–Witkin cloth (see module docstring)."""

    name = "implicit"

    def __init__(self, model: ClothModel, settings: SolverSettings, gravity: np.ndarray):
        super().__init__(model, settings, gravity)
        self.system = ForceSystem(model, membrane=membrane_terms(model),
                                  hinges=bending_terms(model), psd=True)
        V = model.vertex_count
        nnzb = len(self.system.asm.col)
        self.A = np.zeros((nnzb, 3, 3))
        self.filt = np.repeat(np.eye(3)[None], V, axis=0)
        self.filt[self.fixed] = 0.0
        self.z = np.zeros((V, 3))
        self.rhs = np.zeros((V, 3))
        self.dv = np.zeros((V, 3))
        self._tmp = np.zeros((V, 3))
        self.x_prev = None  # (x₋₁, v₋₁) for the midpoint blend
        self.v_prev = None
        self.last_residual = 0.0

    def _assemble(self, h: float, damping: bool) -> None:
        """A = M − h·D − h²·K from the last evaluation."""
        s = self.system
        np.multiply(s.K, -h * h, out=self.A)
        if damping:
            self.A -= h * s.D
        diag = s.asm.diag
        self.A[diag] += self.model.mass[:, None, None] * np.eye(3)
        fixed = self.fixed
        # massless loose vertices still need an invertible diagonal block (they are filtered)
        self.A[diag[fixed]] += np.eye(3) * (self.model.mass[fixed] == 0)[:, None, None]

    def _matvec(self, blocks, x, out):
        asm = self.system.asm
        bsr_matvec(asm.row_ptr, asm.col, blocks, x, out)
        return out

    def _solve(self) -> int:
        asm = self.system.asm
        it, res = mpcg(asm.row_ptr, asm.col, self.A, asm.diag, self.rhs, self.filt, self.z,
                       self.settings.cg_tolerance, self.settings.cg_max_iterations, self.dv)
        self.last_residual = res
        return it

    def step_frame(self, t: float, frame_dt: float, targets: FrameTargets,
                   wind: np.ndarray) -> StepInfo:
        n = self.settings.substeps or 1
        h = frame_dt / n
        iters = 0
        for k in range(n):
            hard, soft = targets.at((k + 1) / n)
            if self.settings.settle:
                iters += self._settle_step(h, hard, soft, wind)
            else:
                iters += self._dynamic_step(h, hard, soft, wind, (targets.hard1 - targets.hard0)
                                            / frame_dt)
            iters += self._limit_strain(h) if not self.settings.settle else 0
        self.check_finite()
        return StepInfo(substeps=n, iterations=iters)

    def _dynamic_step(self, h, hard, soft, wind, pin_vel) -> int:
        s, m = self.system, self.model
        x0, v0 = self.x, self.v
        s.evaluate(x0, v0, self.gravity, wind, soft, want_jac=True)
        self._assemble(h, damping=True)
        lam = self.settings.midpoint_blend if self.x_prev is not None else 0.0
        K, D, M = s.K, s.D, m.mass[:, None]
        # b = (1+λ)h f + h² K (v0 + λ v₋₁) − 2λh K (x0 − x₋₁) − λ (M + hD)(v0 − v₋₁)
        w = v0 if lam == 0.0 else v0 + lam * self.v_prev
        self.rhs[:] = (1.0 + lam) * h * s.force + h * h * self._matvec(K, w, self._tmp)
        if lam != 0.0:
            dx_prev = x0 - self.x_prev
            dv_prev = v0 - self.v_prev
            self.rhs -= 2.0 * lam * h * self._matvec(K, dx_prev, self._tmp)
            self.rhs -= lam * (M * dv_prev + h * self._matvec(D, dv_prev, self._tmp))
        # fixed vertices: the Δv that lands them exactly on their targets
        target = x0.copy()
        target[m.hard_pins] = hard
        fx = self.fixed
        v1_fixed = (target[fx] - x0[fx]) / h
        if lam != 0.0:
            v1_fixed += lam * ((x0[fx] - self.x_prev[fx]) / h - self.v_prev[fx])
        self.z[:] = 0.0
        self.z[fx] = v1_fixed - v0[fx]
        it = self._solve()
        v1 = v0 + self.dv
        x1 = x0 + h * v1 if lam == 0.0 else x0 - lam * (x0 - self.x_prev) + h * (v1 + lam * self.v_prev)
        self.x_prev, self.v_prev = x0, v0
        self.x, self.v = x1, v1
        self.v[m.hard_pins] = pin_vel
        return it

    def _settle_step(self, h, hard, soft, wind) -> int:
        s, m = self.system, self.model
        zero = np.zeros_like(self.v)
        s.evaluate(self.x, zero, self.gravity, wind, soft, want_jac=True)
        self._assemble(h, damping=False)
        self.rhs[:] = h * h * s.force
        self.z[:] = 0.0
        self.z[m.hard_pins] = hard - self.x[m.hard_pins]
        it = self._solve()
        self.x = self.x + self.dv
        self.v = zero
        return it
