"""Force terms against finite differences, and the invariants every internal force must keep."""

import dataclasses

import numpy as np
import pytest

from solver import ClothSetup, MaterialParams, PolyMesh, grid_mesh
from solver.geometry import dihedral_angle_and_gradient
from solver.forces.bending import bending_terms
from solver.forces.membrane import membrane_terms
from solver.forces.springs import spring_terms
from solver.model import build_model
from solver.linalg.sparse import to_scipy
from solver.system import ForceSystem

MAT = MaterialParams(stretch_stiffness=120.0, stretch_stiffness_weft=70.0, shear_stiffness=20.0,
                     bend_stiffness=1e-3, stretch_damping=0.5, shear_damping=0.2,
                     bend_damping=1e-4)
TERMS = {
    "membrane": lambda m: dict(membrane=membrane_terms(m)),
    "bending": lambda m: dict(hinges=bending_terms(m)),
    "springs": lambda m: dict(springs=spring_terms(m, flexion=True)),
}


def _grid():
    return grid_mesh((0.3, 0.2), (4, 3), (0.0, 0.0, 0.0))


def _model():
    return build_model(ClothSetup(_grid(), MAT))


def _deformed(model, seed=1, stretch=1.05, noise=0.01):
    rng = np.random.default_rng(seed)
    x = model.rest_positions * stretch + rng.normal(scale=noise, size=model.rest_positions.shape)
    return x, rng.normal(size=x.shape)


def _fd_jacobian(system, x, v, wrt):
    """Central-difference ∂f/∂x or ∂f/∂v, (3V, 3V)."""
    eps = 1e-6
    n = x.size
    J = np.zeros((n, n))
    for i in range(n):
        cols = []
        for sgn in (1, -1):
            y, w = x.copy().ravel(), v.copy().ravel()
            (y if wrt == "x" else w)[i] += sgn * eps
            system.internal(y.reshape(-1, 3), w.reshape(-1, 3))
            cols.append(system.force.ravel().copy())
        J[:, i] = (cols[0] - cols[1]) / (2 * eps)
    return J


@pytest.mark.parametrize("term", TERMS)
def test_force_is_minus_energy_gradient(term):
    m = _model()
    s = ForceSystem(m, psd=False, **TERMS[term](m))
    x, _ = _deformed(m)
    zero = np.zeros_like(x)
    s.internal(x, zero)
    f = s.force.ravel().copy()
    eps = 1e-6
    grad = np.zeros(x.size)
    for i in range(x.size):
        e = []
        for sgn in (1, -1):
            y = x.copy().ravel()
            y[i] += sgn * eps
            s.internal(y.reshape(-1, 3), zero)
            e.append(s.elastic_energy())
        grad[i] = (e[0] - e[1]) / (2 * eps)
    assert np.abs(grad).max() > 1e-6  # the configuration really is loaded
    np.testing.assert_allclose(f, -grad, atol=1e-7 * np.abs(grad).max())


def _sewn_model():
    """The test grid twice, 2 cm apart, its first row sewn to the other's."""
    g = _grid()
    V = g.vertex_count
    mesh = PolyMesh(np.concatenate([g.positions, g.positions + [0.0, 0.0, 0.02]]),
                    np.concatenate([g.face_indices, g.face_indices + V]),
                    np.concatenate([g.face_offsets, g.face_offsets[1:] + len(g.face_indices)]))
    seams = np.stack([np.arange(4), np.arange(4) + V], 1)
    return build_model(ClothSetup(mesh, dataclasses.replace(MAT, seam_force=20.0), seams=seams))


