"""Scene-file loading: the public TOML contract, its error messages, and a fuzz test."""

import copy
import dataclasses
import datetime
import math
import tomllib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from solver.mesh import grid_mesh
from solver.formats.obj import write_obj
from solver.params import MaterialParams, SolverSettings
from solver.cli import main
from solver.formats.scene import COLLIDER_CHECKS, WIND_CHECKS, SceneError, load_scene, parse_scene
from solver.spec import Collider, SimulationSpec, Wind
from scenarios import write_scene

SQUARE_OBJ = "v 0 0 1\nv 1 0 1\nv 1 1 1\nv 0 1 1\nv 0.5 0.5 1\nf 1 2 5\nf 2 3 5\nf 3 4 5\nf 4 1 5\n"
COTTON = '[preset]\nname = "Cotton"\n[material]\narea_density = 0.13\nbend_stiffness = 2e-6\n'


@pytest.fixture
def presets(tmp_path):
    folder = tmp_path / "presets"
    folder.mkdir()
    (folder / "cotton.toml").write_text(COTTON)
    return folder


def load_error(folder, text, presets=None) -> SceneError:
    with pytest.raises(SceneError) as info:
        load_scene(write_scene(folder, text), preset_directory=presets)
    message = str(info.value)
    assert "\n" not in message and message == f"{info.value.key}: {info.value.problem}"
    return info.value


# ---- loading valid scenes ----

def test_full_scene(tmp_path, presets):
    (tmp_path / "cloth.obj").write_text(SQUARE_OBJ)
    motion = np.zeros((11, 2, 3))
    motion[:, 1, 2] = np.linspace(1.0, 2.0, 11)
    np.savez(tmp_path / "pins.npz", positions=motion)
    path = write_scene(tmp_path, """\
frames = 10
fps = 30.0
gravity = [0.0, -9.8, 0.0]
[cloth]
mesh = "cloth.obj"
material = { preset = "cotton", bend_stiffness = 1e-4 }
pin = [0, 3]
pin_weights = [1.0, 0.5]
pin_motion = "pins.npz"
thickness = 0.004
[solver]
model = "mass_spring"
substeps = 20
integrator = "rk4"
bending = "flexion"
[wind]
velocity = [2.0, 0.0, 0.5]
turbulence = 0.3
turbulence_scale = 0.2
turbulence_frequency = 2.0
seed = 7
""")
    spec = load_scene(path, preset_directory=presets)
    assert isinstance(spec, SimulationSpec)
    assert spec.frames == 10 and isinstance(spec.frames, int)
    assert spec.fps == 30.0
    np.testing.assert_array_equal(spec.gravity, [0.0, -9.8, 0.0])
    cloth = spec.cloth
    assert cloth.mesh.vertex_count == 5 and cloth.mesh.face_count == 4
    assert cloth.material.area_density == 0.13          # from the preset
    assert cloth.material.bend_stiffness == 1e-4        # override
    assert cloth.material.thickness == 0.004            # shortcut
    assert cloth.material.shear_stiffness == MaterialParams().shear_stiffness
    assert cloth.pin_indices.dtype == np.int64 and cloth.pin_indices.tolist() == [0, 3]
    np.testing.assert_array_equal(cloth.weights(), [1.0, 0.5])
    np.testing.assert_array_equal(cloth.pin_targets, motion)
    assert spec.settings == SolverSettings(model="mass_spring", substeps=20, integrator="rk4",
                                           bending="flexion")
    np.testing.assert_array_equal(spec.wind.velocity, [2.0, 0.0, 0.5])
    assert (spec.wind.turbulence, spec.wind.turbulence_scale, spec.wind.turbulence_frequency,
            spec.wind.seed) == (0.3, 0.2, 2.0, 7)


def test_minimal_scene_uses_documented_defaults(tmp_path):
    spec = load_scene(write_scene(tmp_path, "[cloth]\ngrid = {}\n"))
    default = SimulationSpec(cloth=spec.cloth)
    assert spec.frames == default.frames == 48
    assert spec.fps == 24.0
    np.testing.assert_array_equal(spec.gravity, [0.0, 0.0, -9.81])
    assert spec.settings == SolverSettings()
    assert spec.cloth.material == MaterialParams()
    assert spec.cloth.pin_indices.shape == (0,) and spec.cloth.pin_indices.dtype == np.int64
    assert spec.cloth.pin_weights is None and spec.cloth.pin_targets is None
    assert spec.wind.turbulence == Wind().turbulence
    np.testing.assert_array_equal(spec.wind.velocity, [0, 0, 0])
    expected = grid_mesh()
    np.testing.assert_array_equal(spec.cloth.mesh.positions, expected.positions)


