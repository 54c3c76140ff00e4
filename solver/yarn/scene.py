"""Knit scene files: a ``[knit]`` table instead of ``[cloth]``, run by the yarn model.

::

    frames = 24                      # frames to simulate (int ≥ 1)
    fps = 24.0                       # frames per second, > 0
    gravity = [0.0, 0.0, -9.81]      # [m/s²]
    [knit]
    pattern = "rib2x2"               # stockinette, garter, rib2x2, seed or a repeat such
                                     # as "k3p1" or "k1p1/p1k1" (stitches.parse_repeat)
    stitches = [32, 42]              # stitches per course, courses
    yarn = "wool_worsted"            # yarn preset, or a table of YarnParams fields
                                     # ({ preset = "cotton_dk", radius = 1e-3 } or
                                     #  { radius = 1e-3, linear_density = 4e-4 })
    gauge = [5.6e-3, 4.2e-3]         # optional: stitch width, course height [m]
                                     # (default 4.48 and 3.36 yarn radii: worsted at 18 × 24
                                     # per 10 cm)
    center = [0.0, 0.0, 0.5]         # optional: where the swatch's middle starts [m]
    pin = "top"                      # "top" (every point of the last course), "none" or point indices
    relax = 0.02                     # optional: seconds of Kaldor's relaxation first (≥ 0)
    [solver]
    model = "yarn"                   # required for a knit scene
    time_step = 4.17e-5              # optional [s]

The swatch hangs in the world's x–z plane: courses along +x, wales up +z, its face towards −y.
Every problem raises ``SceneError`` naming the dotted key, as the cloth scene files do. The
result holds ``positions`` (frames + 1, P, 3) [m] of every yarn point, ``yarn_offsets``
(Y + 1,) and ``radius`` [m].
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..formats.scene import SceneError
from ..params import FieldSpec, ParameterError, YarnParams, check_value
from .damping import loop_regions
from .dynamics import DEFAULT_TIME_STEP, YarnSimulation, YarnStepError
from .presets import load_yarn_preset
from .relax import relax_swatch
from .stitches import knit_swatch, purl_mask

# Worsted gauge (18 stitches, 24 courses per 10 cm) in radii of Kaldor's 1.25 mm yarn.
GAUGE_IN_RADII = (5.6e-3 / 1.25e-3, 4.2e-3 / 1.25e-3)

_TOP = {"frames": FieldSpec("", "frames", 1, 100000, integer=True),
        "fps": FieldSpec("1/s", "frames per second", 0.0, 1e4, exclusive_min=True)}
_STITCHES = FieldSpec("", "stitches or courses", 1, 1000, integer=True)
_LENGTH = FieldSpec("m", "length", 0.0, 1.0, exclusive_min=True)
_COORD = FieldSpec("m", "coordinate", -1e4, 1e4)
_ACCEL = FieldSpec("m/s²", "gravity", -1e4, 1e4)
_RELAX = FieldSpec("s", "relaxation time", 0.0, 10.0)
_STEP = FieldSpec("s", "time step", 0.0, 1e-2, exclusive_min=True)
_KNIT_KEYS = ("pattern", "stitches", "yarn", "gauge", "center", "pin", "relax")


def is_knit_scene(data: dict) -> bool:
    """True if a parsed scene table describes a knit (has a ``[knit]`` table)."""
    return isinstance(data, dict) and "knit" in data


@dataclass(frozen=True)
class KnitScene:
    """A validated knit scene (SI units)."""

    pattern: str
    stitches: int
    courses: int
    yarn: YarnParams
    gauge: tuple[float, float]
    center: np.ndarray
    pin: str | np.ndarray
    relax: float
    frames: int = 48
    fps: float = 24.0
    gravity: np.ndarray = dataclasses.field(default_factory=lambda: np.array([0.0, 0.0, -9.81]))
    time_step: float = DEFAULT_TIME_STEP


def _value(key: str, value: Any, spec: FieldSpec):
    try:
        return check_value(key, value, spec)
    except ParameterError as err:
        raise SceneError(err.key, err.problem) from None


def _vector(key: str, value: Any, n: int, spec: FieldSpec) -> list:
    if not isinstance(value, list) or len(value) != n:
        raise SceneError(key, f"expected a list of {n} numbers, got {value!r}")
    return [_value(f"{key}[{i}]", v, spec) for i, v in enumerate(value)]


def _yarn(value: Any) -> YarnParams:
    key = "knit.yarn"
    try:
        if isinstance(value, str):
            return load_yarn_preset(value)
        if isinstance(value, dict):
            values = dict(value)
            base = load_yarn_preset(values.pop("preset")) if "preset" in values else None
            if base is None and not {"radius", "linear_density"} <= set(values):
                raise SceneError(key, "a yarn table needs a preset or radius and linear_density")
            return YarnParams.from_mapping(values, base=base, prefix=key)
    except ParameterError as err:
        raise SceneError(key if err.key == "yarn" else err.key, err.problem) from None
    raise SceneError(key, f"expected a yarn preset name or a table, got {value!r}")


def parse_knit_scene(data: dict) -> KnitScene:
    """Validate a parsed knit scene table; raises SceneError naming the key."""
    allowed = ("frames", "fps", "gravity", "knit", "solver")
    for key in data:
        if key not in allowed:
            raise SceneError(key, f"unknown key in a knit scene (allowed: {', '.join(allowed)})")
    top = {k: _value(k, data[k], spec) for k, spec in _TOP.items() if k in data}
    if "gravity" in data:
        top["gravity"] = np.array(_vector("gravity", data["gravity"], 3, _ACCEL))
    solver = data.get("solver", {})
    if not isinstance(solver, dict):
        raise SceneError("solver", "expected a table")
    for key in solver:
        if key not in ("model", "time_step"):
            raise SceneError(f"solver.{key}", "unknown key for the yarn model "
                                              "(allowed: model, time_step)")
    if solver.get("model") != "yarn":
        raise SceneError("solver.model", f"a [knit] scene needs model = \"yarn\", got "
                                         f"{solver.get('model')!r}")
    if "time_step" in solver:
        top["time_step"] = _value("solver.time_step", solver["time_step"], _STEP)

    knit = data["knit"]
    if not isinstance(knit, dict):
        raise SceneError("knit", "expected a table")
    for key in knit:
        if key not in _KNIT_KEYS:
            raise SceneError(f"knit.{key}", f"unknown key (allowed: {', '.join(_KNIT_KEYS)})")
    for key in ("pattern", "stitches", "yarn"):
        if key not in knit:
            raise SceneError(f"knit.{key}", "missing")
    if not isinstance(knit["pattern"], str):
        raise SceneError("knit.pattern", f"expected a string, got {knit['pattern']!r}")
    try:
        purl_mask(knit["pattern"], 1, 1)
    except ValueError as err:
        raise SceneError("knit.pattern", str(err)) from None
    stitches, courses = _vector("knit.stitches", knit["stitches"], 2, _STITCHES)
    yarn = _yarn(knit["yarn"])
    gauge = tuple(_vector("knit.gauge", knit["gauge"], 2, _LENGTH)) if "gauge" in knit else \
        (GAUGE_IN_RADII[0] * yarn.radius, GAUGE_IN_RADII[1] * yarn.radius)
    center = np.array(_vector("knit.center", knit["center"], 3, _COORD)) if "center" in knit \
        else np.zeros(3)
    pin = knit.get("pin", "none")
    if isinstance(pin, list):
        if not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in pin):
            raise SceneError("knit.pin", "expected \"top\", \"none\" or point indices (ints ≥ 0)")
        pin = np.array(pin, np.int64)
    elif pin not in ("top", "none"):
        raise SceneError("knit.pin", f"expected \"top\", \"none\" or point indices, got {pin!r}")
    relax = _value("knit.relax", knit.get("relax", 0.02), _RELAX)
    return KnitScene(pattern=knit["pattern"], stitches=stitches, courses=courses, yarn=yarn,
                     gauge=gauge, center=center, pin=pin, relax=relax, **top)


@dataclass
class KnitResult:
    """positions (frames + 1, P, 3) [m], yarn_offsets (Y + 1,), radius [m], per-frame report
    and the error that stopped it early (None if it finished)."""

    positions: np.ndarray
    yarn_offsets: np.ndarray
    radius: float
    frames: list
    error: str | None = None

    def report(self) -> dict:
        return {"model": "yarn", "frames": self.frames, "error": self.error,
                "points": int(self.positions.shape[1])}


def _to_world(x: np.ndarray, center: np.ndarray) -> np.ndarray:
    """Generator frame (courses x, wales y, face +z) to the world: courses +x, wales +z, the
    face towards −y (a rotation by 90° about x), middle at ``center``."""
    w = np.stack([x[:, 0], -x[:, 2], x[:, 1]], axis=1)
    return w - 0.5 * (w.min(axis=0) + w.max(axis=0)) + center


def run_knit_scene(scene: KnitScene,
                   progress: Callable[[dict], None] | None = None) -> KnitResult:
    """Generate, relax and simulate the swatch; frames that completed are kept on failure."""
    sw = knit_swatch(scene.pattern, scene.stitches, scene.courses, scene.gauge[0],
                     scene.gauge[1], scene.yarn.radius)
    P = len(sw.positions)
    if isinstance(scene.pin, np.ndarray) and len(scene.pin) and scene.pin.max() >= P:
        raise SceneError("knit.pin", f"index {int(scene.pin.max())} out of range (the swatch "
                                     f"has {P} points)")
    x, rest = sw.positions, None
    if scene.relax > 0:
        relaxed = relax_swatch(sw, scene.yarn, duration=scene.relax, time_step=scene.time_step)
        x, rest = relaxed.positions, relaxed.rest
    if isinstance(scene.pin, str):
        pins = sw.top_course if scene.pin == "top" else None
    else:
        pins = scene.pin
    sim = YarnSimulation(_to_world(x, scene.center), sw.yarn_offsets, scene.yarn, pins=pins,
                         ties=sw.ties, rest=rest, gravity=scene.gravity,
                         time_step=scene.time_step,
                         regions=loop_regions(sw.loops, scene.stitches, scene.courses))
    out = [sim.x.copy()]
    frames, error = [], None
    for f in range(1, scene.frames + 1):
        t0 = time.perf_counter()
        before = dataclasses.replace(sim.stats)
        try:
            sim.advance(1.0 / scene.fps)
        except YarnStepError as err:
            error = f"frame {f}: {err}"
            break
        row = {"frame": f, "frames": scene.frames, "wall_time_s": time.perf_counter() - t0,
               "steps": sim.stats.steps - before.steps,
               "refinements": sim.stats.refinements - before.refinements,
               "stability_refinements": sim.stats.stability_refinements
               - before.stability_refinements,
               "closest_so_far_diameters": sim.stats.min_clearance / (2 * scene.yarn.radius)}
        frames.append(row)
        out.append(sim.x.copy())
        if progress is not None:
            progress(row)
    return KnitResult(np.array(out), sw.yarn_offsets.copy(), scene.yarn.radius, frames, error)
