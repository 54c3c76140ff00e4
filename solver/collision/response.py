"""Contact impulses on the step velocity, with Coulomb friction ([Bridson2002]; the friction rule
of [Provot1997], [Vo2006] eq.4.12–4.16; keys in docs/references.md).

A step is treated as the straight path x0 → x1 = x0 + h·u. A contact (narrow_phase.py record)
between two primitives with weights w and normal n asks that their separation along n at the
end, d0 + h·Σ w·u·n, be at least its gap. The impulse that achieves it is spread over the
vertices by w_i·m_i⁻¹ (momentum-conserving between cloth layers; collider points have
m⁻¹ = 0 and keep their prescribed motion). Impulses are accumulated per contact and clamped to
push only (projected Gauss–Seidel), so overlapping contacts settle instead of fighting.

Two velocities are corrected: u, which sets the end positions, gets the full push (including
recovering a gap that was already too small), while the end velocity v1 only loses the
approaching normal part (inelastic) and the friction: a pushed-out vertex does not fly off,
so resting contact does not jitter. Friction acts on the relative tangential velocity: it sticks
while the impulse needed to stop it is at most μ times the normal impulse, else it slides
against it with that bound (static and kinetic Coulomb friction with one coefficient).
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from .narrow_phase import D0, GAP, MU, NX, UX


@njit
def apply_contacts(idx, rec, u, v1, inv_mass, h, passes, tol):
    """Projected Gauss–Seidel over contacts, in place; returns the sweeps run.

    Args:
        idx: point indices (K, 4); rec: contact records (K, RECORD) (narrow_phase.py).
        u: step velocities (N, 3) [m/s]; v1: end velocities (N, 3) [m/s]; inv_mass (N,).
        h: step [s]; passes: most sweeps over all contacts; tol: stop once no sweep changes a
        relative normal velocity by more than this [m/s].
    """
    K = idx.shape[0]
    lam = np.zeros(K)          # accumulated normal impulse per contact [kg·m/s]
    lam_t = np.zeros((K, 3))   # accumulated friction impulse
    lam_v = np.zeros(K)        # accumulated inelastic impulse on the end velocity
    sweeps = 0
    for _ in range(passes):
        sweeps += 1
        worst = 0.0
        for k in range(K):
            nx, ny, nz = rec[k, NX], rec[k, NX + 1], rec[k, NX + 2]
            meff = 0.0
            for a in range(4):
                w = rec[k, a]
                meff += w * w * inv_mass[idx[k, a]]
            if meff <= 0.0:
                continue
            Ux, Uy, Uz = rec[k, UX], rec[k, UX + 1], rec[k, UX + 2]
            rx, ry, rz = -Ux, -Uy, -Uz
            for a in range(4):
                w, i = rec[k, a], idx[k, a]
                rx += w * u[i, 0]
                ry += w * u[i, 1]
                rz += w * u[i, 2]
            un = rx * nx + ry * ny + rz * nz
            req = (rec[k, GAP] - rec[k, D0]) / h
            new = max(lam[k] + (req - un) / meff, 0.0)
            dl = new - lam[k]
            lam[k] = new
            worst = max(worst, abs(dl) * meff)
            # friction from the relative tangential velocity after the normal impulse
            rx += dl * meff * nx
            ry += dl * meff * ny
            rz += dl * meff * nz
            un = rx * nx + ry * ny + rz * nz
            tx, ty, tz = rx - un * nx, ry - un * ny, rz - un * nz
            fx = lam_t[k, 0] - tx / meff
            fy = lam_t[k, 1] - ty / meff
            fz = lam_t[k, 2] - tz / meff
            lf = np.sqrt(fx * fx + fy * fy + fz * fz)
            bound = rec[k, MU] * lam[k]
            if lf > bound:
                s = bound / lf
                fx, fy, fz = fx * s, fy * s, fz * s
            dfx, dfy, dfz = fx - lam_t[k, 0], fy - lam_t[k, 1], fz - lam_t[k, 2]
            lam_t[k, 0], lam_t[k, 1], lam_t[k, 2] = fx, fy, fz
            # inelastic part of the end velocity
            vn = -(Ux * nx + Uy * ny + Uz * nz)
            for a in range(4):
                w, i = rec[k, a], idx[k, a]
                vn += w * (v1[i, 0] * nx + v1[i, 1] * ny + v1[i, 2] * nz)
            newv = max(lam_v[k] - vn / meff, 0.0)
            dv = newv - lam_v[k]
            lam_v[k] = newv
            for a in range(4):
                w, i = rec[k, a], idx[k, a]
                c = w * inv_mass[i]
                if c == 0.0:
                    continue
                u[i, 0] += c * (dl * nx + dfx)
                u[i, 1] += c * (dl * ny + dfy)
                u[i, 2] += c * (dl * nz + dfz)
                v1[i, 0] += c * (dv * nx + dfx)
                v1[i, 1] += c * (dv * ny + dfy)
                v1[i, 2] += c * (dv * nz + dfz)
        if worst <= tol:
            break
    return sweeps


def position_constraints(idx, rec, P0, U, h, cloth_count):
    """The contacts' asks on the end positions of the cloth alone: record k asks
    d0 + Σ_a w_a·(x_a − P0_a)·n − h·U_k·n ≥ gap (U_k: a sphere's or plane's own motion), the
    collider points at their prescribed end P0 + h·U; as Σ_a w_a·(n·x_a) ≥ c over the cloth
    points (strain_limit.py holds them with the limit).

    Args:
        idx: point indices (K, 4) into P0 and U (cloth points first, cloth_count of them);
        rec: their records (K, RECORD); P0: start positions (N, 3) [m]; U: step velocities
            (N, 3) [m/s]; h: step [s].

    Returns:
        (idx (K', 4), w (K', 4), n (K', 3), c (K',) [m]) for the K' records with a cloth point;
        collider points get weight 0 (and index 0).
    """
    w = rec[:, :4].copy()
    n = rec[:, NX:NX + 3]
    collider = idx >= cloth_count
    pts = np.where(collider, 0, idx)
    # the collider points' fixed share of the separation, moved to the right-hand side
    moved_by = h * np.einsum("kj,kaj->ka", n, U[idx])
    c = (rec[:, GAP] - rec[:, D0] + h * np.einsum("kj,kj->k", n, rec[:, UX:UX + 3])
         + np.einsum("ka,kj,kaj->k", np.where(collider, 0.0, w), n, P0[idx])
         - np.einsum("ka,ka->k", np.where(collider, w, 0.0), moved_by))
    w[collider] = 0.0
    keep = np.any(w != 0.0, axis=1)
    return (np.ascontiguousarray(pts[keep]), np.ascontiguousarray(w[keep]),
            np.ascontiguousarray(n[keep]), np.ascontiguousarray(c[keep]))
