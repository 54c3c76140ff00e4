"""Analytic colliders: spheres and half-spaces (planes), moving by translation.

Both are convex, so checking a vertex at the start and at the end of its step along the start
normal is a continuous test: with s(t) the signed distance along the start normal n0 (linear
in t for linear motion), the true distance to a convex surface is at least s(t), so s(0) and
s(1) above the gap keep the whole path outside. Contacts become records of narrow_phase.py
(one vertex, the collider's velocity as U) and share the impulse solver (response.py) with the
mesh and self contacts, so that stacked contacts support each other.

A sphere small against the cloth's triangles can also poke between the vertices; for those,
triangles whose interior point closest to the centre would end too close get a contact too.

Arrays: centres/points at the start and end of the step c0, c1 (S, 3) / (P, 3) [m], radius
(S,) [m], unit normals (P, 3), contact distance (gap) [m] and friction μ per collider; spheres
come first in the collider numbering a = 0 .. S + P − 1.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit, prange
from .closest import point_triangle
from .narrow_phase import RECORD
from .vector import load


@njit(inline="always")
def _surface(x0, i, a, h, s_c0, s_c1, s_r, s_gap, s_mu, p_o0, p_o1, p_n, p_gap, p_mu):
    """Vertex i against collider a: (normal (3), signed distance at the start [m], surface
    velocity (3) [m/s], gap [m], μ)."""
    S = s_r.shape[0]
    if a < S:
        dx, dy, dz = x0[i, 0] - s_c0[a, 0], x0[i, 1] - s_c0[a, 1], x0[i, 2] - s_c0[a, 2]
        d = np.sqrt(dx * dx + dy * dy + dz * dz)
        if d > 0.0:
            nx, ny, nz = dx / d, dy / d, dz / d
        else:
            nx, ny, nz = 0.0, 0.0, 1.0
        return (nx, ny, nz, d - s_r[a], (s_c1[a, 0] - s_c0[a, 0]) / h,
                (s_c1[a, 1] - s_c0[a, 1]) / h, (s_c1[a, 2] - s_c0[a, 2]) / h, s_gap[a], s_mu[a])
    p = a - S
    nx, ny, nz = p_n[p, 0], p_n[p, 1], p_n[p, 2]
    d0 = (x0[i, 0] - p_o0[p, 0]) * nx + (x0[i, 1] - p_o0[p, 1]) * ny + (x0[i, 2] - p_o0[p, 2]) * nz
    return (nx, ny, nz, d0, (p_o1[p, 0] - p_o0[p, 0]) / h, (p_o1[p, 1] - p_o0[p, 1]) / h,
            (p_o1[p, 2] - p_o0[p, 2]) / h, p_gap[p], p_mu[p])


@njit(parallel=True)
def _vertex_records(x0, u, inv_mass, h, s_c0, s_c1, s_r, s_gap, s_mu, p_o0, p_o1, p_n, p_gap,
                    p_mu, gap_scale, flag, idx, rec):
    A = s_r.shape[0] + p_n.shape[0]
    for i in prange(x0.shape[0]):
        for a in range(A):
            k = i * A + a
            flag[k] = 0
            if inv_mass[i] <= 0.0:
                continue
            nx, ny, nz, d0, ux, uy, uz, gap, mu = _surface(x0, i, a, h, s_c0, s_c1, s_r, s_gap,
                                                           s_mu, p_o0, p_o1, p_n, p_gap, p_mu)
            un = (u[i, 0] - ux) * nx + (u[i, 1] - uy) * ny + (u[i, 2] - uz) * nz
            want = gap_scale * gap
            if d0 + h * un >= want:
                continue
            flag[k] = 1
            idx[k, 0] = idx[k, 1] = idx[k, 2] = idx[k, 3] = i
            rec[k, 0], rec[k, 1], rec[k, 2], rec[k, 3] = 1.0, 0.0, 0.0, 0.0
            rec[k, 4], rec[k, 5], rec[k, 6] = nx, ny, nz
            rec[k, 7], rec[k, 8], rec[k, 9] = d0, want, mu
            rec[k, 10], rec[k, 11], rec[k, 12] = ux, uy, uz


def contact_records(x0, u, inv_mass, h, s_c0, s_c1, s_r, s_gap, s_mu, p_o0, p_o1, p_n, p_gap,
                    p_mu, gap_scale):
    """Vertex–sphere and vertex–plane contacts as records (idx (K, 4), rec (K, RECORD)): the
    vertices (start x0 (V, 3) [m], step velocity u (V, 3) [m/s]) predicted to end closer than
    gap_scale·gap along their start normal."""
    V, A = len(x0), len(s_r) + len(p_n)
    flag = np.zeros(V * A, np.int64)
    idx = np.empty((V * A, 4), np.int64)
    rec = np.empty((V * A, RECORD))
    if V * A:
        _vertex_records(x0, u, inv_mass, h, s_c0, s_c1, s_r, s_gap, s_mu, p_o0, p_o1, p_n,
                        p_gap, p_mu, gap_scale, flag, idx, rec)
    keep = np.nonzero(flag)[0]
    return idx[keep], rec[keep]


@njit(parallel=True)
def _face_records(tris, x0, u, inv_mass, h, s_c0, s_c1, s_r, s_gap, s_mu, gap_scale, flag, idx,
                  rec):
    S = s_r.shape[0]
    for t in prange(tris.shape[0]):
        i, j, l = tris[t, 0], tris[t, 1], tris[t, 2]
        for s in range(S):
            k = t * S + s
            flag[k] = 0
            if inv_mass[i] + inv_mass[j] + inv_mass[l] <= 0.0:
                continue
            c0 = load(s_c0, s)
            d2, wa, wb, wc = point_triangle(c0, load(x0, i), load(x0, j), load(x0, l))
            if wa >= 1.0 or wb >= 1.0 or wc >= 1.0:
                continue  # closest at a vertex: the vertex's own contact covers it
            d = np.sqrt(d2)
            if d <= 0.0:
                continue
            nx = (wa * x0[i, 0] + wb * x0[j, 0] + wc * x0[l, 0] - c0[0]) / d
            ny = (wa * x0[i, 1] + wb * x0[j, 1] + wc * x0[l, 1] - c0[1]) / d
            nz = (wa * x0[i, 2] + wb * x0[j, 2] + wc * x0[l, 2] - c0[2]) / d
            ux = (s_c1[s, 0] - s_c0[s, 0]) / h
            uy = (s_c1[s, 1] - s_c0[s, 1]) / h
            uz = (s_c1[s, 2] - s_c0[s, 2]) / h
            un = (wa * ((u[i, 0] - ux) * nx + (u[i, 1] - uy) * ny + (u[i, 2] - uz) * nz)
                  + wb * ((u[j, 0] - ux) * nx + (u[j, 1] - uy) * ny + (u[j, 2] - uz) * nz)
                  + wc * ((u[l, 0] - ux) * nx + (u[l, 1] - uy) * ny + (u[l, 2] - uz) * nz))
            want = gap_scale * s_gap[s]
            d0 = d - s_r[s]
            if d0 + h * un >= want:
                continue
            flag[k] = 1
            idx[k, 0], idx[k, 1], idx[k, 2], idx[k, 3] = i, j, l, l
            rec[k, 0], rec[k, 1], rec[k, 2], rec[k, 3] = wa, wb, wc, 0.0
            rec[k, 4], rec[k, 5], rec[k, 6] = nx, ny, nz
            rec[k, 7], rec[k, 8], rec[k, 9] = d0, want, s_mu[s]
            rec[k, 10], rec[k, 11], rec[k, 12] = ux, uy, uz


def sphere_face_records(tris, x0, u, inv_mass, h, s_c0, s_c1, s_r, s_gap, s_mu, gap_scale):
    """Triangle-interior contacts with spheres (see the module docstring), as records."""
    T, S = len(tris), len(s_r)
    flag = np.zeros(T * S, np.int64)
    idx = np.empty((T * S, 4), np.int64)
    rec = np.empty((T * S, RECORD))
    if T * S:
        _face_records(tris, x0, u, inv_mass, h, s_c0, s_c1, s_r, s_gap, s_mu, gap_scale, flag,
                      idx, rec)
    keep = np.nonzero(flag)[0]
    return idx[keep], rec[keep]


@njit(parallel=True)
def predicted_contacts(x0, vp, inv_mass, h, s_c0, s_c1, s_r, s_gap, s_mu, p_o0, p_o1, p_n,
                       p_gap, p_mu, best, normal, vel, surf, fric, start, gap_out):
    """For each cloth vertex, the sphere or plane it is predicted to come closest to within its
    gap this step (velocity vp (V, 3) [m/s] from x0 (V, 3) [m]), for the implicit solve's
    contact constraints (constraints.py).

    Outputs per vertex: best = predicted end separation minus the gap [m] (< 0: a contact;
    +inf: none), the start normal, the normal velocity that ends the step at the gap [m/s],
    the surface velocity (V, 3) [m/s], the friction coefficient, the start separation minus
    the gap [m] and the gap [m].
    """
    A = s_r.shape[0] + p_n.shape[0]
    for i in prange(x0.shape[0]):
        best[i] = np.inf
        if inv_mass[i] <= 0.0:
            continue
        for a in range(A):
            nx, ny, nz, d0, ux, uy, uz, gap, mu = _surface(x0, i, a, h, s_c0, s_c1, s_r, s_gap,
                                                           s_mu, p_o0, p_o1, p_n, p_gap, p_mu)
            un = (vp[i, 0] - ux) * nx + (vp[i, 1] - uy) * ny + (vp[i, 2] - uz) * nz
            margin = d0 + h * un - gap
            if margin < best[i]:
                best[i] = margin
                normal[i, 0], normal[i, 1], normal[i, 2] = nx, ny, nz
                vel[i] = (gap - d0) / h + ux * nx + uy * ny + uz * nz
                surf[i, 0], surf[i, 1], surf[i, 2] = ux, uy, uz
                fric[i] = mu
                start[i] = d0 - gap
                gap_out[i] = gap