def test_grid(tmp_path):
    spec = load_scene(write_scene(tmp_path, """\
[cloth]
grid = { size = [2.0, 1.0], resolution = [5, 3], center = [0.0, 1.0, 2.0] }
"""))
    expected = grid_mesh((2.0, 1.0), (5, 3), (0.0, 1.0, 2.0))
    np.testing.assert_array_equal(spec.cloth.mesh.positions, expected.positions)
    np.testing.assert_array_equal(spec.cloth.mesh.face_indices, expected.face_indices)


def test_mesh_path_is_relative_to_the_scene_file_not_the_cwd(tmp_path, monkeypatch):
    (tmp_path / "scenes" / "meshes").mkdir(parents=True)
    write_obj(tmp_path / "scenes" / "meshes" / "sheet.obj", grid_mesh((1, 1), (3, 3)))
    path = write_scene(tmp_path / "scenes", '[cloth]\nmesh = "meshes/sheet.obj"\n')
    monkeypatch.chdir(tmp_path)
    assert load_scene(path).cloth.mesh.vertex_count == 9
    absolute = write_scene(tmp_path, f'[cloth]\nmesh = "{tmp_path / "scenes/meshes/sheet.obj"}"\n')
    assert load_scene(absolute).cloth.mesh.vertex_count == 9


def test_material_forms(tmp_path, presets):
    def material(value):
        text = f"[cloth]\ngrid = {{}}\nmaterial = {value}\n"
        return load_scene(write_scene(tmp_path, text), preset_directory=presets).cloth.material

    assert material('"cotton"').area_density == 0.13
    assert material('"Cotton"').area_density == 0.13
    assert material('{ preset = "cotton" }') == material('"cotton"')
    plain = material("{ bend_stiffness = 1e-4 }")
    assert plain == dataclasses.replace(MaterialParams(), bend_stiffness=1e-4)
    assert material("{ max_strain = 0.1, stretch_stiffness_weft = 100.0 }").weft_stiffness == 100.0


def test_solver_accepts_every_settings_field_by_name(tmp_path):
    # Data-driven: a field added to SolverSettings (e.g. self_collision) needs no loader change.
    fields = [f.name for f in dataclasses.fields(SolverSettings)]
    err = load_error(tmp_path, "[cloth]\ngrid = {}\n[solver]\nbogus = 1\n")
    assert err.problem == f"unknown key (allowed: {', '.join(fields)})"
    spec = load_scene(write_scene(tmp_path, """\
[cloth]
grid = {}
[solver]
newton_iterations = 3
settle = true
cg_tolerance = 1e-6
"""))
    assert spec.settings.newton_iterations == 3 and spec.settings.settle is True


def test_wind_checks_cover_exactly_the_wind_fields():
    assert set(WIND_CHECKS) == {f.name for f in dataclasses.fields(Wind)}


def test_colliders_of_every_kind(tmp_path):
    (tmp_path / "body.obj").write_text(SQUARE_OBJ)
    motion = np.zeros((3, 5, 3))
    motion[:, :, 2] = np.linspace(0.0, 0.2, 3)[:, None]
    np.savez(tmp_path / "motion.npz", positions=motion)
    spec = load_scene(write_scene(tmp_path, """\
frames = 2
[cloth]
grid = {}
thickness = 0.002
[solver]
self_collision = true
[[collider]]
sphere = { center = [0.0, 0.0, 0.5], radius = 0.5 }
thickness = 0.005
friction = 0.3
velocity = [0.0, 0.0, 1.0]
[[collider]]
plane = { point = [0.0, 0.0, 0.0], normal = [0.0, 0.0, 2.0] }
[[collider]]
mesh = "body.obj"
positions = "motion.npz"
friction = 0.0
"""))
    assert spec.settings.self_collision is True
    sphere, plane, mesh = spec.colliders
    assert sphere.kind == "sphere" and sphere.radius == 0.5
    np.testing.assert_array_equal(sphere.center, [0.0, 0.0, 0.5])
    np.testing.assert_array_equal(sphere.velocity, [0.0, 0.0, 1.0])
    assert (sphere.thickness, sphere.friction) == (0.005, 0.3)
    assert plane.kind == "plane"
    np.testing.assert_array_equal(plane.normal, [0.0, 0.0, 1.0])  # normalised
    assert (plane.thickness, plane.friction) == (Collider("plane").thickness,
                                                 Collider("plane").friction)  # defaults
    assert mesh.kind == "mesh" and mesh.mesh.vertex_count == 5 and mesh.friction == 0.0
    np.testing.assert_array_equal(mesh.positions, motion)


