"""Linear springs with axial damping (Provot structural, shear and flexion springs, [Provot1995]).

Energy E = k/2·(|x_j − x_i| − L)²; the force on i pulls towards j when stretched (the sign
printed in [Vo2006] eq.4.2 is wrong: [Vo06-E1]; keys in docs/references.md). Damping acts on the
rate of length change only.
"""

from dataclasses import dataclass

import numpy as np

from .._jit import njit, prange
from ..topology import flexion_chains


@njit(parallel=True)
def spring_kernel(x, v, springs, rest_length, stiffness, damping, want_jac, cK, cD, psd, b_off,
                  run_start, run_order, color_ptr, slot, energy, force, J):
    """Spring energy, forces and Jacobian blocks.

    Args:
        x, v: positions [m] and velocities [m/s], (V, 3).
        springs: (S, 2) vertex indices.
        rest_length: L [m], (S,).
        stiffness: k [N/m], (S,).
        damping: c [N·s/m], (S,).
        want_jac: also add cK·∂f/∂x + cD·∂f/∂v blocks to J.
        cK, cD: weights of ∂f/∂x [N/m] and ∂f/∂v [N·s/m] in J.
        psd: drop the transverse term (1 − L/l) when compressed, keeping ∂f/∂x semi-definite.
        b_off: this group's offset into slot.
        run_start, run_order, color_ptr: coloured runs of springs (sparse.color_elements).
        slot: matrix slot of every element block (sparse.Assembly.block_slot).
        energy: out (S,) [J]; force (V, 3) [N] and J (nnzb, 3, 3): added to (runs of one
            colour share no vertex).
    """
    for color in range(len(color_ptr) - 1):
        for k in prange(color_ptr[color], color_ptr[color + 1]):
            run = run_order[k]
            for s in range(run_start[run], run_start[run + 1]):
                _spring(s, x, v, springs, rest_length, stiffness, damping, want_jac, cK, cD,
                        psd, b_off, slot, energy, force, J)


@njit
def _spring(s, x, v, springs, rest_length, stiffness, damping, want_jac, cK, cD, psd, b_off,
            slot, energy, force, J):
    """One spring of spring_kernel."""
    i, j = springs[s, 0], springs[s, 1]
    d0, d1, d2 = x[j, 0] - x[i, 0], x[j, 1] - x[i, 1], x[j, 2] - x[i, 2]
    l = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
    if l < 1e-300:
        energy[s] = 0.5 * stiffness[s] * rest_length[s] ** 2
        return
    n = (d0 / l, d1 / l, d2 / l)
    stretch = l - rest_length[s]
    rate = (n[0] * (v[j, 0] - v[i, 0]) + n[1] * (v[j, 1] - v[i, 1])
            + n[2] * (v[j, 2] - v[i, 2]))
    energy[s] = 0.5 * stiffness[s] * stretch * stretch
    f = stiffness[s] * stretch + damping[s] * rate
    for r in range(3):
        force[i, r] += f * n[r]
        force[j, r] -= f * n[r]
    if want_jac:
        tr = 1.0 - rest_length[s] / l
        if psd:
            tr = max(tr, 0.0)
        k, c = stiffness[s], damping[s]
        # block order (i,i), (i,j), (j,i), (j,j): −H, +H, +H, −H
        for q in range(4):
            o = slot[b_off + 4 * s + q]
            sign = -1.0 if q == 0 or q == 3 else 1.0
            for r in range(3):
                for col in range(3):
                    nn = n[r] * n[col]
                    hk = k * (nn + tr * ((1.0 if r == col else 0.0) - nn))
                    J[o, r, col] += sign * (cK * hk + cD * c * nn)


@njit(parallel=True)
def spring_energies(x, springs, rest_length, stiffness, energy):
    """Energy k/2·(l − L)² of every spring alone (no forces, no Jacobian): what spring_kernel
    writes into its ``energy``, for the frame report. x: positions [m] (V, 3); springs,
    rest_length, stiffness: as in spring_kernel ((S, 2), (S,) [m], (S,) [N/m]); energy: out
    (S,) [J]."""
    for s in prange(springs.shape[0]):
        i, j = springs[s, 0], springs[s, 1]
        d0, d1, d2 = x[j, 0] - x[i, 0], x[j, 1] - x[i, 1], x[j, 2] - x[i, 2]
        l = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2)
        if l < 1e-300:
            energy[s] = 0.5 * stiffness[s] * rest_length[s] ** 2
            continue
        stretch = l - rest_length[s]
        energy[s] = 0.5 * stiffness[s] * stretch * stretch


# Flexion springs are quartic in the bend angle; they are matched to the continuum bending
# energy at this curvature [1/m] (a 10 cm fold radius) since no single stiffness can match all.
FLEXION_MATCH_CURVATURE = 10.0


