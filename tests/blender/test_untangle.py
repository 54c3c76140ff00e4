"""A cloth posed partly inside a collider mesh bakes with its vertices moved out before the
first simulated frame (solver/collision/untangle.py), and the summary says how many."""

from __future__ import annotations

import numpy as np
import pytest

import bpy
from scenes import addon, cloth, evaluated_world, mesh_object, solver


@pytest.mark.physics
def test_a_cloth_started_inside_a_sphere_collider_is_moved_out():
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.3, location=(0, 0, 0), segments=24,
                                         ring_count=12)
    sphere = bpy.context.active_object
    sphere.cloth_solver.role = "COLLIDER"
    obj = cloth(n=9, frames=(1, 4), location=(0, 0, 0.28))  # 2 cm inside the sphere's top
    obj.scale = (0.2, 0.2, 1.0)
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    report = bpy.context.scene.cloth_solver.last_report
    assert "vertices started inside a collider and were moved out" in report
    assert "deepest penetration 0.00 mm, 0 intersecting triangle pairs" in report
    for frame in (2, 4):
        r = np.linalg.norm(evaluated_world(obj, frame), axis=1)
        assert r.min() > 0.29, frame  # out: it started 2 cm inside the 0.3 m sphere


def test_a_cloth_that_starts_intersecting_itself_is_separated_and_the_summary_says_so():
    """One cloth object of two 20 cm sheets, one tilted 25° through the other
    (solver/collision/self_untangle.py): with self-collision on, the bake separates them before
    the first simulated frame, leaves no intersecting pair in any frame and says so."""
    obj = _tangled()
    obj.cloth_solver.self_collision = True
    scene = bpy.context.scene
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    report = scene.cloth_solver.last_report
    assert "the cloth started intersecting itself (" in report, report
    assert "separated over 1 frame" in report, report
    assert " 0 intersecting triangle pairs at most" in report, report


def test_with_self_collision_off_passing_through_itself_is_not_reported_as_an_error():
    """Self-collision off (the default) lets the cloth pass through itself: the two sheets stay
    crossed in every frame, and the summary and the panel count only what is an error then
    (cloth/collider crossings), not those pairs."""
    obj = _tangled()
    assert not obj.cloth_solver.self_collision
    job = addon().cloth_addon.bake.BakeJob(bpy.context)
    summary = job.run()
    frames = job.groups[0].simulation.result.frames
    assert all(f.self_intersections > 0 for f in frames)  # crossed all along
    assert summary.intersections == 0 == obj.cloth_solver.bake_intersections
    assert " 0 intersecting triangle pairs at most" in summary.text()


def _tangled():
    """One cloth object of two 20 cm sheets, one tilted 25° through the other, baked 1-4."""
    g = solver().grid_mesh((0.2, 0.2), (11, 11), (0.0, 0.0, 0.0))
    flat = g.positions.copy()
    tilted = g.positions.copy()
    u, a = tilted[:, 0] - 0.04, np.radians(25.0)
    tilted[:, 0], tilted[:, 2] = u * np.cos(a) + 0.003, u * np.sin(a) + 0.0013
    faces = g.faces()
    obj = mesh_object("Tangled", np.concatenate([flat, tilted]),
                      list(faces) + [np.asarray(f) + len(flat) for f in faces],
                      location=(0, 0, 1))
    obj.cloth_solver.role = "CLOTH"
    scene = bpy.context.scene
    scene.cloth_solver.frame_start, scene.cloth_solver.frame_end = 1, 4
    return obj
