"""The filtered PCG (Baraff & Witkin's MPCG) against a direct solve, with both preconditioners."""

import numba
import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla

from solver import MaterialParams, Simulation, SolverSettings, load_preset
from solver.linalg.cg import mpcg
from solver.linalg.incomplete_cholesky import (MIN_SPLIT, SHIFT_HOLD, IncompleteCholesky,
                                               ic0_block_factor, lower_blocks)
from solver.forces.bending import bending_terms
from solver.forces.membrane import membrane_terms
from solver.model import build_model
from solver.linalg.preconditioner import BlockJacobi, LaggedFactor
from scenarios import hanging_cloth
from solver.linalg.sparse import build_assembly, to_scipy
from solver.system import ForceSystem

PRECONDITIONERS = {"jacobi": BlockJacobi, "factor": LaggedFactor,
                   "incomplete_cholesky": IncompleteCholesky}


def _system(seed=0, crumple=0.01):
    """A real implicit matrix M − h·D − h²·K of a crumpled 9x9 cloth, and a right-hand side."""
    spec = hanging_cloth(9, MaterialParams(stretch_stiffness=3000.0, bend_stiffness=1e-5),
                         SolverSettings())
    model = build_model(spec.cloth)
    rng = np.random.default_rng(seed)
    x = model.rest_positions + crumple * rng.standard_normal(model.rest_positions.shape)
    v = rng.standard_normal(x.shape)
    s = ForceSystem(model, membrane=membrane_terms(model), hinges=bending_terms(model), psd=True)
    h = 1.0 / 24
    K, D = s.jacobians(x, v)
    A = -h * h * K - h * D  # float64 (the solver's own J is float32)
    A[s.asm.diag] += model.mass[:, None, None] * np.eye(3)
    return model, s.asm, A, rng.standard_normal(x.shape), x


def _filters(V, pinned, plane_vertex, normal):
    filt = np.repeat(np.eye(3)[None], V, axis=0)
    filt[pinned] = 0.0
    filt[plane_vertex] = np.eye(3) - np.outer(normal, normal)
    return filt


PINNED, PLANE_VERTEX, PLANE_NORMAL = np.array([0, 8]), 40, np.array([0.0, 0.6, 0.8])


def _pins_and_plane(V):
    """Filters and prescribed values: two pins with given velocity changes and one vertex held
    on a contact plane, moving 0.05 along its normal."""
    filt = _filters(V, PINNED, PLANE_VERTEX, PLANE_NORMAL)
    z = np.zeros((V, 3))
    z[PINNED] = [[0.1, 0.2, 0.3], [-0.1, 0.0, 0.2]]
    z[PLANE_VERTEX] = 0.05 * PLANE_NORMAL
    return filt, z


@pytest.mark.parametrize("name", list(PRECONDITIONERS))
def test_mpcg_matches_a_direct_solve_with_pins_and_a_contact_plane(name):
    model, asm, A, b, x = _system()
    V = model.vertex_count
    pinned, n = PINNED, PLANE_NORMAL
    filt, z = _pins_and_plane(V)
    pc = PRECONDITIONERS[name](asm, pinned)
    pc.refresh(A, "key", x)
    out = np.zeros((V, 3))
    it, res = mpcg(asm, A, b, filt, z, pc, 1.0 / model.mass, 1e-10, 2000, out)
    assert res <= 1e-10 and it > 0
    # reference: eliminate the prescribed directions and solve the rest directly
    Af = to_scipy(asm, A).toarray()
    S = sp.block_diag(list(filt)).toarray()
    lhs = S @ Af @ S + (np.eye(3 * V) - S)
    rhs = S @ (b.ravel() - Af @ z.ravel()) + (np.eye(3 * V) - S) @ np.zeros(3 * V)
    free = sla.spsolve(sp.csc_matrix(lhs), rhs)
    expected = S @ free + z.ravel()
    np.testing.assert_allclose(out.ravel(), expected, rtol=1e-7, atol=1e-9 * np.abs(expected).max())
    np.testing.assert_array_equal(out[pinned], z[pinned])
    assert out[PLANE_VERTEX] @ n == pytest.approx(0.05)


