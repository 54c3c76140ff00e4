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

After the collision pipeline's pushes the limiter can also hold one-sided linear constraints
Σ_a w_a·(n·x_a) ≥ c (the pipeline's contacts as position constraints,
collision/response.py ``position_constraints``), projected in the same Gauss–Seidel passes:
the limit and the contacts are then satisfied together instead of in alternating rounds of
limiter and pushes, which converge slowly where a body stretches the cloth over itself.
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


# With one-sided constraints, the limiter lets them go when its worst excess has not fallen
# below STALL_RATIO of what it was STALL_PASSES passes before
STALL_PASSES = 32
STALL_RATIO = 0.9


@njit
def _project_constraints(x, inv_mass, idx, w, n, c):
    """Project x onto each one-sided constraint Σ_a w[k,a]·(n[k]·x[idx[k,a]]) ≥ c[k] in turn,
    moving each point by w·inv_mass along n; returns the largest violation met [m]."""
    worst = 0.0
    for k in range(idx.shape[0]):
        nx, ny, nz = n[k, 0], n[k, 1], n[k, 2]
        s = -c[k]
        meff = 0.0
        for a in range(idx.shape[1]):
            i = idx[k, a]
            s += w[k, a] * (nx * x[i, 0] + ny * x[i, 1] + nz * x[i, 2])
            meff += w[k, a] * w[k, a] * inv_mass[i]
        if s >= 0.0 or meff == 0.0:
            continue
        worst = max(worst, -s)
        lam = -s / meff
        for a in range(idx.shape[1]):
            i = idx[k, a]
            d = w[k, a] * inv_mass[i] * lam
            x[i, 0] += d * nx
            x[i, 1] += d * ny
            x[i, 2] += d * nz
    return worst


@njit
def limit_strain(x, edges, rest_length, inv_mass, tether_verts, tether_anchors, tether_dist,
                 max_strain, max_passes, tolerance, c_idx=None, c_w=None, c_n=None, c_c=None,
                 c_tolerance=0.0):
    """Shorten over-stretched edges in place.

    Args:
        x: positions [m], (V, 3), modified.
        edges: (E, 2); rest_length: [m], (E,).
        inv_mass: [1/kg], (V,); 0 for pinned vertices.
        tether_verts, tether_anchors, tether_dist: see ``tethers``.
        max_strain: allowed strain (0.05 = 5%).
        max_passes: pass cap.
        tolerance: relative slack accepted at convergence (e.g. 1e-3 of the limit).
        c_idx, c_w, c_n, c_c: optional one-sided constraints Σ_a c_w[k,a]·(c_n[k]·x[c_idx[k,a]])
            ≥ c_c[k] ((K, A) int, (K, A), (K, 3), (K,)), projected after the edges in every
            pass; converged also needs every violation ≤ c_tolerance [m]. Where they and
            the limit stall (cannot both hold), the passes go on with the edges alone.

    Returns:
        Number of passes run.
    """
    n = edges.shape[0]
    passes = 0
    window_start = 0.0
    constrained = True  # while the constraints (if any) are held
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
        if c_idx is not None and constrained:
            violated = _project_constraints(x, inv_mass, c_idx, c_w, c_n, c_c) > c_tolerance
            # where the limit and the constraints cannot both hold (cloth caught between
            # bodies, or through one) the excess stops falling: the edges alone are limited
            # from then on
            if p % STALL_PASSES == 0:
                if p > 0 and worst > STALL_RATIO * window_start:
                    constrained = False
                window_start = worst
            if violated and constrained:
                continue
        if worst <= tolerance * max_strain:
            break
    return passes


def apply_strain_limit(x, v, dt, edges, rest_length, inv_mass, tether, max_strain, max_passes,
                       constraints=None, slack=0.0):
    """Limit strain in x and correct v by the position change over dt; returns passes run.

    ``tether`` is the (verts, anchors, dist) triple from ``tethers``; ``constraints`` None or
    (idx, w, n, c, tolerance, reject), one-sided constraints held in the same passes
    (limit_strain). Their result is kept where it leaves no constraint violated by more than
    ``reject`` [m] and every edge within (1 + slack) times the limit; elsewhere (contacts
    that contradict each other, as around a body through the cloth) the limit alone is
    applied, as without them.
    """
    before = x.copy()
    passes = 0
    if constraints is not None:
        # only those x keeps: one it already violates by more than ``reject`` is one the
        # pushes could not satisfy (a pair through each other), and would drag the cloth
        constraints = _kept(x, constraints)
    if constraints is not None and len(constraints[0]):
        passes = limit_strain(x, edges, rest_length, inv_mass, tether[0], tether[1],
                              tether[2], max_strain, max_passes, 1e-3, *constraints[:5])
        if _holds(x, edges, rest_length, max_strain * (1.0 + slack), constraints):
            v += (x - before) / dt
            return passes
        # they cannot both hold here: the limit alone, as without them (the caller's next
        # resolve pushes again)
        x[:] = before
    passes += limit_strain(x, edges, rest_length, inv_mass, tether[0], tether[1], tether[2],
                           max_strain, max_passes, 1e-3)
    v += (x - before) / dt
    return passes


def _violation(x, constraints):
    """How far x violates each one-sided constraint [m] (negative: it holds)."""
    idx, w, n, c = constraints[:4]
    return c - np.einsum("ka,kj,kaj->k", w, n, x[idx])


def _kept(x, constraints):
    """The constraints x violates by at most their ``reject`` distance."""
    keep = _violation(x, constraints) <= constraints[5]
    return tuple(a[keep] for a in constraints[:4]) + tuple(constraints[4:])


def _holds(x, edges, rest_length, max_strain, constraints) -> bool:
    """Whether x keeps every edge within max_strain and violates no one-sided constraint by
    more than its ``reject`` distance [m]."""
    length = np.linalg.norm(x[edges[:, 1]] - x[edges[:, 0]], axis=1)
    if np.any(length > (1.0 + max_strain) * rest_length):
        return False
    return bool(np.all(_violation(x, constraints) <= constraints[5]))