def test_collider_checks_cover_the_collider_fields():
    shapes = {"sphere", "plane", "mesh"}
    fields = {f.name for f in dataclasses.fields(Collider)}
    assert set(COLLIDER_CHECKS) - shapes <= fields
    assert fields - set(COLLIDER_CHECKS) == {"kind", "center", "radius", "point", "normal"}


# ---- errors ----

GRID = "[cloth]\ngrid = {}\n"


@pytest.mark.parametrize("text, message", [
    # top level
    ("frames = 0\n" + GRID, "frames: must be >= 1, got 0"),
    ("frames = 100001\n" + GRID, "frames: must be <= 100000, got 100001"),
    ("frames = 48.0\n" + GRID, "frames: expected an integer, got float 48.0"),
    ('frames = "48"\n' + GRID, "frames: expected a number, got str '48'"),
    ("frames = true\n" + GRID, "frames: expected a number, got bool True"),
    ("frames = 99999999999999999999999999\n" + GRID, "frames: must be <= 100000, got 99999999999999999999999999"),
    ("fps = 0.0\n" + GRID, "fps: must be > 0, got 0.0"),
    ("fps = nan\n" + GRID, "fps: must be finite, got nan"),
    ("gravity = [0.0, 0.0]\n" + GRID, "gravity: expected an array of 3 numbers, got list [0.0, 0.0]"),
    ("gravity = [0.0, 0.0, inf]\n" + GRID, "gravity[2]: must be finite, got inf"),
    ('gravity = [0.0, "down", 0.0]\n' + GRID, "gravity[1]: expected a number, got str 'down'"),
    ("gravity = 9.81\n" + GRID, "gravity: expected an array of 3 numbers, got float 9.81"),
    ("fram = 3\n" + GRID, "fram: unknown key (allowed: frames, fps, gravity, cloth, knit, solver, wind, collider)"),
    ('"odd key" = 3\n' + GRID, '"odd key": unknown key'),
    ("frames = 3\n", "cloth: missing (the scene needs a [cloth] table, or [knit])"),
    ('cloth = "sheet.obj"\n', "cloth: expected a table, got str 'sheet.obj'"),
    ("solver = 3\n" + GRID, "solver: expected a table, got int 3"),
    # cloth
    ("[cloth]\n", "cloth.mesh: missing"),
    ("[cloth]\ngrid = {}\ngrain = [0.0, 0.0, 0.0]\n", "cloth.grain: must be a non-zero direction"),
    ("[cloth]\ngrid = {}\ngrain = [1.0, 0.0]\n", "cloth.grain: expected an array of 3 numbers"),
    ('[cloth]\ngrid = {}\nmesh = "x.obj"\n', "cloth.grid: cannot be combined with cloth.mesh"),
    ("[cloth]\nmesh = 3\n", "cloth.mesh: expected a string, got int 3"),
    ('[cloth]\nmesh = "cloth.stl"\n', "cloth.mesh: unsupported mesh file 'cloth.stl' (expected an .obj file)"),
    ('[cloth]\ngrid = {}\ncolour = "red"\n', "cloth.colour: unknown key (allowed: mesh, grid,"),
    ("[cloth]\ngrid = { sise = [1.0, 1.0] }\n", "cloth.grid.sise: unknown key (allowed: size, resolution, center)"),
    ("[cloth]\ngrid = { size = [1.0, -1.0] }\n", "cloth.grid.size[1]: must be > 0 m, got -1.0"),
    ("[cloth]\ngrid = { resolution = [1, 5] }\n", "cloth.grid.resolution[0]: must be >= 2, got 1"),
    ("[cloth]\ngrid = { resolution = [5.0, 5] }\n", "cloth.grid.resolution[0]: expected an integer, got float 5.0"),
    ("[cloth]\ngrid = { resolution = [5000, 5000] }\n", "cloth.grid.resolution: 5000 x 5000 = 25000000 vertices exceeds the limit"),
    ("[cloth]\ngrid = { center = [0, 0] }\n", "cloth.grid.center: expected an array of 3 numbers"),
    ("[cloth]\ngrid = [1, 1]\n", "cloth.grid: expected a table, got list [1, 1]"),
    ("[cloth]\ngrid = { size = [true, 1.0] }\n", "cloth.grid.size[0]: expected a number, got bool True"),
    # pins
    (GRID + "pin = [0, 1.0]\n", "cloth.pin[1]: expected an integer, got float 1.0"),
    (GRID + "pin = [0, 441]\n", "cloth.pin[1]: vertex index 441 out of range 0..440"),
    (GRID + "pin = [-1]\n", "cloth.pin[0]: must be >= 0, got -1"),
    (GRID + "pin = [3, 5, 3]\n", "cloth.pin[2]: vertex 3 is pinned twice"),
    (GRID + "pin = 3\n", "cloth.pin: expected an array of integers, got int 3"),
    (GRID + 'pin = ["0"]\n', "cloth.pin[0]: expected a number, got str '0'"),
    (GRID + "pin = [0, 1]\npin_weights = [1.0]\n", "cloth.pin_weights: expected 2 weights (one per pinned vertex), got 1"),
    (GRID + "pin = [0]\npin_weights = [0.0]\n", "cloth.pin_weights[0]: must be > 0, got 0.0"),
    (GRID + "pin = [0]\npin_weights = [1.5]\n", "cloth.pin_weights[0]: must be <= 1, got 1.5"),
    (GRID + "pin_weights = [1.0]\n", "cloth.pin_weights: expected 0 weights"),
    (GRID + 'pin_motion = "nope.npz"\n', "cloth.pin_motion: file not found: "),
    # material
    (GRID + 'material = "denim"\n', "cloth.material: unknown preset 'denim' (available: cotton)"),
    (GRID + 'material = { preset = "denim" }\n', "cloth.material.preset: unknown preset 'denim'"),
    (GRID + "material = { preset = 3 }\n", "cloth.material.preset: expected a string, got int 3"),
    (GRID + "material = 3\n", "cloth.material: expected a preset name or a table, got int 3"),
    (GRID + "material = { bend_stifness = 1e-4 }\n", "cloth.material.bend_stifness: unknown key (allowed: preset, area_density,"),
    (GRID + "material = { area_density = -1.0 }\n", "cloth.material.area_density: must be > 0 kg/m², got -1.0"),
    (GRID + "material = { area_density = 10 }\n", None),  # valid: an int is a number
    (GRID + 'material = { stretch_stiffness = "stiff" }\n', "cloth.material.stretch_stiffness: expected a number, got str 'stiff'"),
    (GRID + "thickness = -0.1\n", "cloth.thickness: must be >= 0 m, got -0.1"),
    (GRID + "thickness = 0.1\nmaterial = { thickness = 0.2 }\n", "cloth.thickness: also given as cloth.material.thickness"),
    # solver
    (GRID + '[solver]\nmodel = "foo"\n', "solver.model: expected one of mass_spring, implicit, yarn, got 'foo'"),
    (GRID + "[solver]\nsubsteps = 0\n", "solver.substeps: must be >= 1, got 0"),
    (GRID + "[solver]\nsettle = 1\n", "solver.settle: expected true or false, got 1"),
    (GRID + "[solver]\ncg_tolerance = true\n", "solver.cg_tolerance: expected a number, got bool True"),
    # wind
    (GRID + "[wind]\nvelocity = [1, 2]\n", "wind.velocity: expected an array of 3 numbers"),
    (GRID + "[wind]\nturbulence = -1.0\n", "wind.turbulence: must be >= 0 m/s, got -1.0"),
    (GRID + "[wind]\nturbulence_scale = 0.0\n", "wind.turbulence_scale: must be > 0 m, got 0.0"),
    (GRID + "[wind]\nturbulence_frequency = -2\n", "wind.turbulence_frequency: must be >= 0 Hz, got -2"),
    (GRID + "[wind]\nseed = 1.5\n", "wind.seed: expected an integer, got float 1.5"),
    (GRID + "[wind]\nspeed = 3.0\n", "wind.speed: unknown key (allowed: velocity, turbulence, turbulence_scale, turbulence_frequency, seed)"),
    # colliders
    ("collider = 3\n" + GRID, "collider: expected an array of tables ([[collider]]), got int 3"),
    ("collider = [1]\n" + GRID, "collider[0]: expected a table, got int 1"),
    (GRID + "[[collider]]\nthickness = 0.1\n", "collider[0]: give exactly one of sphere, plane or mesh (missing)"),
    (GRID + "[[collider]]\nsphere = { center = [0, 0, 0], radius = 1 }\nplane = { point = [0, 0, 0], normal = [0, 0, 1] }\n",
     "collider[0]: give exactly one of sphere, plane or mesh (sphere and plane given)"),
    (GRID + "[[collider]]\nsphere = { center = [0, 0, 0] }\n", "collider[0].sphere.radius: missing"),
    (GRID + "[[collider]]\nsphere = { radius = 1.0 }\n", "collider[0].sphere.center: missing"),
    (GRID + "[[collider]]\nsphere = { center = [0, 0, 0], radius = 0.0 }\n", "collider[0].sphere.radius: must be > 0 m, got 0.0"),
    (GRID + "[[collider]]\nsphere = { center = [0, 0], radius = 1.0 }\n", "collider[0].sphere.center: expected an array of 3 numbers"),
    (GRID + "[[collider]]\nsphere = { center = [0, 0, 0], radius = 1.0, r = 2 }\n", "collider[0].sphere.r: unknown key (allowed: center, radius)"),
    (GRID + "[[collider]]\nsphere = 3\n", "collider[0].sphere: expected a table, got int 3"),
    (GRID + "[[collider]]\nplane = { point = [0, 0, 0], normal = [0, 0, 0] }\n", "collider[0].plane.normal: must be a non-zero vector"),
    (GRID + "[[collider]]\nplane = { point = [0, 0, 0] }\n", "collider[0].plane.normal: missing"),
    (GRID + "[[collider]]\nmesh = \"body.stl\"\n", "collider[0].mesh: unsupported mesh file 'body.stl' (expected an .obj file)"),
    (GRID + "[[collider]]\nmesh = \"body.obj\"\n", "collider[0].mesh: file not found: "),
    (GRID + "[[collider]]\nmesh = 3\n", "collider[0].mesh: expected a string, got int 3"),
    (GRID + "[[collider]]\nplane = { point = [0, 0, 0], normal = [0, 0, 1] }\nthickness = -0.1\n", "collider[0].thickness: must be >= 0 m, got -0.1"),
    (GRID + "[[collider]]\nplane = { point = [0, 0, 0], normal = [0, 0, 1] }\nfriction = \"high\"\n", "collider[0].friction: expected a number, got str 'high'"),
    (GRID + "[[collider]]\nplane = { point = [0, 0, 0], normal = [0, 0, 1] }\nvelocity = [1, 2]\n", "collider[0].velocity: expected an array of 3 numbers"),
    (GRID + "[[collider]]\nplane = { point = [0, 0, 0], normal = [0, 0, 1] }\ncolour = 1\n", "collider[0].colour: unknown key (allowed: sphere, plane, mesh, thickness, friction, velocity, positions)"),
    (GRID + "[[collider]]\nsphere = { center = [0, 0, 0], radius = 1.0 }\npositions = \"m.npz\"\n", "collider[0].positions: only a mesh collider can have per-frame positions"),
    (GRID + "[[collider]]\nsphere = { center = [0, 0, 0], radius = 1.0 }\n[[collider]]\nsphere = { center = [0, 0, 0], radius = -1.0 }\n", "collider[1].sphere.radius: must be > 0 m, got -1.0"),
])
def test_error_messages(tmp_path, presets, text, message):
    if message is None:
        load_scene(write_scene(tmp_path, text), preset_directory=presets)
        return
    err = load_error(tmp_path, text, presets)
    assert str(err).startswith(message), str(err)


