"""Baraff–Witkin triangle stretch and shear, with condition damping, in SI units.

Energy per triangle (rest area A, warp/weft directions u, v in the rest plane):
    E = A·[k_u/2·(|W_u| − 1)² + k_v/2·(|W_v| − 1)² + k_s/2·(W_u·W_v)²]
where W_u = ∂x/∂u, W_v = ∂x/∂v [Baraff1998]. Weighting by A (not a^{3/4} as in [Vo2006]
§6.2) makes k an SI membrane stiffness [N/m]: a strip of width W under tension T strains by
T/(k·W) at every mesh resolution. Damping is Rayleigh dissipation of the same conditions
([Baraff1998] §5; the condition rate sums over all three corners, [Pritchard2003]). Keys in
brackets are in docs/references.md.
"""

from dataclasses import dataclass

import numpy as np

from .._jit import njit, prange


@njit(parallel=True)
def membrane_kernel(x, v, tris, coef_u, coef_v, area, stiff, want_jac, cK, cD, psd, b_off,
                    run_start, run_order, color_ptr, slot, energy, force, J):
    """Stretch/shear energy, forces and Jacobian blocks of every triangle.

    Args:
        x, v: positions [m] and velocities [m/s], (V, 3).
        tris: (T, 3) vertex indices.
        coef_u, coef_v: (T, 3) with W_u = Σ coef_u[m]·x_m, W_v = Σ coef_v[m]·x_m [1/m].
        area: rest areas [m²], (T,).
        stiff: (T, 6) per triangle: warp, weft and shear stiffness k_u, k_v, k_s [N/m], then
            the matching damping c_u, c_v, c_s [N·s/m] (per triangle, so that pieces of
            different materials share one system).
        want_jac: also add cK·∂f/∂x + cD·∂f/∂v blocks to J.
        cK, cD: weights of ∂f/∂x [N/m] and ∂f/∂v [N·s/m] in J (e.g. −h², −h).
        psd: clamp the terms that make ∂f/∂x indefinite (compressed stretch, shear curvature)
            so the implicit system stays positive definite; False gives the exact Jacobian.
        b_off: this group's offset into slot.
        run_start, run_order, color_ptr: coloured runs of triangles (sparse.color_elements).
        slot: matrix slot of every element block (sparse.Assembly.block_slot).
        energy: out (T,) [J]; force (V, 3) [N] and J (nnzb, 3, 3): added to. Runs of one
            colour share no vertex, so the parallel additions never collide.
    """
    for color in range(len(color_ptr) - 1):
        for k in prange(color_ptr[color], color_ptr[color + 1]):
            run = run_order[k]
            for t in range(run_start[run], run_start[run + 1]):
                _membrane_element(t, x, v, tris, coef_u, coef_v, area, stiff, want_jac, cK,
                                  cD, psd, b_off, slot, energy, force, J)


