"""Provot's strain limiting with the velocity correction (inverse dynamics) [Provot1995].

After a step, every edge longer than (1 + max_strain)·L is shortened by moving its ends towards
each other in proportion to their inverse masses (Vo's half-excess rule, [Vo2006] §5.1, §6.1);
two fixed ends are left alone ([Vo2006] §6.1). Sweeps alternate direction, against the
processing-order bias of one-way sweeps ([Vo2006] §7.1.1 Test 3, §7.2.4), and repeat until no
edge exceeds the limit. Gauss–Seidel sweeps alone diffuse a correction one edge per sweep (O(n²)
sweeps for cloth hanging from a corner; [Vo2006] §7.5.2), so each sweep starts with tethers
("long-range attachments"): a vertex may be at most (1 + max_strain) times its rest path length
from its nearest fixed vertex. The edge limits imply the tethers, so they change the answer only
by converging faster. Velocities get the same correction divided by the step: without it the
limiter diverges ([Vo2006] §7.1.1 Test 3). Keys in brackets are in docs/references.md.
"""

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import dijkstra

from ._jit import njit


def tethers(edges: np.ndarray, rest_length: np.ndarray, vertex_count: int,
            fixed: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nearest fixed vertex of every vertex and the rest path length to it.

    Args:
        edges: graph edges (E, 2) with rest lengths [m] (E,); polygon edges plus diagonals
            give path lengths within ~8% of the geodesic on grids.
        vertex_count: V.
        fixed: fixed vertex indices.

    Returns:
        (vertices (N,), anchors (N,), rest distances [m] (N,)) for the N vertices connected to
        a fixed vertex (fixed ones excluded); empty without fixed vertices.
    """
    n = vertex_count
    empty = (np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0))
    if len(fixed) == 0 or len(edges) == 0:
        return empty
    adj = coo_matrix((np.concatenate([rest_length, rest_length]),
                      (np.concatenate([edges[:, 0], edges[:, 1]]),
                       np.concatenate([edges[:, 1], edges[:, 0]]))), shape=(n, n)).tocsr()
    dist, _, source = dijkstra(adj, indices=fixed, min_only=True, return_predecessors=True)
    is_fixed = np.zeros(n, bool)
    is_fixed[fixed] = True
    ok = np.isfinite(dist) & ~is_fixed & (source >= 0)
    v = np.nonzero(ok)[0]
    return v, source[ok].astype(np.int64), dist[ok]


@njit
def _pull_tethers(x, verts, anchors, dist, max_strain):
    """Move each vertex back within (1 + max_strain)·dist of its anchor."""
    for k in range(verts.shape[0]):
        i, a = verts[k], anchors[k]
        dx, dy, dz = x[i, 0] - x[a, 0], x[i, 1] - x[a, 1], x[i, 2] - x[a, 2]
        l = np.sqrt(dx * dx + dy * dy + dz * dz)
        lmax = (1.0 + max_strain) * dist[k]
        if l > lmax:
            s = lmax / l
            x[i, 0], x[i, 1], x[i, 2] = x[a, 0] + dx * s, x[a, 1] + dy * s, x[a, 2] + dz * s


@njit
def limit_strain(x, edges, rest_length, inv_mass, tether_verts, tether_anchors, tether_dist,
                 max_strain, max_passes, tolerance):
    """Shorten over-stretched edges in place.

    Args:
        x: positions [m], (V, 3), modified.
        edges: (E, 2); rest_length: [m], (E,).
        inv_mass: [1/kg], (V,); 0 for pinned vertices.
        tether_verts, tether_anchors, tether_dist: see ``tethers``.
        max_strain: allowed strain (0.05 = 5%).
        max_passes: pass cap.
        tolerance: relative slack accepted at convergence (e.g. 1e-3 of the limit).

    Returns:
        Number of passes run.
    """
    n = edges.shape[0]
    passes = 0
    for p in range(max_passes):
        _pull_tethers(x, tether_verts, tether_anchors, tether_dist, max_strain)
        worst = 0.0
        for q in range(n):
            e = q if p % 2 == 0 else n - 1 - q
            i, j = edges[e, 0], edges[e, 1]
            wi, wj = inv_mass[i], inv_mass[j]
            if wi + wj == 0.0:
                continue
            # scalars, not (3,) temporaries: numba allocates those per edge, which made a pass
            # many times slower (docs/solver.md, "Strain limiter")
            dx, dy, dz = x[j, 0] - x[i, 0], x[j, 1] - x[i, 1], x[j, 2] - x[i, 2]
            l = np.sqrt(dx * dx + dy * dy + dz * dz)
            lmax = (1.0 + max_strain) * rest_length[e]
            if l <= lmax or l == 0.0:
                continue
            worst = max(worst, l / rest_length[e] - 1.0 - max_strain)
            c = (l - lmax) / l / (wi + wj)
            x[i, 0] += wi * c * dx
            x[i, 1] += wi * c * dy
            x[i, 2] += wi * c * dz
            x[j, 0] -= wj * c * dx
            x[j, 1] -= wj * c * dy
            x[j, 2] -= wj * c * dz
        passes = p + 1
        if worst <= tolerance * max_strain:
            break
    return passes


def apply_strain_limit(x, v, dt, edges, rest_length, inv_mass, tether, max_strain, max_passes):
    """Limit strain in x and correct v by the position change over dt; returns passes run.

    ``tether`` is the (verts, anchors, dist) triple from ``tethers``.
    """
    before = x.copy()
    passes = limit_strain(x, edges, rest_length, inv_mass, tether[0], tether[1], tether[2],
                          max_strain, max_passes, 1e-3)
    v += (x - before) / dt
    return passes