@pytest.mark.parametrize("term", TERMS)
def test_the_energy_only_kernels_give_the_force_kernels_energy(term):
    """ForceSystem.energy (the frame report's: no forces, no Jacobian) gives the energy the
    force kernels write, element for element, at a state with stretched, compressed, bent and
    collapsed elements (a zero-length edge: degenerate hinges, a zero-length spring), seams
    included, and leaves the last evaluation's forces and energies as they were."""
    m = _sewn_model()
    s = ForceSystem(m, **TERMS[term](m))
    x, v = _deformed(m, noise=0.02)
    x[1] = x[0]  # neighbours on the first row: a collapsed edge
    s.internal(x, v)
    names = ("membrane", "hinges", "springs", "seams")
    expected = {k: getattr(s, f"energy_{k}").copy() for k in names}
    force = s.force.copy()
    assert s.energy(x) == pytest.approx(s.elastic_energy(), rel=1e-13)
    for k in names:
        np.testing.assert_allclose(getattr(s, f"_report_{k}"), expected[k], rtol=1e-13,
                                   atol=1e-300)
    assert s.energy(x + 0.01 * v) != s.energy(x)
    np.testing.assert_array_equal(s.force, force)
    for k in names:
        np.testing.assert_array_equal(getattr(s, f"energy_{k}"), expected[k])
    assert expected["seams"].min() > 0.0 and s.elastic_energy() > expected["seams"].sum()


@pytest.mark.parametrize("term", ["membrane", "springs"])
def test_exact_stiffness_jacobian_matches_finite_differences(term):
    m = _model()
    s = ForceSystem(m, psd=False, **TERMS[term](m))
    x, _ = _deformed(m)
    zero = np.zeros_like(x)
    K = to_scipy(s.asm, s.jacobians(x, zero)[0]).toarray()
    K_fd = _fd_jacobian(s, x, zero, "x")
    np.testing.assert_allclose(K, K_fd, atol=1e-6 * np.abs(K_fd).max())


def test_bending_jacobian_is_exact_at_the_rest_angle_and_gauss_newton_elsewhere():
    """At θ = θ0 the θ·∇²θ term vanishes, so −k∇θ∇θᵀ is the exact Jacobian there."""
    m = _model()
    x, _ = _deformed(m, noise=0.02)
    grid = _grid()
    bent = build_model(ClothSetup(PolyMesh(x, grid.face_indices, grid.face_offsets), MAT))
    s = ForceSystem(bent, hinges=bending_terms(bent), psd=False)
    zero = np.zeros_like(x)
    # at rest: the bent shape is its own rest shape
    K = to_scipy(s.asm, s.jacobians(x, zero)[0]).toarray()
    K_fd = _fd_jacobian(s, x, zero, "x")
    assert np.abs(K_fd).max() > 1e-3
    np.testing.assert_allclose(K, K_fd, atol=1e-6 * np.abs(K_fd).max())
    # away from rest the Gauss–Newton part differs only by the curvature term
    s2 = ForceSystem(m, hinges=bending_terms(m), psd=False)
    gn = to_scipy(s2.asm, s2.jacobians(x, zero)[0]).toarray()
    err = np.abs(gn - _fd_jacobian(s2, x, zero, "x")).max() / np.abs(gn).max()
    assert 1e-4 < err < 0.2


def test_constant_hinge_jacobian_is_the_exact_one_across_a_flat_rest_sheet():
    """The implicit solve's hinge blocks −k·Γ ⊗ I₃ (Γ the rest Gram matrix of ∇θ): at the flat
    rest state their normal-normal part is the exact ∂f/∂x and ∂f/∂v, they are the same
    wherever the cloth is, and they are symmetric negative semi-definite."""
    m = _model()  # flat in the xy plane: normal z
    exact = ForceSystem(m, hinges=bending_terms(m), psd=False)
    const = ForceSystem(m, hinges=bending_terms(m), constant_hinge_jacobian=True)
    x, v = m.rest_positions, np.zeros_like(m.rest_positions)
    for e, c in zip(exact.jacobians(x, v), const.jacobians(x, v)):
        E = to_scipy(exact.asm, e).toarray()
        C = to_scipy(const.asm, c).toarray()
        assert np.abs(E).max() > 1e-6
        tol = 1e-6 * np.abs(E).max()
        np.testing.assert_allclose(C[2::3, 2::3], E[2::3, 2::3], atol=tol)
        np.testing.assert_allclose(C[0::3, 0::3], C[2::3, 2::3], atol=tol)  # isotropic
        assert np.abs(E[0::3, 0::3]).max() < tol  # the exact one has no in-plane stiffness
        np.testing.assert_allclose(C, C.T, atol=tol)
        assert np.linalg.eigvalsh(C).max() <= tol
    y, w = _deformed(m, seed=4, noise=0.03)
    for c_rest, c_moved in zip(const.jacobians(x, v), const.jacobians(y, w)):
        np.testing.assert_array_equal(c_rest, c_moved)
    # the forces are the exact model's
    exact.internal(y, w)
    const.internal(y, w)
    np.testing.assert_array_equal(const.force, exact.force)


