"""Issue 6, solver side: messy meshes, bad parameters and blow-ups either simulate sensibly or
stop with a clear error naming the problem, and never corrupt frames already simulated.

"Sensibly" means: every position finite, hard pins exactly where they were, and the free cloth
falling under gravity without blowing up (bounded speed, bounded stretch).

Already covered elsewhere (referenced, not duplicated):
- automatic explicit substepping on a hanging cloth: test_physics.py
  ::test_mass_spring_raises_substeps_to_stay_stable (here: a far-too-low request on a stiff
  fabric, checking the run stays finite and the count is reported);
- blow-up by speed limit keeping earlier frames: test_physics.py
  ::test_blow_up_stops_with_the_frame_and_keeps_earlier_frames (here: NaN pin target, frames
  unchanged);
- dihedral angle of flipped windings: test_forces.py::test_dihedral_angle_is_zero_when_flat_for_
  either_winding (here: a whole mixed-winding cloth simulated);
- a scene whose OBJ has no faces: test_scene.py::test_mesh_without_faces_is_rejected;
- scene-file parameter messages (frames, fps, substeps = 0, area_density < 0, ...):
  test_scene.py::test_error_messages (here: every MaterialParams / SolverSettings numeric
  field against zero/negative/NaN/inf/huge, from its own FieldSpec).
"""

import dataclasses
import math

import numpy as np
import pytest

from solver import (ClothSetup, MaterialParams, MeshError, ParameterError, PolyMesh,
                    SimulationSpec, SolverSettings, grid_mesh)
from solver.model import build_model
from solver.formats.scene import SceneError, parse_scene
from solver.simulation import Simulation, simulate
from scenarios import SOFT, simulate_cloth

SOLVERS = ("implicit", "mass_spring")


def assert_sensible(result, pins, falling):
    """Finite, pins held exactly, the ``falling`` vertices moved down, nothing flew away."""
    assert result.error is None, result.error
    p = result.positions
    assert np.all(np.isfinite(p))
    np.testing.assert_array_equal(p[:, pins], np.broadcast_to(p[0, pins], p[:, pins].shape))
    drop = p[0, falling, 2] - p[-1, falling, 2]
    assert np.all(drop > 1e-3), drop
    # 6 frames at 24 fps: free fall is 0.31 m; nothing may travel much further than that
    assert np.max(np.linalg.norm(p[-1] - p[0], axis=1)) < 0.5


# ---------------------------------------------------------------------------------------------
# meshes

def strip_of_ngons():
    """A horizontal strip of a pentagon and a hexagon sharing an edge, at z = 1."""
    pos = [(0, 0, 1), (0.1, 0, 1), (0.15, 0.05, 1), (0.1, 0.1, 1), (0, 0.1, 1),  # pentagon
           (0.25, 0, 1), (0.3, 0.05, 1), (0.25, 0.1, 1)]
    # hexagon 1-5-6-7-3-2 shares edge 1..3 via vertex 2
    faces = [[0, 1, 2, 3, 4], [1, 5, 6, 7, 3, 2]]
    return PolyMesh.from_faces(pos, faces)


@pytest.mark.parametrize("model", SOLVERS)
def test_ngons_simulate(model):
    mesh = strip_of_ngons()
    m = build_model(ClothSetup(mesh, SOFT))
    assert len(m.triangles) == 3 + 4                      # fan split keeps every polygon
    assert np.isclose(m.mass.sum(), SOFT.area_density * m.tri_area.sum())
    assert np.all(m.mass > 0)
    r = simulate_cloth(mesh, pins=[0, 4], model=model)
    assert_sensible(r, [0, 4], falling=[5, 6, 7])


def fin_mesh():
    """Three triangles sharing the edge 0-1 (non-manifold), plus their wings 2, 3, 4."""
    pos = [(0, 0, 1), (0.2, 0, 1), (0.1, 0.15, 1), (0.1, -0.15, 1), (0.1, 0.0, 1.15)]
    return PolyMesh.from_faces(pos, [[0, 1, 2], [1, 0, 3], [0, 1, 4]])


@pytest.mark.parametrize("model", SOLVERS)
def test_non_manifold_edge_simulates(model):
    mesh = fin_mesh()
    m = build_model(ClothSetup(mesh, SOFT))
    assert len(m.hinges) == 2                  # n faces on one edge: n - 1 hinges
    assert len(m.edges) == 7
    r = simulate_cloth(mesh, pins=[0, 1], model=model)
    # the wings 2 and 3 swing down; the fin 4 stands upright above the pinned edge (an
    # unstable balance its membrane holds) and only sags
    assert_sensible(r, [0, 1], falling=[2, 3])
    assert 0 <= r.positions[0, 4, 2] - r.positions[-1, 4, 2] < 0.05


