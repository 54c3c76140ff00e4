"""Gravity, air drag against a (turbulent) wind, and goal springs of soft pins.

Air acts through the cloth's normal, as in [Vo2006] eq.4.5 and [Volino2000] §2.4's normal-only
air viscosity: the relative air velocity's normal component is braked by pressure drag
(air_drag × vertex area, the presets' linearised ½·ρ_air·C_d·v_ref), its tangential part only by
skin friction, TANGENTIAL_DRAG_RATIO times as strong. So a sheet falling flat reaches
ρ_A·g/air_drag while one falling edge-on is barely braked, and a flag is pushed by the gusts that
hit its face (docs/solver.md, "Air").
"""

import numpy as np

from .._jit import njit, prange

# Skin friction on the cloth's faces relative to pressure drag across it. The textbook two-sided
# laminar skin friction of a flat plate (Blasius: 2 × 1.328/√Re) at the presets' reference speed
# of 1 m/s over 0.2–1 m of cloth (Re 1.3e4–6.7e4) is 0.010–0.023, against C_d ≈ 1.0–1.2 of a
# plate broadside on (the presets take C_d = 1); a woven surface is rougher and lets some air
# through, so the upper end, rounded: 0.03 (docs/solver.md, "Air").
TANGENTIAL_DRAG_RATIO = 0.03

# Random Fourier modes of the gust field; their wavelengths are 2–4 × turbulence_scale, so a
# gust (one lobe of the pattern, half a wavelength) is 1–2 × turbulence_scale across.
GUST_MODES = 24


