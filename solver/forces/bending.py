"""Dihedral-angle bending across each interior edge ([Bridson2003]; the bend condition of
[Baraff1998]; keys in docs/references.md).

For a hinge with shared edge (x0, x1) and wings x2, x3, the energy is
    E = k/2·(θ − θ0)²,  k = B·|e|² / (A1 + A2)
with B the bending rigidity [N·m] and A1, A2 the rest areas of the two triangles. For a sheet
bent into a cylinder along a family of mesh edges this equals ∫ B/2·κ² dA exactly, so B keeps
its meaning when the mesh is refined. The gradient of θ uses Bridson's mode vectors; the
Jacobian is the Gauss–Newton part −k·∇θ∇θᵀ (exact at the rest angle, always semi-definite).

At a clamp (a wing triangle whose three corners are hard pins) only the free wing bends: the
hinge's angle is the turn over the free triangle's first half, so its region is that half alone,
k = B·|e|²/A_free (``geometry.clamped_hinge_area``). With A1 + A2 the clamp hinge would also
count half a pinned cell as bending, and a clamped sheet would behave as if clamped half a cell earlier: a
first-order softening of coarse meshes (presets/README.md, "Mesh resolution").

The angle and its gradient come from ``geometry.hinge_angle_gradient``; ``build_model`` freezes
each hinge's Gram matrix Γ_mn = ∇θ_m·∇θ_n at rest into the model. The implicit solve uses
−k·Γ ⊗ I₃ as a constant Jacobian ([Bergou2006] show bending energy is quadratic with this kind of constant Hessian under isometric deformation): it matches −k·∇θ∇θᵀ
in the normal direction of a flat hinge and adds a term in the tangent plane that is
negligible beside the membrane stiffness there (~0.03 against 4000 N/m for cotton at 4k).
"""

from dataclasses import dataclass

import numpy as np

from .._jit import njit, prange
from ..geometry import hinge_angle_gradient


@njit(parallel=True)
def bending_kernel(x, v, hinges, stiffness, damping, rest_angle, want_jac, cK, cD, b_off,
                   run_start, run_order, color_ptr, slot, energy, force, J):
    """Bending energy, forces and Jacobian blocks of every hinge.

    Args:
        x, v: positions [m] and velocities [m/s], (V, 3).
        hinges: (H, 4) vertex indices (edge a, edge b, wing 1, wing 2).
        stiffness: k per hinge [N·m] (energy per rad²), (H,).
        damping: per hinge [N·m·s], (H,): torque −c·dθ/dt.
        rest_angle: θ0 [rad], (H,).
        want_jac: also add cK·∂f/∂x + cD·∂f/∂v to J, with the Gauss–Newton blocks
            ∂f/∂x = −k·∇θ∇θᵀ and ∂f/∂v = −c·∇θ∇θᵀ.
        cK, cD: weights of ∂f/∂x [N/m] and ∂f/∂v [N·s/m] in J (e.g. −h², −h).
        b_off: this group's offset into slot.
        run_start, run_order, color_ptr: coloured runs of hinges (sparse.color_elements).
        slot: matrix slot of every element block (sparse.Assembly.block_slot).
        energy: out (H,) [J]; force (V, 3) [N] and J (nnzb, 3, 3): added to (runs of one
            colour share no vertex).
    """
    for color in range(len(color_ptr) - 1):
        for k in prange(color_ptr[color], color_ptr[color + 1]):
            run = run_order[k]
            g = np.empty((4, 3))  # ∇θ, one buffer per run
            for h in range(run_start[run], run_start[run + 1]):
                # written out in full: a shared per-hinge helper ran several times slower
                # (docs/solver.md, "Force kernels")
                i0, i1, i2, i3 = hinges[h, 0], hinges[h, 1], hinges[h, 2], hinges[h, 3]
                theta = hinge_angle_gradient(x, i0, i1, i2, i3, g)
                if np.isnan(theta):  # degenerate: no force, no stiffness
                    energy[h] = 0.0
                    continue
                dtheta = theta - rest_angle[h]
                energy[h] = 0.5 * stiffness[h] * dtheta * dtheta
                rate = 0.0
                for r in range(3):
                    rate += (g[0, r] * v[i0, r] + g[1, r] * v[i1, r] + g[2, r] * v[i2, r]
                             + g[3, r] * v[i3, r])
                scale = -(stiffness[h] * dtheta + damping[h] * rate)
                for r in range(3):
                    force[i0, r] += scale * g[0, r]
                    force[i1, r] += scale * g[1, r]
                    force[i2, r] += scale * g[2, r]
                    force[i3, r] += scale * g[3, r]
                if want_jac:
                    _add_hinge_blocks(cK * stiffness[h] + cD * damping[h], g,
                                      slot[b_off + 16 * h:b_off + 16 * h + 16], J)