@pytest.mark.parametrize("model", SOLVERS)
def test_loose_vertices_stay_put_and_the_cloth_falls(model):
    """A vertex in no face has no mass and no forces: it stays where it is (the add-on keeps
    it in the shape key), while the cloth around it falls."""
    g = grid_mesh((0.3, 0.3), (4, 4), (0, 0, 1))
    pos = np.vstack([g.positions, [(0.5, 0.5, 1.0), (0.6, 0.5, 1.0)]])  # two loose vertices
    mesh = PolyMesh(pos, g.face_indices, g.face_offsets)
    mesh.validate()
    m = build_model(ClothSetup(mesh, SOFT))
    assert m.mass[16] == 0 and m.mass[17] == 0
    r = simulate_cloth(mesh, pins=[12, 15], model=model)
    assert_sensible(r, [12, 15], falling=[0, 3])
    np.testing.assert_array_equal(r.positions[-1, 16:], pos[16:])


def test_loose_edges_in_an_obj_are_ignored_and_their_vertices_stay_put(tmp_path):
    """OBJ ``l`` lines (loose edges) carry no cloth: their vertices behave as loose vertices.
    PolyMesh itself only holds faces, and a two-vertex "face" is refused by name."""
    (tmp_path / "c.obj").write_text(
        "v 0 0 1\nv 0.2 0 1\nv 0.2 0.2 1\nv 0 0.2 1\nv 1 1 1\nv 1.2 1 1\n"
        "f 1 2 3 4\nl 5 6\n")
    spec = parse_scene({"frames": 4, "cloth": {"mesh": "c.obj", "pin": [0]}}, tmp_path)
    assert spec.cloth.mesh.vertex_count == 6
    r = simulate(spec)
    assert r.error is None and np.all(np.isfinite(r.positions))
    np.testing.assert_array_equal(r.positions[-1, 4:], r.positions[0, 4:])
    assert r.positions[-1, 2, 2] < r.positions[0, 2, 2]
    with pytest.raises(MeshError, match="face 1 has 2 vertices; a face needs at least 3"):
        PolyMesh.from_faces(np.zeros((4, 3)), [[0, 1, 2], [2, 3]])


@pytest.mark.parametrize("model", SOLVERS)
def test_zero_area_faces_simulate(model):
    """A collinear triangle and a quad with a repeated corner next to a healthy grid."""
    g = grid_mesh((0.3, 0.3), (4, 4), (0, 0, 1))
    pos = np.vstack([g.positions, [(0.15, -0.15, 1.0)]])   # 16: collinear with 0 and 3
    faces = g.faces() + [[0, 3, 16], [1, 2, 2, 5]]
    mesh = PolyMesh.from_faces(pos, faces)
    m = build_model(ClothSetup(mesh, SOFT))
    assert np.all(np.isfinite(m.mass)) and np.all(np.isfinite(m.edge_rest_length))
    assert np.all(np.isfinite(m.membrane_frame_u)) and np.all(np.isfinite(m.membrane_frame_v))
    r = simulate_cloth(mesh, pins=[12, 15], model=model)
    assert_sensible(r, [12, 15], falling=[0, 3])


@pytest.mark.parametrize("model", SOLVERS)
def test_unwelded_seam_falls_as_two_pieces(model):
    """Two grids whose seam vertices coincide but are not shared: zero-length gaps, no crash.
    Each half is pinned, so both halves hang from their own pins."""
    a = grid_mesh((0.2, 0.2), (3, 3), (-0.1, 0, 1))
    b = grid_mesh((0.2, 0.2), (3, 3), (0.1, 0, 1))
    pos = np.vstack([a.positions, b.positions])
    mesh = PolyMesh(pos, np.concatenate([a.face_indices, b.face_indices + 9]),
                    np.concatenate([a.face_offsets, a.face_offsets[-1] + b.face_offsets[1:]]))
    mesh.validate()
    assert np.allclose(pos[2], pos[9])                       # duplicated seam vertex
    r = simulate_cloth(mesh, pins=[6, 17], model=model)
    assert_sensible(r, [6, 17], falling=[0, 11])


@pytest.mark.parametrize("model", SOLVERS)
def test_mixed_winding_falls_like_consistent_winding(model):
    """Flipping every other quad changes nothing physical: same motion to round-off."""
    g = grid_mesh((0.3, 0.3), (5, 5), (0, 0, 1))
    # reversed keeping the first corner, so both windings split the quad on the same diagonal
    faces = [np.r_[f[0], f[:0:-1]] if k % 2 else f for k, f in enumerate(g.faces())]
    flipped = PolyMesh.from_faces(g.positions, faces)
    a = simulate_cloth(g, pins=[20, 24], model=model)
    b = simulate_cloth(flipped, pins=[20, 24], model=model)
    assert_sensible(b, [20, 24], falling=[0, 4])
    np.testing.assert_allclose(b.positions, a.positions, atol=1e-6)


