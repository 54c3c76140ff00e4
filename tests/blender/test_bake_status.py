"""Bake status like Blender's point cache: "Not baked" before the first bake, "Outdated" once the
user edits what the bake read (the cloth, its settings, a collider, a force field, the frame
range), cleared by the next bake or Free Bake; never set by the bake itself or by frame changes,
and kept in the .blend."""

from __future__ import annotations

import bpy
import numpy as np

import dev_addon
from scenes import addon, cloth, grid
from test_registration import _draw_all


def _status(obj):
    return addon().cloth_addon.bake_status.status(obj, bpy.context.scene)


def _update():
    """What Blender does after an edit: evaluate the depsgraph (runs depsgraph_update_post)."""
    bpy.context.view_layer.update()


def _baked_cloth(**kw):
    obj = cloth(n=4, pins=[12, 15], frames=(1, 3), location=(0, 0, 1), **kw)
    bpy.context.view_layer.objects.active = obj
    assert _status(obj) == ("NOT_BAKED", "Not baked")
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    _update()
    assert _status(obj) == ("BAKED", "Baked frames 1-3 (implicit)")
    return obj


def _labels():
    return [text for kind, text in _draw_all(bpy.context) if kind == "label"]


def test_not_baked_then_baked_and_the_bake_and_playback_do_not_outdate_it():
    obj = cloth(n=4, pins=[12, 15], frames=(1, 3))
    bpy.context.view_layer.objects.active = obj
    assert "Not baked" in _labels()
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}  # writes keys, mutes nothing here
    _update()
    for frame in (1, 2, 3, 7, 2):  # playback and scrubbing
        bpy.context.scene.frame_set(frame)
        _update()
    assert _status(obj)[0] == "BAKED"
    assert "Baked frames 1-3 (implicit)" in _labels() and "Not baked" not in _labels()
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}  # a re-bake over the previous one
    _update()
    assert _status(obj)[0] == "BAKED"


def test_a_cloth_the_last_bake_left_out_says_whose_bake_the_summary_is_and_baking_hides_not_baked():
    cloth("Sheet", n=4, pins=[12, 15], frames=(1, 3))
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    other = cloth("Other", n=4, pins=[12, 15], frames=(1, 3), location=(3, 0, 0))
    bpy.context.view_layer.objects.active = other
    labels = _labels()
    assert "Not baked" in labels
    # the scene's summary, short, is marked as the last bake's
    assert "Last bake: Sheet, frames 1-3" in labels
    job = addon().cloth_addon.bake.BakeJob(bpy.context)
    job.start()
    try:
        labels = _labels()
        assert any(text.startswith("Baking frame ") for text in labels), labels
        assert "Not baked" not in labels  # it is baking
    finally:
        job.cancel()
        assert job.runner.join(timeout=30.0)
    assert "Not baked" in _labels()


def test_a_bake_that_mutes_modifiers_and_creates_a_basis_is_not_outdated_by_itself():
    obj = cloth(n=4, pins=[12, 15], frames=(1, 3))
    mod = obj.modifiers.new("Lift", "DISPLACE")
    mod.strength, mod.direction, mod.mid_level = 0.1, "Z", 0.0
    obj.modifiers.new("Cloth", "CLOTH")  # switched off while reading, muted after
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    _update()
    assert not mod.show_viewport
    assert _status(obj)[0] == "BAKED"
    mod.strength = 0.2  # but the user changing a (muted) modifier's setting does
    _update()
    assert _status(obj) == ("OUTDATED", "Outdated: the mesh, shape keys or modifiers of 'Cloth' "
                                        "changed")


def test_editing_the_cloth_mesh_settings_or_transform_outdates_it_and_a_bake_clears_it():
    obj = _baked_cloth()
    co = np.zeros(len(obj.data.vertices) * 3, dtype=np.float32)
    obj.data.vertices.foreach_get("co", co)
    co[2] += 0.05
    obj.data.vertices.foreach_set("co", co)
    obj.data.update()
    _update()
    state, text = _status(obj)
    assert state == "OUTDATED" and "mesh" in text
    labels = _labels()
    assert any(t.startswith("Outdated: the mesh") for t in labels)
    assert any("bake again" in t.lower() for t in labels)
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    _update()
    assert _status(obj)[0] == "BAKED"

    obj.cloth_solver.bend_stiffness *= 2  # a cloth setting (also what a preset does)
    assert _status(obj) == ("OUTDATED", "Outdated: the cloth settings of 'Cloth' changed")
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}

    obj.location.x += 0.5
    _update()
    assert _status(obj) == ("OUTDATED", "Outdated: 'Cloth' was moved")
    assert bpy.ops.cloth_solver.free_bake() == {"FINISHED"}
    assert _status(obj) == ("NOT_BAKED", "Not baked")
    assert obj.cloth_solver.bake_outdated == ""


def test_the_frame_range_outdates_it_until_it_matches_again():
    obj = _baked_cloth()
    bpy.context.scene.cloth_solver.frame_end = 10
    assert _status(obj) == ("OUTDATED", "Outdated: the frame range is 1-10, the bake has 1-3")
    bpy.context.scene.cloth_solver.frame_end = 3
    assert _status(obj)[0] == "BAKED"


