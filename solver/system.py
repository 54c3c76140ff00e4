"""All forces on one cloth and their Jacobians, evaluated through the shared element buffers.

A model chooses which element terms it uses (membrane, hinges, springs); ``ForceSystem``
evaluates them in parallel, gathers the per-vertex forces and, when asked, the block-sparse
∂f/∂x (K) and ∂f/∂v (D) on a fixed pattern, then adds gravity, drag and soft pins.
"""

from __future__ import annotations

import numpy as np

from .forces.bending import bending_kernel
from .forces.external import external_kernel, goal_spring_kernel
from .forces.membrane import membrane_kernel
from .forces.springs import spring_kernel
from .model import ClothModel, HingeTerms, MembraneTerms, SpringTerms
from .sparse import build_assembly, gather_forces


class ForceSystem:
    """Evaluates f(x, v), K = ∂f/∂x and D = ∂f/∂v for a model's chosen element terms.

    Args:
        model: rest-state data.
        membrane: B&W triangle terms, or None.
        hinges: dihedral bending terms, or None.
        springs: spring terms, or None.
        psd: clamp indefinite Hessian parts (needed by the implicit solve).
    """

    def __init__(self, model: ClothModel, membrane: MembraneTerms | None = None,
                 hinges: HingeTerms | None = None, springs: SpringTerms | None = None,
                 psd: bool = True):
        self.model = model
        self.membrane, self.hinges, self.springs = membrane, hinges, springs
        self.psd = psd
        sets = []
        if membrane is not None:
            sets.append(model.triangles)
        if hinges is not None:
            sets.append(model.hinges)
        if springs is not None:
            sets.append(springs.springs)
        self.asm, groups = build_assembly(sets, model.vertex_count)
        it = iter(groups)
        self._g_membrane = next(it) if membrane is not None else None
        self._g_hinges = next(it) if hinges is not None else None
        self._g_springs = next(it) if springs is not None else None
        V = model.vertex_count
        nnzb = len(self.asm.col)
        self.local_f = np.zeros((self.asm.local_force_count, 3))
        self.force = np.zeros((V, 3))
        self.K = np.zeros((nnzb, 3, 3))
        self.D = np.zeros((nnzb, 3, 3))
        self.energy_membrane = np.zeros(len(model.triangles) if membrane is not None else 0)
        self.energy_hinges = np.zeros(len(model.hinges) if hinges is not None else 0)
        self.energy_springs = np.zeros(len(springs.springs) if springs is not None else 0)
        self._empty_blocks = np.zeros((0, 3, 3))

    def internal(self, x, v, want_jac: bool = False) -> None:
        """Internal (elastic + damping) forces into self.force, K and D if want_jac."""
        if want_jac:
            self.K[:] = 0.0
            self.D[:] = 0.0
        K, D = (self.K, self.D) if want_jac else (self._empty_blocks, self._empty_blocks)
        m = self.model
        if self.membrane is not None:
            g = self._g_membrane
            membrane_kernel(x, v, m.triangles, self.membrane.coef_u, self.membrane.coef_v,
                            self.membrane.area, m.tri_stiffness, want_jac, self.psd,
                            g.force_offset, g.block_offset, g.run_start, g.run_order, g.color_ptr,
                            self.asm.block_slot, self.energy_membrane,
                            self.local_f, K, D)
        if self.hinges is not None:
            g = self._g_hinges
            bending_kernel(x, v, m.hinges, self.hinges.stiffness, self.hinges.damping,
                           self.hinges.rest_angle, want_jac, g.force_offset, g.block_offset,
                           g.run_start, g.run_order, g.color_ptr, self.asm.block_slot,
                           self.energy_hinges, self.local_f, K, D)
        if self.springs is not None:
            g = self._g_springs
            s = self.springs
            spring_kernel(x, v, s.springs, s.rest_length, s.stiffness, s.damping, want_jac,
                          self.psd, g.force_offset, g.block_offset, g.run_start, g.run_order, g.color_ptr,
                          self.asm.block_slot, self.energy_springs,
                          self.local_f, K, D)
        self.force[:] = 0.0
        gather_forces(self.local_f, self.asm.force_ptr, self.asm.force_src, self.force)

    def evaluate(self, x, v, gravity, wind, soft_targets, want_jac: bool = False) -> None:
        """All forces [N] into self.force; K [N/m] and D [N·s/m] blocks if want_jac.

        Args:
            x, v: positions [m], velocities [m/s], (V, 3).
            gravity: [m/s²], (3,).
            wind: air velocity at each vertex [m/s], (V, 3).
            soft_targets: goal positions of the soft pins [m], (Ps, 3).
        """
        self.internal(x, v, want_jac)
        m = self.model
        external_kernel(x, v, m.mass, m.vertex_drag, gravity, wind, self.force)
        goal_spring_kernel(x, m.soft_pins, m.soft_pin_stiffness, soft_targets, self.force)
        if want_jac:
            diag = self.asm.diag
            eye = np.eye(3)
            self.D[diag] -= m.vertex_drag[:, None, None] * eye
            self.K[diag[m.soft_pins]] -= m.soft_pin_stiffness[:, None, None] * eye

    def elastic_energy(self) -> float:
        """Energy stored in the internal terms at the last evaluation [J]."""
        return float(self.energy_membrane.sum() + self.energy_hinges.sum()
                     + self.energy_springs.sum())