@pytest.mark.parametrize("model", SOLVERS)
def test_single_triangle(model):
    mesh = PolyMesh.from_faces([(0, 0, 1), (0.1, 0, 1), (0, 0.1, 1)], [[0, 1, 2]])
    r = simulate_cloth(mesh, pins=[0], model=model)
    assert_sensible(r, [0], falling=[1, 2])
    free = simulate_cloth(mesh, model=model)                      # unpinned: plain free fall
    assert free.error is None
    drop = free.positions[0, :, 2] - free.positions[-1, :, 2]
    n, h = 6, 1 / 24     # between the exact g·t²/2 and implicit Euler's g·h²·n(n+1)/2
    assert np.all(drop > 0.999 * 0.5 * 9.81 * (n * h) ** 2)
    assert np.all(drop < 1.001 * 9.81 * h * h * n * (n + 1) / 2)


def test_a_mesh_without_faces_is_refused():
    """Decision: a cloth with no faces has no mass and nothing to simulate, so it is an error
    (the scene loader says so too, see test_scene.py::test_mesh_without_faces_is_rejected)."""
    mesh = PolyMesh.from_faces([(0, 0, 0), (1, 0, 0), (0, 1, 0)], [])
    with pytest.raises(MeshError, match="mesh has no faces"):
        build_model(ClothSetup(mesh, SOFT))
    with pytest.raises(MeshError, match="mesh has no faces"):
        simulate(SimulationSpec(ClothSetup(mesh, SOFT), frames=2))


@pytest.mark.slow  # LARGE: ~100k vertices; runs in the default suite (no deselection)
def test_large_grid_builds_and_steps_one_implicit_frame():
    """LARGE: 320 x 320 = 102 400 vertices. build_model and one implicit frame finish with
    finite positions, the pins held and the cloth starting to fall.

    One Newton iteration with at most 50 CG iterations keeps this near 15 s on one busy core;
    the default settings (4 Newton iterations, ~1700 CG iterations in total) take about 85 s
    for this frame, so they are left to bench/ (costs are measured there, never asserted)."""
    n = 320
    mesh = grid_mesh((2.0, 2.0), (n, n), (0, 0, 1))
    pins = np.array([(n - 1) * n, n * n - 1])
    spec = SimulationSpec(ClothSetup(mesh, MaterialParams(), pins),
                          SolverSettings(model="implicit", newton_iterations=1,
                                         cg_max_iterations=50), frames=1)
    sim = Simulation(spec)
    assert sim.model.vertex_count == 102_400
    rep = sim.step()
    assert sim.result.error is None and rep is not None
    p = sim.result.positions
    assert p.shape == (2, 102_400, 3) and np.all(np.isfinite(p))
    np.testing.assert_array_equal(p[1, pins], p[0, pins])
    assert np.all(p[1, :, 2] <= p[0, :, 2] + 1e-9) and p[1, 0, 2] < p[0, 0, 2]


# ---------------------------------------------------------------------------------------------
# parameters

BAD_VALUES = [0.0, -1.0, math.nan, math.inf, -math.inf, 1e300]


def _bad_cases(cls):
    """(field, value) pairs that the field's own FieldSpec must refuse."""
    for name, spec in _numeric_specs(cls):
        for value in BAD_VALUES:
            ok = (math.isfinite(value) and (value > spec.minimum if spec.exclusive_min
                                            else value >= spec.minimum)
                  and value <= spec.maximum)
            if not ok:
                yield cls, name, value


def _numeric_specs(cls):
    return [(f.name, f.metadata["spec"]) for f in dataclasses.fields(cls) if "spec" in f.metadata]


CASES = list(_bad_cases(MaterialParams)) + list(_bad_cases(SolverSettings))


@pytest.mark.parametrize("cls,name,value", CASES,
                         ids=[f"{c.__name__}.{n}={v}" for c, n, v in CASES])
def test_bad_parameters_are_refused_with_the_field_named(cls, name, value):
    prefix = "material" if cls is MaterialParams else "solver"
    with pytest.raises(ParameterError) as err:
        cls.from_mapping({name: value})
    assert err.value.key == f"{prefix}.{name}"
    assert str(err.value).startswith(f"{prefix}.{name}: must be ")
    # through a scene table the same field is named with its path in the file
    table = {"cloth": {"grid": {"resolution": [3, 3]}}}
    if cls is MaterialParams:
        table["cloth"]["material"] = {name: value}
        key = f"cloth.material.{name}"
    else:
        table["solver"] = {name: value}
        key = f"solver.{name}"
    with pytest.raises(SceneError) as err:
        parse_scene(table)
    assert str(err.value).startswith(f"{key}: must be "), str(err.value)


