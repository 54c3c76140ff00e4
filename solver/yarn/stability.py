"""The stable step of the explicit contact, from an estimate of its highest frequency
(docs/yarn.md, "Speed").

Symplectic Euler is stable for h < 2/ω_max, ω_max² the largest eigenvalue of M⁻¹·K_contact.
The Gershgorin bound of dynamics.YarnSolver, ω² ≤ max_i 2·k_i/m_i (k_i a point's share of
the sampled penalty stiffness), is cheap and safe but several times too high in a knit
(docs/tried-and-dropped.md, "Yarn model", compares it with scipy's eigsh on the matrix
below), because it adds up a point's contacts as if they all pushed one way.

The estimate here is the power iteration on M^(-1/2)·K_contact·M^(-1/2), two products per
estimate, continued from estimate to estimate (the matrix changes little between them, so the
iteration keeps converging as it goes). K_contact takes each touching segment pair's samples
along the pair's closest-points direction n̂: W ⊗ n̂n̂ᵀ with the 4 × 4 W = Σ_q k_q·w_q·w_qᵀ,
k_q = k·ℓi·ℓj·w·f″(d)/(2r)² the sample's stiffness and w_q = (−(1−s), −s, 1−t, t) its weights
on the four points (contact_pass's ``moments``). It keeps a pair's resistance to turning as well
as to approaching, and carries no force on a rigid translation. Each sample's whole stiffness
is taken along n̂, not its share (n̂_q·n̂)² less its tension term, so it overstates the penalty's
derivative where samples lean away from n̂ (tests/test_yarn_speed.py bounds it against finite
differences): on the safe side for a stable step.

(The same matrix was tried as the stiffness of a linearly implicit contact step, solved by
conjugate gradients: docs/tried-and-dropped.md, "Yarn model", says why it was dropped.)
"""

from __future__ import annotations

import numpy as np

from .._jit import njit

# Power iterations at the first estimate, from a fixed pseudo-random start, and at later ones
FIRST_ITERATIONS = 40
ITERATIONS = 2


@njit
def contact_springs(x, seg, pairs, closest, moments):
    """The touching pairs' stiffness blocks.

    Args:
        x: (P, 3) positions [m]; seg (S, 2); pairs (K, 2); closest (K, 2) segment parameters
            (s, t) of the closest points; moments (K, 6) [N/m] (contact.contact_pass).

    Returns:
        pts (T, 4) point indices (a0, a1, b0, b1), W (T, 4, 4) [N/m], nrm (T, 3) unit
        directions from the closest point on a to the one on b, for the T touching pairs.
    """
    T = 0
    for q in range(pairs.shape[0]):
        if moments[q, 0] > 0.0:
            T += 1
    pts = np.empty((T, 4), np.int64)
    W = np.empty((T, 4, 4))
    nrm = np.zeros((T, 3))
    m = 0
    for q in range(pairs.shape[0]):
        S0 = moments[q, 0]
        if S0 <= 0.0:
            continue
        Ss, St, Sss, Stt, Sst = moments[q, 1], moments[q, 2], moments[q, 3], moments[q, 4], \
            moments[q, 5]
        i, j = pairs[q, 0], pairs[q, 1]
        pts[m, 0], pts[m, 1], pts[m, 2], pts[m, 3] = seg[i, 0], seg[i, 1], seg[j, 0], seg[j, 1]
        W[m, 0, 0] = S0 - 2.0 * Ss + Sss
        W[m, 0, 1] = Ss - Sss
        W[m, 1, 1] = Sss
        W[m, 2, 2] = S0 - 2.0 * St + Stt
        W[m, 2, 3] = St - Stt
        W[m, 3, 3] = Stt
        W[m, 0, 2] = -(S0 - Ss - St + Sst)
        W[m, 0, 3] = -(St - Sst)
        W[m, 1, 2] = -(Ss - Sst)
        W[m, 1, 3] = -Sst
        for a in range(4):
            for b in range(a):
                W[m, a, b] = W[m, b, a]
        s, t = closest[q, 0], closest[q, 1]
        ln = 0.0
        for c in range(3):
            d = ((1.0 - t) * x[seg[j, 0], c] + t * x[seg[j, 1], c]
                 - (1.0 - s) * x[seg[i, 0], c] - s * x[seg[i, 1], c])
            nrm[m, c] = d
            ln += d * d
        ln = np.sqrt(ln)
        if ln > 0.0:
            for c in range(3):
                nrm[m, c] /= ln
        m += 1
    return pts, W, nrm


@njit
def add_contact_stiffness(u, pts, W, nrm, scale, out):
    """out += scale·K_contact·u for u, out (P, 3): each pair adds
    scale·(Σ_b W_ab·(n̂·u_b))·n̂ to its point a."""
    un = np.empty(4)
    for m in range(pts.shape[0]):
        for a in range(4):
            p = pts[m, a]
            un[a] = nrm[m, 0] * u[p, 0] + nrm[m, 1] * u[p, 1] + nrm[m, 2] * u[p, 2]
        for a in range(4):
            z = scale * (W[m, a, 0] * un[0] + W[m, a, 1] * un[1] + W[m, a, 2] * un[2]
                         + W[m, a, 3] * un[3])
            p = pts[m, a]
            for c in range(3):
                out[p, c] += z * nrm[m, c]


class ContactFrequency:
    """ω_max² [1/s²] of the contact by power iteration, continued across calls.

    Args:
        mass: (P,) [kg]; free: (P,) bool (pinned points do not move, so they are left out).
    """

    def __init__(self, mass: np.ndarray, free: np.ndarray):
        self.scale = np.where(free, mass ** -0.5, 0.0)[:, None]
        rng = np.random.default_rng(0)
        self.u = rng.standard_normal((len(mass), 3)) * (self.scale > 0)
        self.started = False

    def estimate(self, springs) -> float:
        """The Rayleigh quotient of the current vector after ITERATIONS more products (the
        first call: FIRST_ITERATIONS): a lower estimate of ω_max², 0 if nothing touches."""
        pts, W, nrm = springs
        lam = 0.0
        for _ in range(ITERATIONS if self.started else FIRST_ITERATIONS):
            norm = np.sqrt((self.u * self.u).sum())
            if norm == 0.0:
                return 0.0
            self.u /= norm
            y = np.zeros_like(self.u)
            add_contact_stiffness(self.u * self.scale, pts, W, nrm, 1.0, y)
            y *= self.scale
            lam = float((self.u * y).sum())
            if not (y * y).sum() > 0.0:
                # nothing touches: keep the vector (a contact may form later)
                return 0.0
            self.u = y
        self.started = True
        return lam