def vertex_triangles(triangles: np.ndarray, vertex_count: int) -> tuple[np.ndarray, np.ndarray]:
    """The triangles around each vertex as CSR: (ptr (V + 1,), tri (3T,)), in triangle order."""
    flat = np.asarray(triangles, dtype=np.int64).ravel()
    order = np.argsort(flat, kind="stable")
    ptr = np.zeros(vertex_count + 1, dtype=np.int64)
    np.cumsum(np.bincount(flat, minlength=vertex_count), out=ptr[1:])
    return ptr, (order // 3).astype(np.int64)


@njit(parallel=True)
def external_kernel(x, v, mass, drag, gravity, wind, tri, vt_ptr, vt_tri, tau, out_f,
                    out_normal):
    """out_f += m·g − c·[(u·n)n + τ·(u − (u·n)n)] per vertex, with u = v − wind the velocity
    relative to the air, c = air_drag·(vertex area) and n the vertex's unit normal.

    n is the sum of the area vectors of the triangles around the vertex, normalised; a vertex
    whose sum is zero (or whose c is zero) feels the isotropic −c·u and gets n = 0.

    Args:
        x, v: positions [m], velocities [m/s], (V, 3).
        mass: [kg], (V,); drag: each vertex's drag coefficient c [kg/s], (V,).
        gravity: [m/s²], (3,); wind: air velocity at each vertex [m/s], (V, 3).
        tri: (T, 3) triangles; vt_ptr, vt_tri: the triangles around each vertex (CSR).
        tau: tangential (skin friction) share of the drag.
        out_f: forces [N], (V, 3), accumulated into.
        out_normal: each vertex's unit normal (or 0), (V, 3), written.
    """
    for i in prange(x.shape[0]):
        c = drag[i]
        nx = ny = nz = 0.0
        if c != 0.0:
            for k in range(vt_ptr[i], vt_ptr[i + 1]):
                t = vt_tri[k]
                a, b, d = tri[t, 0], tri[t, 1], tri[t, 2]
                e1x, e1y, e1z = x[b, 0] - x[a, 0], x[b, 1] - x[a, 1], x[b, 2] - x[a, 2]
                e2x, e2y, e2z = x[d, 0] - x[a, 0], x[d, 1] - x[a, 1], x[d, 2] - x[a, 2]
                nx += e1y * e2z - e1z * e2y
                ny += e1z * e2x - e1x * e2z
                nz += e1x * e2y - e1y * e2x
            ln = np.sqrt(nx * nx + ny * ny + nz * nz)
            if ln > 0.0:
                nx, ny, nz = nx / ln, ny / ln, nz / ln
            else:
                nx = ny = nz = 0.0
        out_normal[i, 0], out_normal[i, 1], out_normal[i, 2] = nx, ny, nz
        ux, uy, uz = v[i, 0] - wind[i, 0], v[i, 1] - wind[i, 1], v[i, 2] - wind[i, 2]
        if nx == 0.0 and ny == 0.0 and nz == 0.0:
            t_share, n_part = 1.0, 0.0  # isotropic
        else:
            t_share, n_part = tau, (1.0 - tau) * (ux * nx + uy * ny + uz * nz)
        out_f[i, 0] += mass[i] * gravity[0] - c * (t_share * ux + n_part * nx)
        out_f[i, 1] += mass[i] * gravity[1] - c * (t_share * uy + n_part * ny)
        out_f[i, 2] += mass[i] * gravity[2] - c * (t_share * uz + n_part * nz)


@njit
def add_drag_blocks(blocks, slots, s, normal, tau):
    """blocks[slots[i]] += s[i]·[n nᵀ + τ·(I − n nᵀ)] with n = normal[i] (s[i]·I where n = 0,
    as external_kernel's isotropic fallback): with s = −b·c, b times the drag's
    ∂f/∂v = −c·[n nᵀ + τ·(I − n nᵀ)], a symmetric 3×3 block on the diagonal.

    The normal's dependence on the positions (∂n/∂x) is left out of the Jacobian: it turns the
    drag with the cloth, is small beside the elastic stiffness and not symmetric; the implicit
    steps of tests/test_air.py (falling sheets, a flapping flag) are stable without it.
    """
    for i in range(len(slots)):
        p = slots[i]
        nx, ny, nz = normal[i, 0], normal[i, 1], normal[i, 2]
        if nx == 0.0 and ny == 0.0 and nz == 0.0:
            for r in range(3):
                blocks[p, r, r] += s[i]
            continue
        w = (1.0 - tau) * s[i]
        n = (nx, ny, nz)
        for r in range(3):
            blocks[p, r, r] += tau * s[i]
            for q in range(3):
                blocks[p, r, q] += w * n[r] * n[q]


@njit
def goal_spring_kernel(x, idx, stiffness, target, out_f):
    """out_f[idx] += −k·(x − target) for soft pins; idx (P,), stiffness [N/m] (P,), target (P, 3)."""
    for p in range(idx.shape[0]):
        i = idx[p]
        for r in range(3):
            out_f[i, r] -= stiffness[p] * (x[i, r] - target[p, r])


def gust_modes(wind) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
    """The seeded random Fourier modes of ``wind``'s gust field.

    Returns:
        (k (N, 3) wavevectors [rad/m], d (N, 3) unit directions normal to them, phase (N,)
        [rad], omega (N,) [rad/s], amplitude [m/s]).
    """
    rng = np.random.default_rng(wind.seed)
    n = GUST_MODES
    k_dir = rng.normal(size=(n, 3))
    k_dir /= np.linalg.norm(k_dir, axis=1)[:, None]
    # wavelengths log-uniform in [2, 4] × scale
    wavelength = 2.0 * wind.turbulence_scale * np.exp2(rng.uniform(0.0, 1.0, n))
    k = k_dir * (2.0 * np.pi / wavelength)[:, None]
    d = rng.normal(size=(n, 3))
    d -= (d * k_dir).sum(axis=1)[:, None] * k_dir  # transverse: the gusts are divergence-free
    d /= np.linalg.norm(d, axis=1)[:, None]
    phase = rng.uniform(0.0, 2.0 * np.pi, n)
    omega = 2.0 * np.pi * wind.turbulence_frequency * rng.uniform(0.5, 1.5, n)
    return k, d, phase, omega, wind.turbulence * np.sqrt(2.0 / n)


def wind_field(wind, x: np.ndarray, t: float) -> np.ndarray:
    """Air velocity [m/s] at positions x (V, 3) and time t [s].

    The steady ``wind.velocity`` plus, if ``wind.turbulence > 0``, a gust field: GUST_MODES
    seeded random Fourier modes with random directions, wavelengths 2–4 × turbulence_scale
    (gusts 1–2 × turbulence_scale across) and directions normal to their wavevectors (an
    incompressible flow), of r.m.s. speed ``wind.turbulence``. The pattern travels with the
    mean wind (it is a function of x − velocity·t, Taylor's frozen turbulence), so gusts sweep
    across a cloth, and each mode also changes slowly in place at 0.5–1.5 × turbulence_frequency.
    Same seed, same field.
    """
    u = np.asarray(wind.velocity, dtype=np.float64)
    out = np.broadcast_to(u, x.shape).copy()
    if wind.turbulence <= 0.0:
        return out
    k, d, phase, omega, amp = gust_modes(wind)
    # sums of products, not matrix products: those go to OpenBLAS, whose threads then spin on
    # the cores the solver's threads need (docs/solver.md, "No BLAS in a frame")
    y = x - u * t
    arg = y[:, 0:1] * k[:, 0] + y[:, 1:2] * k[:, 1] + y[:, 2:3] * k[:, 2] + (phase + omega * t)
    s = np.sin(arg)
    for r in range(3):
        out[:, r] += amp * np.sum(s * d[:, r], axis=1)
    return out