@njit
def _membrane_element(t, x, v, tris, coef_u, coef_v, area, stiff, want_jac, cK, cD, psd, b_off,
                      slot, energy, force, J):
    """One triangle of membrane_kernel."""
    A = area[t]
    if A <= 0.0:  # degenerate rest triangle (zero coefficients, W = 0): it carries nothing
        energy[t] = 0.0
        return
    # Scalars and tuples only: per-triangle array temporaries cost more than the maths
    # (docs/solver.md, "Force kernels").
    k_u, k_v, k_s = stiff[t, 0], stiff[t, 1], stiff[t, 2]
    c_u, c_v, c_s = stiff[t, 3], stiff[t, 4], stiff[t, 5]
    i0, i1, i2 = tris[t, 0], tris[t, 1], tris[t, 2]
    a = (coef_u[t, 0], coef_u[t, 1], coef_u[t, 2])
    b = (coef_v[t, 0], coef_v[t, 1], coef_v[t, 2])
    wu = _combine(a, x, i0, i1, i2)  # W_u = Σ a_m·x_m
    wv = _combine(b, x, i0, i1, i2)
    # Σ a_m·v_m and Σ b_m·v_m: the condition rates are their projections ([Pritchard2003])
    ru = _combine(a, v, i0, i1, i2)
    rv = _combine(b, v, i0, i1, i2)
    lu = np.sqrt(wu[0] * wu[0] + wu[1] * wu[1] + wu[2] * wu[2])
    lv = np.sqrt(wv[0] * wv[0] + wv[1] * wv[1] + wv[2] * wv[2])
    nu = (wu[0] / lu, wu[1] / lu, wu[2] / lu)
    nv = (wv[0] / lv, wv[1] / lv, wv[2] / lv)
    cu_ = lu - 1.0
    cv_ = lv - 1.0
    s = wu[0] * wv[0] + wu[1] * wv[1] + wu[2] * wv[2]
    du = nu[0] * ru[0] + nu[1] * ru[1] + nu[2] * ru[2]
    dv = nv[0] * rv[0] + nv[1] * rv[1] + nv[2] * rv[2]
    ds = (wv[0] * ru[0] + wv[1] * ru[1] + wv[2] * ru[2]
          + wu[0] * rv[0] + wu[1] * rv[1] + wu[2] * rv[2])
    energy[t] = A * (0.5 * k_u * cu_ * cu_ + 0.5 * k_v * cv_ * cv_ + 0.5 * k_s * s * s)
    fu = A * (k_u * cu_ + c_u * du)
    fv = A * (k_v * cv_ + c_v * dv)
    fs = A * (k_s * s + c_s * ds)
    for m in range(3):
        i = tris[t, m]
        for r in range(3):
            force[i, r] -= (fu * a[m] * nu[r] + fv * b[m] * nv[r]
                            + fs * (a[m] * wv[r] + b[m] * wu[r]))
    if want_jac:
        _membrane_blocks(t, A, a, b, wu, wv, nu, nv, lu, lv, cu_, cv_, s,
                         k_u, k_v, k_s, c_u, c_v, c_s, cK, cD, psd, b_off, slot, J)


@njit(parallel=True)
def membrane_energies(x, tris, coef_u, coef_v, area, stiff, energy):
    """Stretch/shear energy of every triangle alone (no forces, no Jacobian): what
    membrane_kernel writes into its ``energy``, for the frame report.

    Args:
        x: positions [m], (V, 3).
        tris, coef_u, coef_v, area, stiff: as in membrane_kernel ((T, 3), (T, 3), (T, 3), (T,),
            (T, 6); only the stiffness columns are read).
        energy: out (T,) [J].
    """
    for t in prange(tris.shape[0]):
        A = area[t]
        if A <= 0.0:
            energy[t] = 0.0
            continue
        i0, i1, i2 = tris[t, 0], tris[t, 1], tris[t, 2]
        wu = _combine((coef_u[t, 0], coef_u[t, 1], coef_u[t, 2]), x, i0, i1, i2)
        wv = _combine((coef_v[t, 0], coef_v[t, 1], coef_v[t, 2]), x, i0, i1, i2)
        cu_ = np.sqrt(wu[0] * wu[0] + wu[1] * wu[1] + wu[2] * wu[2]) - 1.0
        cv_ = np.sqrt(wv[0] * wv[0] + wv[1] * wv[1] + wv[2] * wv[2]) - 1.0
        s = wu[0] * wv[0] + wu[1] * wv[1] + wu[2] * wv[2]
        energy[t] = A * (0.5 * stiff[t, 0] * cu_ * cu_ + 0.5 * stiff[t, 1] * cv_ * cv_
                         + 0.5 * stiff[t, 2] * s * s)


@njit(inline="always")
def _combine(c, y, i0, i1, i2):
    """Σ_m c[m]·y[i_m] over a triangle's corners, as a 3-tuple (no array temporaries)."""
    return (c[0] * y[i0, 0] + c[1] * y[i1, 0] + c[2] * y[i2, 0],
            c[0] * y[i0, 1] + c[1] * y[i1, 1] + c[2] * y[i2, 1],
            c[0] * y[i0, 2] + c[1] * y[i1, 2] + c[2] * y[i2, 2])


