"""Modifier stacks on a cloth: the cage is baked above the first refining modifier (Subdivision
Surface and the like), which stays on top of the bake; deformers above it are inputs; a modifier
above the cloth that changes the vertex count is named and keeps the previous bake
(cloth_addon/modifier_stack.py)."""

from __future__ import annotations

import numpy as np
import pytest

import bpy
from scenes import (ATOL, addon, cloth, evaluated_world, key_state, local_positions, reference,
                    same_key_state)


def _world(obj, local):
    m = np.array(obj.matrix_world, dtype=np.float64)
    return local @ m[:3, :3].T + m[:3, 3]


def _key_world(obj, frame):
    """World positions that the cloth key of ``frame`` holds (the cage at that frame)."""
    kb = obj.data.shape_keys.key_blocks[f"cloth_{frame:04d}"]
    buf = np.empty(len(kb.data) * 3, dtype=np.float32)
    kb.data.foreach_get("co", buf)
    return _world(obj, buf.reshape(-1, 3).astype(np.float64))


def _subdivided(n=5, frames=(1, 5)):
    obj = cloth(n=n, pins=[n * n - n, n * n - 1], frames=frames, location=(0.0, 0.0, 1.0))
    sub = obj.modifiers.new("Subdivision", "SUBSURF")
    sub.levels = sub.render_levels = 1
    return obj, sub


def test_a_subdivided_plane_bakes_its_cage_and_keeps_the_subdivision_on_top():
    obj, sub = _subdivided()
    cage0 = _world(obj, local_positions(obj))
    expected = reference(obj, 4, pins=[20, 24], start_world=cage0)
    assert len(evaluated_world(obj, 1)) == 81  # 5 x 5 cage, once subdivided: 9 x 9

    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    assert (sub.show_viewport, sub.show_render) == (True, True)
    assert obj.cloth_solver.bake_muted_modifiers == ""  # nothing above the cloth to switch off
    for f in range(1, 6):  # the keys hold the simulated cage
        np.testing.assert_allclose(_key_world(obj, f), expected[f - 1], atol=ATOL)
    assert np.abs(expected[-1] - cage0).max() > 0.05  # the keys move the vertices
    # Played back, the subdivided surface follows the cage: smooth, and moving.
    first, last = evaluated_world(obj, 1), evaluated_world(obj, 5)
    assert first.shape == last.shape == (81, 3)
    assert np.abs(last - first).max() > 0.05
    assert last[:, 2].min() < first[:, 2].min() - 0.05  # the free edge swings down
    report = bpy.context.scene.cloth_solver.last_report
    assert "'Cloth' is baked above its modifier 'Subdivision', which stays on" in report
    assert obj.cloth_solver.bake_outdated == ""

    # A re-bake reads the cage again (not the subdivided bake), and Free Bake leaves the
    # Subdivision modifier as it was.
    obj.cloth_solver.solver = "MASS_SPRING"
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    assert obj.cloth_solver.bake_model == "mass_spring"
    np.testing.assert_allclose(_key_world(obj, 1), cage0, atol=ATOL)
    assert evaluated_world(obj, 5).shape == (81, 3)
    assert sub.show_viewport and sub.show_render
    assert bpy.ops.cloth_solver.free_bake() == {"FINISHED"}
    assert obj.data.shape_keys is None
    assert sub.show_viewport and sub.show_render
    np.testing.assert_allclose(evaluated_world(obj, 5), first, atol=1e-6)


def test_deformers_above_the_subdivision_are_inputs_those_below_stay_on_top():
    obj = cloth(n=4, pins=[12, 15], frames=(1, 3))
    lift = obj.modifiers.new("Lift", "DISPLACE")
    lift.strength, lift.direction, lift.mid_level = 0.1, "Z", 0.0
    sub = obj.modifiers.new("Subdivision", "SUBSURF")
    sub.levels = sub.render_levels = 1
    detail = obj.modifiers.new("Detail", "DISPLACE")
    detail.strength, detail.direction, detail.mid_level = 0.5, "Z", 0.0

    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    # the lift is inside the keys (pinned vertices at z = 0.1) and switched off
    np.testing.assert_allclose(_key_world(obj, 3)[[12, 15], 2], 0.1, atol=ATOL)
    assert not lift.show_viewport and not lift.show_render
    assert sub.show_viewport and detail.show_viewport and detail.show_render
    # the detail displace acts on the subdivided bake at playback: every vertex 0.5 higher
    # than the same stack without it
    with_detail = evaluated_world(obj, 3)
    detail.show_viewport = False
    try:
        without = evaluated_world(obj, 3)
    finally:
        detail.show_viewport = True
    np.testing.assert_allclose(with_detail - without, [[0.0, 0.0, 0.5]] * len(without),
                               atol=1e-5)
    assert bpy.ops.cloth_solver.free_bake() == {"FINISHED"}
    assert lift.show_viewport and lift.show_render