@pytest.mark.parametrize("term", TERMS)
def test_damping_jacobian_matches_finite_differences(term):
    m = _model()
    s = ForceSystem(m, psd=False, **TERMS[term](m))
    x, v = _deformed(m)
    D = to_scipy(s.asm, s.jacobians(x, v)[1]).toarray()
    D_fd = _fd_jacobian(s, x, v, "v")
    assert np.abs(D_fd).max() > 1e-6
    np.testing.assert_allclose(D, D_fd, atol=1e-6 * np.abs(D_fd).max())


@pytest.mark.parametrize("term", TERMS)
def test_the_weighted_jacobian_is_the_weighted_sum_of_both(term):
    """The implicit solve asks for J = a·∂f/∂x + b·∂f/∂v in one pass."""
    m = _model()
    s = ForceSystem(m, psd=True, **TERMS[term](m))
    x, v = _deformed(m, seed=2)
    K, D = s.jacobians(x, v)
    s.internal(x, v, jac=(-0.01, -0.1))
    scale = max(np.abs(K).max() * 0.01, np.abs(D).max() * 0.1)
    assert scale > 0.0
    np.testing.assert_allclose(s.J, -0.01 * K - 0.1 * D, rtol=0, atol=1e-6 * scale)  # float32


@pytest.mark.parametrize("term", TERMS)
def test_internal_forces_conserve_momentum(term):
    """Net force and net torque of internal forces vanish (translation/rotation invariance)."""
    m = _model()
    s = ForceSystem(m, **TERMS[term](m))
    x, v = _deformed(m, seed=3)
    s.internal(x, v)
    f = s.force
    scale = np.abs(f).max()
    assert scale > 1e-6
    assert np.abs(f.sum(axis=0)).max() < 1e-10 * scale
    assert np.abs(np.cross(x, f).sum(axis=0)).max() < 1e-10 * scale


@pytest.mark.parametrize("term", TERMS)
def test_clamped_jacobians_are_symmetric_negative_semidefinite(term):
    """What the implicit solve needs: −K and −D symmetric positive semi-definite."""
    m = _model()
    s = ForceSystem(m, psd=True, **TERMS[term](m))
    x, v = _deformed(m, seed=5, stretch=0.9, noise=0.03)  # compressed: exact K is indefinite
    for blocks in s.jacobians(x, v):
        A = to_scipy(s.asm, blocks).toarray()
        tol = 1e-6 * max(np.abs(A).max(), 1e-30)  # J is summed in float32 (system.py)
        np.testing.assert_allclose(A, A.T, atol=tol)
        assert np.linalg.eigvalsh(A).max() <= tol


def test_dihedral_gradient_is_orthogonal_to_rigid_motions():
    rng = np.random.default_rng(7)
    p = rng.normal(size=(4, 3))
    g = np.empty((4, 3))
    theta = dihedral_angle_and_gradient(p[0], p[1], p[2], p[3], g)
    assert np.isfinite(theta)
    assert np.abs(g.sum(axis=0)).max() < 1e-12  # translation
    assert np.abs(np.cross(p, g).sum(axis=0)).max() < 1e-12  # rotation


