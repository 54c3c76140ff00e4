"""All forces on one cloth and their Jacobians.

A model chooses which element terms it uses (membrane, hinges, springs); ``ForceSystem``
evaluates them in parallel into the per-vertex forces and, when asked, into one block-sparse
matrix J = a·∂f/∂x + b·∂f/∂v on a fixed pattern, then adds gravity, air drag (through each
vertex's normal, forces/external.py) and soft pins. The implicit solve asks for a = −h²,
b = −h, so its matrix M − h²·K − h·D is J plus the masses, written once per Newton iteration;
``jacobians`` gives K and D apart (tests, the explicit model's step-size estimate). With
``constant_hinge_jacobian`` the hinges' blocks are the constant −k·Γ ⊗ I₃ of forces/bending.py,
written as J's starting value, and the bending kernel computes forces only: it was a large
share of an implicit frame while it added 16 blocks per hinge (docs/solver.md, "Constant
bending Jacobian").
"""

from __future__ import annotations

import numpy as np

from .forces.bending import HingeTerms, bending_kernel, hinge_energies
from .forces.external import (TANGENTIAL_DRAG_RATIO, add_drag_blocks, external_kernel,
                              goal_spring_kernel, vertex_triangles)
from .forces.membrane import MembraneTerms, membrane_energies, membrane_kernel
from .forces.seams import seam_energies, seam_kernel
from .forces.springs import SpringTerms, spring_energies, spring_kernel
from .linalg.sparse import (add_scaled_identity, blend_blocks, build_assembly,
                            fill_scaled_identity, subtract_scaled_identity)
from .model import ClothModel

# Share of the bending hinges' couplings in the matrix the implicit solve's IC(0) factors
# (linalg/incomplete_cholesky.py). All of them: IC(0) broke down on fine cloth; none: more PCG
# iterations than 0.9; 0.95 still needed small shifts on fine cloth (docs/solver.md,
# "IC(0) hinge scaling").
HINGE_COUPLING_IN_FACTOR = 0.9


