"""Linear springs with axial damping (Provot structural, shear and flexion springs).

Energy E = k/2·(|x_j − x_i| − L)²; the force on i pulls towards j when stretched (the sign
printed in [V] eq.4.2 is wrong, digest errata 1). Damping acts on the rate of length change only.
"""

import numpy as np

from .._jit import njit, prange


@njit(parallel=True)
def spring_kernel(x, v, springs, rest_length, stiffness, damping, want_jac, psd, f_off, b_off,
                  energy, lf, lk, ld):
    """Spring energy, forces and Jacobian blocks.

    Args:
        x, v: positions [m] and velocities [m/s], (V, 3).
        springs: (S, 2) vertex indices.
        rest_length: L [m], (S,).
        stiffness: k [N/m], (S,).
        damping: c [N·s/m], (S,).
        want_jac: also write ∂f/∂x and ∂f/∂v blocks.
        psd: drop the transverse term (1 − L/l) when compressed, keeping ∂f/∂x semi-definite.
        f_off, b_off: this group's offsets into lf and lk/ld.
        energy: out (S,) [J]; lf: out local forces; lk, ld: out local blocks.
    """
    eye = np.eye(3)
    for s in prange(springs.shape[0]):
        i, j = springs[s, 0], springs[s, 1]
        d = x[j] - x[i]
        l = np.sqrt(np.sum(d * d))
        if l < 1e-300:
            energy[s] = 0.5 * stiffness[s] * rest_length[s] ** 2
            lf[f_off + 2 * s] = 0.0
            lf[f_off + 2 * s + 1] = 0.0
            if want_jac:
                for q in range(4):
                    lk[b_off + 4 * s + q] = 0.0
                    ld[b_off + 4 * s + q] = 0.0
            continue
        n = d / l
        stretch = l - rest_length[s]
        rate = np.sum(n * (v[j] - v[i]))
        energy[s] = 0.5 * stiffness[s] * stretch * stretch
        f = (stiffness[s] * stretch + damping[s] * rate) * n
        lf[f_off + 2 * s] = f
        lf[f_off + 2 * s + 1] = -f
        if want_jac:
            nn = np.outer(n, n)
            tr = 1.0 - rest_length[s] / l
            if psd:
                tr = max(tr, 0.0)
            hk = stiffness[s] * (nn + tr * (eye - nn))
            hd = damping[s] * nn
            # block order (i,i), (i,j), (j,i), (j,j)
            lk[b_off + 4 * s] = -hk
            lk[b_off + 4 * s + 1] = hk
            lk[b_off + 4 * s + 2] = hk
            lk[b_off + 4 * s + 3] = -hk
            ld[b_off + 4 * s] = -hd
            ld[b_off + 4 * s + 1] = hd
            ld[b_off + 4 * s + 2] = hd
            ld[b_off + 4 * s + 3] = -hd