def test_float32_products_solve_to_their_rounding_floor():
    """The implicit model's block-Jacobi PCG multiplies with a float32 copy of the matrix: the
    result solves the rounded matrix, within cond(A)·6e-8 of the exact solution (1.7e-4
    relative measured here), and pins and contact constraints still hold exactly."""
    model, asm, A, b, x = _system()
    V = model.vertex_count
    pinned, n = PINNED, PLANE_NORMAL
    filt, z = _pins_and_plane(V)
    pc = BlockJacobi(asm, pinned)
    pc.refresh(A, "key", x)
    exact, rounded = np.zeros((V, 3)), np.zeros((V, 3))
    mpcg(asm, A, b, filt, z, pc, 1.0 / model.mass, 1e-10, 2000, exact)
    it, res = mpcg(asm, A, b, filt, z, pc, 1.0 / model.mass, 1e-10, 2000, rounded,
                   product_dtype=np.float32)
    assert res <= 1e-10
    scale = np.abs(exact).max()
    assert 0.0 < np.abs(rounded - exact).max() <= 1e-3 * scale
    np.testing.assert_array_equal(rounded[pinned], z[pinned])
    assert rounded[PLANE_VERTEX] @ n == pytest.approx(0.05)


def test_a_fresh_factor_solves_in_one_iteration_and_a_stale_one_is_refreshed():
    model, asm, A, b, x = _system()
    V = model.vertex_count
    filt = _filters(V, np.array([0, 8]), [], np.zeros(3))
    z = np.zeros((V, 3))
    pc = LaggedFactor(asm, np.array([0, 8]), refactor_iterations=2)
    pc.refresh(A, "k", x)
    out = np.zeros((V, 3))
    it, res = mpcg(asm, A, b, filt, z, pc, 1.0 / model.mass, 1e-8, 100, out)
    assert it == 1 and res <= 1e-8
    # a different matrix (another crumpled state): the old factor needs more iterations, the
    # solver marks it stale, and the next refresh factors again
    _, _, A2, _, x2 = _system(seed=1, crumple=0.003)
    pc.refresh(A2, "k", x2)
    assert pc.factorizations == 1
    out[:] = 0.0
    it2, res2 = mpcg(asm, A2, b, filt, z, pc, 1.0 / model.mass, 1e-8, 1000, out)
    assert res2 <= 1e-8 and it2 > 2
    pc.report_iterations(it2)
    pc.refresh(A2, "k", x2)
    assert pc.factorizations == 2


def test_incomplete_cholesky_keeps_the_pattern_and_matches_the_matrix_on_it():
    """IC(0): L has the lower triangle's pattern and (L·Lᵀ)_ij = A_ij wherever A_ij is in that
    pattern; pinned vertices are identity rows."""
    model, asm, A, b, x = _system()
    pinned = np.array([0, 8])
    pc = IncompleteCholesky(asm, pinned)
    pc.refresh(A, "key", x)
    assert pc.shifts_used == [0.0]
    n = 3 * model.vertex_count
    L = pc.factor()
    L.eliminate_zeros()
    Af = to_scipy(asm, A).toarray()
    free = np.ones(n, bool)
    free[(3 * pinned[:, None] + np.arange(3)).ravel()] = False
    Af[~free] = 0.0
    Af[:, ~free] = 0.0
    Af[~free, ~free] = 1.0
    lower = sp.tril(sp.csr_matrix(Af)).tocsr()
    assert set(zip(*L.nonzero())) <= set(zip(*sp.tril(to_scipy(asm, A)).nonzero())) | \
        {(i, i) for i in range(n)}
    LLt = (L @ L.T).toarray()
    rows, cols = lower.nonzero()
    np.testing.assert_allclose(LLt[rows, cols], Af[rows, cols], rtol=1e-9,
                               atol=1e-12 * np.abs(Af).max())


