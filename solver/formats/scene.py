"""Scene files: a TOML description of one simulation, loaded into a ``SimulationSpec``.

The format is a public contract (scripts and the benchmark depend on it)::

    frames = 48                      # frames to simulate (int, 1..100000)
    fps = 24.0                       # frames per second, > 0
    gravity = [0.0, 0.0, -9.81]      # [m/s²]
    [cloth]
    mesh = "cloth.obj"               # relative to the scene file's directory
    # or: grid = { size = [1.0, 1.0], resolution = [21, 21], center = [0.0, 0.0, 1.0] }
    material = "cotton"              # preset name, or { preset = "cotton", bend_stiffness = 1e-4 }
    pin = [0, 20]                    # vertex indices held in place
    pin_weights = [1.0, 0.5]         # optional, one per pin, each in (0, 1]
    pin_motion = "pins.npz"          # optional: "positions", shape (frames + 1, len(pin), 3) [m]
    thickness = 0.002                # optional shortcut for material.thickness [m]
    grain = [1.0, 0.0, 0.0]          # optional warp direction (default world X)
    seams = [[0, 40], [1, 41]]       # optional vertex pairs sewn together (Blender: loose edges)
    seam_force = 10.0                # optional shortcut for material.seam_force [N/m]
    [solver]                         # SolverSettings fields
    model = "implicit"
    quality = "final"                # or "preview"; explicit settings below win over its bundle
    [wind]                           # Wind fields
    velocity = [2.0, 0.0, 0.0]
    # or, for a knit simulated yarn by yarn (solver/yarn/), a [knit] table instead of [cloth]:
    [knit]
    pattern = "rib2x2"               # stockinette, garter, rib2x2, seed or a repeat ("k3p1")
    stitches = [12, 12]              # stitches per course, courses
    yarn = "wool_worsted"            # yarn preset, or { preset = "cotton_dk", friction = 0.3 }
    gauge = [5.6e-3, 4.2e-3]         # optional: stitch width, course height [m]
    center = [0.0, 0.0, 0.5]         # optional: the swatch's middle [m] (courses +x, wales +z)
    pin = "top"                      # "top" (the last course), "none" or point indices
    pin_weights = [1.0, 0.5]         # optional, as for cloth (with pin indices)
    pin_motion = "needle.npz"        # optional: "positions" (frames + 1, pins, 3) [m]
    relax = 0.02                     # optional: seconds of Kaldor's relaxation first
    edges = true                     # optional: a cast-on and a bind-off (false: raw edges)
    [solver]                         # with a [knit]: model = "yarn", optional time_step [s]
    [[collider]]                     # any number of colliders, each exactly one shape:
    sphere = { center = [0.0, 0.0, 0.5], radius = 0.5 }       # [m]
    # plane = { point = [0.0, 0.0, 0.0], normal = [0.0, 0.0, 1.0] }  # solid behind the normal
    # mesh = "body.obj"              # relative to the scene file; any polygons
    thickness = 0.005                # [m] collision margin around the surface
    friction = 0.3                   # Coulomb coefficient
    velocity = [0.0, 0.0, 0.0]       # [m/s] rigid translation from frame 0
    # positions = "body_motion.npz"  # mesh only: "positions" (frames + 1, V, 3) [m] per frame

Every problem raises ``SceneError`` with a one-line message that starts with the dotted key
(``cloth.grid.size[0]: must be > 0 m, got -1.0``). Each table has one small validator built
from a key -> check table, so new tables slot in the same way.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import reprlib
import tomllib
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..mesh import MeshError, PolyMesh, grid_mesh
from ..params import (FieldSpec, MaterialParams, ParameterError, SolverSettings, YarnParams,
                      check_value, field_specs)
from ..spec import ClothSetup, Collider, SimulationSpec, Wind, YarnSetup
from ..yarn.stitches import GAUGE_IN_RADII, knit_swatch, purl_mask
from .obj import read_obj
from .presets import YARN, load_preset

MAX_GRID_VERTICES = 1_000_000  # keeps a typo in grid.resolution from exhausting memory


class SceneError(ValueError):
    """The scene cannot be loaded; ``key`` is the dotted key at fault, the message one line."""

    def __init__(self, key: str, problem: str):
        self.key = _one_line(key)
        self.problem = _one_line(problem)
        super().__init__(f"{self.key}: {self.problem}")

    def __reduce__(self):  # keep it picklable despite the two-argument constructor
        return type(self), (self.key, self.problem)


# ---- generic checks: each takes (dotted key, raw TOML value) and returns the checked value ----

Check = Callable[[str, Any], Any]


def _number(spec: FieldSpec) -> Check:
    """A number within ``spec``; integer specs demand a TOML integer (48.0 is not a frame count)."""
    def check(key: str, value: Any):
        if spec.integer and isinstance(value, float):
            raise SceneError(key, f"expected an integer, got {_show(value)}")
        with _as_scene_error():
            return check_value(key, value, spec)
    return check


def _numbers(count: int | None, spec: FieldSpec) -> Check:
    """An array of ``count`` numbers (any length if None), each within ``spec``."""
    item = _number(spec)
    noun = "integers" if spec.integer else "numbers"

    def check(key: str, value: Any) -> list:
        if not isinstance(value, (list, tuple)) or (count is not None and len(value) != count):
            size = f"{count} " if count is not None else ""
            raise SceneError(key, f"expected an array of {size}{noun}, got {_show(value)}")
        return [item(f"{key}[{i}]", v) for i, v in enumerate(value)]
    return check


def _of_type(*types: type, noun: str) -> Check:
    def check(key: str, value: Any):
        if not isinstance(value, types):
            raise SceneError(key, f"expected {noun}, got {_show(value)}")
        return value
    return check


_text = _of_type(str, noun="a string")
_table = _of_type(dict, noun="a table")


def _fields(prefix: str, table: Any, checks: dict[str, Check]) -> dict[str, Any]:
    """Check every key of ``table`` with ``checks``; unknown keys are errors."""
    if not isinstance(table, dict):
        raise SceneError(prefix or "scene", f"expected a table, got {_show(table)}")
    _known_keys(prefix, table, checks)
    return {k: checks[k](_join(prefix, k), v) for k, v in table.items()}


def _known_keys(prefix: str, table: dict, allowed) -> None:
    for key in table:
        if key not in allowed:
            raise SceneError(_join(prefix, key), f"unknown key (allowed: {', '.join(allowed)})")


@contextmanager
def _as_scene_error():
    """Re-raise a params.py ParameterError (which already names its key) as a SceneError."""
    try:
        yield
    except ParameterError as err:
        raise SceneError(err.key, err.problem) from None


# ---- the tables of the contract ----

_FRAMES = FieldSpec("", "frames to simulate", 1, 100_000, integer=True)
_FPS = FieldSpec("", "frames per second", 0.0, 1.0e4, exclusive_min=True)
_ACCELERATION = FieldSpec("m/s²", "gravity component", -1.0e4, 1.0e4)
_TOP_LEVEL: dict[str, Check] = {
    "frames": _number(_FRAMES),
    "fps": _number(_FPS),
    "gravity": _numbers(3, _ACCELERATION),
    "cloth": _table,
    "knit": _table,
    "solver": _table,
    "wind": _table,
    "collider": _of_type(list, noun="an array of tables ([[collider]])"),
}

_MATERIAL_FIELDS = [f.name for f in dataclasses.fields(MaterialParams)]
_CLOTH: dict[str, Check] = {
    "mesh": _text,
    "grid": _table,
    "material": _of_type(str, dict, noun="a preset name or a table"),
    "pin": _numbers(None, FieldSpec("", "vertex index", 0, 2**31 - 1, integer=True)),
    "pin_weights": _numbers(None, FieldSpec("", "pin weight", 0.0, 1.0, exclusive_min=True)),
    "pin_motion": _text,
    "thickness": _number(field_specs(MaterialParams)["thickness"]),
    "grain": _numbers(3, FieldSpec("", "warp direction component", -1.0e6, 1.0e6)),
    "seams": _of_type(list, noun="an array of vertex index pairs ([[i, j], ...])"),
    "seam_force": _number(field_specs(MaterialParams)["seam_force"]),
}

_GRID: dict[str, Check] = {
    "size": _numbers(2, FieldSpec("m", "grid extent", 0.0, 1.0e4, exclusive_min=True)),
    "resolution": _numbers(2, FieldSpec("", "vertices along a side", 2, 10_000, integer=True)),
    "center": _numbers(3, FieldSpec("m", "grid centre coordinate", -1.0e6, 1.0e6)),
}

# Wind has no FieldSpec metadata in spec.py, so its bounds live here.
WIND_CHECKS: dict[str, Check] = {
    "velocity": _numbers(3, FieldSpec("m/s", "wind velocity component", -1.0e4, 1.0e4)),
    "turbulence": _number(FieldSpec("m/s", "gust amplitude", 0.0, 1.0e4)),
    "turbulence_scale": _number(FieldSpec("m", "gust size", 0.0, 1.0e6, exclusive_min=True)),
    "turbulence_frequency": _number(FieldSpec("Hz", "gust rate of change", 0.0, 1.0e6)),
    "seed": _number(FieldSpec("", "gust field seed", 0, 2**32 - 1, integer=True)),
}


_KNIT: dict[str, Check] = {
    "pattern": _text,
    "stitches": _numbers(2, FieldSpec("", "stitches or courses", 1, 1000, integer=True)),
    "yarn": _of_type(str, dict, noun="a yarn preset name or a table"),
    "gauge": _numbers(2, FieldSpec("m", "stitch width or course height", 0.0, 1.0,
                                   exclusive_min=True)),
    "center": _numbers(3, FieldSpec("m", "coordinate", -1.0e4, 1.0e4)),
    "pin": _of_type(str, list, noun='"top", "none" or point indices'),
    "pin_weights": _CLOTH["pin_weights"],
    "pin_motion": _text,
    "relax": _number(FieldSpec("s", "relaxation time", 0.0, 10.0)),
    "edges": _of_type(bool, noun="true (a cast-on and a bind-off) or false (raw edges)"),
}
# The settings the yarn model reads (the others are the cloth models')
_YARN_SOLVER_KEYS = ("model", "time_step")

_POSITION = FieldSpec("m", "coordinate", -1.0e6, 1.0e6)
_SPHERE: dict[str, Check] = {
    "center": _numbers(3, _POSITION),
    "radius": _number(FieldSpec("m", "sphere radius", 0.0, 1.0e6, exclusive_min=True)),
}
_PLANE: dict[str, Check] = {
    "point": _numbers(3, _POSITION),
    "normal": _numbers(3, FieldSpec("", "normal component", -1.0e6, 1.0e6)),
}
# Collider has no FieldSpec metadata in spec.py, so its bounds live here.
COLLIDER_CHECKS: dict[str, Check] = {
    "sphere": _table,
    "plane": _table,
    "mesh": _text,
    "thickness": _number(FieldSpec("m", "collision margin", 0.0, 1.0)),
    "friction": _number(FieldSpec("", "Coulomb friction coefficient", 0.0, 10.0)),
    "velocity": _numbers(3, FieldSpec("m/s", "collider velocity component", -1.0e4, 1.0e4)),
    "positions": _text,
}
_SHAPES = ("sphere", "plane", "mesh")


def load_scene(path, *, preset_directory=None) -> SimulationSpec:
    """Load and validate a scene file.

    Args:
        path: the ``.toml`` scene; relative file names inside it are relative to its directory.
        preset_directory: where material presets are looked up (default: bundled presets).

    Raises:
        SceneError: one line naming the key and the problem.
    """
    path = Path(path)
    name = path.name or str(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise SceneError(name, f"file not found: {os.path.abspath(path)}") from None
    except (OSError, ValueError) as err:
        raise SceneError(name, f"cannot read file: {getattr(err, 'strerror', None) or err}") \
            from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as err:
        raise SceneError(name, f"invalid TOML: not UTF-8 text (byte {raw[err.start]:#04x} at "
                               f"offset {err.start})") from None
    except ValueError as err:  # TOMLDecodeError, or an integer literal beyond 4300 digits
        raise SceneError(name, f"invalid TOML: {err}") from None
    except RecursionError:
        raise SceneError(name, "invalid TOML: arrays or tables nested too deeply") from None
    return parse_scene(data, path.parent, preset_directory=preset_directory)


def parse_scene(data: dict, base_dir=".", *, preset_directory=None) -> SimulationSpec:
    """Validate an already-parsed scene table (as ``tomllib`` returns it).

    Args:
        data: the scene table.
        base_dir: directory that relative ``mesh`` / ``pin_motion`` paths are relative to.
        preset_directory: where material presets are looked up (default: bundled presets).
    """
    top = _fields("", data, _TOP_LEVEL)
    if "cloth" in top and "knit" in top:
        raise SceneError("knit", "cannot be combined with [cloth]; a scene simulates one or "
                                 "the other")
    if "cloth" not in top and "knit" not in top:
        raise SceneError("cloth", "missing (the scene needs a [cloth] table, or [knit])")
    frames = top.get("frames", _spec_default("frames"))
    settings = _solver(top.get("solver", {}), knit="knit" in top)
    wind = _wind(top.get("wind", {}))
    cloth = _cloth(top["cloth"], Path(base_dir), frames, preset_directory) if "cloth" in top \
        else _knit(top["knit"], Path(base_dir), frames)
    colliders = tuple(_collider(f"collider[{i}]", table, Path(base_dir), frames)
                      for i, table in enumerate(top.get("collider", [])))
    optional = {k: top[k] for k in ("frames", "fps") if k in top}
    if "gravity" in top:
        optional["gravity"] = np.array(top["gravity"], dtype=np.float64)
    return SimulationSpec(cloth=cloth, settings=settings, wind=wind, colliders=colliders,
                          **optional)


def _solver(table: dict, knit: bool = False) -> SolverSettings:
    if knit:
        _known_keys("solver", table, _YARN_SOLVER_KEYS)
        if table.get("model") != "yarn":
            raise SceneError("solver.model", f'a [knit] scene needs model = "yarn", got '
                                             f"{_show(table.get('model'))}")
    else:
        _known_keys("solver", table, [f.name for f in dataclasses.fields(SolverSettings)])
        if table.get("model") == "yarn":
            raise SceneError("solver.model", 'the yarn model simulates a [knit] table, not '
                                             "[cloth]")
    with _as_scene_error():
        return SolverSettings.from_mapping(table, prefix="solver")


def _wind(table: dict) -> Wind:
    values = _fields("wind", table, WIND_CHECKS)
    if "velocity" in values:
        values["velocity"] = np.array(values["velocity"], dtype=np.float64)
    return Wind(**values)


def _cloth(table: dict, base_dir: Path, frames: int, preset_directory) -> ClothSetup:
    values = _fields("cloth", table, _CLOTH)
    mesh = _cloth_mesh(values, base_dir)
    material = _material("cloth.material", values.get("material", {}), preset_directory)
    if "thickness" in values:
        if isinstance(values.get("material"), dict) and "thickness" in values["material"]:
            raise SceneError("cloth.thickness", "also given as cloth.material.thickness; "
                                                "give it once")
        material = dataclasses.replace(material, thickness=values["thickness"])
    if "seam_force" in values:
        if isinstance(values.get("material"), dict) and "seam_force" in values["material"]:
            raise SceneError("cloth.seam_force", "also given as cloth.material.seam_force; "
                                                 "give it once")
        material = dataclasses.replace(material, seam_force=values["seam_force"])
    seams = _seams("cloth.seams", values.get("seams", []), mesh)

    pins, weights, targets = _pin_fields("cloth", values, mesh.vertex_count, base_dir, frames,
                                         "vertex", "vertices")
    grain = None
    if "grain" in values:
        grain = np.array(values["grain"], dtype=np.float64)
        if not np.any(grain):
            raise SceneError("cloth.grain", "must be a non-zero direction, got [0, 0, 0]")
    return ClothSetup(mesh=mesh, material=material, pin_indices=pins, pin_weights=weights,
                      pin_targets=targets, grain=grain, seams=seams)


def _knit(table: dict, base_dir: Path, frames: int) -> YarnSetup:
    """A [knit] table: the swatch laid out by the stitch generator (solver/yarn/stitches.py)
    in the world's x–z plane (courses +x, wales up +z, its face towards −y) around
    ``center``, to be relaxed for ``relax`` seconds before the first frame."""
    values = _fields("knit", table, _KNIT)
    for key in ("pattern", "stitches", "yarn"):
        if key not in values:
            raise SceneError(f"knit.{key}", "missing")
    try:
        purl_mask(values["pattern"], 1, 1)
    except ValueError as err:
        raise SceneError("knit.pattern", str(err)) from None
    stitches, courses = values["stitches"]
    yarn = _yarn(values["yarn"])
    gauge = values.get("gauge", (GAUGE_IN_RADII[0] * yarn.radius,
                                 GAUGE_IN_RADII[1] * yarn.radius))
    sw = knit_swatch(values["pattern"], stitches, courses, gauge[0], gauge[1], yarn.radius,
                     edges=values.get("edges", True))
    g = sw.positions
    world = np.stack([g[:, 0], -g[:, 2], g[:, 1]], axis=1)
    world += np.asarray(values.get("center", (0.0, 0.0, 0.0))) \
        - 0.5 * (world.min(axis=0) + world.max(axis=0))
    pins, weights, targets = _pin_fields("knit", values, len(world), base_dir, frames,
                                         "point", "points",
                                         named={"top": sw.top_course,
                                                "none": np.zeros(0, np.int64)})
    return YarnSetup(positions=world, yarn_offsets=sw.yarn_offsets, yarn=yarn, ties=sw.ties,
                     loops=sw.loops, stitches=stitches, courses=courses,
                     limp=np.concatenate([sw.cast_on, sw.bind_off]),
                     relax=values.get("relax", 0.02), pin_indices=pins, pin_weights=weights,
                     pin_targets=targets)


def _yarn(value: str | dict) -> YarnParams:
    """A yarn preset name, or a table of YarnParams fields on a preset (``preset``) or on
    ``radius`` and ``linear_density`` given."""
    key = "knit.yarn"
    if isinstance(value, str):
        try:
            return load_preset(value, kind=YARN)
        except ParameterError as err:
            raise SceneError(key, err.problem if err.key == "yarn" else str(err)) from None
    fields = [f.name for f in dataclasses.fields(YarnParams)]
    _known_keys(key, value, ["preset", *fields])
    base = None
    if "preset" in value:
        base = _yarn(_text(f"{key}.preset", value["preset"]))
    elif not {"radius", "linear_density"} <= set(value):
        raise SceneError(key, "a yarn table needs a preset or radius and linear_density")
    with _as_scene_error():
        return YarnParams.from_mapping({k: v for k, v in value.items() if k != "preset"},
                                       base=base, prefix=key)


def _collider(key: str, table: Any, base_dir: Path, frames: int) -> Collider:
    values = _fields(key, table, COLLIDER_CHECKS)
    shapes = [k for k in _SHAPES if k in values]
    if len(shapes) != 1:
        problem = "missing" if not shapes else f"{' and '.join(shapes)} given"
        raise SceneError(key, f"give exactly one of sphere, plane or mesh ({problem})")
    kind = shapes[0]
    common = {k: values[k] for k in ("thickness", "friction") if k in values}
    if "velocity" in values:
        common["velocity"] = np.array(values["velocity"], dtype=np.float64)
    if "positions" in values and kind != "mesh":
        raise SceneError(f"{key}.positions", "only a mesh collider can have per-frame positions")
    if "positions" in values and "velocity" in values:
        raise SceneError(f"{key}.velocity", "cannot be combined with positions (the per-frame "
                                            "positions already give the motion)")
    if kind == "sphere":
        sphere = _fields(f"{key}.sphere", values["sphere"], _SPHERE)
        for name in _SPHERE:
            if name not in sphere:
                raise SceneError(f"{key}.sphere.{name}", "missing")
        return Collider("sphere", center=np.array(sphere["center"], dtype=np.float64),
                        radius=float(sphere["radius"]), **common)
    if kind == "plane":
        plane = _fields(f"{key}.plane", values["plane"], _PLANE)
        for name in _PLANE:
            if name not in plane:
                raise SceneError(f"{key}.plane.{name}", "missing")
        normal = np.array(plane["normal"], dtype=np.float64)
        length = float(np.linalg.norm(normal))
        if not (length > 0.0 and np.isfinite(length)):
            raise SceneError(f"{key}.plane.normal", f"must be a non-zero vector, got "
                                                    f"{plane['normal']}")
        return Collider("plane", point=np.array(plane["point"], dtype=np.float64),
                        normal=normal / length, **common)
    mesh = _obj_mesh(f"{key}.mesh", values["mesh"], base_dir)
    positions = None
    if "positions" in values:
        positions = _npz_positions(f"{key}.positions", values["positions"], base_dir,
                                   (frames + 1, mesh.vertex_count, 3), "collider vertices")
    return Collider("mesh", mesh=mesh, positions=positions, **common)


def _cloth_mesh(values: dict, base_dir: Path) -> PolyMesh:
    if "mesh" in values and "grid" in values:
        raise SceneError("cloth.grid", "cannot be combined with cloth.mesh; give exactly one")
    if "grid" in values:
        grid = _fields("cloth.grid", values["grid"], _GRID)
        nx, ny = grid.get("resolution", (0, 0))
        if nx * ny > MAX_GRID_VERTICES:
            raise SceneError("cloth.grid.resolution", f"{nx} x {ny} = {nx * ny} vertices exceeds "
                                                      f"the limit of {MAX_GRID_VERTICES}")
        try:
            return grid_mesh(**grid)
        except MeshError as err:
            raise SceneError("cloth.grid", str(err)) from None
    if "mesh" not in values:
        raise SceneError("cloth.mesh", "missing (give cloth.mesh = \"file.obj\" or cloth.grid)")
    return _obj_mesh("cloth.mesh", values["mesh"], base_dir)


def _obj_mesh(key: str, name: str, base_dir: Path) -> PolyMesh:
    """A mesh read from an .obj file named relative to the scene (it must have faces)."""
    if Path(name).suffix.lower() != ".obj":
        raise SceneError(key, f"unsupported mesh file {_SHORT.repr(name)} "
                              "(expected an .obj file)")
    path = _existing_file(key, name, base_dir)
    try:
        mesh = read_obj(path)
    except MeshError as err:
        raise SceneError(key, str(err)) from None
    if mesh.face_count == 0:
        raise SceneError(key, f"{path.name} has no faces")
    return mesh


def _material(key: str, value: str | dict, preset_directory) -> MaterialParams:
    """A preset name, or a table of overrides on a preset (``preset`` key) or on the defaults."""
    if isinstance(value, str):
        return _preset(key, value, preset_directory)
    _known_keys(key, value, ["preset", *_MATERIAL_FIELDS])
    overrides = {k: v for k, v in value.items() if k != "preset"}
    base = None
    if "preset" in value:
        base = _preset(f"{key}.preset", _text(f"{key}.preset", value["preset"]), preset_directory)
    with _as_scene_error():
        return MaterialParams.from_mapping(overrides, base=base, prefix=key)


def _preset(key: str, name: str, preset_directory) -> MaterialParams:
    try:
        return load_preset(name, preset_directory)
    except ParameterError as err:
        # "material: unknown preset ..." is reported at the scene key; a broken preset file
        # keeps its own key ("preset cotton.area_density: ...") inside the message.
        raise SceneError(key, err.problem if err.key == "material" else str(err)) from None


def _pin_fields(table: str, values: dict, count: int, base_dir: Path, frames: int, noun: str,
                nouns: str, named: dict[str, np.ndarray] | None = None
                ) -> tuple[np.ndarray, np.ndarray | None, np.ndarray | None]:
    """A [cloth] or [knit] table's pins: ``pin`` (indices below ``count``, each once, or one
    of the names in ``named``), its ``pin_weights`` (one per pin) and ``pin_motion``
    positions (frames + 1, pins, 3) [m]; (indices (N,), weights (N,) or None, positions or
    None). ``noun`` and ``nouns`` name what is pinned in the errors ("vertex", "vertices")."""
    pin = values.get("pin", [])
    key = f"{table}.pin"
    if isinstance(pin, str):
        if not named or pin not in named:
            choices = ", ".join(f'"{name}"' for name in named or ())
            raise SceneError(key, f"expected {choices} or {noun} indices, got {_show(pin)}"
                             if choices else f"expected {noun} indices, got {_show(pin)}")
        pins = np.asarray(named[pin], dtype=np.int64)
    else:
        _numbers(None, FieldSpec("", f"{noun} index", 0, 2**31 - 1, integer=True))(key, pin)
        seen: set[int] = set()
        for i, index in enumerate(pin):
            if index >= count:
                raise SceneError(f"{key}[{i}]", f"{noun} index {index} out of range "
                                                f"0..{count - 1}")
            if index in seen:
                raise SceneError(f"{key}[{i}]", f"{noun} {index} is pinned twice")
            seen.add(index)
        pins = np.array(pin, dtype=np.int64)
    weights = None
    if "pin_weights" in values:
        weights = np.array(values["pin_weights"], dtype=np.float64)
        if len(weights) != len(pins):
            raise SceneError(f"{table}.pin_weights", f"expected {len(pins)} weights (one per "
                                                     f"pinned {noun}), got {len(weights)}")
    targets = None
    if "pin_motion" in values:
        targets = _npz_positions(f"{table}.pin_motion", values["pin_motion"], base_dir,
                                 (frames + 1, len(pins), 3), f"pinned {nouns}")
    return pins, weights, targets


_SEAM_VERTEX = FieldSpec("", "vertex index", 0, 2**31 - 1, integer=True)


def _seams(key: str, pairs: list, mesh: PolyMesh) -> np.ndarray:
    """Seam pairs (S, 2): each two distinct vertices of the mesh's faces."""
    in_faces = np.zeros(mesh.vertex_count, bool)
    in_faces[mesh.face_indices] = True
    out = []
    for k, pair in enumerate(pairs):
        i, j = _numbers(2, _SEAM_VERTEX)(f"{key}[{k}]", pair)
        for n, index in enumerate((i, j)):
            if index >= mesh.vertex_count:
                raise SceneError(f"{key}[{k}][{n}]", f"vertex index {index} out of range "
                                                     f"0..{mesh.vertex_count - 1}")
            if not in_faces[index]:
                raise SceneError(f"{key}[{k}][{n}]", f"vertex {index} belongs to no face; a "
                                                     "seam joins vertices of the cloth")
        if i == j:
            raise SceneError(f"{key}[{k}]", f"joins vertex {i} to itself")
        out.append((i, j))
    return np.array(out, dtype=np.int64).reshape(-1, 2)