@njit
def _membrane_blocks(t, A, a, b, wu, wv, nu, nv, lu, lv, cu_, cv_, s,
                     k_u, k_v, k_s, c_u, c_v, c_s, cK, cD, psd, b_off, slot, J):
    """cK·∂f/∂x + cD·∂f/∂v blocks of one triangle into J (see membrane_kernel).

    K_mn = −A·[k_u·a_m·a_n·H_u + k_v·b_m·b_n·H_v + k_s·g_m·g_nᵀ] with H = ŵŵᵀ + C/|W|·(I − ŵŵᵀ)
    and g_m = a_m·W_v + b_m·W_u; D_mn = −A·[c_u·a_m·a_n·ŵ_uŵ_uᵀ + c_v·b_m·b_n·ŵ_vŵ_vᵀ + c_s·g_m·g_nᵀ].
    """
    # transverse stiffness C/|W|·(I − ŵŵᵀ) is negative under compression: clamp for PSD
    tu = cu_ / lu
    tv = cv_ / lv
    if psd:
        tu = max(tu, 0.0)
        tv = max(tv, 0.0)
    for m in range(3):
        gm = (a[m] * wv[0] + b[m] * wu[0], a[m] * wv[1] + b[m] * wu[1],
              a[m] * wv[2] + b[m] * wu[2])
        for n in range(m, 3):  # block (n, m) is block (m, n) transposed: computed once
            gn = (a[n] * wv[0] + b[n] * wu[0], a[n] * wv[1] + b[n] * wu[1],
                  a[n] * wv[2] + b[n] * wu[2])
            uu = a[m] * a[n]
            vv = b[m] * b[n]
            ku, kv = k_u * uu, k_v * vv
            iso = ku * tu + kv * tv  # the identity part of k_u·a·a·H_u + k_v·b·b·H_v
            if not psd:
                iso += k_s * s * (a[m] * b[n] + b[m] * a[n])
            idx = slot[b_off + 9 * t + 3 * m + n]
            tdx = slot[b_off + 9 * t + 3 * n + m]
            for r in range(3):
                for c in range(3):
                    gg = gm[r] * gn[c]
                    pu = nu[r] * nu[c]
                    pv = nv[r] * nv[c]
                    k = ku * (1.0 - tu) * pu + kv * (1.0 - tv) * pv + k_s * gg
                    if r == c:
                        k += iso
                    d = c_u * uu * pu + c_v * vv * pv + c_s * gg
                    val = A * (cK * k + cD * d)
                    J[idx, r, c] -= val
                    if n != m:
                        J[tdx, c, r] -= val


def triangle_coefficients(material, count: int) -> np.ndarray:
    """(count, 6) k_u, k_v, k_s [N/m] and c_u, c_v, c_s [N·s/m] of each triangle: the energy
    above is weighted by the rest area, so the material's SI values apply unchanged."""
    m = material
    stiff = (m.stretch_stiffness, m.weft_stiffness, m.shear_stiffness,
             m.stretch_damping, m.stretch_damping, m.shear_damping)
    return np.tile(np.array(stiff, dtype=np.float64), (count, 1))


@dataclass(frozen=True)
class MembraneTerms:
    """Baraff–Witkin coefficients: W_u = Σ coef_u·x, W_v = Σ coef_v·x over each triangle's
    corners, (T, 3) each, and the rest area [m²] (0 for a degenerate triangle), (T,)."""

    coef_u: np.ndarray
    coef_v: np.ndarray
    area: np.ndarray


def membrane_terms(model) -> MembraneTerms:
    """Per-triangle B&W coefficients of a ClothModel from its rest triangles' (u, v) coordinates."""
    pos, tris = model.rest_positions, model.membrane_triangles
    d1 = pos[tris[:, 1]] - pos[tris[:, 0]]
    d2 = pos[tris[:, 2]] - pos[tris[:, 0]]
    u1, u2 = np.sum(d1 * model.membrane_frame_u, 1), np.sum(d2 * model.membrane_frame_u, 1)
    v1, v2 = np.sum(d1 * model.membrane_frame_v, 1), np.sum(d2 * model.membrane_frame_v, 1)
    det = u1 * v2 - u2 * v1
    ok = (np.abs(det) > 1e-14 * np.maximum(model.membrane_area, 1e-300) + 1e-300) \
        & (model.membrane_area > 0)  # a degenerate triangle has area 0 (model.py)
    inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)  # degenerate triangles get no force
    cu = np.stack([(v1 - v2) * inv, v2 * inv, -v1 * inv], 1)
    cv = np.stack([(u2 - u1) * inv, -u2 * inv, u1 * inv], 1)
    return MembraneTerms(cu, cv, np.where(ok, model.membrane_area, 0.0))