def test_incomplete_cholesky_is_exact_without_fill_and_shifts_on_a_bad_pivot():
    """A block-tridiagonal SPD matrix (a chain of vertices) has no fill, so IC(0) is its
    Cholesky factor; an indefinite one fails without a shift and factors with one."""
    n = 6
    asm, _ = build_assembly([np.stack([np.arange(n - 1), np.arange(1, n)], axis=1)], n)
    row_ptr, col, source = lower_blocks(asm)
    couple = np.array([[0.0, 0.3, 0.1], [0.3, 0.0, -0.2], [0.1, -0.2, 0.0]])

    def chain(main):
        rows = np.repeat(np.arange(n), np.diff(asm.row_ptr))
        a = np.where((rows == asm.col)[:, None, None], main * np.eye(3) + couple, -np.eye(3))
        return a, to_scipy(asm, a).toarray()

    out = (np.zeros((len(col), 3, 3)), np.zeros((n, 3, 3)), np.zeros((n, 3, 3)))
    a, dense = chain(4.0)
    assert ic0_block_factor(row_ptr, col, source, asm.diag, a, 0.0, *out)
    L = (sp.bsr_matrix((out[0], col, row_ptr), shape=(3 * n, 3 * n))
         + sp.block_diag(list(out[1]))).toarray()
    np.testing.assert_allclose(L, np.linalg.cholesky(dense), atol=1e-12)
    for d, d_inv in zip(out[1], out[2]):
        np.testing.assert_allclose(d @ d_inv, np.eye(3), atol=1e-12)
    a, dense = chain(1.5)
    assert np.linalg.eigvalsh(dense).min() < 0
    assert not ic0_block_factor(row_ptr, col, source, asm.diag, a, 0.0, *out)
    assert ic0_block_factor(row_ptr, col, source, asm.diag, a, 1.0, *out)


def test_incomplete_cholesky_holds_a_needed_shift_before_trying_a_lower_one():
    """Consecutive matrices need similar shifts: after one needed 1e-2, the next ones start
    there, and only after SHIFT_HOLD successes does a factor try one shift lower."""
    n = 6
    asm, _ = build_assembly([np.stack([np.arange(n - 1), np.arange(1, n)], axis=1)], n)
    rows = np.repeat(np.arange(n), np.diff(asm.row_ptr))
    couple = np.array([[0.0, 0.3, 0.1], [0.3, 0.0, -0.2], [0.1, -0.2, 0.0]])

    def chain(main):
        return np.where((rows == asm.col)[:, None, None], main * np.eye(3) + couple, -np.eye(3))

    pc = IncompleteCholesky(asm, np.zeros(0, dtype=np.int64))
    x = np.zeros((n, 3))
    pc.refresh(chain(2.2), "k", x)  # needs a 1e-2 shift (1e-3 is not enough)
    for _ in range(2 * SHIFT_HOLD + 3):
        pc.refresh(chain(4.0), "k", x)  # needs none
    hold = [1e-2] * (SHIFT_HOLD + 1) + [1e-3] * (SHIFT_HOLD + 1) + [0.0, 0.0]
    assert pc.shifts_used == hold
    pc.refresh(chain(2.2), "k", x)
    assert pc.shifts_used[-1] == 1e-2


def test_incomplete_cholesky_needs_far_fewer_iterations_than_jacobi():
    model, asm, A, b, x = _system()
    V = model.vertex_count
    filt = _filters(V, np.array([0, 8]), [], np.zeros(3))
    its = {}
    for name in ("jacobi", "incomplete_cholesky"):
        pc = PRECONDITIONERS[name](asm, np.array([0, 8]))
        pc.refresh(A, "k", x)
        its[name], res = mpcg(asm, A, b, filt, np.zeros((V, 3)), pc, 1.0 / model.mass, 1e-8,
                              5000, np.zeros((V, 3)))
        assert res <= 1e-8
    assert its["incomplete_cholesky"] * 3 < its["jacobi"]


