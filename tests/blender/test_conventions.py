"""Blender's own physics and conventions: Collision modifiers as colliders, Blender's Cloth
modifier on a cloth object, Wind and Turbulence force fields as wind, and the scene's unit
scale (docs/user-guide.md, "Blender's own physics")."""

from __future__ import annotations

import math

import bpy
import numpy as np
import pytest

from scenes import addon, cloth, evaluated_world, grid, reference


def _job():
    return addon().cloth_addon.bake.BakeJob(bpy.context)


def _collision_floor(name="Floor", z=0.0, size=4.0):
    floor = grid(name, 3, size=size, location=(0, 0, z))
    floor.modifiers.new("Collision", "COLLISION")
    floor.collision.thickness_outer = 0.02
    floor.collision.cloth_friction = 30.0
    return floor


def _field(kind, location=(0, 0, 0), rotation=(0, 0, 0), **settings):
    bpy.ops.object.effector_add(type=kind, location=location, rotation=rotation)
    obj = bpy.context.object
    for name, value in settings.items():
        setattr(obj.field, name, value)
    return obj


# ---- Collision modifier ----

def test_a_collision_modifier_makes_a_collider_with_blenders_settings_mapped():
    floor = _collision_floor()
    cloth(n=3, frames=(1, 2), location=(0, 0, 1))
    (collider,) = _job().groups[0].spec.colliders
    np.testing.assert_allclose(collider.mesh.positions, evaluated_world(floor, 1), atol=1e-6)
    # Thickness Outer is a length (Blender units = m here); Blender's cloth uses
    # cloth_friction * 0.01 as its Coulomb coefficient.
    assert collider.thickness == pytest.approx(0.02, rel=1e-6)
    assert collider.friction == pytest.approx(0.30, rel=1e-6)


def test_the_user_can_say_otherwise_and_a_disabled_collision_is_no_collider():
    floor = _collision_floor()
    cloth(n=3, frames=(1, 2), location=(0, 0, 1))

    def colliders():
        return _job().groups[0].spec.colliders

    scene = bpy.context.scene.cloth_solver
    scene.use_collision_modifiers = False
    assert colliders() == ()
    scene.use_collision_modifiers = True
    floor.cloth_solver.use_collision_modifier = False
    assert colliders() == ()
    floor.cloth_solver.use_collision_modifier = True
    floor.modifiers["Collision"].show_viewport = False
    assert colliders() == ()
    floor.modifiers["Collision"].show_viewport = True
    floor.collision.use = False
    assert colliders() == ()
    floor.collision.use = True
    assert len(colliders()) == 1
    # Our own role wins, with our own settings.
    floor.cloth_solver.role = "COLLIDER"
    floor.cloth_solver.thickness, floor.cloth_solver.friction = 0.004, 0.9
    (c,) = colliders()
    assert (c.thickness, c.friction) == (0.004, 0.9)


@pytest.mark.physics
def test_the_cloth_lands_on_a_collision_modifier_floor():
    _collision_floor()
    obj = cloth(n=6, frames=(1, 24), location=(0, 0, 0.4))
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    lowest = min(evaluated_world(obj, f)[:, 2].min() for f in range(1, 25))
    assert lowest > 0.0  # 20 mm thickness keeps it above the floor
    assert lowest < 0.05  # it did land
    assert "colliders from Blender's Collision modifier: 'Floor'" in \
        bpy.context.scene.cloth_solver.last_report


# ---- Blender's Cloth modifier on a cloth object ----

def test_blenders_cloth_modifier_is_not_simulated_and_is_switched_off_with_a_warning():
    obj = cloth(n=5, pins=[20, 24], frames=(1, 5), location=(0, 0, 1))
    mod = obj.modifiers.new("Cloth", "CLOTH")  # Blender's cloth, no pins: it would fall
    expected = reference(obj, 4, pins=[20, 24])  # our solver alone, from the rest mesh
    lines = []
    job = addon().cloth_addon.bake.BakeJob(bpy.context, log=lines.append)
    assert mod.show_viewport  # restored after reading the scene
    summary = job.run()
    warning = ("cloth 'Cloth' has Blender's Cloth modifier 'Cloth': its simulation is not used "
               "(the bake reads the mesh without it); it is switched off after the bake")
    assert any(line.startswith(f"cloth_solver: warning: {warning}") for line in lines)
    assert any(w.startswith(warning) for w in summary.warnings)
    assert warning in summary.text()
    assert not mod.show_viewport and not mod.show_render
    # Pins held where the mesh is, not where Blender's own simulation would carry them.
    for i, f in enumerate(range(1, 6)):
        np.testing.assert_allclose(evaluated_world(obj, f), expected[i], atol=2e-5)
    # A re-bake sees the same (the modifier the first bake muted stays out of the reading).
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    np.testing.assert_allclose(evaluated_world(obj, 5), expected[4], atol=2e-5)
    assert "Blender's Cloth modifier" in bpy.context.scene.cloth_solver.last_report
    assert bpy.ops.cloth_solver.free_bake() == {"FINISHED"}
    assert mod.show_viewport and mod.show_render


