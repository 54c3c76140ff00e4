"""Small scenes for the Blender tests, built from arrays (the same in Blender 3.4 and 5.x), and
the reference they are checked against: the solver run directly on the evaluated mesh."""

from __future__ import annotations

import sys

import bpy
import numpy as np


def addon():
    """The add-on's root package as Blender imported it (extension or legacy add-on)."""
    name = next(m for m in sys.modules if m.endswith("cloth_solver")
                and hasattr(sys.modules[m], "cloth_addon"))
    return sys.modules[name]


def solver():
    return addon().solver


def mesh_object(name, positions, faces, location=(0, 0, 0), rotation=(0, 0, 0),
                scale=(1, 1, 1)):
    mesh = bpy.data.meshes.new(name)
    mesh.from_pydata([tuple(p) for p in positions], [], [tuple(int(i) for i in f) for f in faces])
    mesh.update()
    obj = bpy.data.objects.new(name, mesh)
    bpy.context.scene.collection.objects.link(obj)
    obj.location, obj.rotation_euler, obj.scale = location, rotation, scale
    bpy.context.view_layer.update()
    return obj


def grid(name="Cloth", n=6, size=1.0, **transform):
    """An n x n vertex quad grid in its local XY plane, centred on its origin."""
    g = solver().grid_mesh((size, size), (n, n), (0.0, 0.0, 0.0))
    return mesh_object(name, g.positions, g.faces(), **transform)


def cloth(name="Cloth", n=6, pins=(), weights=None, frames=(1, 5), **transform):
    obj = grid(name, n, **transform)
    s = obj.cloth_solver
    s.role = "CLOTH"
    if len(pins):
        vg = obj.vertex_groups.new(name="pins")
        w = np.ones(len(pins)) if weights is None else weights
        for i, wi in zip(pins, w):
            vg.add([int(i)], float(wi), "REPLACE")
        s.pin_group = "pins"
    scene = bpy.context.scene
    scene.cloth_solver.frame_start, scene.cloth_solver.frame_end = frames
    return obj


def local_positions(obj) -> np.ndarray:
    buf = np.empty(len(obj.data.vertices) * 3, dtype=np.float32)
    obj.data.vertices.foreach_get("co", buf)
    return buf.reshape(-1, 3).astype(np.float64)


def evaluated_local(obj, frame=None) -> np.ndarray:
    """Object-local vertex positions of the evaluated object at ``frame`` (default: current),
    float32 as Blender holds them (for bit-for-bit comparisons)."""
    if frame is not None:
        bpy.context.scene.frame_set(frame)
    ev = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    mesh = ev.to_mesh()
    buf = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", buf)
    ev.to_mesh_clear()
    return buf.reshape(-1, 3)


def evaluated_world(obj, frame=None) -> np.ndarray:
    """World-space vertex positions of the evaluated object at ``frame`` (default: current)."""
    local = evaluated_local(obj, frame).astype(np.float64)
    m = np.array(obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).matrix_world)
    return local @ m[:3, :3].T + m[:3, 3]


def key_state(obj):
    """Names, coordinates and values of every shape key (for before/after comparisons)."""
    key = obj.data.shape_keys
    if key is None:
        return None
    out = []
    for kb in key.key_blocks:
        buf = np.empty(len(kb.data) * 3, dtype=np.float32)
        kb.data.foreach_get("co", buf)
        out.append((kb.name, buf.copy(), kb.value, kb.mute))
    return out


def same_key_state(a, b) -> bool:
    if a is None or b is None:
        return a is b
    return len(a) == len(b) and all(
        x[0] == y[0] and np.array_equal(x[1], y[1]) and x[2] == y[2] and x[3] == y[3]
        for x, y in zip(a, b))


def fcurve_paths(obj) -> list[str]:
    key = obj.data.shape_keys
    if key is None or key.animation_data is None or key.animation_data.action is None:
        return []
    action = key.animation_data.action
    if hasattr(action, "fcurves"):
        return sorted(fc.data_path for fc in action.fcurves)
    from bpy_extras import anim_utils
    bag = anim_utils.action_get_channelbag_for_slot(action, key.animation_data.action_slot)
    return [] if bag is None else sorted(fc.data_path for fc in bag.fcurves)


