"""Contact as an energy of the implicit solve (forces/contact.py, collision/contact_pairs.py):
its forces and matrix blocks against finite differences, and what it does to cloth."""

from __future__ import annotations

import numpy as np
import pytest

from solver.forces.contact import add_pair_blocks, contact_terms, dissipation
from solver.linalg.sparse import extend_pattern


def _pairs(rng, V, Vc, K):
    """K random pairs over V cloth and Vc collider points (distinct points per pair)."""
    idx = np.array([rng.choice(V + Vc, 4, replace=False) for _ in range(K)])
    idx[:, 0] = rng.integers(0, V, K)  # at least one cloth point
    idx = np.array([row if len(set(row)) == 4 else np.r_[row[0], rng.choice(
        [j for j in range(V + Vc) if j != row[0]], 3, replace=False)] for row in idx])
    b = rng.dirichlet(np.ones(3), K)
    vf = np.c_[np.ones(K), -b]
    s, t = rng.uniform(0, 1, K), rng.uniform(0, 1, K)
    ee = np.c_[1 - s, s, -(1 - t), -t]
    w = np.where((np.arange(K) % 2 == 0)[:, None], vf, ee)
    n = rng.normal(size=(K, 3))
    n /= np.linalg.norm(n, axis=1)[:, None]
    return idx.astype(np.int64), w, n


def _terms(idx, w, n, dhat, kappa, mu, lam, eps, V, x, xc, v, vc, cK=-1.0, cD=-1.0,
           with_jac=False):
    f = np.zeros((V, 3))
    H = np.zeros((len(idx), 3, 3))
    e, _ = contact_terms(idx, w, n, dhat, kappa, mu, lam, eps, V, x, xc, v, vc, cK, cD,
                         with_jac, f, H)
    return e, f, H


def _dense(idx, w, H, V):
    """The pairs' blocks as a dense (3V, 3V) matrix."""
    out = np.zeros((3 * V, 3 * V))
    for k in range(len(idx)):
        for a in range(4):
            for b in range(4):
                i, j = idx[k, a], idx[k, b]
                if i < V and j < V:
                    out[3 * i:3 * i + 3, 3 * j:3 * j + 3] += w[k, a] * w[k, b] * H[k]
    return out


def test_contact_force_is_minus_the_energy_gradient_and_its_blocks_the_hessian():
    rng = np.random.default_rng(3)
    V, Vc, K = 7, 4, 12
    idx, w, n = _pairs(rng, V, Vc, K)
    x, xc = rng.normal(scale=0.01, size=(V, 3)), rng.normal(scale=0.01, size=(Vc, 3))
    sep = np.einsum("kj,kjd->kd", w, np.concatenate([x, xc])[idx])
    d = np.sum(sep * n, axis=1)
    dhat = d + rng.uniform(-0.004, 0.004, K)  # about half the pairs active
    kappa = rng.uniform(1.0, 5.0, K)
    zero = np.zeros(K)
    v, vc = np.zeros((V, 3)), np.zeros((Vc, 3))
    e, f, H = _terms(idx, w, n, dhat, kappa, zero, zero, 1e-3, V, x, xc, v, vc, with_jac=True)
    assert 0 < np.sum(d < dhat) < K
    step = 1e-7
    grad = np.zeros((V, 3))
    for i in range(V):
        for c in range(3):
            xp, xm = x.copy(), x.copy()
            xp[i, c] += step
            xm[i, c] -= step
            grad[i, c] = (_terms(idx, w, n, dhat, kappa, zero, zero, 1e-3, V, xp, xc, v, vc)[0]
                          - _terms(idx, w, n, dhat, kappa, zero, zero, 1e-3, V, xm, xc, v,
                                   vc)[0]) / (2 * step)
    np.testing.assert_allclose(f, -grad, atol=1e-6 * np.abs(f).max())
    # H holds cK·∂f/∂x + cD·∂f/∂v per unit w_i·w_j (the solve's cK = −h², cD = −h; here −1:
    # no friction, so the assembled blocks are −∂f/∂x)
    K_fd = np.zeros((3 * V, 3 * V))
    for i in range(V):
        for c in range(3):
            xp, xm = x.copy(), x.copy()
            xp[i, c] += step
            xm[i, c] -= step
            fp = _terms(idx, w, n, dhat, kappa, zero, zero, 1e-3, V, xp, xc, v, vc)[1]
            fm = _terms(idx, w, n, dhat, kappa, zero, zero, 1e-3, V, xm, xc, v, vc)[1]
            K_fd[:, 3 * i + c] = ((fp - fm) / (2 * step)).ravel()
    np.testing.assert_allclose(_dense(idx, w, H, V), -K_fd, atol=1e-6 * np.abs(K_fd).max())