def test_dihedral_angle_is_zero_when_flat_for_either_winding():
    p = np.array([[0, 0, 0], [1, 0, 0], [0.5, 1, 0], [0.5, -1, 0.0]])
    g = np.empty((4, 3))
    assert abs(dihedral_angle_and_gradient(p[0], p[1], p[2], p[3], g)) < 1e-15
    assert abs(dihedral_angle_and_gradient(p[1], p[0], p[2], p[3], g)) < 1e-15
    folded = p.copy()
    folded[3] = [0.5, -np.cos(0.3), np.sin(0.3)]
    assert abs(abs(dihedral_angle_and_gradient(*folded, g)) - 0.3) < 1e-12


@pytest.mark.parametrize("shuffle", [False, True])
def test_element_runs_of_one_colour_share_no_vertex(shuffle):
    """Blocks are added straight into the matrix by runs of one colour in parallel: two runs of
    a colour touching one vertex would race on its diagonal block."""
    from solver.linalg.sparse import color_elements
    from solver.topology import triangulate

    tris, _ = triangulate(grid_mesh((1.0, 1.0), (40, 40), (0.0, 0.0, 0.0)))
    if shuffle:  # no mesh order to exploit: runs touch everything, colours multiply
        tris = tris[np.random.default_rng(1).permutation(len(tris))]
    start, order, color_ptr = color_elements(tris, 1600)
    assert sorted(order) == list(range(len(start) - 1))
    assert start[0] == 0 and start[-1] == len(tris)
    for c in range(len(color_ptr) - 1):
        seen = np.zeros(1600, dtype=int)
        for run in order[color_ptr[c]:color_ptr[c + 1]]:
            seen[np.unique(tris[start[run]:start[run + 1]])] += 1
        assert seen.max() == 1
    if not shuffle:
        assert len(color_ptr) - 1 <= 4  # mesh order keeps the runs local


def _drag_system(air_drag=0.7):
    m = build_model(ClothSetup(_grid(), MaterialParams(air_drag=air_drag)))
    return m, ForceSystem(m, psd=False)


def _external_forces(s, x, v, wind):
    s.evaluate(x, v, np.zeros(3), wind, np.zeros((0, 3)))
    return s.force.copy()


def test_air_drag_acts_through_the_normal_with_a_little_skin_friction():
    """A flat sheet (normal z) in still air: the normal velocity is braked by air_drag·area,
    the tangential one TANGENTIAL_DRAG_RATIO times as much; a wind w acts as the velocity −w."""
    from solver.forces.external import TANGENTIAL_DRAG_RATIO as tau
    m, s = _drag_system()
    x = m.rest_positions.copy()
    c = m.vertex_drag[:, None]
    still = np.zeros_like(x)
    v = np.tile([0.3, -0.2, 1.5], (len(x), 1))
    f = _external_forces(s, x, v, still)
    np.testing.assert_allclose(f, -c * np.array([tau * 0.3, tau * -0.2, 1.5]), rtol=1e-12)
    np.testing.assert_allclose(np.abs(s.normal[:, 2]), 1.0)
    np.testing.assert_allclose(_external_forces(s, x, np.zeros_like(x), -v), f, rtol=1e-12)
    # edge-on to the air (the sheet turned into the XZ plane): only skin friction along z
    xz = np.stack([x[:, 0], x[:, 2], x[:, 1]], 1)
    f = _external_forces(s, xz, np.tile([0.0, 0.0, -2.0], (len(x), 1)), still)
    np.testing.assert_allclose(f[:, 2], c[:, 0] * tau * 2.0, rtol=1e-12)
    # a vertex without a normal (everything collapsed onto one point) feels isotropic drag
    f = _external_forces(s, np.zeros_like(x), v, still)
    np.testing.assert_allclose(f, -c * v, rtol=1e-12)
    assert not s.normal.any()