def _npz_positions(key: str, name: str, base_dir: Path, shape: tuple[int, int, int],
                   what: str) -> np.ndarray:
    """Array "positions" of an .npz file, of the given shape (frames + 1, ``what``, 3) [m]."""
    path = _existing_file(key, name, base_dir)
    try:
        with path.open("rb") as fp:
            is_zip = fp.read(4) == b"PK\x03\x04"  # np.savez writes a zip archive
        if not is_zip:
            raise SceneError(key, f"{path.name} is not an .npz archive (write it with np.savez)")
        with np.load(path, allow_pickle=False) as archive:
            if "positions" not in archive.files:
                raise SceneError(key, f"{path.name} has no array 'positions' "
                                      f"(has: {', '.join(archive.files) or 'nothing'})")
            positions = archive["positions"]
    except SceneError:
        raise
    except Exception as err:  # noqa: BLE001 - corrupt archives raise many kinds of errors
        raise SceneError(key, f"cannot read {path.name}: {type(err).__name__}: {err}") from None
    if positions.shape != shape:
        raise SceneError(key, f"array 'positions' must have shape {shape} (frames + 1, {what}, "
                              f"3), got {positions.shape}")
    if not np.issubdtype(positions.dtype, np.integer) \
            and not np.issubdtype(positions.dtype, np.floating):
        raise SceneError(key, f"array 'positions' must be real numbers, got {positions.dtype}")
    positions = positions.astype(np.float64)
    if not np.all(np.isfinite(positions)):
        frame = int(np.argwhere(~np.isfinite(positions))[0][0])
        raise SceneError(key, f"array 'positions' has non-finite values (first at frame {frame})")
    return positions


