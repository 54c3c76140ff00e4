"""Seams (solver/forces/seams.py): the force against finite differences, panels sewn around a
collider, seams across pieces in both models, joined vertices, and scene-file errors."""

import dataclasses

import numpy as np
import pytest

from scenarios import write_scene
from solver import (ClothSetup, Collider, MaterialParams, MeshError, PolyMesh, SceneError,
                    SimulationSpec, SolverSettings, grid_mesh, load_preset, load_scene, simulate)
from solver.cli import main
from solver.forces.seams import seam_gaps
from solver.forces.springs import spring_terms
from solver.linalg.sparse import to_scipy
from solver.model import build_model
from solver.system import ForceSystem


def _cylinder(radius, length, n=24):
    """A closed cylinder along x, centred at the origin."""
    a = 2 * np.pi * np.arange(n) / n
    ring = np.stack([np.zeros(n), radius * np.cos(a), radius * np.sin(a)], 1)
    pos = np.concatenate([ring - [length / 2, 0, 0], ring + [length / 2, 0, 0]])
    faces = [[i, (i + 1) % n, n + (i + 1) % n, n + i] for i in range(n)]
    faces += [list(range(n))[::-1], list(range(n, 2 * n))]
    return PolyMesh.from_faces(pos, faces)


def _panels(nx, ny, length, width, height):
    """Two flat panels (length along x, width along y) at z = ±height, as one mesh, and the
    seams joining their edges y = ±width/2 (vertex pairs, (2·nx, 2))."""
    g = grid_mesh((length, width), (nx, ny), (0.0, 0.0, 0.0))
    V = g.vertex_count
    pos = np.concatenate([g.positions + [0, 0, height], g.positions - [0, 0, height]])
    mesh = PolyMesh(pos, np.concatenate([g.face_indices, g.face_indices + V]),
                    np.concatenate([g.face_offsets, g.face_offsets[1:] + len(g.face_indices)]))
    edge = np.concatenate([np.arange(nx), (ny - 1) * nx + np.arange(nx)])
    return mesh, np.stack([edge, edge + V], 1)


# ---- the force term ----

def _sewn_model():
    mat = MaterialParams(thickness=0.003, seam_force=20.0)
    mesh, seams = _panels(3, 3, 0.2, 0.2, 0.02)
    return build_model(ClothSetup(mesh, mat, seams=seams))


def _fd(s, x, v, wrt, eps=1e-7):
    """Central-difference ∂f/∂x or ∂f/∂v, (3V, 3V), and (wrt x) the energy gradient."""
    J, grad = np.zeros((x.size, x.size)), np.zeros(x.size)
    for i in range(x.size):
        f, e = [], []
        for sgn in (1, -1):
            y, w = x.copy().ravel(), v.copy().ravel()
            (y if wrt == "x" else w)[i] += sgn * eps
            s.internal(y.reshape(-1, 3), w.reshape(-1, 3))
            f.append(s.force.ravel().copy())
            e.append(s.elastic_energy())
        J[:, i] = (f[0] - f[1]) / (2 * eps)
        grad[i] = (e[0] - e[1]) / (2 * eps)
    return J, grad