@pytest.mark.parametrize("arrays, message", [
    ({"positions": np.zeros((3, 5, 3))}, "array 'positions' must have shape (4, 5, 3) "
                                         "(frames + 1, collider vertices, 3), got (3, 5, 3)"),
    ({"positions": np.zeros((4, 4, 3))}, "must have shape (4, 5, 3)"),
    ({"pos": np.zeros((4, 5, 3))}, "motion.npz has no array 'positions' (has: pos)"),
    ({"positions": np.full((4, 5, 3), np.inf)}, "non-finite values (first at frame 0)"),
])
def test_collider_motion_errors(tmp_path, arrays, message):
    (tmp_path / "body.obj").write_text(SQUARE_OBJ)
    np.savez(tmp_path / "motion.npz", **arrays)
    err = load_error(tmp_path, 'frames = 3\n' + GRID + '[[collider]]\nmesh = "body.obj"\n'
                               'positions = "motion.npz"\n')
    assert err.key == "collider[0].positions"
    assert message in err.problem


def test_collider_motion_is_positions_or_velocity_not_both(tmp_path):
    (tmp_path / "body.obj").write_text(SQUARE_OBJ)
    np.savez(tmp_path / "motion.npz", positions=np.zeros((4, 5, 3)))
    err = load_error(tmp_path, 'frames = 3\n' + GRID + '[[collider]]\nmesh = "body.obj"\n'
                               'positions = "motion.npz"\nvelocity = [0, 0, 1]\n')
    assert err.key == "collider[0].velocity" and "cannot be combined" in err.problem