def test_incomplete_cholesky_of_the_constrained_system_suits_many_contacts():
    """With contact filters on half the vertices (random normals), factoring the projected
    matrix S·A·S + (I − S) converges in fewer PCG iterations than factoring A, to the same
    solution as the direct solve of the constrained system."""
    model, asm, A, b, x = _system()
    V = model.vertex_count
    rng = np.random.default_rng(3)
    filt = np.repeat(np.eye(3)[None], V, axis=0)
    held = rng.choice(V, V // 2, replace=False)
    normals = rng.standard_normal((len(held), 3))
    normals /= np.linalg.norm(normals, axis=1)[:, None]
    filt[held] = np.eye(3) - normals[:, :, None] * normals[:, None, :]
    z = np.zeros((V, 3))
    its, out = {}, {}
    for projected in (False, True):
        pc = IncompleteCholesky(asm, np.zeros(0, dtype=np.int64))
        pc.refresh(A, "k", x, filt if projected else None)
        out[projected] = np.zeros((V, 3))
        its[projected], res = mpcg(asm, A, b, filt, z, pc, 1.0 / model.mass, 1e-10, 5000,
                                   out[projected])
        assert res <= 1e-10
    assert its[True] < its[False]
    np.testing.assert_allclose(out[True], out[False], atol=1e-8 * np.abs(out[False]).max())
    np.testing.assert_allclose(np.einsum("ij,ij->i", out[True][held], normals), 0.0, atol=1e-12)


def test_incomplete_cholesky_applies_the_inverse_of_its_factor():
    """The blocked float32 triangular solves give (L·Lᵀ)⁻¹·r of the scalar factor."""
    model, asm, A, b, x = _system()
    pc = IncompleteCholesky(asm, np.array([0, 8]))
    pc.refresh(A, "key", x)
    L = pc.factor().toarray()
    r = np.random.default_rng(3).standard_normal((model.vertex_count, 3))
    out = np.zeros_like(r)
    pc.apply(r, out)
    expected = np.linalg.solve(L @ L.T, r.reshape(-1)).reshape(r.shape)
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-5 * np.abs(expected).max())


def _two_domain_factor():
    """The 9 x 9 system's IC(0) in two-domain order (forced below MIN_SPLIT), factored."""
    model, asm, A, b, x = _system()
    pinned = np.array([0, 8])
    pc = IncompleteCholesky(asm, pinned, positions=x, min_split=0)
    pc.refresh(A, "key", x)
    return model, asm, A, b, x, pinned, pc


