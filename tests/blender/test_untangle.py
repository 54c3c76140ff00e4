"""A cloth posed partly inside a collider mesh bakes with its vertices moved out before the
first simulated frame (solver/collision/untangle.py), and the summary says how many."""

from __future__ import annotations

import numpy as np

import bpy
from scenes import cloth, evaluated_world


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