def test_collider_mesh_errors_keep_file_and_line(tmp_path):
    (tmp_path / "body.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 9\n")
    err = load_error(tmp_path, GRID + '[[collider]]\nmesh = "body.obj"\n')
    assert str(err).startswith("collider[0].mesh: body.obj:4: face index 9 out of range")
    (tmp_path / "points.obj").write_text("v 0 0 0\n")
    err = load_error(tmp_path, GRID + '[[collider]]\nmesh = "points.obj"\n')
    assert str(err) == "collider[0].mesh: points.obj has no faces"


def test_bad_collider_exits_2_with_one_line(tmp_path, capsys):
    path = write_scene(tmp_path, GRID + '[[collider]]\nmesh = "missing.obj"\n')
    assert main(["run", str(path), "--out", str(tmp_path / "r.npz")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"error: collider[0].mesh: file not found: {tmp_path / 'missing.obj'}")
    assert not (tmp_path / "r.npz").exists()


def test_missing_mesh_file_names_the_absolute_path(tmp_path):
    err = load_error(tmp_path, '[cloth]\nmesh = "cloth.obj"\n')
    assert str(err) == f"cloth.mesh: file not found: {tmp_path / 'cloth.obj'}"
    (tmp_path / "dir.obj").mkdir()
    assert str(load_error(tmp_path, '[cloth]\nmesh = "dir.obj"\n')) == \
        f"cloth.mesh: not a file: {tmp_path / 'dir.obj'}"


def test_mesh_errors_keep_file_and_line(tmp_path):
    (tmp_path / "cloth.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 40\n")
    err = load_error(tmp_path, '[cloth]\nmesh = "cloth.obj"\n')
    assert err.key == "cloth.mesh"
    assert str(err).startswith("cloth.mesh: cloth.obj:4: face index 40 out of range")


def test_mesh_without_faces_is_rejected(tmp_path):
    (tmp_path / "points.obj").write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\n")
    assert str(load_error(tmp_path, '[cloth]\nmesh = "points.obj"\n')) == \
        "cloth.mesh: points.obj has no faces"


def test_pins_are_checked_against_the_obj_vertex_count(tmp_path):
    (tmp_path / "cloth.obj").write_text(SQUARE_OBJ)
    err = load_error(tmp_path, '[cloth]\nmesh = "cloth.obj"\npin = [4, 5]\n')
    assert str(err) == "cloth.pin[1]: vertex index 5 out of range 0..4"


@pytest.mark.parametrize("arrays, message", [
    ({"positions": np.zeros((5, 1, 3))}, "array 'positions' must have shape (4, 1, 3) "
                                         "(frames + 1, pinned vertices, 3), got (5, 1, 3)"),
    ({"positions": np.zeros((4, 2, 3))}, "must have shape (4, 1, 3)"),
    ({"positions": np.zeros((4, 3))}, "must have shape (4, 1, 3)"),
    ({"pos": np.zeros((4, 1, 3))}, "pins.npz has no array 'positions' (has: pos)"),
    ({"positions": np.full((4, 1, 3), "a")}, "array 'positions' must be real numbers"),
    ({"positions": np.zeros((4, 1, 3), complex)}, "array 'positions' must be real numbers"),
    ({"positions": np.array([[[0, 0, 0]]] * 2 + [[[0, np.nan, 0]]] * 2)},
     "array 'positions' has non-finite values (first at frame 2)"),
])
def test_pin_motion_errors(tmp_path, arrays, message):
    np.savez(tmp_path / "pins.npz", **arrays)
    err = load_error(tmp_path, 'frames = 3\n' + GRID + 'pin = [0]\npin_motion = "pins.npz"\n')
    assert err.key == "cloth.pin_motion"
    assert message in err.problem


def test_pin_motion_must_be_an_npz(tmp_path):
    np.save(tmp_path / "pins.npy", np.zeros((4, 1, 3)))
    (tmp_path / "bad.npz").write_bytes(b"PK\x03\x04 truncated")
    base = 'frames = 3\n' + GRID + 'pin = [0]\n'
    err = load_error(tmp_path, base + 'pin_motion = "pins.npy"\n')
    assert str(err) == "cloth.pin_motion: pins.npy is not an .npz archive (write it with np.savez)"
    err = load_error(tmp_path, base + 'pin_motion = "bad.npz"\n')
    assert str(err).startswith("cloth.pin_motion: cannot read bad.npz: ")


def test_integer_pin_motion_is_converted_to_float(tmp_path):
    np.savez(tmp_path / "pins.npz", positions=np.ones((3, 1, 3), dtype=np.int32))
    spec = load_scene(write_scene(tmp_path, 'frames = 2\n' + GRID + 'pin = [0]\n'
                                            'pin_motion = "pins.npz"\n'))
    assert spec.cloth.pin_targets.dtype == np.float64


def test_toml_and_file_errors(tmp_path):
    assert str(load_error(tmp_path, "frames = \n")).startswith("scene.toml: invalid TOML: ")
    assert str(load_error(tmp_path, "frames = 3\nframes = 4\n")).startswith(
        "scene.toml: invalid TOML: ")
    assert str(load_error(tmp_path, "a = " + "[" * 2000)).startswith("scene.toml: invalid TOML")
    assert str(load_error(tmp_path, "a = " + "9" * 5000)).startswith("scene.toml: invalid TOML")
    (tmp_path / "latin1.toml").write_bytes(b'# \xe9\n[cloth]\ngrid = {}\n')
    with pytest.raises(SceneError, match=r"^latin1\.toml: invalid TOML: not UTF-8 text "
                                         r"\(byte 0xe9 at offset 2\)$"):
        load_scene(tmp_path / "latin1.toml")
    with pytest.raises(SceneError, match=r"^absent\.toml: file not found: /"):
        load_scene(tmp_path / "absent.toml")
    with pytest.raises(SceneError, match=r"cannot read file"):
        load_scene(tmp_path)


def test_weird_keys_and_values_stay_on_one_line(tmp_path):
    err = load_error(tmp_path, '"line\\nbreak" = 1\n' + GRID)
    assert str(err).startswith('"line\\nbreak": unknown key')
    err = load_error(tmp_path, GRID + 'pin = ["a\\nb\\u2028c"]\n')
    assert err.key == "cloth.pin[0]" and "\n" not in str(err)
    err = load_error(tmp_path, '[cloth]\nmesh = "a\\u0000b.obj"\n')
    assert err.key == "cloth.mesh"
    err = load_error(tmp_path, f'[cloth]\nmesh = "{"x" * 5000}.obj"\n')
    assert err.key == "cloth.mesh" and len(str(err)) < 300


# ---- fuzzing: anything either loads or raises SceneError with a one-line message ----

VALID = {
    "frames": 3,
    "fps": 24.0,
    "gravity": [0.0, 0.0, -9.81],
    "cloth": {
        "mesh": "cloth.obj",
        "material": {"preset": "cotton", "bend_stiffness": 1e-4},
        "pin": [0, 3],
        "pin_weights": [1.0, 0.5],
        "pin_motion": "pins.npz",
        "thickness": 0.002,
    },
    "solver": {"model": "implicit", "substeps": 5, "newton_iterations": 3, "settle": False},
    "wind": {"velocity": [1.0, 0.0, 0.0], "turbulence": 0.5, "seed": 3},
    "collider": [
        {"sphere": {"center": [0.0, 0.0, 0.5], "radius": 0.5}, "thickness": 0.005,
         "friction": 0.3, "velocity": [0.0, 0.0, 0.1]},
        {"plane": {"point": [0.0, 0.0, 0.0], "normal": [0.0, 0.0, 1.0]}},
        {"mesh": "cloth.obj", "positions": "body.npz", "friction": 0.5},
    ],
}
GRID_CLOTH = {"grid": {"size": [1.0, 1.0], "resolution": [4, 4], "center": [0.0, 0.0, 1.0]},
              "pin": [0, 15], "material": "cotton"}

KNOWN_KEYS = sorted({
    "frames", "fps", "gravity", "cloth", "solver", "wind", "mesh", "grid", "material", "pin",
    "pin_weights", "pin_motion", "thickness", "size", "resolution", "center", "preset",
    "velocity", "turbulence", "turbulence_scale", "turbulence_frequency", "seed",
    "collider", "sphere", "plane", "radius", "point", "normal", "friction", "positions",
    *(f.name for f in dataclasses.fields(SolverSettings)),
    *(f.name for f in dataclasses.fields(MaterialParams)),
})

scalars = st.one_of(
    st.integers(-3, 30),
    st.integers(),
    st.integers(min_value=-(2**1100), max_value=2**1100),
    st.floats(),
    st.booleans(),
    st.sampled_from(["cotton", "Cotton", "cloth.obj", "pins.npz", "implicit", "mass_spring",
                     "rk4", "", "..", "/", "scene.toml", "\x00", "a\nb"]),
    st.text(max_size=10),
    st.datetimes(min_value=datetime.datetime(1, 1, 1)),
    st.dates(),
    st.times(),
)
keys = st.one_of(st.sampled_from(KNOWN_KEYS), st.text(max_size=8))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)), max_leaves=12)