def test_two_domain_incomplete_cholesky_is_ic0_of_the_reordered_matrix():
    """The two domains couple only through the separator, which comes last; L is IC(0) of the
    matrix in that order (LLᵀ = A on the pattern) and ``apply`` is its inverse."""
    model, asm, A, b, x, pinned, pc = _two_domain_factor()
    V = model.vertex_count
    perm, ends = pc.order
    assert sorted(perm) == list(range(V)) and 0 < ends[0] < ends[1] < ends[2] == V
    side = np.empty(V, np.int64)
    side[perm] = np.searchsorted(ends, np.arange(V), side="right")
    rows = np.repeat(np.arange(V), np.diff(asm.row_ptr))
    assert not np.any((side[rows] == 0) & (side[asm.col] == 1))
    # the separator is small: the cut across the sheet
    assert ends[2] - ends[1] <= 3 * int(np.sqrt(V))
    P = (3 * perm[:, None] + np.arange(3)).ravel()
    Af = to_scipy(asm, A).toarray()
    free = np.ones(3 * V, bool)
    free[(3 * pinned[:, None] + np.arange(3)).ravel()] = False
    Af[~free] = 0.0
    Af[:, ~free] = 0.0
    Af[~free, ~free] = 1.0
    Ap = Af[np.ix_(P, P)]
    L = pc.factor().toarray()
    pattern = np.abs(to_scipy(asm, A).toarray()[np.ix_(P, P)]) > 0
    lower = np.tril(pattern | np.eye(3 * V, dtype=bool))
    assert not np.any((L != 0) & ~lower)
    np.testing.assert_allclose((L @ L.T)[lower], Ap[lower], rtol=1e-9,
                               atol=1e-12 * np.abs(Ap).max())
    r = np.random.default_rng(3).standard_normal((V, 3))
    out = np.zeros_like(r)
    pc.apply(r, out)
    expected = np.empty(3 * V)
    expected[P] = np.linalg.solve(L @ L.T, r.reshape(-1)[P])
    np.testing.assert_allclose(out.reshape(-1), expected, rtol=0,
                               atol=1e-5 * np.abs(expected).max())
    filt = _filters(V, pinned, [], np.zeros(3))
    it, res = mpcg(asm, A, b, filt, np.zeros((V, 3)), pc, 1.0 / model.mass, 1e-8, 1000,
                   np.zeros((V, 3)))
    assert res <= 1e-8


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs two numba threads")
def test_two_domain_incomplete_cholesky_is_the_same_on_one_and_two_threads():
    """The domains are factored and solved side by side, each the same way whatever the
    thread count: bakes stay bit-identical across machines and thread counts."""
    before = numba.get_num_threads()
    got = []
    try:
        for n in (1, 2):
            numba.set_num_threads(n)
            model, asm, A, b, x, pinned, pc = _two_domain_factor()
            r = np.random.default_rng(3).standard_normal((model.vertex_count, 3))
            out = np.zeros_like(r)
            pc.apply(r, out)
            got.append((pc._blocks.copy(), pc._diag.copy(), out))
    finally:
        numba.set_num_threads(before)
    for a, b in zip(*got):
        np.testing.assert_array_equal(a, b)


def test_two_domain_incomplete_cholesky_shifts_on_a_bad_pivot():
    """An indefinite chain fails at the domains' or the separator's pivots without a shift and
    factors with one."""
    n = 8
    asm, _ = build_assembly([np.stack([np.arange(n - 1), np.arange(1, n)], axis=1)], n)
    rows = np.repeat(np.arange(n), np.diff(asm.row_ptr))
    couple = np.array([[0.0, 0.3, 0.1], [0.3, 0.0, -0.2], [0.1, -0.2, 0.0]])
    line = np.stack([np.arange(n, dtype=float), np.zeros(n), np.zeros(n)], axis=1)
    pc = IncompleteCholesky(asm, np.zeros(0, np.int64), positions=line, min_split=0)
    assert list(pc.order[1]) == [3, 7, 8]  # vertices 0-2, 7-4 (reversed), then 3
    a = np.where((rows == asm.col)[:, None, None], 4.0 * np.eye(3) + couple, -np.eye(3))
    pc.refresh(a, "k", line)
    assert pc.shifts_used == [0.0]
    a = np.where((rows == asm.col)[:, None, None], 1.5 * np.eye(3) + couple, -np.eye(3))
    pc.refresh(a, "k", line)
    assert 0.0 < pc.shifts_used[-1] < np.inf


def test_small_cloth_keeps_one_domain():
    """Below MIN_SPLIT vertices the factor stays in the vertices' own order (one thread): a
    small factor costs less than the extra iterations the two domains' order asks for."""
    model, asm, A, b, x = _system()
    assert model.vertex_count < MIN_SPLIT
    assert IncompleteCholesky(asm, np.array([0, 8]), positions=x).order is None