@pytest.mark.parametrize("speed", [3e-4, 3e-2])  # sticking (below ε_v) and sliding
def test_friction_is_minus_the_dissipation_gradient_and_its_blocks_its_velocity_hessian(speed):
    rng = np.random.default_rng(5)
    V, Vc, K = 6, 3, 8
    idx, w, n = _pairs(rng, V, Vc, K)
    x, xc = rng.normal(size=(V, 3)), rng.normal(size=(Vc, 3))
    dhat = np.full(K, -1e3)  # no normal force: friction alone
    kappa = np.ones(K)
    mu, lam, eps = rng.uniform(0.1, 0.5, K), rng.uniform(0.5, 2.0, K), 1e-3
    v, vc = rng.normal(scale=speed, size=(V, 3)), rng.normal(scale=speed, size=(Vc, 3))
    _, f, H = _terms(idx, w, n, dhat, kappa, mu, lam, eps, V, x, xc, v, vc, cK=0.0, cD=-1.0,
                     with_jac=True)

    def dis(v):
        u = np.einsum("kj,kjd->kd", w, np.concatenate([v, vc])[idx])
        return dissipation(w, n, mu, lam, eps, u)

    step = 1e-9 if speed < 1e-3 else 1e-7
    grad, D_fd = np.zeros((V, 3)), np.zeros((3 * V, 3 * V))
    for i in range(V):
        for c in range(3):
            vp, vm = v.copy(), v.copy()
            vp[i, c] += step
            vm[i, c] -= step
            grad[i, c] = (dis(vp) - dis(vm)) / (2 * step)
            fp = _terms(idx, w, n, dhat, kappa, mu, lam, eps, V, x, xc, vp, vc)[1]
            fm = _terms(idx, w, n, dhat, kappa, mu, lam, eps, V, x, xc, vm, vc)[1]
            D_fd[:, 3 * i + c] = ((fp - fm) / (2 * step)).ravel()
    np.testing.assert_allclose(f, -grad, atol=1e-5 * np.abs(f).max())
    np.testing.assert_allclose(_dense(idx, w, H, V), -D_fd, atol=1e-4 * np.abs(D_fd).max())
    assert np.all(np.linalg.eigvalsh(_dense(idx, w, H, V)) > -1e-9)  # dissipative: −∂f/∂v PSD


def test_pair_blocks_land_on_the_extended_pattern():
    """The pattern extended by the pairs' couplings holds exactly those and the elements'
    blocks, and the blocks assembled on it equal the dense sum."""
    from solver.linalg.sparse import build_assembly, scatter_blocks, to_scipy
    rng = np.random.default_rng(1)
    V = 9
    tris = np.array([[0, 1, 2], [1, 2, 3], [4, 5, 6], [6, 7, 8]])
    asm, _ = build_assembly([tris], V)
    idx, w, n = _pairs(rng, V, 2, 5)
    H = rng.normal(size=(5, 3, 3))
    H = H + H.transpose(0, 2, 1)
    ext = extend_pattern(asm, idx)
    slots = ext.slots(idx)
    # the pattern is the elements' blocks and the pairs' couplings, no more, rows ascending
    rows = np.repeat(np.arange(V), np.diff(ext.asm.row_ptr))
    own = set(zip(np.repeat(np.arange(V), np.diff(asm.row_ptr)).tolist(), asm.col.tolist()))
    couplings = {(i, j) for g in idx.tolist() for i in g for j in g if i < V and j < V}
    assert set(zip(rows.tolist(), ext.asm.col.tolist())) == own | couplings
    assert len(rows) == len(own | couplings) and np.all(np.diff(rows * V + ext.asm.col) > 0)
    assert np.array_equal(ext.asm.col[ext.asm.diag], np.arange(V))
    base = rng.normal(size=(len(asm.col), 3, 3))
    out = np.zeros((len(ext.asm.col), 3, 3))
    scatter_blocks(base, ext.base_slot, out)
    add_pair_blocks(slots, w, H, out)
    expect = to_scipy(asm, base).toarray() + _dense(idx, w, H, V)
    np.testing.assert_allclose(to_scipy(ext.asm, out).toarray(), expect, atol=1e-12)


