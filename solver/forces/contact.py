"""Contact as an energy of the implicit solve: cloth layers against each other, and cloth
against collider meshes, both sides of every pair moved by the solve.

A contact pair k is a vertex–face or edge–edge pair of features (collision/contact_pairs.py)
with four points p_j (cloth vertices, or collider points whose end positions are prescribed),
weights w_j (Σ w_j = 0, Σ w_j·p_j the vector from the second primitive's closest point to the
first's) and a unit normal n, both frozen for the step at its start. Its separation along n,
d = n·Σ w_j·p_j, is linear in the positions, and the pair stores

    E = ½·κ·(d̂ − d)²  while d < d̂ (0 beyond),

a penalty within the activation distance d̂ (a little more than the pair's contact distance,
so that a resting layer's equilibrium sits outside the contact distance and the collision
pipeline after the step has nothing to push). Its force on point j is κ·(d̂ − d)·w_j·n, on both
sides of the pair, and its Hessian κ·w_i·w_j·n·nᵀ couples the four points: blocks of the system
matrix and of its preconditioner (implicit.py), not a filter on one vertex. That is the
difference from a constraint on the vertex moving in: there the other side keeps its predicted
motion, the active set grows from solve to solve and the pushes after the step do the rest
(docs/solver.md, "Contact inside the solve").

Friction is lagged ([Li2020]'s lagged friction, in velocity form): with the normal force
λ = κ·(d̂ − d₀)₊ at the step's start and the tangential relative velocity u_T = (I − n·nᵀ)·Σ w_j·v_j,
each point feels −μ·λ·w_j·u_T/max(|u_T|, ε_v): a stiff viscous hold below ε_v (static friction
that creeps at most ε_v), Coulomb's μ·λ against the sliding direction above it. It is the
gradient of the convex dissipation μ·λ·ψ(|u_T|), ψ(s) = s²/(2ε_v) below ε_v and s − ε_v/2 above,
so the Newton solve and its line search treat it as the other forces.

Each pair's force and block are computed in parallel; adding them onto the vertices is serial
and in pair order (several pairs land on one vertex, and a fixed order keeps bakes bit-identical
at any thread count).
"""

from __future__ import annotations

import numpy as np

from .._jit import njit, prange


@njit(inline="always")
def _point(j, V, x, xc):
    if j < V:
        return x[j, 0], x[j, 1], x[j, 2]
    return xc[j - V, 0], xc[j - V, 1], xc[j - V, 2]


@njit(parallel=True)
def _pair_terms(idx, w, n, dhat, kappa, mu, lam, eps_v, V, x, xc, v, vc, cK, cD, with_jac,
                f, e, H):
    """Per pair k: its force per unit weight f[k] (3,) [N], energy e[k] [J] (−1 when
    inactive: d ≥ d̂) and, with_jac, its block H[k] (see contact_terms). Pairs are
    independent: parallel."""
    for k in prange(idx.shape[0]):
        nx, ny, nz = n[k, 0], n[k, 1], n[k, 2]
        # separation along n and relative velocity of the closest points
        sx = sy = sz = 0.0
        ux = uy = uz = 0.0
        for a in range(4):
            j = idx[k, a]
            px, py, pz = _point(j, V, x, xc)
            qx, qy, qz = _point(j, V, v, vc)
            sx += w[k, a] * px
            sy += w[k, a] * py
            sz += w[k, a] * pz
            ux += w[k, a] * qx
            uy += w[k, a] * qy
            uz += w[k, a] * qz
        d = nx * sx + ny * sy + nz * sz
        push = 0.0
        e[k] = -1.0
        if d < dhat[k]:
            push = kappa[k] * (dhat[k] - d)
            e[k] = 0.5 * kappa[k] * (dhat[k] - d) ** 2
        # tangential relative velocity and the friction force per unit weight
        un = nx * ux + ny * uy + nz * uz
        tx, ty, tz = ux - un * nx, uy - un * ny, uz - un * nz
        speed = np.sqrt(tx * tx + ty * ty + tz * tz)
        hold = mu[k] * lam[k]
        scale = hold / max(speed, eps_v) if hold > 0.0 else 0.0
        f[k, 0] = push * nx - scale * tx
        f[k, 1] = push * ny - scale * ty
        f[k, 2] = push * nz - scale * tz
        if not with_jac:
            continue
        stiff = -cK * kappa[k] if push > 0.0 else 0.0
        visc = -cD * scale  # G = (I − n·nᵀ)/max(|u_T|, ε_v) ...
        for r in range(3):
            for c in range(3):
                nn = n[k, r] * n[k, c]
                H[k, r, c] = stiff * nn + visc * ((1.0 if r == c else 0.0) - nn)
        if hold > 0.0 and speed > eps_v:  # ... less the sliding direction when sliding
            tt = (tx / speed, ty / speed, tz / speed)
            for r in range(3):
                for c in range(3):
                    H[k, r, c] -= visc * tt[r] * tt[c]


