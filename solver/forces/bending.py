"""Dihedral-angle bending across each interior edge (Bridson et al. 2003; B&W bend condition).

For a hinge with shared edge (x0, x1) and wings x2, x3, the energy is
    E = k/2·(θ − θ0)²,  k = B·|e|² / (A1 + A2)
with B the bending rigidity [N·m] and A1, A2 the rest areas of the two triangles. For a sheet
bent into a cylinder along a family of mesh edges this equals ∫ B/2·κ² dA exactly, so B keeps
its meaning when the mesh is refined. The gradient of θ uses Bridson's mode vectors; the
Jacobian is the Gauss–Newton part −k·∇θ∇θᵀ (exact at the rest angle, always semi-definite).
"""

import numpy as np

from .._jit import njit, prange


@njit
def _cross(a, b):
    return np.array([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                     a[0] * b[1] - a[1] * b[0]])


@njit
def dihedral_angle_and_gradient(x0, x1, x2, x3, grad):
    """Signed dihedral angle θ [rad] of a hinge (0 when flat) and ∂θ/∂x_m into grad (4, 3).

    Returns θ, or NaN when a triangle is degenerate (grad is then zero).
    """
    e = x1 - x0
    le = np.sqrt(np.sum(e * e))
    n1 = _cross(x2 - x0, x2 - x1)
    n2 = _cross(x3 - x1, x3 - x0)
    q1 = np.sum(n1 * n1)
    q2 = np.sum(n2 * n2)
    grad[:] = 0.0
    if le < 1e-300 or q1 < 1e-300 or q2 < 1e-300:
        return np.nan
    eh = e / le
    m1 = n1 / q1
    m2 = n2 / q2
    r1 = np.sqrt(q1)
    r2 = np.sqrt(q2)
    sin_t = np.sum(_cross(n1, n2) * eh) / (r1 * r2)
    cos_t = np.sum(n1 * n2) / (r1 * r2)
    theta = np.arctan2(sin_t, cos_t)
    grad[2] = -le * m1
    grad[3] = -le * m2
    grad[0] = -(np.sum((x2 - x1) * eh) * m1 + np.sum((x3 - x1) * eh) * m2)
    grad[1] = np.sum((x2 - x0) * eh) * m1 + np.sum((x3 - x0) * eh) * m2
    return theta


@njit(parallel=True)
def bending_kernel(x, v, hinges, stiffness, damping, rest_angle, want_jac, f_off, b_off,
                   energy, lf, lk, ld):
    """Bending energy, forces and Jacobian blocks of every hinge.

    Args:
        x, v: positions [m] and velocities [m/s], (V, 3).
        hinges: (H, 4) vertex indices (edge a, edge b, wing 1, wing 2).
        stiffness: k per hinge [N·m] (energy per rad²), (H,).
        damping: per hinge [N·m·s], (H,): torque −c·dθ/dt.
        rest_angle: θ0 [rad], (H,).
        want_jac: also write ∂f/∂x and ∂f/∂v blocks.
        f_off, b_off: this group's offsets into lf and lk/ld.
        energy: out (H,) [J]; lf: out local forces; lk, ld: out local blocks.
    """
    for h in prange(hinges.shape[0]):
        g = np.empty((4, 3))
        i0, i1, i2, i3 = hinges[h, 0], hinges[h, 1], hinges[h, 2], hinges[h, 3]
        theta = dihedral_angle_and_gradient(x[i0], x[i1], x[i2], x[i3], g)
        if np.isnan(theta):
            energy[h] = 0.0
            dtheta = 0.0
            rate = 0.0
        else:
            dtheta = theta - rest_angle[h]
            energy[h] = 0.5 * stiffness[h] * dtheta * dtheta
            rate = (np.sum(g[0] * v[i0]) + np.sum(g[1] * v[i1]) + np.sum(g[2] * v[i2])
                    + np.sum(g[3] * v[i3]))
        scale = -(stiffness[h] * dtheta + damping[h] * rate)
        for m in range(4):
            lf[f_off + 4 * h + m] = scale * g[m]
        if want_jac:
            for m in range(4):
                for n in range(4):
                    o = np.outer(g[m], g[n])
                    lk[b_off + 16 * h + 4 * m + n] = -stiffness[h] * o
                    ld[b_off + 16 * h + 4 * m + n] = -damping[h] * o
