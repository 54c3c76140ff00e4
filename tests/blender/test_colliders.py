"""Colliders: any mesh object, static or animated or deforming, read every frame in world space;
the cloth must never pass through it."""

from __future__ import annotations

import numpy as np
import pytest

import bpy
from scenes import addon, cloth, evaluated_world, grid


def _collider(name="Floor", n=3, size=4.0, **transform):
    obj = grid(name, n, size=size, **transform)
    obj.cloth_solver.role = "COLLIDER"
    return obj


def test_colliders_are_read_every_frame_in_world_space():
    floor = _collider("Floor", location=(0, 0, -0.5))
    floor.cloth_solver.thickness, floor.cloth_solver.friction = 0.01, 0.7
    mover = _collider("Mover", n=3, size=1.0, location=(0, 0, 0))
    mover.keyframe_insert("location", frame=1)
    mover.location = (0, 0, 0.6)
    mover.keyframe_insert("location", frame=4)
    bender = _collider("Bender", n=3, size=1.0, location=(3, 0, 0), scale=(2, 1, 1))
    bender.shape_key_add(name="Basis", from_mix=False)
    bent = bender.shape_key_add(name="Bent", from_mix=False)
    co = np.array([tuple(d.co) for d in bent.data])
    co[4, 2] += 0.3
    bent.data.foreach_set("co", co.astype(np.float32).ravel())
    bent.value = 0.0
    bent.keyframe_insert("value", frame=1)
    bent.value = 1.0
    bent.keyframe_insert("value", frame=4)
    cloth(n=3, frames=(1, 4), location=(0, 0, 1))

    job = addon().cloth_addon.bake.BakeJob(bpy.context)
    colliders = {round(float(c.mesh.positions[0, 0]), 3): c
                 for c in job.groups[0].spec.colliders}
    assert len(colliders) == 3
    by_name = {"Floor": floor, "Mover": mover, "Bender": bender}
    for name, obj in by_name.items():
        c = next(c for c in colliders.values()
                 if np.allclose(c.mesh.positions, evaluated_world(obj, 1)))
        assert c.kind == "mesh"
        expected = np.stack([evaluated_world(obj, f) for f in range(1, 5)])
        if name == "Floor":
            assert c.positions is None  # static: one shape
            assert (c.thickness, c.friction) == (0.01, 0.7)
        else:
            np.testing.assert_allclose(c.positions, expected, atol=1e-6)
            assert np.ptp(c.positions[:, :, 2]) > 0.25  # it really moves or deforms


@pytest.mark.physics
def test_cloth_does_not_fall_through_a_static_floor():
    _collider("Floor", location=(0, 0, 0))
    obj = cloth(n=6, frames=(1, 24), location=(0, 0, 0.4))
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    lowest = min(evaluated_world(obj, f)[:, 2].min() for f in range(1, 25))
    assert lowest > -1e-3  # never below the floor (thickness keeps it above)
    s = obj.cloth_solver
    assert 0.0 <= s.bake_deepest_penetration < 1e-3 and s.bake_intersections == 0


def test_an_animated_collider_pushes_the_cloth():
    floor = _collider("Lift", location=(0, 0, 0))
    floor.keyframe_insert("location", frame=1)
    floor.location = (0, 0, 0.5)
    floor.keyframe_insert("location", frame=12)
    obj = cloth(n=6, frames=(1, 12), location=(0, 0, 0.05))
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    for f in range(1, 13):
        floor_z = evaluated_world(floor, f)[:, 2].max()
        assert evaluated_world(obj, f)[:, 2].min() > floor_z - 1e-3, f