def test_seam_force_is_minus_energy_gradient_and_its_jacobian_checked():
    """The force is −∇E; ∂f/∂v is exact; the stiffness in the solve is the secant P/s·I
    (forces/seams.py): the exact ∂f/∂x where a seam is closed, above it (in the PSD order)
    across a wide gap."""
    m = _sewn_model()  # reach δ = 3 mm
    s = ForceSystem(m)  # no element terms: the seams alone
    rng = np.random.default_rng(3)
    wide = m.rest_positions + rng.normal(scale=0.01, size=m.rest_positions.shape)
    closed = m.rest_positions.copy()
    closed[m.seams[:, 1]] = closed[m.seams[:, 0]] + rng.normal(scale=1e-5, size=(6, 3))
    v = rng.normal(size=wide.shape)
    zero = np.zeros_like(v)
    for x in (wide, closed):
        s.internal(x, zero)
        f = s.force.ravel().copy()
        K_fd, grad = _fd(s, x, zero, "x")
        np.testing.assert_allclose(f, -grad, atol=1e-6 * np.abs(grad).max() + 1e-12)
        D_fd, _ = _fd(s, x, v, "v")
        K, D = (to_scipy(s.asm, b).toarray() for b in s.jacobians(x, v))
        np.testing.assert_allclose(D, D_fd, atol=1e-4 * np.abs(D_fd).max())
        # convex energy: the exact −∂f/∂x is PSD, and the secant one lies above it
        assert np.linalg.eigvalsh(-0.5 * (K_fd + K_fd.T)).min() > -1e-6 * np.abs(K_fd).max()
        assert np.linalg.eigvalsh(K_fd - K).min() > -1e-6 * np.abs(K).max()
        if x is closed:
            np.testing.assert_allclose(K, K_fd, atol=1e-4 * np.abs(K_fd).max())
        else:
            assert np.abs(K - K_fd).max() > 0.1 * np.abs(K_fd).max()


def test_seams_enter_no_stretch_bend_or_membrane_term():
    mesh, seams = _panels(3, 3, 0.2, 0.2, 0.02)
    plain, sewn = (build_model(ClothSetup(mesh, seams=s)) for s in (None, seams))
    for name in ("edges", "diagonals", "hinges", "membrane_triangles", "triangles", "mass"):
        np.testing.assert_array_equal(getattr(plain, name), getattr(sewn, name))
    np.testing.assert_array_equal(spring_terms(plain, True).springs,
                                  spring_terms(sewn, True).springs)
    assert len(plain.seams) == 0 and len(sewn.seams) == len(seams)


def test_seam_pull_is_the_seam_force_per_metre_of_seam():
    m = _sewn_model()  # two seams 0.2 m long, 20 N/m
    assert m.seam_pull.sum() == pytest.approx(2 * 0.2 * 20.0)


def test_joined_vertices_feel_no_force_and_stay_joined():
    """Two panels sharing a seam line of coincident vertices (zero-length seams)."""
    g = grid_mesh((0.2, 0.2), (5, 5), (0.0, 0.0, 1.0))
    V = g.vertex_count
    other = g.positions + [0.2, 0.0, 0.0]  # its left column lies on the first one's right
    mesh = PolyMesh(np.concatenate([g.positions, other]),
                    np.concatenate([g.face_indices, g.face_indices + V]),
                    np.concatenate([g.face_offsets, g.face_offsets[1:] + len(g.face_indices)]))
    right, left = 5 * np.arange(5) + 4, 5 * np.arange(5) + V
    seams = np.stack([right, left], 1)
    m = build_model(ClothSetup(mesh, seams=seams))
    s = ForceSystem(m)
    s.internal(m.rest_positions, np.zeros((2 * V, 3)), jac=(1.0, 1.0))
    assert np.all(np.isfinite(s.J)) and not np.any(s.force)
    pins = np.arange(5) * 5  # the first panel's left edge
    for model in ("implicit", "mass_spring"):
        # self-collision: contact between the faces around a seam would push it open
        # (collision/pipeline.py treats a seam's two vertices as one)
        res = simulate(SimulationSpec(ClothSetup(mesh, pin_indices=pins, seams=seams),
                                      SolverSettings(model=model, self_collision=True),
                                      frames=6))
        assert res.error is None and np.all(np.isfinite(res.positions))
        assert seam_gaps(res.positions[-1], seams).max() < 0.1 * MaterialParams().thickness
        assert max(f.self_intersections for f in res.frames) == 0


# ---- sewing in a simulation ----

