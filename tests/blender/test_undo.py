"""Undo and redo around Bake Cloth and Free Bake, with Blender's real undo system.

Background Blender (``blender -b`` and the bpy wheel) starts without an undo stack;
``bpy.ops.ed.undo_push`` creates it (Blender #60934), after which ``ed.undo``/``ed.redo`` load
the same memfile steps as Ctrl+Z in the UI. Operators called from Python push an undo step
only when called with ``undo=True`` (``bpy.ops.x.y("EXEC_DEFAULT", True)``), as a click in the
UI does for an operator with the UNDO flag. An undo replaces the data blocks, so every test
looks its objects up again by name after one.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import bpy
from scenes import (addon, advance, cloth, evaluated_world, key_state, local_positions,
                    modal_operator, same_key_state)


def _undo_stack():
    """Create the undo stack (if this Blender has none yet) and push the current state."""
    assert bpy.ops.ed.undo_push(message="test start") == {"FINISHED"}


def _push(message):
    assert bpy.ops.ed.undo_push(message=message) == {"FINISHED"}


def _bake():
    return bpy.ops.cloth_solver.bake("EXEC_DEFAULT", True)  # True: one undo step, like a click


def _free():
    return bpy.ops.cloth_solver.free_bake("EXEC_DEFAULT", True)


def _cloth_with_modifier():
    obj = cloth(n=4, pins=[12, 15], frames=(1, 4), location=(0, 0, 1))
    mod = obj.modifiers.new("Lift", "DISPLACE")
    mod.strength, mod.direction, mod.mid_level = 0.1, "Z", 0.0
    return obj


def _state(name="Cloth"):
    """Everything a bake adds or changes on the object, plus what the viewport shows."""
    obj = bpy.data.objects[name]
    mod = obj.modifiers["Lift"]
    bpy.context.scene.frame_set(2)  # key values are read at one frame, as animated there
    return dict(keys=key_state(obj), baked=obj.cloth_solver.is_baked,
                record=(obj.cloth_solver.bake_frame_start, obj.cloth_solver.bake_frame_end,
                        obj.cloth_solver.bake_model),
                modifier=(mod.show_viewport, mod.show_render), actions=len(bpy.data.actions),
                mesh=local_positions(obj),
                # without the bake's wall time, which differs between two identical bakes
                report=re.sub(r" in [0-9.]+ m?s \([0-9.]+ m?s/frame\);", " in -;",
                              bpy.context.scene.cloth_solver.last_report),
                world=[evaluated_world(obj, f) for f in (1, 3, 4)])


def _assert_same(a, b):
    assert same_key_state(a["keys"], b["keys"])
    assert (a["baked"], a["record"], a["modifier"], a["actions"], a["report"]) == \
        (b["baked"], b["record"], b["modifier"], b["actions"], b["report"])
    np.testing.assert_array_equal(a["mesh"], b["mesh"])
    for x, y in zip(a["world"], b["world"]):
        np.testing.assert_array_equal(x, y)


def test_undo_and_redo_of_a_bake_and_of_free_bake():
    _undo_stack()
    _cloth_with_modifier()
    _push("scene")
    unbaked = _state()
    assert unbaked["keys"] is None and not unbaked["baked"]

    assert _bake() == {"FINISHED"}
    baked = _state()
    assert baked["baked"] and baked["modifier"] == (False, False)
    assert not np.allclose(baked["world"][-1], unbaked["world"][-1], atol=1e-3)  # it moved

    assert bpy.ops.ed.undo() == {"FINISHED"}  # one step takes the whole bake back
    _assert_same(_state(), unbaked)
    assert bpy.data.objects["Cloth"].data.shape_keys is None
    assert bpy.ops.ed.redo() == {"FINISHED"}
    _assert_same(_state(), baked)

    assert _free() == {"FINISHED"}
    freed = _state()
    # What the bake added is gone; the last bake's figures (record, report) stay as text.
    _assert_same(freed, dict(unbaked, record=baked["record"], report=baked["report"]))
    assert bpy.ops.ed.undo() == {"FINISHED"}  # Free Bake undone: the bake is back, whole
    _assert_same(_state(), baked)
    assert _free() == {"FINISHED"}  # and its record still frees exactly what it added
    _assert_same(_state(), freed)


def test_bake_after_undo_starts_from_the_undone_state():
    _undo_stack()
    _cloth_with_modifier()
    _push("scene")
    assert _bake() == {"FINISHED"}
    first = _state()
    assert bpy.ops.ed.undo() == {"FINISHED"}
    assert _bake() == {"FINISHED"}  # no stale record or key survives the undo
    _assert_same(_state(), first)  # bakes are deterministic: the same keys again


def test_a_failed_bake_adds_no_undo_step():
    _undo_stack()
    obj = _cloth_with_modifier()
    _push("scene")
    assert _bake() == {"FINISHED"}
    baked = _state()
    obj = bpy.data.objects["Cloth"]
    obj.cloth_solver.pin_group = "missing"
    with pytest.raises(RuntimeError, match="pin group 'missing' does not exist"):
        _bake()
    _assert_same(_state(), baked)
    # Had the failed bake pushed a step, this undo would land on the bake; it lands before it.
    assert bpy.ops.ed.undo() == {"FINISHED"}
    obj = bpy.data.objects["Cloth"]
    assert obj.data.shape_keys is None and obj.cloth_solver.pin_group == "pins"


def test_undo_while_the_modal_bake_runs_cancels_it():
    import types
    _undo_stack()
    _cloth_with_modifier()
    _push("scene")
    assert _bake() == {"FINISHED"}
    baked = _state()
    bpy.data.objects["Cloth"].cloth_solver.solver = "MASS_SPRING"
    _push("mass spring")
    cls, op = modal_operator(addon().cloth_addon.bake.BakeJob(bpy.context))
    advance(op._job, 1)  # the first frame, as a timer event would take it
    assert bpy.ops.ed.undo() == {"FINISHED"}  # Ctrl+Z while the bake runs
    result = cls.modal(op, bpy.context, types.SimpleNamespace(type="TIMER", value="NOTHING"))
    assert result == {"CANCELLED"} and op._job is None
    assert op.reports == [({"ERROR"}, "Bake cancelled: an undo or redo happened while baking; "
                                      "nothing was written. Bake again")]
    _assert_same(_state(), baked)  # the undone-to state, untouched by the cancelled job
    assert bpy.data.objects["Cloth"].cloth_solver.solver == "IMPLICIT"
