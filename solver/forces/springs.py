"""Linear springs with axial damping (Provot structural, shear and flexion springs).

Energy E = k/2·(|x_j − x_i| − L)²; the force on i pulls towards j when stretched (the sign
printed in [V] eq.4.2 is wrong, digest errata 1). Damping acts on the rate of length change only.
"""

import numpy as np

from .._jit import njit, prange


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