def test_a_scene_made_for_blenders_cloth_switches_in_one_click():
    """A curtain set up for Blender's cloth: pinned by the Cloth modifier's pin group, with
    self-collision, 10 quality steps, sewing and a 1-6 cache, on an object without our role.
    The bake's warning offers the conversion; one click takes all of it (and says so), and the
    curtain then hangs from its pins over frames 1-6."""
    obj = grid("Curtain", 5, location=(0, 0, 1))
    vg = obj.vertex_groups.new(name="Pins")
    vg.add([20, 24], 1.0, "REPLACE")
    mod = obj.modifiers.new("Cloth", "CLOTH")
    mod.settings.vertex_group_mass = "Pins"
    mod.settings.quality = 10
    mod.settings.use_sewing_springs = True
    mod.collision_settings.use_self_collision = True
    mod.point_cache.frame_start, mod.point_cache.frame_end = 1, 6
    other = grid("Flag", 3, location=(3, 0, 1))
    other.modifiers.new("Cloth", "CLOTH").point_cache.frame_end = 4
    bpy.context.view_layer.objects.active = obj
    taken = addon().cloth_addon.blender_physics.take_cloth_modifier(obj, mod, bpy.context.scene,
                                                                    apply=False)
    assert taken == ["role Cloth", "pin group 'Pins'", "self-collision on", "sewing on",
                     "quality 10 steps as 4 substeps", "frames 1-6"]
    assert obj.cloth_solver.role == "NONE"  # only looked
    assert bpy.ops.cloth_solver.take_cloth_modifier() == {"FINISHED"}
    s, scene = obj.cloth_solver, bpy.context.scene.cloth_solver
    assert (s.role, s.pin_group, s.self_collision, s.use_sewing) == ("CLOTH", "Pins", True, True)
    assert (s.use_custom_substeps, s.substeps) == (True, 4)
    assert (scene.frame_start, scene.frame_end) == (1, 6)
    assert other.cloth_solver.role == "NONE"  # the active object only, unless asked
    assert bpy.ops.cloth_solver.take_cloth_modifier(all_objects=True) == {"FINISHED"}
    assert other.cloth_solver.role == "CLOTH"
    other.cloth_solver.role = "NONE"
    job = addon().cloth_addon.bake.BakeJob(bpy.context)
    assert job.frames == 5
    summary = job.run()
    assert not any("Take Cloth Modifier Settings" in w for w in summary.warnings)  # taken
    top = evaluated_world(obj, 6)[[20, 24]]
    np.testing.assert_allclose(top, evaluated_world(obj, 1)[[20, 24]], atol=1e-6)  # pinned
    assert evaluated_world(obj, 6)[:5, 2].max() < 0.99  # the free edge falls


def test_the_cloth_modifier_warning_offers_its_settings():
    obj = cloth(n=3, frames=(1, 2), location=(0, 0, 1))
    obj.modifiers.new("Cloth", "CLOTH").point_cache.frame_end = 48
    summary = addon().cloth_addon.bake.BakeJob(bpy.context).run()
    assert any(w.endswith("its settings differ from ours: Take Cloth Modifier Settings (Cloth "
                          "Solver panel) takes pin group, self-collision, sewing, quality steps, "
                          "cache frame range") for w in summary.warnings), summary.warnings


# ---- Force fields ----