def test_panels_sewn_around_a_cylinder_close_and_drape_without_penetrating():
    """Two flat cotton panels 0.26 m apart, above and below a horizontal cylinder, sewn
    along both long edges: the seams close to within the cloth thickness and the tube hangs
    on the cylinder, through neither it nor itself."""
    mesh, seams = _panels(9, 15, 0.3, 0.5, 0.13)
    mat = load_preset("cotton")  # 0.3 mm thick
    spec = SimulationSpec(ClothSetup(mesh, mat, seams=seams),
                          SolverSettings(model="implicit", self_collision=True), frames=36,
                          colliders=(Collider("mesh", mesh=_cylinder(0.1, 0.6),
                                              thickness=0.002),))
    res = simulate(spec)
    assert res.error is None
    gaps = [seam_gaps(x, seams).max() for x in res.positions]
    assert [f.seam_gap_m for f in res.frames] == pytest.approx(gaps[1:])  # the report's
    assert res.report()["totals"]["final_seam_gap_m"] == pytest.approx(gaps[-1])
    assert gaps[0] == pytest.approx(0.26)
    assert gaps[12] < 0.05  # closing within half a second
    assert max(gaps[-6:]) < mat.thickness
    assert max(f.deepest_penetration_m for f in res.frames) == 0.0
    assert max(f.collider_crossings for f in res.frames) == 0
    assert max(f.self_intersections for f in res.frames) == 0
    low = res.positions[-1][:, 2].min()
    assert low < -0.1  # hanging around the cylinder, not above it


@pytest.mark.parametrize("model", ["mass_spring", "implicit"])
def test_seam_between_two_pieces(model):
    """Two pieces (separate ClothSetups) sewn edge to edge across a 5 cm gap; the left piece
    hangs from its left edge. The explicit model's automatic step sees the seams' stiffness
    and stays sensible."""
    a = grid_mesh((0.2, 0.2), (5, 5), (-0.125, 0.0, 1.0))
    b = grid_mesh((0.2, 0.2), (5, 5), (0.125, 0.0, 1.0))
    right, left = 5 * np.arange(5) + 4, 5 * np.arange(5)
    seams = np.stack([right, left + a.vertex_count], 1)  # the combined numbering
    mat = MaterialParams(area_density=0.1, stretch_stiffness=200.0, shear_stiffness=2.0,
                         bend_stiffness=1e-6, stretch_damping=0.05)
    pieces = (ClothSetup(a, mat, pin_indices=left), ClothSetup(b, mat))
    settings = SolverSettings(model=model)
    res = simulate(SimulationSpec(pieces, settings, frames=24, seams=seams))
    assert res.error is None
    gaps = seam_gaps(res.positions[-1], seams)
    assert gaps.max() < mat.thickness
    # the sewn piece hangs from the seam instead of falling away
    assert res.positions[-1][25:, 2].min() > 0.6
    if model == "mass_spring":
        free = simulate(SimulationSpec(pieces, settings, frames=1))
        assert res.frames[0].substeps <= 3 * free.frames[0].substeps


def test_seam_indices_are_checked():
    mesh, _ = _panels(3, 3, 0.2, 0.2, 0.02)
    with pytest.raises(MeshError, match=r"seams\[1\]: vertex index out of range 0..17"):
        build_model(ClothSetup(mesh, seams=[[0, 9], [1, 18]]))
    with pytest.raises(MeshError, match=r"seams\[0\]: joins vertex 4 to itself"):
        build_model(ClothSetup(mesh, seams=[[4, 4]]))
    with pytest.raises(MeshError, match=r"seams\[0\]: vertex 18 belongs to no polygon"):
        loose = PolyMesh(np.concatenate([mesh.positions, [[0.0, 0.0, 2.0]]]),
                         mesh.face_indices, mesh.face_offsets)
        build_model(ClothSetup(loose, seams=[[18, 0]]))


# ---- scene files ----

SCENE = """frames = 2
[cloth]
grid = { size = [0.2, 0.2], resolution = [3, 3] }
"""


def test_scene_file_seams_and_seam_force(tmp_path):
    spec = load_scene(write_scene(tmp_path, SCENE + "seams = [[0, 2], [3, 5]]\n"
                                  "seam_force = 25.0\n"))
    assert spec.cloth.seams.tolist() == [[0, 2], [3, 5]]
    assert spec.cloth.material.seam_force == 25.0
    assert load_scene(write_scene(tmp_path, SCENE)).cloth.seams.shape == (0, 2)