def test_every_numeric_field_refuses_nan_and_huge_values():
    """The table above is not vacuous: every numeric field appears with NaN and 1e300."""
    for cls in (MaterialParams, SolverSettings):
        for name, _ in _numeric_specs(cls):
            got = {v for c, n, v in CASES if c is cls and n == name}
            assert 1e300 in got and any(isinstance(v, float) and math.isnan(v) for v in got)


# ---------------------------------------------------------------------------------------------
# explicit substepping and blow-ups

def test_explicit_model_substeps_a_far_too_low_request():
    """One substep per frame for a 5 kN/m fabric would explode; the solver raises the count."""
    g = grid_mesh((0.3, 0.3), (6, 6), (0, 0, 1))
    mat = dataclasses.replace(SOFT, stretch_stiffness=5000.0, shear_stiffness=50.0)
    r = simulate_cloth(g, pins=[30, 35], model="mass_spring", material=mat, frames=4, substeps=1)
    assert_sensible(r, [30, 35], falling=[0, 5])
    assert all(f.substeps > 20 for f in r.frames), [f.substeps for f in r.frames]
    assert max(f.max_strain for f in r.frames) < 0.05


def test_explicit_model_refuses_a_step_count_that_would_run_for_hours():
    """Absurd stiffness on the explicit model: stop on the first frame with the substeps it
    would need and the way out, instead of stepping millions of times."""
    g = grid_mesh((0.3, 0.3), (6, 6), (0, 0, 1))
    mat = dataclasses.replace(SOFT, stretch_stiffness=1e8, shear_stiffness=1e8)
    r = simulate_cloth(g, pins=[30, 35], model="mass_spring", material=mat, frames=4)
    assert r.error is not None and r.frames == []
    assert r.error.startswith("frame 1: the mass_spring model needs ")
    assert "substeps per frame to stay stable" in r.error
    assert "more than max_substeps = 20,000; use the implicit model" in r.error
    assert r.positions.shape[0] == 1  # frame 0 kept
    # the same cloth runs when the user allows the steps it needs (here a few hundred thousand
    # would be needed: a lower stiffness shows the limit is the only thing that stopped it)
    ok = simulate_cloth(g, pins=[30, 35], model="mass_spring", frames=1,
             material=dataclasses.replace(mat, stretch_stiffness=1e4, shear_stiffness=1e2))
    assert ok.error is None


@pytest.mark.parametrize("model", SOLVERS)
def test_nan_pin_target_stops_with_frame_and_hint_keeping_earlier_frames(model):
    n, frames, bad = 5, 6, 4
    g = grid_mesh((0.3, 0.3), (n, n), (0, 0, 1))
    pins = np.array([20, 24])
    targets = np.repeat(g.positions[pins][None], frames + 1, axis=0)
    targets[bad, 0] = np.nan                          # the target of frame `bad` is broken
    spec = SimulationSpec(ClothSetup(g, SOFT, pins, pin_targets=targets),
                          SolverSettings(model=model), frames=frames)
    sim = Simulation(spec)
    kept = []
    while not sim.done:
        if sim.step() is not None:
            kept.append(sim.result.positions.copy())
    r = sim.result
    assert r.error is not None and r.error.startswith(
        f"frame {bad}: the pin target of vertex 20 is NaN or infinite"), r.error
    assert f"frames 0-{bad - 1} are kept" in r.error and "Check the pinned" in r.error
    assert len(r.frames) == bad - 1 and r.positions.shape[0] == bad
    assert np.all(np.isfinite(r.positions))
    np.testing.assert_array_equal(r.positions, kept[-1])   # untouched by the failed frame
    with pytest.raises(RuntimeError, match="finished"):
        sim.step()


@pytest.mark.parametrize("grain, message", [
    ({"uv": np.zeros((3, 2))}, r"uv: expected shape \(16, 2\)"),
    ({"uv": np.full((16, 2), np.nan)}, "uv: contains NaN"),
    ({"grain": np.zeros(3)}, "grain: expected a non-zero direction"),
])
def test_a_malformed_uv_map_or_grain_is_named(grain, message):
    with pytest.raises(MeshError, match=message):
        build_model(ClothSetup(grid_mesh((0.3, 0.3), (3, 3), (0, 0, 0)), SOFT, **grain))