def edge_spring_coefficients(material, edge_area, rest_length, warp_cos2):
    """Structural springs on the polygon edges: k = k_dir·A_e/L² [N/m] and c [N·s/m], (E,).

    A_e = Σ 2·A_f/n_f over the adjacent polygons [m²], and k_dir the warp/weft stiffness
    interpolated by cos² of the edge's angle to the warp (``warp_cos2``). Because the shear
    diagonals also resist stretching, k_dir is lowered so that the uniaxial stiffness of a square
    grid (free to contract sideways) equals the material's (``_structural_for_uniaxial``). On
    triangle meshes the mapping is only approximate, a known limit of spring networks.
    """
    m = material
    ku, kv = _structural_for_uniaxial(m.stretch_stiffness, m.weft_stiffness, m.shear_stiffness)
    w = edge_area / np.where(rest_length > 0, rest_length * rest_length, 1.0)
    return (ku * warp_cos2 + kv * (1 - warp_cos2)) * w, m.stretch_damping * w


def diagonal_spring_coefficients(material, diagonal_area, rest_length):
    """Shear springs on the polygon diagonals: G·A_d/L² [N/m] and c [N·s/m], (D,), with A_d =
    4·A_f/(the polygon's number of diagonals) [m²]: for a square grid, the spring network whose
    small-strain shear stiffness is G."""
    wd = diagonal_area / np.where(rest_length > 0, rest_length * rest_length, 1.0)
    return material.shear_stiffness * wd, material.shear_damping * wd


def _structural_for_uniaxial(k_u: float, k_v: float, g: float, iterations: int = 60):
    """Spring constants (a, b) along warp/weft of a square grid with diagonal springs g [N/m].

    That grid's uniaxial stiffness along u is a + g·b/(b + g) (lateral direction free, from
    minimising its strain energy); solve a + g·b/(b + g) = k_u and b + g·a/(a + g) = k_v.
    """
    a, b = k_u, k_v
    if g <= 0:
        return a, b
    for _ in range(iterations):
        a = max(k_u - g * b / (b + g), 1e-3 * k_u)
        b = max(k_v - g * a / (a + g), 1e-3 * k_v)
    return a, b


@dataclass(frozen=True)
class SpringTerms:
    """Springs (S, 2) with rest length [m], stiffness [N/m] and damping [N·s/m], (S,) each."""

    springs: np.ndarray
    rest_length: np.ndarray
    stiffness: np.ndarray
    damping: np.ndarray


def spring_terms(model, flexion: bool) -> SpringTerms:
    """Provot's spring network of a ClothModel: structural springs on the edges, shear springs
    on the diagonals and, with ``flexion``, flexion springs (``flexion_springs``)."""
    parts = [(model.edges, model.edge_rest_length, model.edge_stiffness, model.edge_damping),
             (model.diagonals, model.diagonal_rest_length, model.diagonal_stiffness,
              model.diagonal_damping)]
    if flexion:
        parts.append(flexion_springs(model))
    springs = np.concatenate([p[0] for p in parts]).astype(np.int64).reshape(-1, 2)
    rest = np.concatenate([p[1] for p in parts])
    keep = np.nonzero(rest > 0)[0]
    # Listed piece by piece, each piece's as it would list them alone, so that the force sums
    # on a piece run in the same order whether or not other pieces are simulated with it.
    keep = keep[np.argsort(model.piece_of(springs[keep, 0]), kind="stable")]
    return SpringTerms(springs[keep], rest[keep], np.concatenate([p[2] for p in parts])[keep],
                       np.concatenate([p[3] for p in parts])[keep])


def flexion_springs(model):
    """Skip-one springs (a, c) of each straight chain a-b-c: (springs (F, 2), rest length [m],
    stiffness [N/m], damping [N·s/m]), with each piece's material.

    A chain of two edges of length h bent by angle φ = κh shortens by h·φ²/4, so a spring of
    stiffness k stores k·h²·φ⁴/32 while the continuum stores B·κ²·h·w/2 over the chain's
    area; equating them at κ = FLEXION_MATCH_CURVATURE gives k = 16·B·w/(κ²·h⁵) (w ≈ h).
    Being axial springs, they are damped with the stretch damping time c/k of the material
    (the bending damping time would make them far too viscous for an explicit step).
    """
    pos = model.rest_positions
    chains = flexion_chains(model.edges, pos, model.vertex_count)
    a, c = chains[:, 0], chains[:, 2]
    span = np.linalg.norm(pos[c] - pos[a], axis=1)
    h = 0.5 * span
    kappa = FLEXION_MATCH_CURVATURE
    safe_h = np.where(h > 0, h, 1.0)
    piece = model.piece_of(a)
    bend = np.array([m.bend_stiffness for m in model.materials])[piece]
    tau = np.array([m.stretch_damping / m.stretch_stiffness for m in model.materials])[piece]
    k = 16.0 * bend / (kappa ** 2 * safe_h ** 4)
    return np.stack([a, c], 1), span, k, tau * k