def test_air_drag_velocity_jacobian_is_exact_and_symmetric_positive():
    """∂f/∂v = −c·[n nᵀ + τ(I − n nᵀ)] per vertex, against central differences on a crumpled
    sheet in a non-uniform wind (the normals do not depend on v, so it is exact)."""
    m, s = _drag_system()
    x, v = _deformed(m, seed=3, noise=0.03)
    wind = np.random.default_rng(4).normal(size=x.shape)
    ext = (np.zeros(3), wind, np.zeros((0, 3)))
    D = to_scipy(s.asm, s.jacobians(x, v, *ext)[1]).toarray()
    eps = 1e-6
    D_fd = np.zeros_like(D)
    for i in range(v.size):
        cols = []
        for sgn in (1, -1):
            w = v.copy().ravel()
            w[i] += sgn * eps
            cols.append(_external_forces(s, x, w.reshape(-1, 3), wind).ravel())
        D_fd[:, i] = (cols[0] - cols[1]) / (2 * eps)
    assert np.abs(D_fd).max() > 1e-3
    np.testing.assert_allclose(D, D_fd, atol=1e-6 * np.abs(D_fd).max())  # J is float32
    np.testing.assert_allclose(D, D.T, atol=1e-7 * np.abs(D).max())
    assert np.linalg.eigvalsh(-D).min() > 0.0  # every block damps (τ > 0)
    # ∂n/∂x is left out of the Jacobian (forces/external.py, add_drag_blocks)
    np.testing.assert_array_equal(to_scipy(s.asm, s.jacobians(x, v, *ext)[0]).toarray(), 0.0)


def test_a_clamp_hinge_counts_only_its_free_wing():
    """A hinge between a clamped triangle (three hard pins) and a free one bends over the free
    wing alone: k = B·|e|²/A_free. A hinge with a pinned edge but two free wings (a line of
    pins, a hinged boundary), soft pins and interior hinges keep k = B·|e|²/(A1 + A2)."""
    mesh = PolyMesh.from_faces(np.array([[0.0, 0, 0], [0.1, 0, 0], [0.05, 0.08, 0],
                                         [0.05, -0.06, 0], [0.13, 0.09, 0]]),
                               np.array([[0, 1, 2], [1, 0, 3], [1, 4, 2]]))
    free = build_model(ClothSetup(mesh, MAT))
    wings = {tuple(sorted(h[:2])): h for h in free.hinges.tolist()}
    assert set(wings) == {(0, 1), (1, 2)}
    pos = mesh.positions
    a012, a013 = 0.5 * 0.1 * 0.08, 0.5 * 0.1 * 0.06
    a142 = 0.5 * np.linalg.norm(np.cross(pos[4] - pos[1], pos[2] - pos[1]))
    e01, e12 = 0.01, np.sum((pos[2] - pos[1]) ** 2)

    def k(model, edge):
        i = [tuple(sorted(h[:2])) for h in model.hinges.tolist()].index(edge)
        return model.hinge_stiffness[i]

    B = MAT.bend_stiffness
    np.testing.assert_allclose(k(free, (0, 1)), B * e01 / (a012 + a013))
    np.testing.assert_allclose(k(free, (1, 2)), B * e12 / (a012 + a142))
    clamped = build_model(ClothSetup(mesh, MAT, pin_indices=[0, 1, 2]))
    np.testing.assert_allclose(k(clamped, (0, 1)), B * e01 / a013)
    np.testing.assert_allclose(k(clamped, (1, 2)), B * e12 / a142)
    np.testing.assert_allclose(clamped.hinge_damping / clamped.hinge_stiffness,
                               MAT.bend_damping / B)
    line = build_model(ClothSetup(mesh, MAT, pin_indices=[0, 1]))
    np.testing.assert_allclose(line.hinge_stiffness, free.hinge_stiffness)
    soft = build_model(ClothSetup(mesh, MAT, pin_indices=[0, 1, 2], pin_weights=[0.5] * 3))
    np.testing.assert_allclose(soft.hinge_stiffness, free.hinge_stiffness)