class ForceSystem:
    """Evaluates f(x, v) and J = a·∂f/∂x + b·∂f/∂v for a model's chosen element terms.

    Args:
        model: rest-state data.
        membrane: B&W triangle terms, or None.
        hinges: dihedral bending terms, or None.
        springs: spring terms, or None.
        psd: clamp indefinite Hessian parts (needed by the implicit solve).
        factor_matrix: also keep ``J_factor``, J with the hinges' off-diagonal blocks scaled by
            HINGE_COUPLING_IN_FACTOR: the matrix the implicit solve's incomplete Cholesky
            factors (see there; the caller copies J's diagonal blocks into it).
        constant_hinge_jacobian: the hinges' blocks of J are −k·Γ ⊗ I₃ with Γ the rest Gram
            matrix of ∇θ (a Gauss–Newton approximation that never changes), not −k·∇θ∇θᵀ at x.
    """

    def __init__(self, model: ClothModel, membrane: MembraneTerms | None = None,
                 hinges: HingeTerms | None = None, springs: SpringTerms | None = None,
                 psd: bool = True, factor_matrix: bool = False,
                 constant_hinge_jacobian: bool = False):
        self.model = model
        self.membrane, self.hinges, self.springs = membrane, hinges, springs
        self.psd = psd
        sets = []
        if membrane is not None:
            sets.append(model.membrane_triangles)
        if hinges is not None:
            sets.append(model.hinges)
        if springs is not None:
            sets.append(springs.springs)
        # every model sews: the seams are the model's, not a choice of element terms
        self._has_seams = len(model.seams) > 0
        if self._has_seams:
            sets.append(model.seams)
        self.asm, groups = build_assembly(sets, model.vertex_count)
        it = iter(groups)
        self._g_membrane = next(it) if membrane is not None else None
        self._g_hinges = next(it) if hinges is not None else None
        self._g_springs = next(it) if springs is not None else None
        self._g_seams = next(it) if self._has_seams else None
        V = model.vertex_count
        nnzb = len(self.asm.col)
        self.force = np.zeros((V, 3))
        # float32: the PCG multiplies by it in float32 anyway (linalg/cg.py), the forces and the Newton
        # residual stay float64, and half the bytes make the scattered block additions faster
        # (docs/solver.md, "Force kernels")
        self.J = np.zeros((nnzb, 3, 3), dtype=np.float32)
        self.energy_membrane = np.zeros(len(model.membrane_triangles) if membrane is not None
                                        else 0)
        self.energy_hinges = np.zeros(len(model.hinges) if hinges is not None else 0)
        self.energy_springs = np.zeros(len(springs.springs) if springs is not None else 0)
        self.energy_seams = np.zeros(len(model.seams))
        # the energy-only kernels' outputs (``energy``), apart from the evaluations' own
        self._report_membrane, self._report_hinges, self._report_springs, \
            self._report_seams = (np.zeros_like(e) for e in (
                self.energy_membrane, self.energy_hinges, self.energy_springs,
                self.energy_seams))
        self._empty_blocks = np.zeros((0, 3, 3))
        self.J_factor = np.zeros_like(self.J) if factor_matrix else None
        # air drag acts through each vertex's normal (forces/external.py): the triangles around
        # every vertex (the membrane's: both diagonal splits of a quad, so no diagonal tilts the
        # normals), and the normals of the last evaluation for the drag's Jacobian
        self._vt_ptr, self._vt_tri = vertex_triangles(model.membrane_triangles, V)
        self.normal = np.zeros((V, 3))
        self._hinge_k = self._hinge_c = None  # per-slot multiples of I₃ in ∂f/∂x, ∂f/∂v
        self._hinge_part = (None, None)  # ((a, b), a·_hinge_k + b·_hinge_c) last used
        if constant_hinge_jacobian and hinges is not None:
            g = self._g_hinges
            slots = self.asm.block_slot[g.block_offset:g.block_offset + 16 * len(model.hinges)]
            self._hinge_k, self._hinge_c = (
                -np.bincount(slots, weights=(w[:, None, None] * hinges.rest_gram).ravel(),
                             minlength=nnzb) for w in (hinges.stiffness, hinges.damping))

    def internal(self, x, v, jac: tuple[float, float] | None = None) -> None:
        """Internal (elastic + damping) forces into self.force; with jac = (a, b) also
        J = a·∂f/∂x + b·∂f/∂v of them."""
        want = jac is not None
        cK, cD = (float(jac[0]), float(jac[1])) if want else (0.0, 0.0)
        constant = self._hinge_k is not None
        if want and constant:
            if self._hinge_part[0] != (cK, cD):  # the step length rarely changes
                self._hinge_part = ((cK, cD), cK * self._hinge_k + cD * self._hinge_c)
            hinge_part = self._hinge_part[1]
            fill_scaled_identity(self.J, hinge_part)
        elif want:
            self.J[:] = 0.0
        J = self.J if want else self._empty_blocks
        self.force[:] = 0.0
        m, slot, f = self.model, self.asm.block_slot, self.force
        if self.membrane is not None:
            g, t = self._g_membrane, self.membrane
            membrane_kernel(x, v, m.membrane_triangles, t.coef_u, t.coef_v, t.area,
                            m.membrane_stiffness, want, cK, cD, self.psd, g.block_offset,
                            g.run_start, g.run_order, g.color_ptr, slot, self.energy_membrane,
                            f, J)
        if self.springs is not None:
            g, t = self._g_springs, self.springs
            spring_kernel(x, v, t.springs, t.rest_length, t.stiffness, t.damping, want, cK, cD,
                          self.psd, g.block_offset, g.run_start, g.run_order, g.color_ptr, slot,
                          self.energy_springs, f, J)
        if self._has_seams:
            seam_kernel(x, v, m.seams, m.seam_pull, m.seam_reach, m.seam_damping, want, cK, cD,
                        self._g_seams.block_offset, slot, self.energy_seams, f, J)
        factor = want and self.J_factor is not None
        if factor and constant:
            subtract_scaled_identity(self.J_factor, J, hinge_part,
                                     1.0 - HINGE_COUPLING_IN_FACTOR)
        elif factor:
            self.J_factor[:] = J  # before the hinges
        if self.hinges is not None:
            g, t = self._g_hinges, self.hinges
            bending_kernel(x, v, m.hinges, t.stiffness, t.damping, t.rest_angle,
                           want and not constant, cK, cD, g.block_offset, g.run_start,
                           g.run_order, g.color_ptr, slot, self.energy_hinges, f, J)
            if factor and not constant:
                blend_blocks(self.J_factor, J, HINGE_COUPLING_IN_FACTOR)

    def evaluate(self, x, v, gravity, wind, soft_targets,
                 jac: tuple[float, float] | None = None) -> None:
        """All forces [N] into self.force; with jac = (a, b) also J = a·∂f/∂x + b·∂f/∂v
        (∂f/∂x in N/m, ∂f/∂v in N·s/m).

        Args:
            x, v: positions [m], velocities [m/s], (V, 3).
            gravity: [m/s²], (3,).
            wind: air velocity at each vertex [m/s], (V, 3).
            soft_targets: goal positions of the soft pins [m], (Ps, 3).
        """
        self.internal(x, v, jac)
        m = self.model
        external_kernel(x, v, m.mass, m.vertex_drag, gravity, wind, m.membrane_triangles,
                        self._vt_ptr, self._vt_tri, TANGENTIAL_DRAG_RATIO, self.force,
                        self.normal)
        goal_spring_kernel(x, m.soft_pins, m.soft_pin_stiffness, soft_targets, self.force)
        if jac is not None:
            diag = self.asm.diag
            # ∂f/∂v of the drag (its ∂/∂x through the normals is left out, see add_drag_blocks)
            add_drag_blocks(self.J, diag, -jac[1] * m.vertex_drag, self.normal,
                            TANGENTIAL_DRAG_RATIO)
            add_scaled_identity(self.J, diag[m.soft_pins], -jac[0] * m.soft_pin_stiffness)

    def jacobians(self, x, v, *external) -> tuple[np.ndarray, np.ndarray]:
        """(∂f/∂x, ∂f/∂v) as separate block arrays (nnzb, 3, 3), from two evaluations: of the
        internal forces, or with external = (gravity, wind, soft_targets) of all forces.
        Summed in float32 like J, returned as float64."""
        out = []
        for jac in ((1.0, 0.0), (0.0, 1.0)):
            if external:
                self.evaluate(x, v, *external, jac=jac)
            else:
                self.internal(x, v, jac)
            out.append(self.J.astype(np.float64))
        return out[0], out[1]

    def elastic_energy(self) -> float:
        """Energy stored in the internal terms at the last evaluation [J]."""
        return float(self.energy_membrane.sum() + self.energy_hinges.sum()
                     + self.energy_springs.sum() + self.energy_seams.sum())

    def energy(self, x) -> float:
        """Energy stored in the internal terms at positions x [m] (V, 3) [J], from the
        energy-only kernels: no forces, no Jacobian, and the last evaluation's forces and
        energies are left as they are (the frame report's; ``internal`` then
        ``elastic_energy`` gives the same sum, to rounding)."""
        m = self.model
        if self.membrane is not None:
            t = self.membrane
            membrane_energies(x, m.membrane_triangles, t.coef_u, t.coef_v, t.area,
                              m.membrane_stiffness, self._report_membrane)
        if self.springs is not None:
            t = self.springs
            spring_energies(x, t.springs, t.rest_length, t.stiffness, self._report_springs)
        if self._has_seams:
            seam_energies(x, m.seams, m.seam_pull, m.seam_reach, self._report_seams)
        if self.hinges is not None:
            t = self.hinges
            hinge_energies(x, m.hinges, t.stiffness, t.rest_angle, self._report_hinges)
        return float(self._report_membrane.sum() + self._report_hinges.sum()
                     + self._report_springs.sum() + self._report_seams.sum())