def test_colliders_fields_and_scene_settings_outdate_every_baked_cloth():
    floor = grid("Floor", 3, size=4.0, location=(0, 0, -1))
    floor.cloth_solver.role = "COLLIDER"
    wall = grid("Wall", 3, size=4.0, location=(0, 3, 0))
    wall.modifiers.new("Collision", "COLLISION")
    bpy.ops.object.effector_add(type="WIND", location=(0, -3, 0))
    wind = bpy.context.object
    obj = _baked_cloth()
    other = grid("Unrelated", 3)  # editing an object the bake does not read changes nothing
    other.location.z = 5
    _update()
    assert _status(obj)[0] == "BAKED"

    edits = [
        (lambda: setattr(floor, "location", (0, 0, -0.9)), "collider 'Floor' changed"),
        (lambda: setattr(floor.cloth_solver, "friction", 0.9),
         "the settings of collider 'Floor' changed"),
        (lambda: setattr(wall.collision, "thickness_outer", 0.1), "collider 'Wall' changed"),
        (lambda: setattr(wall.collision, "use", False), "collider 'Wall' changed"),
        (lambda: setattr(wind.field, "strength", 50.0), "force field 'Wind' changed"),
        (lambda: setattr(bpy.context.scene.cloth_solver, "wind_velocity", (1, 0, 0)),
         "the scene's wind or physics settings changed"),
        (lambda: setattr(bpy.context.scene.cloth_solver, "use_collision_modifiers", False),
         "the scene's wind or physics settings changed"),
        (lambda: setattr(other.cloth_solver, "role", "COLLIDER"),
         "the role of 'Unrelated' changed"),
    ]
    for edit, reason in edits:
        bpy.context.view_layer.objects.active = obj
        assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
        _update()
        assert _status(obj)[0] == "BAKED", reason
        edit()
        _update()
        assert _status(obj) == ("OUTDATED", f"Outdated: {reason}")


def test_the_status_survives_save_and_reload_and_is_tracked_after_it(tmp_path):
    obj = _baked_cloth()
    path = str(tmp_path / "status.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    obj = bpy.data.objects["Cloth"]
    _update()
    assert _status(obj)[0] == "BAKED"
    obj.location.z += 1.0
    _update()  # the handler is persistent: still there after opening a file
    assert _status(obj)[0] == "OUTDATED"
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.open_mainfile(filepath=path)
    assert _status(bpy.data.objects["Cloth"]) == ("OUTDATED", "Outdated: 'Cloth' was moved")


def test_undo_and_redo_bring_the_status_back_and_mark_nothing_themselves():
    bpy.ops.ed.undo_push(message="start")  # background Blender's undo stack (see test_undo.py)
    floor = grid("Floor", 3, size=4.0, location=(0, 0, -1))
    floor.cloth_solver.role = "COLLIDER"
    grid("Other", 3, location=(5, 0, 0))
    obj = cloth(n=4, pins=[12, 15], frames=(1, 3), location=(0, 0, 1))
    bpy.ops.ed.undo_push(message="scene")
    assert bpy.ops.cloth_solver.bake("EXEC_DEFAULT", True) == {"FINISHED"}
    bpy.data.objects["Other"].location.x = 6  # not an input
    _update()
    bpy.ops.ed.undo_push(message="other moved")
    bpy.data.objects["Floor"].location.z = -0.8
    _update()
    bpy.ops.ed.undo_push(message="floor moved")
    assert _status(bpy.data.objects["Cloth"])[0] == "OUTDATED"
    assert bpy.ops.ed.undo() == {"FINISHED"}
    _update()
    assert _status(bpy.data.objects["Cloth"])[0] == "BAKED"
    assert bpy.ops.ed.undo() == {"FINISHED"}
    _update()
    assert _status(bpy.data.objects["Cloth"])[0] == "BAKED"
    assert bpy.ops.ed.redo() == {"FINISHED"} and bpy.ops.ed.redo() == {"FINISHED"}
    _update()
    assert _status(bpy.data.objects["Cloth"]) == ("OUTDATED", "Outdated: collider 'Floor' changed")
    del obj


def _our_handlers() -> list[int]:
    return [sum(h.__module__.endswith("cloth_addon.bake_status")
                for h in getattr(bpy.app.handlers, name))
            for name in ("depsgraph_update_post", "undo_post", "redo_post")]


def test_the_handlers_are_registered_once_and_removed_with_the_add_on(addon_module, scratch_root):
    assert _our_handlers() == [1, 1, 1]
    dev_addon.disable(addon_module)
    assert _our_handlers() == [0, 0, 0]
    dev_addon.enable(scratch_root)
    assert _our_handlers() == [1, 1, 1]


def test_the_panel_shows_what_acts_as_a_collider_and_the_field_settings():
    wall = grid("Wall", 3)
    wall.modifiers.new("Collision", "COLLISION")
    wall.collision.cloth_friction = 40.0
    bpy.context.view_layer.objects.active = wall
    log = _draw_all(bpy.context)
    assert ("prop", "use_collision_modifier") in log and ("prop", "use_collision_modifiers") in log
    text = " ".join(t for kind, t in log if kind == "label")  # short lines, read together
    assert "Collider from its Collision modifier: thickness 20.00 mm, friction 0.40" in text
    wall.cloth_solver.use_collision_modifier = False
    assert not any("Collider from" in t for kind, t in _draw_all(bpy.context) if kind == "label")
    wall.cloth_solver.role = "COLLIDER"  # our settings win, and the panel says so
    assert "replace the Collision modifier's" in " ".join(
        t for kind, t in _draw_all(bpy.context) if kind == "label")
    obj = cloth(n=3)
    bpy.context.view_layer.objects.active = obj
    drawn = {name for kind, name in _draw_all(bpy.context) if kind == "prop"}
    assert {"use_force_fields", "field_speed"} <= drawn