def test_a_wind_field_adds_a_wind_along_its_z_axis():
    cloth(n=3, frames=(1, 2), location=(0, 0, 1))
    bpy.context.scene.cloth_solver.wind_velocity = (0.0, 1.0, 0.0)
    # Rotated +90° about Y: the field's +Z points along world +X.
    _field("WIND", location=(-3, 0, 1), rotation=(0, math.pi / 2, 0), strength=500.0,
           noise=2.0)
    job = _job()
    wind = job.groups[0].spec.wind
    speed = 0.01  # m/s per unit of strength (the scene's default)
    np.testing.assert_allclose(wind.velocity, [500.0 * speed, 1.0, 0.0], atol=1e-5)
    blender_physics = addon().cloth_addon.blender_physics
    assert wind.turbulence == pytest.approx(blender_physics.WIND_NOISE_RMS * 2.0 * speed)
    assert any("force field 'Wind': wind 5 m/s" in n for n in job.notes)
    bpy.context.scene.cloth_solver.use_force_fields = False
    wind = _job().groups[0].spec.wind
    np.testing.assert_allclose(wind.velocity, [0.0, 1.0, 0.0])
    assert wind.turbulence == 0.0


def test_a_turbulence_field_gives_gusts_of_its_size_and_falloff_is_blenders():
    cloth(n=3, frames=(1, 2), location=(0, 0, 1))
    _field("TURBULENCE", location=(0, 0, 1), strength=1000.0, size=2.0)
    wind = _job().groups[0].spec.wind
    rms = addon().cloth_addon.blender_physics.TURBULENCE_RMS
    assert wind.turbulence == pytest.approx(rms * 1000.0 * 0.01)
    assert wind.turbulence_scale == pytest.approx(2.0)
    np.testing.assert_allclose(wind.velocity, 0.0)
    # A point-shaped wind 3 m away with falloff power 2: Blender scales it by (1 + 3)^-2.
    bpy.data.objects.remove(bpy.data.objects["Turbulence"])
    _field("WIND", location=(0, 0, -2), strength=1600.0, shape="POINT", falloff_power=2.0)
    wind = _job().groups[0].spec.wind
    np.testing.assert_allclose(wind.velocity, [0.0, 0.0, 1600.0 * 0.01 / 16.0], atol=1e-6)
    # Out of its maximum distance, or behind it with "positive Z only": nothing.
    field = bpy.data.objects["Wind"].field
    field.use_max_distance, field.distance_max = True, 2.5
    np.testing.assert_allclose(_job().groups[0].spec.wind.velocity, 0.0)
    field.use_max_distance = False
    bpy.data.objects["Wind"].location = (0, 0, 4)
    field.z_direction = "POSITIVE"
    np.testing.assert_allclose(_job().groups[0].spec.wind.velocity, 0.0)


def test_a_field_bakes_like_the_same_scene_wind():
    obj = cloth(n=5, pins=[20, 24], frames=(1, 6), location=(0, 0, 1))
    wind = _field("WIND", location=(0, -2, 1), rotation=(-math.pi / 2, 0, 0), strength=300.0)
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    with_field = np.stack([evaluated_world(obj, f) for f in range(1, 7)])
    assert np.ptp(with_field[:, :, 1]) > 1e-3  # blown along +Y
    bpy.data.objects.remove(wind)
    bpy.context.scene.cloth_solver.wind_velocity = (0.0, 3.0, 0.0)
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    with_scene_wind = np.stack([evaluated_world(obj, f) for f in range(1, 7)])
    np.testing.assert_allclose(with_field, with_scene_wind, atol=1e-5)


def test_an_animated_field_drives_the_wind_frame_by_frame():
    obj = cloth(n=5, pins=[20, 24], frames=(1, 5), location=(0, 0, 1))
    wind = _field("WIND", location=(0, -2, 1), rotation=(-math.pi / 2, 0, 0), strength=100.0)
    wind.field.keyframe_insert("strength", frame=1)
    wind.field.strength = 500.0
    wind.field.keyframe_insert("strength", frame=5)
    for fc in _fcurves(wind):
        for kp in fc.keyframe_points:
            kp.interpolation = "LINEAR"
    bpy.context.scene.frame_set(3)
    job = _job()
    spec = job.groups[0].spec
    # Frame f's field strength (100, 200, ..., 500) acts from frame f to f + 1, along +Y.
    np.testing.assert_allclose([w.velocity for w in spec.wind_frames],
                               [[0, s, 0] for s in (1.0, 2.0, 3.0, 4.0, 5.0)], atol=1e-5)
    np.testing.assert_allclose(spec.wind.velocity, [0, 1.0, 0], atol=1e-5)
    assert "force field 'Wind' is animated: its wind is read at every frame" in job.notes
    assert bpy.context.scene.frame_current == 3
    # End to end: the first step is the steady 1 m/s wind's, the later ones blow harder.
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    animated = np.stack([evaluated_world(obj, f) for f in range(1, 6)])
    bpy.data.objects.remove(wind)
    bpy.context.scene.cloth_solver.wind_velocity = (0.0, 1.0, 0.0)
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    steady = np.stack([evaluated_world(obj, f) for f in range(1, 6)])
    np.testing.assert_allclose(animated[:2], steady[:2], atol=1e-6)
    assert animated[-1][:, 1].mean() > steady[-1][:, 1].mean() + 1e-3


