"""Analytic colliders: spheres and half-spaces (planes), moving by translation.

Both are convex, so checking a vertex at the start and at the end of its step along the start
normal is a continuous test: with s(t) the signed distance along the start normal n0 (linear
in t for linear motion), the true distance to a convex surface is at least s(t), so s(0) and
s(1) above the gap keep the whole path outside. A vertex predicted to end closer than its gap
is pushed out (position) while its end velocity only loses its approaching part (an inelastic,
jitter-free contact), with Coulomb friction that sticks while the tangential velocity can be
stopped by μ times the normal velocity change and slides otherwise (digest R1).

Arrays: centres/points at the start and end of the step c0, c1 (S, 3) [m], radius (S,) [m],
normals (P, 3), gap (contact distance) [m] and friction μ per collider.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit, prange
from .closest import point_triangle
from .vector import load


@njit(inline="always")
def _respond(u, v1, i, nx, ny, nz, d0, ux, uy, uz, want, mu, h):
    """Push vertex i to end at least ``want`` from a surface moving with velocity (ux, uy, uz).

    Returns 1 if the vertex was in contact, else 0.
    """
    rx, ry, rz = u[i, 0] - ux, u[i, 1] - uy, u[i, 2] - uz
    un = rx * nx + ry * ny + rz * nz
    req = (want - d0) / h
    if un >= req:
        return 0
    jn = req - un  # normal velocity change [m/s]
    tx, ty, tz = rx - un * nx, ry - un * ny, rz - un * nz
    lt = np.sqrt(tx * tx + ty * ty + tz * tz)
    keep = 0.0 if lt <= mu * jn else 1.0 - mu * jn / lt  # static : kinetic friction
    ftx, fty, ftz = (keep - 1.0) * tx, (keep - 1.0) * ty, (keep - 1.0) * tz
    u[i, 0] += jn * nx + ftx
    u[i, 1] += jn * ny + fty
    u[i, 2] += jn * nz + ftz
    vn = (v1[i, 0] - ux) * nx + (v1[i, 1] - uy) * ny + (v1[i, 2] - uz) * nz
    dv = -vn if vn < 0.0 else 0.0
    v1[i, 0] += dv * nx + ftx
    v1[i, 1] += dv * ny + fty
    v1[i, 2] += dv * nz + ftz
    return 1


@njit(parallel=True)
def vertex_contacts(x0, u, v1, inv_mass, h, s_c0, s_c1, s_r, s_gap, s_mu, p_o0, p_o1, p_n,
                    p_gap, p_mu, gap_scale, passes, contact):
    """Resolve every cloth vertex against every sphere and plane, in place.

    Args:
        x0: start positions (V, 3) [m]; u: step velocity (x1 − x0)/h (V, 3) [m/s], updated;
        v1: end velocities (V, 3) [m/s], updated; inv_mass (V,) [1/kg] (0: not moved).
        h: step [s]. gap_scale: fraction of each collider's gap required (1 for the proximity
        stage; a small value once only penetration matters). passes: Gauss–Seidel sweeps over
        the colliders of a vertex (a vertex can touch several).
        contact: out, 1 where the vertex touched a collider, (V,).
    """
    for i in prange(x0.shape[0]):
        contact[i] = 0
        if inv_mass[i] <= 0.0:
            continue
        for _ in range(passes):
            hit = 0
            for s in range(s_r.shape[0]):
                dx, dy, dz = x0[i, 0] - s_c0[s, 0], x0[i, 1] - s_c0[s, 1], x0[i, 2] - s_c0[s, 2]
                d = np.sqrt(dx * dx + dy * dy + dz * dz)
                if d > 0.0:
                    nx, ny, nz = dx / d, dy / d, dz / d
                else:
                    nx, ny, nz = 0.0, 0.0, 1.0
                hit |= _respond(u, v1, i, nx, ny, nz, d - s_r[s], (s_c1[s, 0] - s_c0[s, 0]) / h,
                                (s_c1[s, 1] - s_c0[s, 1]) / h, (s_c1[s, 2] - s_c0[s, 2]) / h,
                                gap_scale * s_gap[s], s_mu[s], h)
            for p in range(p_n.shape[0]):
                nx, ny, nz = p_n[p, 0], p_n[p, 1], p_n[p, 2]
                d0 = ((x0[i, 0] - p_o0[p, 0]) * nx + (x0[i, 1] - p_o0[p, 1]) * ny
                      + (x0[i, 2] - p_o0[p, 2]) * nz)
                hit |= _respond(u, v1, i, nx, ny, nz, d0, (p_o1[p, 0] - p_o0[p, 0]) / h,
                                (p_o1[p, 1] - p_o0[p, 1]) / h, (p_o1[p, 2] - p_o0[p, 2]) / h,
                                gap_scale * p_gap[p], p_mu[p], h)
            contact[i] |= hit
            if hit == 0:
                break


@njit(parallel=True)
def _sphere_faces(tris, x1, s_c1, s_r, flags):
    """flags[t] = 1 where a sphere reaches into triangle t between its vertices (x1 [m])."""
    for t in prange(tris.shape[0]):
        flags[t] = 0
        a, b, c = load(x1, tris[t, 0]), load(x1, tris[t, 1]), load(x1, tris[t, 2])
        for s in range(s_r.shape[0]):
            d2, wa, wb, wc = point_triangle(load(s_c1, s), a, b, c)
            if d2 < s_r[s] * s_r[s] and wa < 1.0 and wb < 1.0 and wc < 1.0:
                flags[t] = 1


@njit
def _push_faces(tris, flagged, x0, u, v1, inv_mass, h, s_c1, s_r):
    """Push flagged triangles off the spheres, spreading the move over their vertices by their
    barycentric weights and inverse masses (a vertex's own contacts keep the vertices out)."""
    for k in range(flagged.shape[0]):
        t = flagged[k]
        i, j, l = tris[t, 0], tris[t, 1], tris[t, 2]
        for s in range(s_r.shape[0]):
            a = (x0[i, 0] + h * u[i, 0], x0[i, 1] + h * u[i, 1], x0[i, 2] + h * u[i, 2])
            b = (x0[j, 0] + h * u[j, 0], x0[j, 1] + h * u[j, 1], x0[j, 2] + h * u[j, 2])
            c = (x0[l, 0] + h * u[l, 0], x0[l, 1] + h * u[l, 1], x0[l, 2] + h * u[l, 2])
            cen = load(s_c1, s)
            d2, wa, wb, wc = point_triangle(cen, a, b, c)
            if d2 >= s_r[s] * s_r[s]:
                continue
            qx = wa * a[0] + wb * b[0] + wc * c[0] - cen[0]
            qy = wa * a[1] + wb * b[1] + wc * c[1] - cen[1]
            qz = wa * a[2] + wb * b[2] + wc * c[2] - cen[2]
            d = np.sqrt(d2)
            if d <= 0.0:
                continue
            depth = s_r[s] * (1.0 + 1e-9) - d
            meff = wa * wa * inv_mass[i] + wb * wb * inv_mass[j] + wc * wc * inv_mass[l]
            if meff <= 0.0:
                continue
            lam = depth / (h * meff)
            for v, w in ((i, wa), (j, wb), (l, wc)):
                du = w * inv_mass[v] * lam
                u[v, 0] += du * qx / d
                u[v, 1] += du * qy / d
                u[v, 2] += du * qz / d


def sphere_faces(tris, x0, u, v1, inv_mass, h, s_c1, s_r) -> int:
    """Keep spheres smaller than the cloth's triangles from poking between vertices.

    Returns the number of triangles pushed."""
    if len(s_r) == 0:
        return 0
    flags = np.zeros(len(tris), np.int64)
    x1 = x0 + h * u
    _sphere_faces(tris, x1, s_c1, s_r, flags)
    flagged = np.nonzero(flags)[0]
    if len(flagged):
        _push_faces(tris, flagged, x0, u, v1, inv_mass, h, s_c1, s_r)
    return len(flagged)


@njit(inline="always")
def _keep_deepest(i, margin, nx, ny, nz, target, ux, uy, uz, mu, best, normal, vel, surf, fric):
    if margin < best[i]:
        best[i] = margin
        normal[i, 0], normal[i, 1], normal[i, 2] = nx, ny, nz
        vel[i] = target
        surf[i, 0], surf[i, 1], surf[i, 2] = ux, uy, uz
        fric[i] = mu


@njit(parallel=True)
def predicted_contacts(x0, vp, inv_mass, h, s_c0, s_c1, s_r, s_gap, s_mu, p_o0, p_o1, p_n,
                       p_gap, p_mu, best, normal, vel, surf, fric):
    """For each cloth vertex, the sphere or plane it is predicted to come closest to within its
    gap this step (velocity vp (V, 3) [m/s] from x0 (V, 3) [m]).

    Outputs per vertex: best = predicted end separation minus the gap [m] (< 0: a contact;
    +inf: none), the start normal, the normal velocity that ends the step at the gap [m/s],
    the surface velocity (V, 3) [m/s] and the friction coefficient.
    """
    for i in prange(x0.shape[0]):
        best[i] = np.inf
        if inv_mass[i] <= 0.0:
            continue
        for s in range(s_r.shape[0]):
            dx, dy, dz = x0[i, 0] - s_c0[s, 0], x0[i, 1] - s_c0[s, 1], x0[i, 2] - s_c0[s, 2]
            d = np.sqrt(dx * dx + dy * dy + dz * dz)
            if d > 0.0:
                nx, ny, nz = dx / d, dy / d, dz / d
            else:
                nx, ny, nz = 0.0, 0.0, 1.0
            ux = (s_c1[s, 0] - s_c0[s, 0]) / h
            uy = (s_c1[s, 1] - s_c0[s, 1]) / h
            uz = (s_c1[s, 2] - s_c0[s, 2]) / h
            un = (vp[i, 0] - ux) * nx + (vp[i, 1] - uy) * ny + (vp[i, 2] - uz) * nz
            d0 = d - s_r[s]
            margin = d0 + h * un - s_gap[s]
            if margin < 0.0:
                target = (s_gap[s] - d0) / h + ux * nx + uy * ny + uz * nz
                _keep_deepest(i, margin, nx, ny, nz, target, ux, uy, uz, s_mu[s], best, normal,
                              vel, surf, fric)
        for p in range(p_n.shape[0]):
            nx, ny, nz = p_n[p, 0], p_n[p, 1], p_n[p, 2]
            ux = (p_o1[p, 0] - p_o0[p, 0]) / h
            uy = (p_o1[p, 1] - p_o0[p, 1]) / h
            uz = (p_o1[p, 2] - p_o0[p, 2]) / h
            d0 = ((x0[i, 0] - p_o0[p, 0]) * nx + (x0[i, 1] - p_o0[p, 1]) * ny
                  + (x0[i, 2] - p_o0[p, 2]) * nz)
            un = (vp[i, 0] - ux) * nx + (vp[i, 1] - uy) * ny + (vp[i, 2] - uz) * nz
            margin = d0 + h * un - p_gap[p]
            if margin < 0.0:
                target = (p_gap[p] - d0) / h + ux * nx + uy * ny + uz * nz
                _keep_deepest(i, margin, nx, ny, nz, target, ux, uy, uz, p_mu[p], best, normal,
                              vel, surf, fric)