# Hinges per task of hinge_energies: one ∇θ scratch buffer per task, not per hinge
_ENERGY_CHUNK = 256


@njit(parallel=True)
def hinge_energies(x, hinges, stiffness, rest_angle, energy):
    """Bending energy of every hinge alone (no forces, no Jacobian): what bending_kernel
    writes into its ``energy``, for the frame report. x: positions [m] (V, 3); hinges,
    stiffness, rest_angle: as in bending_kernel ((H, 4), (H,) [N·m], (H,) [rad]); energy: out
    (H,) [J], 0 for a degenerate hinge. The angle is hinge_angle_gradient's (its gradient is
    a few products beside the angle's square roots and arctangent)."""
    H = hinges.shape[0]
    for c in prange((H + _ENERGY_CHUNK - 1) // _ENERGY_CHUNK):
        g = np.empty((4, 3))
        for h in range(c * _ENERGY_CHUNK, min(H, (c + 1) * _ENERGY_CHUNK)):
            theta = hinge_angle_gradient(x, hinges[h, 0], hinges[h, 1], hinges[h, 2],
                                         hinges[h, 3], g)
            if np.isnan(theta):
                energy[h] = 0.0
                continue
            dtheta = theta - rest_angle[h]
            energy[h] = 0.5 * stiffness[h] * dtheta * dtheta


@njit
def _add_hinge_blocks(w, g, slots, J):
    """J[slots[4m + n]] −= w·g_m·g_nᵀ: both ∂f/∂x and ∂f/∂v are multiples of −∇θ∇θᵀ."""
    for m in range(4):
        for n in range(4):
            o = slots[4 * m + n]
            for r in range(3):
                wg = w * g[m, r]
                for q in range(3):
                    J[o, r, q] -= wg * g[n, q]


def hinge_coefficients(material, pos, hinges, area_sum, weight):
    """Per-hinge stiffness k = B·|e|²/(A1 + A2) [N·m] and damping c [N·m·s], (H,) each, so that
    the energy tends to ∫ B/2·κ² dA (see above); ``weight`` (H,) is 1, or 1/2 for a hinge that
    exists in only one of a quad's two diagonal splits (geometry.averaged_hinges)."""
    e2 = np.sum((pos[hinges[:, 1]] - pos[hinges[:, 0]]) ** 2, axis=1)
    scale = np.where(area_sum > 0, e2 / np.where(area_sum > 0, area_sum, 1.0), 0.0)
    scale = scale * weight
    return material.bend_stiffness * scale, material.bend_damping * scale


@dataclass(frozen=True)
class HingeTerms:
    """Per-hinge bending stiffness k [N·m], damping c [N·m·s], rest angle [rad] and the Gram
    matrix of ∇θ at rest [1/m²], (H, 4, 4) (see above)."""

    stiffness: np.ndarray
    damping: np.ndarray
    rest_angle: np.ndarray
    rest_gram: np.ndarray


def bending_terms(model) -> HingeTerms:
    """A ClothModel's hinges as the bending kernel takes them."""
    return HingeTerms(model.hinge_stiffness, model.hinge_damping, model.hinge_rest_angle,
                      model.hinge_rest_gram)
