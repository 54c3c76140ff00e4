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
k = B·|e|²/A_free (``clamped_hinge_area``). With A1 + A2 the clamp hinge would also count half a
pinned cell as bending, and a clamped sheet would behave as if clamped half a cell earlier: a
first-order softening of coarse meshes (presets/README.md, "Mesh resolution").

``hinge_angles_and_grams`` also gives each hinge's Gram matrix Γ_mn = ∇θ_m·∇θ_n at rest. The
implicit solve uses −k·Γ ⊗ I₃ as a constant Jacobian ([Bergou2006] show bending energy is
quadratic with this kind of constant Hessian under isometric deformation): it matches −k·∇θ∇θᵀ
in the normal direction of a flat hinge and adds a term in the tangent plane that is
negligible beside the membrane stiffness there (~0.03 against 4000 N/m for cotton at 4k).
"""

from dataclasses import dataclass

import numpy as np

from .._jit import njit, prange
from ..geometry import angles_and_grams


@njit
def dihedral_angle_and_gradient(x0, x1, x2, x3, grad):
    """Signed dihedral angle θ [rad] of a hinge (0 when flat) and ∂θ/∂x_m into grad (4, 3).

    Returns θ, or NaN when a triangle is degenerate (grad is then zero).
    """
    pts = np.empty((4, 3))
    pts[0], pts[1], pts[2], pts[3] = x0, x1, x2, x3
    return _hinge_theta_grad(pts, 0, 1, 2, 3, grad)


@njit
def _hinge_theta_grad(x, i0, i1, i2, i3, g):
    """θ and ∂θ/∂x into g (4, 3) using scalars only (no allocation in the parallel loop)."""
    ex, ey, ez = x[i1, 0] - x[i0, 0], x[i1, 1] - x[i0, 1], x[i1, 2] - x[i0, 2]
    a0x, a0y, a0z = x[i2, 0] - x[i0, 0], x[i2, 1] - x[i0, 1], x[i2, 2] - x[i0, 2]
    a1x, a1y, a1z = x[i2, 0] - x[i1, 0], x[i2, 1] - x[i1, 1], x[i2, 2] - x[i1, 2]
    b1x, b1y, b1z = x[i3, 0] - x[i1, 0], x[i3, 1] - x[i1, 1], x[i3, 2] - x[i1, 2]
    b0x, b0y, b0z = x[i3, 0] - x[i0, 0], x[i3, 1] - x[i0, 1], x[i3, 2] - x[i0, 2]
    # n1 = (x2 − x0) × (x2 − x1), n2 = (x3 − x1) × (x3 − x0)
    n1x, n1y, n1z = a0y * a1z - a0z * a1y, a0z * a1x - a0x * a1z, a0x * a1y - a0y * a1x
    n2x, n2y, n2z = b1y * b0z - b1z * b0y, b1z * b0x - b1x * b0z, b1x * b0y - b1y * b0x
    le = np.sqrt(ex * ex + ey * ey + ez * ez)
    q1 = n1x * n1x + n1y * n1y + n1z * n1z
    q2 = n2x * n2x + n2y * n2y + n2z * n2z
    if le < 1e-300 or q1 < 1e-300 or q2 < 1e-300:
        for m in range(4):
            for r in range(3):
                g[m, r] = 0.0
        return np.nan
    ehx, ehy, ehz = ex / le, ey / le, ez / le
    cx, cy, cz = n1y * n2z - n1z * n2y, n1z * n2x - n1x * n2z, n1x * n2y - n1y * n2x
    r12 = np.sqrt(q1 * q2)
    theta = np.arctan2((cx * ehx + cy * ehy + cz * ehz) / r12,
                       (n1x * n2x + n1y * n2y + n1z * n2z) / r12)
    w1 = 1.0 / q1
    w2 = 1.0 / q2
    s21 = (a1x * ehx + a1y * ehy + a1z * ehz) * w1   # (x2 − x1)·ê / |n1|²
    s31 = (b1x * ehx + b1y * ehy + b1z * ehz) * w2   # (x3 − x1)·ê / |n2|²
    s20 = (a0x * ehx + a0y * ehy + a0z * ehz) * w1   # (x2 − x0)·ê / |n1|²
    s30 = (b0x * ehx + b0y * ehy + b0z * ehz) * w2   # (x3 − x0)·ê / |n2|²
    g[2, 0], g[2, 1], g[2, 2] = -le * w1 * n1x, -le * w1 * n1y, -le * w1 * n1z
    g[3, 0], g[3, 1], g[3, 2] = -le * w2 * n2x, -le * w2 * n2y, -le * w2 * n2z
    g[0, 0] = -(s21 * n1x + s31 * n2x)
    g[0, 1] = -(s21 * n1y + s31 * n2y)
    g[0, 2] = -(s21 * n1z + s31 * n2z)
    g[1, 0] = s20 * n1x + s30 * n2x
    g[1, 1] = s20 * n1y + s30 * n2y
    g[1, 2] = s20 * n1z + s30 * n2z
    return theta


@njit(parallel=True)
def hinge_angles_and_grams(x, hinges, angle, gram):
    """Dihedral angle θ [rad] of every hinge (0 for a degenerate one) and its Gram matrix
    Γ_mn = ∇θ_m·∇θ_n [1/m²] over the hinge's four vertices.

    Args:
        x: positions [m], (V, 3); hinges: (H, 4) vertex indices.
        angle: out (H,); gram: out (H, 4, 4) (zero for a degenerate hinge), or an empty
            array for the angles alone.
    """
    for h in prange(len(hinges)):
        g = np.empty((4, 3))
        idx = hinges[h]
        theta = _hinge_theta_grad(x, idx[0], idx[1], idx[2], idx[3], g)
        angle[h] = 0.0 if np.isnan(theta) else theta
        if gram.shape[0] == 0:
            continue
        for m in range(4):
            for n in range(4):
                gram[h, m, n] = g[m, 0] * g[n, 0] + g[m, 1] * g[n, 1] + g[m, 2] * g[n, 2]


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
                theta = _hinge_theta_grad(x, i0, i1, i2, i3, g)
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


def clamped_hinge_area(pos, hinges, area_sum, clamped):
    """A1 + A2 of each hinge [m²], (H,), with the wing left out where that wing is clamped (its
    three corners in ``clamped``, a (V,) bool mask of hard pins) and the other is not.

    Args:
        pos: rest positions [m], (V, 3); hinges: (H, 4) (edge a, edge b, wing 1, wing 2).
        area_sum: A1 + A2 [m²], (H,) (geometry.averaged_hinges).
    """
    if len(hinges) == 0 or not clamped.any():
        return area_sum
    edge_pinned = clamped[hinges[:, 0]] & clamped[hinges[:, 1]]
    wing1 = edge_pinned & clamped[hinges[:, 2]]
    wing2 = edge_pinned & clamped[hinges[:, 3]]
    e = pos[hinges[:, 1]] - pos[hinges[:, 0]]
    a1 = 0.5 * np.linalg.norm(np.cross(e, pos[hinges[:, 2]] - pos[hinges[:, 0]]), axis=1)
    a2 = 0.5 * np.linalg.norm(np.cross(e, pos[hinges[:, 3]] - pos[hinges[:, 0]]), axis=1)
    return np.where(wing1 & ~wing2, a2, np.where(wing2 & ~wing1, a1, area_sum))


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
    gram = angles_and_grams(model.rest_positions, model.hinges)[1]
    return HingeTerms(model.hinge_stiffness, model.hinge_damping, model.hinge_rest_angle, gram)
