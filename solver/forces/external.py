"""Gravity, air drag against a (turbulent) wind, and goal springs of soft pins."""

import numpy as np

from .._jit import njit, prange


@njit(parallel=True)
def external_kernel(x, v, mass, drag, gravity, wind, out_f):
    """out_f += m·g − c·(v − wind) per vertex, with c = air_drag·(vertex area).

    Args:
        x, v: positions [m], velocities [m/s], (V, 3).
        mass: [kg], (V,); drag: each vertex's drag coefficient c [kg/s], (V,).
        gravity: [m/s²], (3,); wind: air velocity at each vertex [m/s], (V, 3).
        out_f: forces [N], (V, 3), accumulated into.
    """
    for i in prange(x.shape[0]):
        c = drag[i]
        for r in range(3):
            out_f[i, r] += mass[i] * gravity[r] - c * (v[i, r] - wind[i, r])


@njit
def goal_spring_kernel(x, idx, stiffness, target, out_f):
    """out_f[idx] += −k·(x − target) for soft pins; idx (P,), stiffness [N/m] (P,), target (P, 3)."""
    for p in range(idx.shape[0]):
        i = idx[p]
        for r in range(3):
            out_f[i, r] -= stiffness[p] * (x[i, r] - target[p, r])


def wind_field(wind, x: np.ndarray, t: float) -> np.ndarray:
    """Air velocity [m/s] at positions x (V, 3) and time t [s].

    A steady wind plus, if ``wind.turbulence > 0``, a smooth gust field: four travelling
    sinusoids with seeded random directions and phases, scaled so that the r.m.s. gust speed is
    ``wind.turbulence``.
    """
    out = np.broadcast_to(np.asarray(wind.velocity, dtype=np.float64), x.shape).copy()
    if wind.turbulence <= 0.0:
        return out
    rng = np.random.default_rng(wind.seed)
    n_modes = 4
    q = rng.normal(size=(n_modes, 3))
    q /= np.linalg.norm(q, axis=1)[:, None]
    d = rng.normal(size=(n_modes, 3))
    d /= np.linalg.norm(d, axis=1)[:, None]
    phase = rng.uniform(0, 2 * np.pi, n_modes)
    freq = wind.turbulence_frequency * rng.uniform(0.5, 1.5, n_modes)
    arg = 2 * np.pi * (x @ q.T) / wind.turbulence_scale + 2 * np.pi * freq * t + phase
    amp = wind.turbulence * np.sqrt(2.0 / n_modes)
    return out + amp * np.sin(arg) @ d