def _fcurves(obj):
    """The object's F-curves (action.fcurves before Blender 4.4, the slot's channelbag after)."""
    action = obj.animation_data.action
    if hasattr(action, "fcurves"):
        return action.fcurves
    from bpy_extras import anim_utils
    return anim_utils.action_get_channelbag_for_slot(action, obj.animation_data.action_slot).fcurves


# ---- unit scale ----

def _scaled_scene(k: float):
    """The same scene modelled k times larger at unit scale 1/k: a pinned cloth blown by wind
    above two colliders (ours and a Collision modifier). The cloth stays clear of them: where
    cloth touches a collider, float32 differences of 1e-8 m between the two scenes can flip a
    contact and part the results by millimetres, which says nothing about units."""
    scene = bpy.context.scene
    scene.unit_settings.system = "METRIC"
    scene.unit_settings.scale_length = 1.0 / k
    scene.gravity = (0.0, 0.0, -9.81 * k)
    scene.cloth_solver.wind_velocity = (1.5 * k, 0.0, 0.0)
    scene.cloth_solver.wind_turbulence = 0.5  # m/s: an SI value, not scaled
    scene.cloth_solver.wind_scale = 0.4 * k
    obj = grid("Cloth", 6, size=k, location=(0, 0, 0.3 * k))
    s = obj.cloth_solver
    s.role = "CLOTH"
    vg = obj.vertex_groups.new(name="pins")
    vg.add([30, 35], 1.0, "REPLACE")
    s.pin_group = "pins"
    scene.cloth_solver.frame_start, scene.cloth_solver.frame_end = 1, 10
    floor = grid("Floor", 3, size=3 * k, location=(0, 0, -1.0 * k))
    floor.cloth_solver.role = "COLLIDER"
    floor.cloth_solver.thickness = 0.01 * k
    wall = grid("Wall", 3, size=3 * k, location=(3 * k, 0, 0), rotation=(0, math.pi / 2, 0))
    wall.modifiers.new("Collision", "COLLISION")
    wall.collision.thickness_outer = 0.005 * k
    return obj


def test_a_scene_at_unit_scale_001_modelled_100x_larger_bakes_the_same():
    obj = _scaled_scene(1.0)
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    metres = np.stack([evaluated_world(obj, f) for f in range(1, 11)])
    assert np.ptp(metres[:, :, 2]) > 0.2 and np.ptp(metres[:, :, 0]) > 0.01  # falls, blown
    bpy.ops.wm.read_homefile(use_empty=True)
    obj = _scaled_scene(100.0)
    assert bpy.context.scene.unit_settings.scale_length == pytest.approx(0.01)
    spec = _job().groups[0].spec
    np.testing.assert_allclose(spec.gravity, [0, 0, -9.81], rtol=1e-6)
    np.testing.assert_allclose(spec.wind.velocity, [1.5, 0, 0], rtol=1e-6)
    assert spec.wind.turbulence_scale == pytest.approx(0.4)
    assert sorted(c.thickness for c in spec.colliders) == pytest.approx([0.005, 0.01])
    np.testing.assert_allclose(spec.cloth.mesh.positions, metres[0], atol=1e-6)  # in metres
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    units = np.stack([evaluated_world(obj, f) for f in range(1, 11)])
    np.testing.assert_allclose(units / 100.0, metres, atol=1e-6)
    assert "gravity" not in bpy.context.scene.cloth_solver.last_report


def test_gravity_left_in_scene_units_at_a_small_unit_scale_is_pointed_out():
    scene = bpy.context.scene
    scene.unit_settings.system = "METRIC"
    scene.unit_settings.scale_length = 0.01
    cloth(n=3, frames=(1, 2))
    job = _job()
    np.testing.assert_allclose(job.groups[0].spec.gravity, [0, 0, -0.0981],
                               rtol=1e-5)
    assert any("the scene's gravity is 0.0981 m/s² at unit scale 0.01" in w
               for w in job.warnings)
    scene.unit_settings.system = "NONE"  # no unit system: Blender shows raw numbers, 1 BU = 1 m
    np.testing.assert_allclose(_job().groups[0].spec.gravity, [0, 0, -9.81],
                               rtol=1e-5)