ATOL = 2e-5  # m: shape keys store float32 object-local coordinates


def reference(obj, frames, pins=(), weights=None, pin_targets=None, material=None,
              model="implicit", start_world=None, quality="final"):
    """The solver run directly on the object's world-space mesh (no add-on code involved).
    ``material`` defaults to the Cotton preset: what a new cloth object starts from."""
    S = solver()
    from_spec = S.spec
    start = bpy.context.scene.cloth_solver.frame_start
    world = evaluated_world(obj, start) if start_world is None else start_world
    faces = [list(p.vertices) for p in obj.data.polygons]
    mesh = S.PolyMesh.from_faces(world, faces)
    # the grain: U of the active UV map, else the object's X axis at the first frame
    layer = obj.data.uv_layers.active
    uv = None if layer is None else np.array(
        [layer.data[i].uv[:] for p in obj.data.polygons for i in p.loop_indices], dtype=np.float64)
    bpy.context.scene.frame_set(start)
    x_axis = np.array(obj.evaluated_get(bpy.context.evaluated_depsgraph_get()).matrix_world,
                      dtype=np.float64)[:3, 0]
    setup = from_spec.ClothSetup(
        mesh, material or S.load_preset("cotton"), pin_indices=np.asarray(pins, dtype=np.int64),
        pin_weights=None if weights is None else np.asarray(weights, dtype=np.float64),
        pin_targets=pin_targets, uv=uv, grain=x_axis)
    gravity = np.array(bpy.context.scene.gravity, dtype=np.float64)  # float32 -9.81 in Blender
    spec = from_spec.SimulationSpec(setup, S.SolverSettings(model=model, quality=quality),
                                    frames=frames,
                                    fps=24.0, gravity=gravity)
    result = S.simulate(spec)
    assert result.error is None
    return result.positions


def assert_matches(obj, positions, frame_start=1):
    for i, expected in enumerate(positions):
        got = evaluated_world(obj, frame_start + i)
        np.testing.assert_allclose(got, expected, atol=ATOL, err_msg=f"frame {frame_start + i}")


def modal_operator(job):
    """The modal bake operator's own methods on a stand-in instance (background Blender cannot
    run an operator modally; the methods are the ones the UI calls). Returns (class, op)."""
    import types
    cls = addon().cloth_addon.operators.CLOTH_SOLVER_OT_bake
    if job.runner is None:
        job.start(live=True, ui=True)  # as invoke starts it: in the worker process
    frame = bpy.context.scene.frame_current
    op = types.SimpleNamespace(_job=job, _timer=None, _compiling=False, reports=[],
                               _frame_before=frame, _shown=frame, _shown_at=0.0,
                               _status_text=None, _progress=-1)
    op.report = lambda kind, message: op.reports.append((set(kind), message))
    for name in ("_end", "_status", "_follow", "_cancel"):
        setattr(op, name, getattr(cls, name).__get__(op))
    return cls, op


def timer_event():
    import types
    return types.SimpleNamespace(type="TIMER", value="NOTHING")


def run_modal(cls, op, until=None, timeout=300.0):
    """Send timer events to the stand-in modal operator, as Blender does every few
    milliseconds, until it ends or ``until(op)`` holds; returns its last result."""
    import time
    end = time.monotonic() + timeout
    while True:
        result = cls.modal(op, bpy.context, timer_event())
        if result != {"RUNNING_MODAL"} or (until is not None and until(op)):
            return result
        assert time.monotonic() < end, "the modal bake did not end"
        time.sleep(0.005)


def advance(job, frames: int, timeout: float = 300.0) -> None:
    """Take the job's frames (as the modal bake's timer does) until ``frames`` are simulated
    for every cloth, or the job ends."""
    import time
    end = time.monotonic() + timeout
    while job.frames_kept < frames and job.update(wait_s=0.05):
        assert time.monotonic() < end, "the bake did not get that far"