def test_fine_cloth_factors_without_a_diagonal_shift():
    """The hinges' Jacobians (rank one, off-diagonal blocks of both signs) made IC(0) of the
    whole matrix meet non-positive pivots on fine cloth: at 129 x 129 it needed a 20 % and then
    a 5 % diagonal shift, and 4-5x the PCG iterations. The factor scales their couplings by
    0.9 and keeps their diagonal blocks, so it needs no shift."""
    from solver.formats.presets import load_preset
    from solver.simulation import Simulation

    sim = Simulation(hanging_cloth(129, load_preset("cotton"), SolverSettings(), frames=1))
    sim.step()
    pc = sim.solver.precond
    assert isinstance(pc, IncompleteCholesky) and pc.factorizations >= 4
    assert pc.order is not None  # this size factors in two domains (MIN_SPLIT)
    assert pc.shifts_used == [0.0] * pc.factorizations
    assert sim.result.frames[0].iterations < 200  # 538 with the shifted factor of the whole matrix


def test_deflation_by_earlier_solutions_gives_the_same_answer_in_fewer_iterations():
    """Deflated PCG [Saad2000] on a sequence of nearby systems (a hanging cloth's Newton
    systems): with the earlier corrections as W it reaches the same solution (to its
    tolerance) as plain PCG, in fewer iterations, and a W that already spans the answer solves
    it with the Galerkin start alone."""
    from solver.linalg.deflation import RecycledSpace

    spec = hanging_cloth(17, load_preset("cotton"), SolverSettings(recycled_corrections=0),
                         frames=3)
    sim = Simulation(spec)
    while not sim.done:
        sim.step()
    solver = sim.solver
    solver.system.evaluate(solver.x, solver.v, solver.gravity, np.zeros_like(solver.x),
                           np.zeros((0, 3)), (-1e-3, -1e-2))
    solver._add_mass()
    A, asm, filt = solver.A.astype(np.float64), solver.system.asm, solver.filt
    pc = IncompleteCholesky(asm, solver.fixed)
    pc.refresh(solver._factor_input, ("test", 0.0), solver.x, filt)
    rng = np.random.default_rng(3)
    weights = np.ones(len(solver.x))
    space = RecycledSpace(4)
    plain_its, deflated_its = [], []
    drift = rng.normal(size=solver.x.shape)
    for k in range(6):  # nearby right-hand sides: a common part drifting a little each time
        b = np.tile([0.0, 0.0, -1.0], (len(solver.x), 1)) + 0.02 * k * drift \
            + 1e-3 * rng.normal(size=solver.x.shape)
        z = np.zeros_like(b)
        x_plain = np.zeros_like(b)
        it_plain, _ = mpcg(asm, A, b, filt, z, pc, weights, 1e-4, 1000, x_plain)
        x_exact = np.zeros_like(b)
        mpcg(asm, A, b, filt, z, pc, weights, 1e-10, 1000, x_exact)
        x_defl = np.zeros_like(b)
        it_defl, res = mpcg(asm, A, b, filt, z, pc, weights, 1e-4, 1000, x_defl,
                            deflation=space.deflation(asm, A, filt))
        assert res <= 1e-4
        scale = np.abs(x_exact).max()  # both as close to the exact solution as the tolerance
        assert np.abs(x_defl - x_exact).max() < 1e-3 * scale
        assert np.abs(x_plain - x_exact).max() < 1e-3 * scale
        space.remember(x_defl)
        plain_its.append(it_plain)
        deflated_its.append(it_defl)
    assert sum(deflated_its[2:]) < 0.7 * sum(plain_its[2:]), (deflated_its, plain_its)
    # the answer itself in W: the Galerkin start solves it
    space = RecycledSpace(4)
    space.remember(x_exact)
    x = np.zeros_like(b)
    it, res = mpcg(asm, A, b, filt, z, pc, weights, 1e-6, 1000, x,
                   deflation=space.deflation(asm, A, filt))
    assert it == 0 and res <= 1e-6