def test_pairs_within_elements_land_on_the_elements_pattern():
    """Pairs whose cloth points share an element (cloth against a collider: one cloth triangle
    or edge) find every block in the elements' own pattern, and their blocks added there equal
    the dense sum; a pair coupling points of different elements is refused."""
    from solver.linalg.sparse import build_assembly, point_block_slots, to_scipy
    rng = np.random.default_rng(2)
    V = 9
    tris = np.array([[0, 1, 2], [1, 2, 3], [4, 5, 6], [6, 7, 8]])
    asm, _ = build_assembly([tris], V)
    # collider point 9 or 10 against cloth triangle (1, 2, 3); cloth edge (6, 8) against a
    # collider edge (9, 10)
    idx = np.array([[9, 1, 2, 3], [6, 8, 9, 10], [10, 4, 5, 6]], np.int64)
    b = rng.dirichlet(np.ones(3), 3)
    w = np.c_[np.ones(3), -b]
    w[1] = [0.3, 0.7, -0.4, -0.6]
    H = rng.normal(size=(3, 3, 3))
    H = H + H.transpose(0, 2, 1)
    slots = np.empty((3, 16), np.int64)
    assert point_block_slots(asm.row_ptr, asm.col, np.where(idx < V, idx, -1), slots)
    assert np.all((slots >= 0) == np.repeat(idx < V, 4, axis=1) & np.tile(idx < V, (1, 4)))
    base = rng.normal(size=(len(asm.col), 3, 3))
    out = base.copy()
    add_pair_blocks(slots, w, H, out)
    expect = to_scipy(asm, base).toarray() + _dense(idx, w, H, V)
    np.testing.assert_allclose(to_scipy(asm, out).toarray(), expect, atol=1e-12)
    across = np.array([[3, 4, 5, 6]], np.int64)  # vertex 3 against a face of another piece
    assert not point_block_slots(asm.row_ptr, asm.col, across, np.empty((1, 16), np.int64))


def test_cloth_on_a_collider_mesh_solves_its_pairs_on_the_elements_pattern(monkeypatch):
    """A sheet dropped onto a faceted sphere: every step's pairs (cloth against the collider
    mesh) are solved on the elements' own pattern and preconditioner, and the bake agrees with
    one that solves them on a pattern extended by their couplings (point_block_slots
    refused)."""
    from bodies import uv_sphere
    from solver import ClothSetup, Collider, SimulationSpec, SolverSettings, grid_mesh, simulate
    from solver.formats.presets import load_preset
    from solver.solvers import implicit

    sphere = Collider("mesh", mesh=uv_sphere(0.15, segments=16, rings=8), thickness=0.005,
                      friction=0.3)
    spec = SimulationSpec(ClothSetup(grid_mesh((0.4, 0.4), (11, 11), (0.0, 0.0, 0.17)),
                                     load_preset("cotton")),
                          SolverSettings(model="implicit"), frames=8, colliders=(sphere,))
    found, real = [], implicit.point_block_slots

    def spy(*args):
        found.append(real(*args))
        return found[-1]

    monkeypatch.setattr(implicit, "point_block_slots", spy)
    own = simulate(spec)
    assert own.error is None and sum(f.solve_contacts for f in own.frames) > 0
    assert found and all(found)
    monkeypatch.setattr(implicit, "point_block_slots", lambda *args: False)
    extended = simulate(spec)
    for r in (own, extended):
        assert all(f.collider_crossings == 0 and f.deepest_penetration_m == 0.0
                   for f in r.frames)
    # the same blocks either way (the extended pattern adds no coupling here); only a
    # preconditioner's lagged factor may differ between the two
    np.testing.assert_allclose(own.positions, extended.positions, atol=1e-3)


def test_the_contact_sets_margin_is_capped_but_covers_thick_cloths_activation():
    """A new set's margin allows for a few steps of the fastest motion, at most MARGIN_MAX
    (5 mm) for thin cloth however fast it moves, and at least MARGIN_MIN; cloth whose
    activation share d̂ − gap exceeds the cap is capped MARGIN_MIN beyond that share instead,
    so pairs already pressing stay in the set and it covers some motion before the next
    search."""
    from solver.collision.contact_pairs import MARGIN_MAX, MARGIN_MIN, set_margin
    thin = 0.5 * 0.002  # cotton's activation share (ACTIVATION × thickness) [m]
    assert set_margin(thin, 0.0) == MARGIN_MIN
    assert MARGIN_MIN < set_margin(thin, 2e-4) < MARGIN_MAX  # a few steps of slow motion
    assert set_margin(thin, 0.05) == MARGIN_MAX <= 5e-3      # fast motion: capped
    thick = 0.5 * 0.016
    assert thick > MARGIN_MAX
    assert set_margin(thick, 2e-4) > thick
    assert set_margin(thick, 0.05) == pytest.approx(thick + MARGIN_MIN)
