"""Bake Cloth for objects with the role Yarn (knit swatches, knit.py): the yarn model frame by
frame, in the shape the bake's groups expect (bake.py: ``step()`` gives a frame's report or
None with ``result.error``; ``result.positions`` (frames + 1, P, 3) world [m]).

What a yarn takes from the scene: its own mesh at the first frame (the vertices as stored, the
bake's previous keys muted; its modifiers, the yarn sweep among them, draw on top and are not
read), the object's transform and the scene's unit scale, gravity and frame rate, and its Pin
Group: every point of weight > 0 is held still where it starts (the yarn model has no soft
pins, and pins do not follow animation). The stitch topology (which loop each point belongs
to, the glued yarn ends) is rebuilt from the knit settings stored on the object. The rest
lengths are the mesh's edge lengths: a new swatch is relaxed, so it starts at rest.
Colliders: the yarn model collides with one horizontal plane (``YarnSimulation(floor=)``), so a
collider whose mesh is flat and horizontal at the first frame becomes that plane, unbounded, at
its height plus its thickness, with its friction (the highest one below the yarn); every other
collider is named in the summary as one the yarn passes through.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..solver import (ParameterError, YarnSimulation, YarnStepError, knit_swatch,
                      load_yarn_preset, loop_regions)
from . import blender_physics
from .convert import collider_from_props
from .errors import BakeError
from .mesh_io import EvaluatedMesh, matrix, to_world, vertex_positions

MODEL = "yarn"
# Longest a yarn step() runs before it returns UNFINISHED (the modal bake's slice is 0.1 s).
SLICE_S = 0.1
UNFINISHED = object()  # step(): the frame goes on at the next call


def yarn_objects(scene) -> list:
    return [o for o in scene.objects if o.type == "MESH" and o.cloth_solver.role == "YARN"]


@dataclass
class YarnReport:
    """One frame's report, with the fields bake.py reads from the cloth models' reports."""

    frame: int
    wall_time_s: float
    max_strain: float          # largest relative change of a segment's length
    steps: int = 0
    refinements: int = 0       # steps halved so that no yarn passes through another
    retries: int = 0
    deepest_penetration_m: float = 0.0
    self_intersections: int = 0
    collider_crossings: int = 0
    untangled: int = 0
    tangled_pairs: int = 0


@dataclass
class YarnResult:
    positions: np.ndarray      # (frames done + 1, P, 3) world [m]
    model_name: str = MODEL
    error: str | None = None
    frames: list = field(default_factory=list)


@dataclass
class YarnInput:
    """A yarn object as read from the scene (the attributes bake.finish uses of a cloth)."""

    obj: object
    matrices: np.ndarray       # (frames + 1, 4, 4): its world matrix at the first frame [m/BU]
    name: str
    vertex_count: int
    key_offsets: None = None


def _edges(mesh) -> np.ndarray:
    pairs = np.empty(2 * len(mesh.edges), dtype=np.int32)
    mesh.edges.foreach_get("vertices", pairs)
    return pairs.reshape(-1, 2)


@dataclass
class Floor:
    """A collider as the yarn model can use it: ``z`` [m] of the top of a flat horizontal one
    (its surface plus its thickness), None for any other shape."""

    name: str
    z: float | None
    friction: float


def collider_floors(colliders, depsgraph, metres: float) -> list[Floor]:
    """Each collider object read at the current frame (see module docstring)."""
    out = []
    for obj in colliders:
        ev = EvaluatedMesh(obj, depsgraph, scale=metres)
        if obj.cloth_solver.role == "COLLIDER":  # our own settings win over Collision's
            thickness, friction = collider_from_props(obj.cloth_solver)
            thickness *= metres
        else:
            thickness, friction = blender_physics.collision_settings(obj, metres)
        z = ev.positions[:, 2]
        size = float(np.ptp(ev.positions[:, :2], axis=0).max()) if len(z) else 0.0
        flat = len(z) > 0 and size > 0 and float(np.ptp(z)) <= 1e-6 * max(1.0, size)
        out.append(Floor(obj.name, float(z.mean()) + thickness if flat else None, friction))
    return out


def choose_floor(x: np.ndarray, floors: list[Floor]) -> tuple[Floor | None, list[str]]:
    """The highest flat collider below every yarn point, and the names of the others."""
    lowest = float(x[:, 2].min())
    below = [f for f in floors if f.z is not None and f.z < lowest]
    floor = max(below, key=lambda f: f.z) if below else None
    return floor, [f.name for f in floors if f is not floor]


def read_yarn(obj, depsgraph, metres: float, frames: int, pins: np.ndarray, gravity,
              fps: float, floors: list[Floor] = ()):
    """(YarnInput, YarnRun, unused collider names) for a Yarn object at the current (first)
    frame; BakeError naming the problem when it is not a knit swatch this bake can simulate."""
    s, name = obj.cloth_solver, obj.name
    if s.knit_stitches < 1 or s.knit_courses < 1 or not s.knit_yarn:
        raise BakeError(f"'{name}' has the role Yarn but no knit settings; make a swatch with "
                        "Add > Mesh > Knit Swatch")
    try:
        params = load_yarn_preset(s.knit_yarn)
    except (ParameterError, OSError, ValueError) as err:
        raise BakeError(f"'{name}': yarn preset '{s.knit_yarn}': {err}") from None
    sw = knit_swatch(s.knit_pattern.lower(), s.knit_stitches, s.knit_courses,
                     s.knit_stitch_width, s.knit_course_height, params.radius)
    mesh = obj.data
    if len(mesh.vertices) != len(sw.positions) or len(mesh.polygons):
        raise BakeError(f"'{name}': a {s.knit_stitches} × {s.knit_courses} swatch has "
                        f"{len(sw.positions)} yarn points and no faces, its mesh has "
                        f"{len(mesh.vertices)} vertices and {len(mesh.polygons)} faces; was it "
                        "edited? Add a new Knit Swatch")
    edges = np.sort(_edges(mesh), axis=1)
    expected = sw.segments
    if len(edges) != len(expected) or not np.array_equal(
            edges[np.lexsort(edges.T[::-1])], expected):
        raise BakeError(f"'{name}': its edges are not the swatch's yarn (one polyline through "
                        "consecutive vertices); was it edited? Add a new Knit Swatch")
    m = matrix(obj.evaluated_get(depsgraph))
    m[:3] *= metres
    x = to_world(vertex_positions(mesh), m)
    floor, unused = choose_floor(x, list(floors))
    run = YarnRun(x, sw, params, pins, frames, gravity, fps, floor)
    return YarnInput(obj, np.broadcast_to(m, (frames + 1, 4, 4)), name, len(x)), run, unused


class YarnRun:
    """The yarn model over the bake's frames, one frame per ``step()`` (bake.Group.simulation):
    points ``x`` (P, 3) world [m] of ``swatch``'s yarn, ``pins`` held still, gravity [m/s²]."""

    def __init__(self, x, swatch, params, pins, frames: int, gravity, fps: float,
                 floor: Floor | None = None):
        courses, stitches = swatch.purl.shape
        self.frames, self.fps, self.floor = frames, float(fps), floor
        self.sim = YarnSimulation(x, swatch.yarn_offsets, params, pins=pins, ties=swatch.ties,
                                  gravity=gravity, floor=None if floor is None else floor.z,
                                  friction=0.5 if floor is None else floor.friction,
                                  regions=loop_regions(swatch.loops, stitches, courses))
        self._rest = self.sim.segments.rest.copy()
        self._positions = [self.sim.x.copy()]
        self.result = YarnResult(np.array(self._positions))
        self._frame_steps = 0  # steps of the frame in progress done so far
        self._frame_start = (0, 0, 0.0)  # its stats at the start: steps, refinements, wall [s]

    @property
    def frame(self) -> int:
        return len(self._positions) - 1

    @property
    def done(self) -> bool:
        return self.frame >= self.frames

    def step(self) -> YarnReport | None | object:
        """Simulate the next frame for at most ``SLICE_S`` of wall time: its report once the
        frame is done, ``UNFINISHED`` while it goes on (a yarn frame takes seconds, and the
        modal bake sees Esc and redraws its progress only between calls), None on failure
        (``result.error``). The frame's steps are those of ``YarnSimulation.advance``."""
        f = self.frame + 1
        st = self.sim.stats
        if self._frame_steps == 0:
            self._frame_start = (st.steps, st.refinements, 0.0)
        steps, refinements, wall = self._frame_start
        n = max(1, round(1.0 / self.fps / self.sim.h))
        t0 = time.perf_counter()
        try:
            while self._frame_steps < n:
                self.sim.step()
                self._frame_steps += 1
                if time.perf_counter() - t0 > SLICE_S and self._frame_steps < n:
                    self._frame_start = (steps, refinements, wall + time.perf_counter() - t0)
                    return UNFINISHED
        except YarnStepError as err:
            self.result.error = f"frame {f}: {err}; frames 0-{f - 1} are kept."
            return None
        self._frame_steps = 0
        if not np.isfinite(self.sim.x).all():
            self.result.error = f"frame {f}: the yarn's positions are not finite"
            return None
        strain = float(np.abs(self.sim.segments.lengths(self.sim.x) / self._rest - 1.0).max())
        self._positions.append(self.sim.x.copy())
        self.result.positions = np.array(self._positions)
        report = YarnReport(frame=f, wall_time_s=wall + time.perf_counter() - t0,
                            max_strain=strain, steps=st.steps - steps,
                            refinements=st.refinements - refinements)
        self.result.frames.append(report)
        return report

    @property
    def min_clearance_diameters(self) -> float:
        """Closest approach of two non-neighbouring segments so far, in yarn diameters."""
        return float(self.sim.stats.min_clearance / (2.0 * self.sim.params.radius))