@pytest.fixture(scope="module")
def scene_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzz")
    (folder / "cloth.obj").write_text(SQUARE_OBJ)
    np.savez(folder / "pins.npz", positions=np.zeros((4, 2, 3)))
    np.savez(folder / "body.npz", positions=np.zeros((4, 5, 3)))
    (folder / "presets").mkdir()
    (folder / "presets" / "cotton.toml").write_text(COTTON)
    return folder


def check_outcome(data, scene_dir):
    try:
        spec = parse_scene(data, scene_dir, preset_directory=scene_dir / "presets")
    except SceneError as err:
        message = str(err)
        assert "\n" not in message and "\r" not in message
        assert err.key and message.startswith(err.key + ": ")
        return None
    assert isinstance(spec, SimulationSpec)
    assert np.all(np.isfinite(spec.gravity)) and spec.frames >= 1 and spec.fps > 0
    for c in spec.colliders:
        assert c.kind in ("sphere", "plane", "mesh") and c.thickness >= 0 and c.friction >= 0
        if c.kind == "sphere":
            assert c.radius > 0 and np.all(np.isfinite(c.center))
        if c.kind == "plane":
            assert abs(np.linalg.norm(c.normal) - 1.0) < 1e-12
        if c.positions is not None:
            assert c.positions.shape == (spec.frames + 1, c.mesh.vertex_count, 3)
    return spec


