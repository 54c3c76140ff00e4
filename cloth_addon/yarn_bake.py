"""Bake Cloth for objects with the role Yarn (knit swatches, knit.py): the yarn model frame by
frame, in the shape the bake's groups expect (bake.py: ``step()`` gives a frame's report or
None with ``result.error``; ``result.positions`` (frames + 1, P, 3) world [m]).

What a yarn takes from the scene: its own mesh at the first frame (the vertices as stored, the
bake's previous keys muted; its modifiers, the yarn sweep among them, draw on top and are not
read), the object's transform and the scene's unit scale, gravity and frame rate, and its Pin
Group: a point of weight 1 is held where it starts, one of a lower weight pulled there by a goal
spring of that weight (pins do not follow animation yet). The stitch topology (which loop each
point belongs to, the glued yarn ends) is rebuilt from the knit settings stored on the object.
The rest state: the mesh's edge lengths and the rest curvature Add > Knit Swatch stored with it
(knit.REST_CURVATURE; the mesh's own curvature where there is none).
Colliders: every collider of the scene, read at every frame as for cloth (bake.py), as meshes
with their thickness and friction (solver/yarn/colliders.py keeps each yarn point the yarn's
radius plus the thickness from them); each frame's report gives the deepest a yarn point lies
inside one.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from ..solver import ParameterError, YarnSetup, knit_swatch
from . import knit
from .errors import BakeError
from .mesh_io import EvaluatedMesh, matrix, to_world, vertex_positions
from .runner import UNFINISHED  # noqa: F401  (step()'s "the frame goes on", for tests)
from .yarn_run import MODEL, YarnReport, YarnResult, YarnRun  # noqa: F401


def yarn_objects(scene) -> list:
    return [o for o in scene.objects if o.type == "MESH" and o.cloth_solver.role == "YARN"]


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


def read_yarn(obj, depsgraph, metres: float, frames: int, pins: np.ndarray, gravity,
              fps: float, colliders=(), weights=None):
    """(YarnInput, a factory of its YarnRun) for a Yarn object at the current (first) frame,
    colliding with ``colliders`` (solver.spec.Collider, world metres), pins of ``weights``;
    BakeError naming the problem when it is not a knit swatch this bake can simulate."""
    s, name = obj.cloth_solver, obj.name
    if s.knit_stitches < 1 or s.knit_courses < 1 or not s.knit_yarn:
        raise BakeError(f"'{name}' has the role Yarn but no knit settings; make a swatch with "
                        "Add > Mesh > Knit Swatch")
    try:
        params = knit.swatch_params(s.knit_yarn, s.knit_friction, s.knit_contact_rest)
    except (ParameterError, OSError, ValueError) as err:
        raise BakeError(f"'{name}': yarn preset '{s.knit_yarn}': {err}") from None
    try:
        sw = knit_swatch(knit.solver_pattern(s.knit_pattern, s.knit_repeat), s.knit_stitches,
                         s.knit_courses, s.knit_stitch_width, s.knit_course_height,
                         params.radius, edges=s.knit_edges)
    except ValueError as err:
        raise BakeError(f"'{name}': {err}") from None
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
    curvature = None
    attr = mesh.attributes.get(knit.REST_CURVATURE)
    if attr is not None and attr.data_type == "FLOAT_VECTOR" and attr.domain == "POINT":
        curvature = np.empty(3 * len(x), np.float32)
        attr.data.foreach_get("vector", curvature)
        curvature = curvature.reshape(-1, 3).astype(np.float64)
    courses, stitches = sw.purl.shape
    setup = YarnSetup(positions=x, yarn_offsets=sw.yarn_offsets, yarn=params, ties=sw.ties,
                      loops=sw.loops, stitches=stitches, courses=courses,
                      limp=np.concatenate([sw.cast_on, sw.bind_off]),
                      rest_curvature=curvature, pin_indices=pins, pin_weights=weights)

    # built on the runner's side (it may compile kernels), picklable for the worker process;
    # a ValueError there is the bake's "the model refused the scene" (bake.py)
    run = functools.partial(YarnRun, setup, frames, gravity, fps, colliders)
    return YarnInput(obj, np.broadcast_to(m, (frames + 1, 4, 4)), name, len(x)), run