@pytest.mark.parametrize("line, message", [
    ("seams = [[0, 9]]", "cloth.seams[0][1]: vertex index 9 out of range 0..8"),
    ("seams = [[0, -1]]", "cloth.seams[0][1]: must be >= 0, got -1"),
    ("seams = [[0, 1, 2]]", "cloth.seams[0]: expected an array of 2 integers"),
    ("seams = [[3, 3]]", "cloth.seams[0]: joins vertex 3 to itself"),
    ("seams = [0, 1]", "cloth.seams[0]: expected an array of 2 integers, got int 0"),
    ("seams = 4", "cloth.seams: expected an array of vertex index pairs"),
    ("seam_force = -5.0", "cloth.seam_force: must be > 0 N/m, got -5.0"),
    ("material = { seam_force = 0.0 }", "cloth.material.seam_force: must be > 0 N/m"),
])
def test_scene_file_seam_errors_exit_2_naming_the_key(tmp_path, capsys, line, message):
    path = write_scene(tmp_path, SCENE + line + "\n")
    with pytest.raises(SceneError, match="^" + message.replace("[", r"\[").replace("]", r"\]")):
        load_scene(path)
    assert main(["run", str(path), "--out", str(tmp_path / "r.npz")]) == 2
    assert capsys.readouterr().err.startswith(f"error: {message}")


# ---- seam lines between objects (the add-on's Sew To) ----

def test_sew_lines_pairs_two_edges_vertex_by_vertex_facing_each_other():
    from solver import sew_lines
    a = grid_mesh((0.2, 0.2), (4, 4), (-0.15, 0.0, 1.0))
    b = grid_mesh((0.2, 0.2), (4, 4), (0.15, 0.0, 1.0))
    right, left = 4 * np.arange(4) + 3, 4 * np.arange(4)
    pairs = sew_lines(a, right[::-1], b, left)  # any order of the group's vertices
    assert pairs.tolist() == np.stack([right, left], 1).tolist()
    # the second panel turned upside down: its line runs the other way
    flipped = PolyMesh(b.positions * [1, -1, 1], b.face_indices, b.face_offsets)
    assert sew_lines(a, right, flipped, left).tolist() == \
        np.stack([right, left[::-1]], 1).tolist()
    # loops: the boundary rings of two panels, stacked 5 cm apart, paired where closest
    ring = np.array([0, 1, 2, 3, 7, 11, 15, 14, 13, 12, 8, 4])
    up = PolyMesh(a.positions + [0, 0, 0.05], a.face_indices, a.face_offsets)
    pairs = sew_lines(a, ring, up, np.roll(ring, 5))
    assert np.array_equal(pairs[:, 0], pairs[:, 1]) and len(pairs) == 12
    with pytest.raises(MeshError, match="4 and 5 vertices"):
        sew_lines(a, right, b, np.append(left, 1))
    with pytest.raises(MeshError, match="vertex 1 has 3 neighbours"):
        sew_lines(a, right, b, [0, 1, 2, 5])
    with pytest.raises(MeshError, match="not joined by edges into one line"):
        sew_lines(a, right, b, [0, 4, 12, 5])
    with pytest.raises(MeshError, match="one seam line is a closed loop"):
        sew_lines(a, ring, grid_mesh((1.1, 0.1), (12, 2)), np.arange(12))


def test_the_sleeve_example_loads_and_its_seams_start_closing():
    """examples/sleeve.toml (docs/user-guide.md, "Sewing"): its seams join the two panels' long edges."""
    from pathlib import Path
    spec = load_scene(Path(__file__).resolve().parent.parent / "examples" / "sleeve.toml")
    seams = spec.cloth.seams
    x = spec.cloth.mesh.positions
    assert seams.shape == (18, 2)
    np.testing.assert_allclose(seam_gaps(x, seams), 0.24)
    res = simulate(dataclasses.replace(spec, frames=6))
    assert res.error is None
    assert seam_gaps(res.positions[-1], seams).max() < 0.5 * 0.24
