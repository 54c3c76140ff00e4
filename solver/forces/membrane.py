"""Baraff–Witkin triangle stretch and shear, with condition damping, in SI units.

Energy per triangle (rest area A, warp/weft directions u, v in the rest plane):
    E = A·[k_u/2·(|W_u| − 1)² + k_v/2·(|W_v| − 1)² + k_s/2·(W_u·W_v)²]
where W_u = ∂x/∂u, W_v = ∂x/∂v. Weighting by A (not a^{3/4} as in [V] §6.2) makes k an SI
membrane stiffness [N/m]: a strip of width W under tension T strains by T/(k·W) at every mesh
resolution. Damping is Rayleigh dissipation of the same conditions (B&W §5; the condition rate
sums over all three corners, digest P30).
"""

import numpy as np

from .._jit import njit, prange


@njit(parallel=True)
def membrane_kernel(x, v, tris, coef_u, coef_v, area, stiff,
                    want_jac, psd, f_off, b_off,
                    energy, lf, lk, ld):
    """Stretch/shear energy, forces and Jacobian blocks of every triangle.

    Args:
        x, v: positions [m] and velocities [m/s], (V, 3).
        tris: (T, 3) vertex indices.
        coef_u, coef_v: (T, 3) with W_u = Σ coef_u[m]·x_m, W_v = Σ coef_v[m]·x_m [1/m].
        area: rest areas [m²], (T,).
        stiff: (T, 6) per triangle: warp, weft and shear stiffness k_u, k_v, k_s [N/m], then
            the matching damping c_u, c_v, c_s [N·s/m] (per triangle, so that pieces of
            different materials share one system).
        want_jac: also write ∂f/∂x and ∂f/∂v blocks.
        psd: clamp the terms that make ∂f/∂x indefinite (compressed stretch, shear curvature)
            so the implicit system stays positive definite; False gives the exact Jacobian.
        f_off, b_off: this group's offsets into lf and lk/ld.
        energy: out (T,) [J]; lf: out local forces; lk, ld: out local blocks.
    """
    eye = np.eye(3)
    for t in prange(tris.shape[0]):
        A = area[t]
        if A <= 0.0:  # degenerate rest triangle (zero coefficients, W = 0): it carries nothing
            energy[t] = 0.0
            for m in range(3):
                lf[f_off + 3 * t + m] = 0.0
            if want_jac:
                for q in range(9):
                    lk[b_off + 9 * t + q] = 0.0
                    ld[b_off + 9 * t + q] = 0.0
            continue
        k_u, k_v, k_s = stiff[t, 0], stiff[t, 1], stiff[t, 2]
        c_u, c_v, c_s = stiff[t, 3], stiff[t, 4], stiff[t, 5]
        wu = np.zeros(3)
        wv = np.zeros(3)
        for m in range(3):
            wu += coef_u[t, m] * x[tris[t, m]]
            wv += coef_v[t, m] * x[tris[t, m]]
        lu = np.sqrt(np.sum(wu * wu))
        lv = np.sqrt(np.sum(wv * wv))
        nu = wu / lu
        nv = wv / lv
        cu_ = lu - 1.0
        cv_ = lv - 1.0
        s = np.sum(wu * wv)
        # condition rates (digest P30: sum over every corner)
        du = 0.0
        dv = 0.0
        ds = 0.0
        for m in range(3):
            vm = v[tris[t, m]]
            g = coef_u[t, m] * wv + coef_v[t, m] * wu
            du += coef_u[t, m] * np.sum(nu * vm)
            dv += coef_v[t, m] * np.sum(nv * vm)
            ds += np.sum(g * vm)
        energy[t] = A * (0.5 * k_u * cu_ * cu_ + 0.5 * k_v * cv_ * cv_ + 0.5 * k_s * s * s)
        for m in range(3):
            am = coef_u[t, m]
            bm = coef_v[t, m]
            gm = am * wv + bm * wu
            lf[f_off + 3 * t + m] = -A * ((k_u * cu_ + c_u * du) * am * nu
                                          + (k_v * cv_ + c_v * dv) * bm * nv
                                          + (k_s * s + c_s * ds) * gm)
        if want_jac:
            _membrane_blocks(t, A, coef_u, coef_v, wu, wv, nu, nv, lu, lv, cu_, cv_, s,
                             k_u, k_v, k_s, c_u, c_v, c_s, psd, eye, b_off, lk, ld)


@njit
def _membrane_blocks(t, A, coef_u, coef_v, wu, wv, nu, nv, lu, lv, cu_, cv_, s,
                     k_u, k_v, k_s, c_u, c_v, c_s, psd, eye, b_off, lk, ld):
    """∂f/∂x and ∂f/∂v blocks of one triangle (see membrane_kernel)."""
    pu = np.outer(nu, nu)
    pv = np.outer(nv, nv)
    # transverse stiffness C/|W|·(I − ŵŵᵀ) is negative under compression: clamp for PSD
    tu = cu_ / lu
    tv = cv_ / lv
    if psd:
        tu = max(tu, 0.0)
        tv = max(tv, 0.0)
    hu = pu + tu * (eye - pu)
    hv = pv + tv * (eye - pv)
    for m in range(3):
        am = coef_u[t, m]
        bm = coef_v[t, m]
        gm = am * wv + bm * wu
        for n in range(3):
            an = coef_u[t, n]
            bn = coef_v[t, n]
            gn = an * wv + bn * wu
            ggt = np.outer(gm, gn)
            kb = k_u * am * an * hu + k_v * bm * bn * hv + k_s * ggt
            if not psd:
                kb += k_s * s * (am * bn + bm * an) * eye
            idx = b_off + 9 * t + 3 * m + n
            lk[idx] = -A * kb
            ld[idx] = -A * (c_u * am * an * pu + c_v * bm * bn * pv + c_s * ggt)