def test_decimate_above_the_subdivision_is_named_and_keeps_the_previous_bake():
    obj, sub = _subdivided(frames=(1, 3))
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    played = evaluated_world(obj, 3)
    before = key_state(obj)  # at frame 3, like after the failed bake (it restores the frame)

    # Decimate first, then the Subdivision: the cloth would be read after the decimation
    obj.modifiers.remove(sub)
    dec = obj.modifiers.new("Decimate", "DECIMATE")
    dec.ratio = 0.3
    sub = obj.modifiers.new("Subdivision", "SUBSURF")
    sub.levels = sub.render_levels = 1
    with pytest.raises(RuntimeError, match=(
            r"'Cloth': modifier 'Decimate' \(Decimate\) changes the vertex count from 25 to "
            r"\d+ above the point where the cloth is read \(frame 1\).*Apply 'Decimate' "
            r"\(Modifier > Apply\), or move it below 'Subdivision'")):
        bpy.ops.cloth_solver.bake()
    assert same_key_state(before, key_state(obj))
    assert dec.show_viewport and sub.show_viewport  # switched back as they were
    obj.modifiers.remove(dec)
    np.testing.assert_allclose(evaluated_world(obj, 3), played, atol=1e-6)

    # without a refining modifier, a Mirror cannot go on top: apply or remove it
    obj.modifiers.remove(sub)
    obj.modifiers.new("Mirror", "MIRROR")
    with pytest.raises(RuntimeError, match=r"modifier 'Mirror' \(Mirror\) changes the vertex "
                                           r"count from 25 to \d+ .*or remove it"):
        bpy.ops.cloth_solver.bake()
    assert same_key_state(before, key_state(obj))


def test_refining_modifiers_edited_after_the_bake_leave_it_up_to_date():
    """The modifiers on top act on the baked keys: editing them does not outdate the bake;
    editing an input above them does."""
    obj, sub = _subdivided(frames=(1, 3))
    lift = obj.modifiers.new("Lift", "DISPLACE")
    lift.strength, lift.direction, lift.mid_level = 0.1, "Z", 0.0
    # a Displace below the Subdivision is on top of the bake too
    bpy.context.view_layer.update()
    assert [m.name for m in obj.modifiers] == ["Subdivision", "Lift"]
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    status = addon().cloth_addon.bake_status.status
    sub.levels, sub.render_levels, lift.strength = 2, 3, 0.2
    sub.show_viewport = False
    bpy.context.view_layer.update()
    assert status(obj, bpy.context.scene)[0] == "BAKED"
    obj.modifiers.remove(sub)  # the Lift is now an input: the bake did not read it
    bpy.context.view_layer.update()
    assert status(obj, bpy.context.scene)[0] == "OUTDATED"



def _smooth_by_angle(obj):
    """A Geometry Nodes modifier with a pass-through group named like Blender 4.1+'s Shade Auto
    Smooth asset (enough for where the bake puts it)."""
    group = bpy.data.node_groups.new("Smooth by Angle", "GeometryNodeTree")
    if hasattr(group, "interface"):  # Blender 4.0+
        group.interface.new_socket("Geometry", in_out="INPUT", socket_type="NodeSocketGeometry")
        group.interface.new_socket("Geometry", in_out="OUTPUT", socket_type="NodeSocketGeometry")
    else:
        group.inputs.new("NodeSocketGeometry", "Geometry")
        group.outputs.new("NodeSocketGeometry", "Geometry")
    source, sink = group.nodes.new("NodeGroupInput"), group.nodes.new("NodeGroupOutput")
    group.links.new(source.outputs[0], sink.inputs[0])
    mod = obj.modifiers.new("Smooth by Angle", "NODES")
    mod.node_group = group
    return mod


def test_normal_modifiers_stay_on_after_the_bake():
    """Shape keys hold positions only: a Weighted Normal or Smooth by Angle modifier switched
    off with the inputs would lose its shading, so they stay on top."""
    obj = cloth(n=4, pins=[12, 15], frames=(1, 3))
    lift = obj.modifiers.new("Lift", "DISPLACE")
    lift.strength, lift.direction, lift.mid_level = 0.1, "Z", 0.0
    smooth = _smooth_by_angle(obj)
    weighted = obj.modifiers.new("WeightedNormal", "WEIGHTED_NORMAL")
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    assert not lift.show_viewport  # the input, inside the keys
    assert smooth.show_viewport and smooth.show_render
    assert weighted.show_viewport and weighted.show_render
    np.testing.assert_allclose(_key_world(obj, 3)[[12, 15], 2], 0.1, atol=ATOL)
    assert evaluated_world(obj, 3).shape == (16, 3)