@njit
def _scatter(idx, w, f, e, V, force):
    """force[j] += w[k, a]·f[k] for every cloth point j = idx[k, a], in pair order (serial:
    pairs share vertices, and a fixed order keeps the sum the same at any thread count);
    returns (energy, active pairs)."""
    energy = 0.0
    active = 0
    for k in range(idx.shape[0]):
        if e[k] >= 0.0:
            energy += e[k]
            active += 1
        for a in range(4):
            j = idx[k, a]
            if j < V:
                force[j, 0] += w[k, a] * f[k, 0]
                force[j, 1] += w[k, a] * f[k, 1]
                force[j, 2] += w[k, a] * f[k, 2]
    return energy, active


def contact_terms(idx, w, n, dhat, kappa, mu, lam, eps_v, V, x, xc, v, vc, cK, cD,
                  with_jac, force, H):
    """Forces of the contact pairs added into ``force`` (V, 3) [N], and each pair's block per
    unit w_i·w_j of cK·∂f/∂x + cD·∂f/∂v into H (K, 3, 3) when with_jac.

    Args:
        idx: (K, 4) point indices (< V: cloth vertices; ≥ V: collider points, xc[j − V]).
        w: (K, 4) weights; n: (K, 3) unit normals; dhat: (K,) activation distances [m];
        kappa: (K,) stiffnesses [N/m]; mu: (K,) friction coefficients; lam: (K,) lagged
            normal forces [N]; eps_v: [m/s] the sliding speed below which friction holds.
        x, xc: cloth and collider positions [m]; v, vc: their velocities [m/s].
        cK, cD: the solve's factors (−h², −h): H holds −cK·κ·n·nᵀ (active pairs) − cD·μ·λ·G,
            G the friction's velocity Hessian per unit μ·λ (PSD).
    Returns:
        (energy [J], active pairs): E summed over pairs, and how many have d < d̂.
    """
    K = idx.shape[0]
    f = np.empty((K, 3))
    e = np.empty(K)
    _pair_terms(idx, w, n, dhat, kappa, mu, lam, float(eps_v), int(V), x, xc, v, vc,
                float(cK), float(cD), bool(with_jac), f, e, H)
    return _scatter(idx, w, f, e, int(V), force)


def dissipation(w, n, mu, lam, eps_v, u):
    """The friction's dissipation potential μ·λ·ψ(|u_T|) summed over pairs, u (K, 3) the
    pairs' relative velocities Σ w_j·v_j [m/s] (for tests: its −gradient is the force)."""
    ut = u - np.sum(u * n, axis=1)[:, None] * n
    s = np.linalg.norm(ut, axis=1)
    psi = np.where(s < eps_v, s * s / (2 * eps_v), s - 0.5 * eps_v)
    return float(np.sum(mu * lam * psi))


@njit
def add_pair_blocks(slots, w, H, out):
    """out[slots[k, 4a + b]] += w[k, a]·w[k, b]·H[k] for the cloth points a, b of every pair
    (slot −1: a collider point, no unknown); serial, in pair order."""
    for k in range(slots.shape[0]):
        for a in range(4):
            for b in range(4):
                s = slots[k, 4 * a + b]
                if s < 0:
                    continue
                ww = w[k, a] * w[k, b]
                for r in range(3):
                    for c in range(3):
                        out[s, r, c] += ww * H[k, r, c]