def test_the_fuzz_base_scenes_are_valid(scene_dir):
    assert check_outcome(VALID, scene_dir) is not None
    assert check_outcome({**VALID, "cloth": GRID_CLOTH}, scene_dir) is not None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.dictionaries(keys, values, max_size=6))
def test_fuzz_random_tables(scene_dir, data):
    check_outcome(data, scene_dir)


def paths(value, prefix=()):
    """Every (path, container) location inside a nested dict/list."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from paths(v, prefix + (i,))


def mutate(scene, path, action, new_value, new_key):
    scene = copy.deepcopy(scene)
    if not path:
        if isinstance(scene, dict):
            scene[new_key] = new_value
        return scene
    parent = scene
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if action == "replace":
        parent[last] = new_value
    elif action == "delete":
        del parent[last]
    elif action == "add" and isinstance(parent[last], dict):
        parent[last][new_key] = new_value
    elif action == "add" and isinstance(parent[last], list):
        parent[last].append(new_value)
    return scene


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fuzz_mutated_valid_scenes(scene_dir, data):
    scene = data.draw(st.sampled_from([VALID, {**VALID, "cloth": GRID_CLOTH}]))
    for _ in range(data.draw(st.integers(1, 3))):
        locations = list(paths(scene))
        path = data.draw(st.sampled_from(locations))
        action = data.draw(st.sampled_from(["replace", "delete", "add"]))
        scene = mutate(scene, path, action, data.draw(values), data.draw(keys))
    check_outcome(scene, scene_dir)


toml_lines = st.sampled_from([
    "frames = 3", "frames = 0", "frames = 1e400", "fps = 24.0", "fps = -inf",
    "gravity = [0, 0, -9.81]", "gravity = [nan, 1, 2]", "[cloth]", 'mesh = "cloth.obj"',
    "grid = {}", "grid = { resolution = [3, 3] }", 'material = "cotton"',
    'material = { preset = "cotton", area_density = 0.2 }', "pin = [0, 1]", "pin = [0, 0]",
    "pin_weights = [1.0, 0.5]", 'pin_motion = "pins.npz"', "thickness = 0.01", "[solver]",
    'model = "mass_spring"', "substeps = 3", "settle = true", "[wind]",
    "velocity = [1, 0, 0]", "seed = 2", "[[collider]]", "x = 1979-05-27T07:32:00Z", "= 3",
    "sphere = { center = [0, 0, 0], radius = 0.5 }", "sphere = { radius = -1 }",
    "plane = { point = [0, 0, 0], normal = [0, 0, 1] }", 'mesh = "cloth.obj"',
    'positions = "body.npz"', "friction = 0.4", "thickness = -1",
    'a."b c" = [[1], [2.0]]',
])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(toml_lines, max_size=12))
def test_fuzz_scene_files(scene_dir, lines):
    path = scene_dir / "fuzz.toml"
    path.write_text("\n".join(lines) + "\n")
    try:
        tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError:
        with pytest.raises(SceneError, match=r"^fuzz\.toml: invalid TOML: "):
            load_scene(path, preset_directory=scene_dir / "presets")
        return
    try:
        spec = load_scene(path, preset_directory=scene_dir / "presets")
    except SceneError as err:
        assert "\n" not in str(err)
    else:
        assert math.isfinite(spec.fps)


def test_the_grain_direction_reaches_the_cloth(tmp_path):
    spec = load_scene(write_scene(tmp_path, "[cloth]\ngrid = {}\ngrain = [0.0, 2.0, 0.0]\n"))
    np.testing.assert_array_equal(spec.cloth.grain, [0.0, 2.0, 0.0])
