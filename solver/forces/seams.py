"""Seams: sewing forces that pull pairs of vertices together and then hold them
(Blender's sewing springs; the attachment points of [Volino2000] §3.2, keys in
docs/references.md).

A seam pair (i, j) stores the energy E = P·(√(l² + δ²) − δ), l = |x_j − x_i|: the pair pulls
with the force P·l/√(l² + δ²), nearly P [N] while the gap l is wider than δ and, within δ, like
a spring of stiffness P/δ [N/m] that holds the two vertices together. P = seam_force [N/m] ×
the length of seam the pair stands for, so a seam pulls with the same force per metre of seam
at every mesh resolution; δ is the cloth thickness, so the seam closes to within it as long as
the cloth pulls on it with less than about 70 % of that force. The energy is convex in x_j − x_i,
and smooth at l = 0 (vertices that start joined feel no force and no NaN). A linear damping
c·(v_j − v_i) makes the holding spring critically damped, so a closing seam does not ring.

The Jacobian. The exact ∂f_i/∂x_j is P/s·(I − d·dᵀ/s²) (s = √(l² + δ²), d = x_j − x_i): along
the pair only P·δ²/s³, which vanishes across a gap much wider than δ. Newton's linear model
then sees no resistance along the seam, its step overshoots by metres, and with the implicit
model's 2 iterations per step a cotton seam (δ = 0.3 mm) stayed 3–4 mm open, frame after frame
(0.01 mm with 10 iterations; docs/solver.md, "Seams"). The solve uses the secant
stiffness P/s·I instead: symmetric positive definite, equal to the exact Jacobian where the
seam is closed (l = 0; within (l/δ)² of it for l < δ) and above it elsewhere, so each Newton
iteration moves a wide seam most of the way shut. The force, and so the solution, is exact.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit

# Smallest reach δ [m]: a cloth of zero thickness would make the holding stiffness P/δ
# infinite; 0.1 mm is well below any fabric's thickness.
MIN_SEAM_REACH = 1.0e-4


@njit
def seam_kernel(x, v, seams, pull, reach, damping, want_jac, cK, cD, b_off, slot, energy,
                force, J):
    """Seam energy, forces and Jacobian blocks (serial: seams are few).

    Args:
        x, v: positions [m] and velocities [m/s], (V, 3).
        seams: (S, 2) vertex pairs.
        pull: P, the force each pair pulls with across a wide gap [N], (S,).
        reach: δ, the gap within which a pair holds like a spring [m], (S,).
        damping: c [N·s/m], (S,).
        want_jac: also add cK·K + cD·∂f/∂v blocks to J (K: the secant stiffness, see above).
        cK, cD: weights of ∂f/∂x [N/m] and ∂f/∂v [N·s/m] in J.
        b_off: this group's offset into slot (blocks (i,i), (i,j), (j,i), (j,j) per seam).
        slot: matrix slot of every element block (sparse.Assembly.block_slot).
        energy: out (S,) [J]; force (V, 3) [N] and J (nnzb, 3, 3): added to.
    """
    for s in range(seams.shape[0]):
        i, j = seams[s, 0], seams[s, 1]
        d0, d1, d2 = x[j, 0] - x[i, 0], x[j, 1] - x[i, 1], x[j, 2] - x[i, 2]
        delta = reach[s]
        root = np.sqrt(d0 * d0 + d1 * d1 + d2 * d2 + delta * delta)
        p, c = pull[s], damping[s]
        energy[s] = p * (root - delta)
        a = p / root
        d = (d0, d1, d2)
        for r in range(3):
            f = a * d[r] + c * (v[j, r] - v[i, r])
            force[i, r] += f
            force[j, r] -= f
        if want_jac:
            # block order (i,i), (i,j), (j,i), (j,j): −H, +H, +H, −H
            for q in range(4):
                o = slot[b_off + 4 * s + q]
                sign = -1.0 if q == 0 or q == 3 else 1.0
                for r in range(3):
                    # the secant stiffness a·I (see the module docstring)
                    J[o, r, r] += sign * (cK * a + cD * c)


@njit
def seam_energies(x, seams, pull, reach, energy):
    """Energy P·(√(l² + δ²) − δ) of every seam pair alone (no forces, no Jacobian): what
    seam_kernel writes into its ``energy``, for the frame report. x: positions [m] (V, 3);
    seams, pull, reach: as in seam_kernel ((S, 2), (S,) [N], (S,) [m]); energy: out (S,) [J]."""
    for s in range(seams.shape[0]):
        i, j = seams[s, 0], seams[s, 1]
        d0, d1, d2 = x[j, 0] - x[i, 0], x[j, 1] - x[i, 1], x[j, 2] - x[i, 2]
        delta = reach[s]
        energy[s] = pull[s] * (np.sqrt(d0 * d0 + d1 * d1 + d2 * d2 + delta * delta) - delta)


def seam_coefficients(seams, rest_positions, edges, edge_rest_length, mass, seam_force,
                      thickness):
    """Each seam pair's pull P [N], reach δ [m] and damping c [N·s/m], (S,) each.

    Args:
        seams: (S, 2) vertex pairs.
        rest_positions: [m], (V, 3); edges (E, 2) and edge_rest_length [m] (E,): the cloth's
            polygon edges.
        mass: lumped vertex masses [kg], (V,).
        seam_force, thickness: each vertex's piece's seam force [N/m] and thickness [m], (V,).

    The seam length a pair stands for is the mean over its two vertices of half the rest
    length of the polygon edges that join the vertex to another sewn vertex (the seam line
    along a panel's edge: h for a vertex inside the line, h/2 at its end); a vertex with no
    such edge (a single tack) counts the mean length of its edges.
    """
    S = len(seams)
    if S == 0:
        return np.zeros(0), np.zeros(0), np.zeros(0)
    V = len(rest_positions)
    sewn = np.zeros(V, bool)
    sewn[seams.ravel()] = True
    along = sewn[edges[:, 0]] & sewn[edges[:, 1]]
    line = np.bincount(edges[along].ravel(), np.repeat(edge_rest_length[along], 2),
                       minlength=V) * 0.5
    count = np.bincount(edges.ravel(), minlength=V)
    mean_edge = np.bincount(edges.ravel(), np.repeat(edge_rest_length, 2), minlength=V) \
        / np.maximum(count, 1)
    share = np.where(line > 0, line, mean_edge)
    i, j = seams[:, 0], seams[:, 1]
    length = 0.5 * (share[i] + share[j])
    pull = 0.5 * (seam_force[i] + seam_force[j]) * length
    reach = np.maximum(np.maximum(thickness[i], thickness[j]), MIN_SEAM_REACH)
    reduced = mass[i] * mass[j] / np.maximum(mass[i] + mass[j], 1e-300)
    damping = 2.0 * np.sqrt(pull / reach * reduced)  # critical for the holding spring
    return pull, reach, damping


def seam_gaps(x, seams) -> np.ndarray:
    """Distance between the two vertices of each seam pair [m], (S,)."""
    if len(seams) == 0:
        return np.zeros(0)
    return np.linalg.norm(x[seams[:, 1]] - x[seams[:, 0]], axis=1)