def _existing_file(key: str, name: str, base_dir: Path) -> Path:
    """``name`` resolved against ``base_dir`` (absolute names stay as they are); must exist."""
    path = Path(os.path.abspath(base_dir / name))
    try:
        exists, is_file = path.exists(), path.is_file()
    except OSError as err:  # e.g. a name too long for the file system
        raise SceneError(key, f"invalid path {_SHORT.repr(name)}: {err.strerror or err}") \
            from None
    if not exists:
        raise SceneError(key, f"file not found: {path}")
    if not is_file:
        raise SceneError(key, f"not a file: {path}")
    return path


# ---- message helpers ----

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def _join(prefix: str, key: Any) -> str:
    """Dotted key path; keys that are not TOML bare keys are quoted, as TOML would write them."""
    text = key if isinstance(key, str) and _BARE_KEY.fullmatch(key) \
        else json.dumps(str(key), ensure_ascii=False)
    return f"{prefix}.{text}" if prefix else text


class _ShortRepr(reprlib.Repr):
    def repr_int(self, x, level):
        # repr() of a huge int is slow and, past 4300 digits, an error.
        return repr(x) if x.bit_length() <= 64 else f"<{x.bit_length()}-bit integer>"


_SHORT = _ShortRepr()
_SHORT.maxstring = _SHORT.maxother = 40


def _show(value: Any) -> str:
    """Type and abbreviated value, for "got ..." in messages."""
    return f"{type(value).__name__} {_SHORT.repr(value)}"


def _one_line(text: str) -> str:
    """Escape line breaks and control characters so a message is always a single line."""
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii")
                   for c in str(text))


def _spec_default(name: str):
    return next(f.default for f in dataclasses.fields(SimulationSpec) if f.name == name)
