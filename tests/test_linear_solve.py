"""The filtered PCG (Baraff & Witkin's MPCG) against a direct solve, with both preconditioners."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg as sla

from solver import MaterialParams, SolverSettings
from solver.cg import mpcg
from solver.model import bending_terms, build_model, membrane_terms
from solver.preconditioner import BlockJacobi, LaggedFactor
from solver.scenarios import hanging_cloth
from solver.sparse import to_scipy
from solver.system import ForceSystem

PRECONDITIONERS = {"jacobi": BlockJacobi, "factor": LaggedFactor}


def _system(seed=0, crumple=0.01):
    """A real implicit matrix M − h·D − h²·K of a crumpled 9x9 cloth, and a right-hand side."""
    spec = hanging_cloth(9, MaterialParams(stretch_stiffness=3000.0, bend_stiffness=1e-5),
                         SolverSettings())
    model = build_model(spec.cloth)
    rng = np.random.default_rng(seed)
    x = model.rest_positions + crumple * rng.standard_normal(model.rest_positions.shape)
    v = rng.standard_normal(x.shape)
    s = ForceSystem(model, membrane=membrane_terms(model), hinges=bending_terms(model), psd=True)
    s.internal(x, v, want_jac=True)
    h = 1.0 / 24
    A = -h * h * s.K - h * s.D
    A[s.asm.diag] += model.mass[:, None, None] * np.eye(3)
    return model, s.asm, A, rng.standard_normal(x.shape), x


def _filters(V, pinned, plane_vertex, normal):
    filt = np.repeat(np.eye(3)[None], V, axis=0)
    filt[pinned] = 0.0
    filt[plane_vertex] = np.eye(3) - np.outer(normal, normal)
    return filt


@pytest.mark.parametrize("name", list(PRECONDITIONERS))
def test_mpcg_matches_a_direct_solve_with_pins_and_a_contact_plane(name):
    model, asm, A, b, x = _system()
    V = model.vertex_count
    pinned = np.array([0, 8])
    n = np.array([0.0, 0.6, 0.8])
    filt = _filters(V, pinned, 40, n)
    z = np.zeros((V, 3))
    z[pinned] = [[0.1, 0.2, 0.3], [-0.1, 0.0, 0.2]]
    z[40] = 0.05 * n  # prescribed velocity change along the contact normal
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
    assert out[40] @ n == pytest.approx(0.05)


def test_float32_products_solve_to_their_rounding_floor():
    """The implicit model's block-Jacobi PCG multiplies with a float32 copy of the matrix: the
    result solves the rounded matrix, within cond(A)·6e-8 of the exact solution (1.7e-4
    relative measured here), and pins and contact constraints still hold exactly."""
    model, asm, A, b, x = _system()
    V = model.vertex_count
    pinned = np.array([0, 8])
    n = np.array([0.0, 0.6, 0.8])
    filt = _filters(V, pinned, 40, n)
    z = np.zeros((V, 3))
    z[pinned] = [[0.1, 0.2, 0.3], [-0.1, 0.0, 0.2]]
    z[40] = 0.05 * n
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
    assert rounded[40] @ n == pytest.approx(0.05)


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
