"""Provot's strain limiting with the velocity correction (inverse dynamics).

After a step, every edge longer than (1 + max_strain)·L is shortened by moving its ends
towards each other in proportion to their inverse masses (a pinned end does not move, two
pinned ends are left alone, digest E6/P28). Passes alternate direction to avoid the processing-
order bias of a single sweep (P4) and repeat until no edge exceeds the limit. Velocities then
get the same correction divided by the step: without it the seeds' limiter diverges (P3).
"""

import numpy as np

from ._jit import njit


@njit
def limit_strain(x, edges, rest_length, inv_mass, max_strain, max_passes, tolerance):
    """Shorten over-stretched edges in place.

    Args:
        x: positions [m], (V, 3), modified.
        edges: (E, 2); rest_length: [m], (E,).
        inv_mass: [1/kg], (V,); 0 for pinned vertices.
        max_strain: allowed strain (0.05 = 5%).
        max_passes: pass cap.
        tolerance: relative slack accepted at convergence (e.g. 1e-3 of the limit).

    Returns:
        Number of passes run.
    """
    n = edges.shape[0]
    passes = 0
    for p in range(max_passes):
        worst = 0.0
        for q in range(n):
            e = q if p % 2 == 0 else n - 1 - q
            i, j = edges[e, 0], edges[e, 1]
            wi, wj = inv_mass[i], inv_mass[j]
            if wi + wj == 0.0:
                continue
            d = x[j] - x[i]
            l = np.sqrt(np.sum(d * d))
            lmax = (1.0 + max_strain) * rest_length[e]
            if l <= lmax or l == 0.0:
                continue
            excess = (l - lmax) / l
            worst = max(worst, l / rest_length[e] - 1.0 - max_strain)
            corr = excess * d / (wi + wj)
            x[i] += wi * corr
            x[j] -= wj * corr
        passes = p + 1
        if worst <= tolerance * max_strain:
            break
    return passes


def apply_strain_limit(x, v, dt, edges, rest_length, inv_mass, max_strain, max_passes):
    """Limit strain in x and correct v by the position change over dt; returns passes run."""
    before = x.copy()
    passes = limit_strain(x, edges, rest_length, inv_mass, max_strain, max_passes, 1e-3)
    v += (x - before) / dt
    return passes
