"""Bake Cloth end to end: the evaluated mesh at frame f equals the solver's positions for frame f,
pins, transforms, user shape keys, modifiers, free/re-bake, cancel, failures, save/reload."""

from __future__ import annotations

import numpy as np
import pytest

import bpy
from scenes import (ATOL, addon, assert_matches, cloth, evaluated_world, fcurve_paths, key_state,
                    advance, local_positions, modal_operator, reference, run_modal, same_key_state,
                    solver)


def test_bake_writes_one_keyed_shape_key_per_frame_matching_the_solver():
    obj = cloth(n=6, pins=[30, 35], frames=(1, 6), location=(0.3, -0.2, 1.0))
    expected = reference(obj, 5, pins=[30, 35])
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    names = [kb.name for kb in obj.data.shape_keys.key_blocks]
    assert names == ["Basis"] + [f"cloth_{f:04d}" for f in range(1, 7)]
    assert fcurve_paths(obj) == sorted(f'key_blocks["cloth_{f:04d}"].value' for f in range(1, 7))
    assert_matches(obj, expected)
    assert np.ptp(expected[:, :, 2]) > 0.01  # it really moved (hangs and swings down)
    # Exactly one cloth key is on at every frame; the first/last hold outside the range.
    for frame, on in ((0, "cloth_0001"), (3, "cloth_0003"), (6, "cloth_0006"), (9, "cloth_0006")):
        bpy.context.scene.frame_set(frame)
        values = {kb.name: kb.value for kb in obj.data.shape_keys.key_blocks[1:]}
        assert values == {n: float(n == on) for n in values}, frame
    s = obj.cloth_solver
    assert (s.is_baked, s.bake_frame_start, s.bake_frame_end, s.bake_model) == \
        (True, 1, 6, "implicit")
    assert s.bake_max_strain > 0
    assert "Baked 1 cloth object (" in bpy.context.scene.cloth_solver.last_report


def test_world_space_bake_under_rotation_and_negative_non_uniform_scale():
    obj = cloth(n=5, pins=[0, 4], frames=(1, 5), location=(0.2, 0.1, 1.0),
                rotation=(0.3, -0.2, 0.5), scale=(1.5, -0.8, 1.2))
    expected = reference(obj, 4, pins=[0, 4])
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    assert_matches(obj, expected)
    # Gravity acts in world space: the free corner falls along world -Z.
    assert expected[-1, 24, 2] < expected[0, 24, 2] - 0.01


def test_mass_spring_model_and_weighted_pins():
    weights = [1.0, 1.0, 0.5, 0.0]  # 0.5 = goal spring; 0 = free although in the group
    obj = cloth(n=5, pins=[20, 24, 22, 0], weights=weights, frames=(1, 4))
    obj.cloth_solver.solver = "MASS_SPRING"
    expected = reference(obj, 3, pins=[20, 24, 22], weights=[1.0, 1.0, 0.5], model="mass_spring")
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    assert obj.cloth_solver.bake_model == "mass_spring"
    assert_matches(obj, expected)
    start = evaluated_world(obj, 1)
    assert np.allclose(expected[:, [20, 24]], start[[20, 24]])  # hard pins held exactly
    assert not np.allclose(expected[-1, 22], start[22], atol=1e-6)  # the soft pin gives a little


def test_pins_follow_the_objects_animation():
    obj = cloth(n=5, pins=[20, 24], frames=(1, 5), location=(0, 0, 1))
    obj.keyframe_insert("location", frame=1)
    obj.location = (0.4, 0.0, 1.3)
    obj.keyframe_insert("location", frame=5)
    targets = np.stack([evaluated_world(obj, f)[[20, 24]] for f in range(1, 6)])
    assert np.ptp(targets[:, 0, 0]) > 0.3  # the pins really travel
    expected = reference(obj, 4, pins=[20, 24], pin_targets=targets)
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    assert_matches(obj, expected)
    for i, f in enumerate(range(1, 6)):
        np.testing.assert_allclose(evaluated_world(obj, f)[[20, 24]], targets[i], atol=ATOL)


def test_user_shape_keys_stay_untouched_and_are_accounted_for():
    obj = cloth(n=4, pins=[12, 15], frames=(1, 4))
    obj.shape_key_add(name="Basis", from_mix=False)
    bulge = obj.shape_key_add(name="Bulge", from_mix=False)
    co = local_positions(obj)
    co[5, 2] += 0.1
    bulge.data.foreach_set("co", co.astype(np.float32).ravel())
    bulge.value = 0.5
    before = key_state(obj)
    start = evaluated_world(obj, 1)
    expected = reference(obj, 3, pins=[12, 15], start_world=start)
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    assert_matches(obj, expected)  # Basis + Bulge·0.5 + cloth key = simulated positions
    after = key_state(obj)
    assert same_key_state(before, after[:2])  # Basis and Bulge unchanged, still first
    assert bpy.ops.cloth_solver.free_bake() == {"FINISHED"}
    assert same_key_state(before, key_state(obj))
    np.testing.assert_allclose(evaluated_world(obj, 3), start, atol=1e-6)


def test_modifiers_are_inputs_and_are_restored_by_free_bake():
    obj = cloth(n=4, pins=[12, 15], frames=(1, 4))
    mod = obj.modifiers.new("Lift", "DISPLACE")
    mod.strength, mod.direction, mod.mid_level = 0.25, "Z", 0.0
    start = evaluated_world(obj, 1)
    assert np.allclose(start[:, 2] - local_positions(obj)[:, 2], 0.25, atol=1e-6)
    expected = reference(obj, 3, pins=[12, 15], start_world=start)
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    assert not mod.show_viewport and not mod.show_render  # its effect is inside the keys
    assert_matches(obj, expected)
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}  # re-bake sees the modifier again
    assert_matches(obj, expected)
    assert bpy.ops.cloth_solver.free_bake() == {"FINISHED"}
    assert mod.show_viewport and mod.show_render
    np.testing.assert_allclose(evaluated_world(obj, 2), start, atol=1e-6)


def test_free_bake_removes_exactly_what_the_bake_added():
    obj = cloth(n=4, pins=[12], frames=(1, 3))
    mesh_before = local_positions(obj)
    assert obj.data.shape_keys is None
    n_actions = len(bpy.data.actions)
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    assert obj.data.shape_keys is not None and len(bpy.data.actions) == n_actions + 1
    assert bpy.ops.cloth_solver.free_bake() == {"FINISHED"}
    assert obj.data.shape_keys is None  # the Basis the bake created is gone too
    assert len(bpy.data.actions) == n_actions
    assert np.array_equal(local_positions(obj), mesh_before)
    assert not obj.cloth_solver.is_baked
    assert bpy.ops.cloth_solver.free_bake() == {"CANCELLED"}  # nothing left to free


def test_free_bake_keeps_the_users_own_animation():
    obj = cloth(n=4, pins=[12], frames=(1, 3))
    obj.shape_key_add(name="Basis", from_mix=False)
    smile = obj.shape_key_add(name="Smile", from_mix=False)
    smile.value = 0.0
    smile.keyframe_insert("value", frame=1)
    smile.value = 0.0
    smile.keyframe_insert("value", frame=10)
    action = obj.data.shape_keys.animation_data.action
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    assert obj.data.shape_keys.animation_data.action == action  # keyed into the user's action
    assert len(fcurve_paths(obj)) == 4
    assert bpy.ops.cloth_solver.free_bake() == {"FINISHED"}
    assert fcurve_paths(obj) == ['key_blocks["Smile"].value']
    assert [kb.name for kb in obj.data.shape_keys.key_blocks] == ["Basis", "Smile"]
    assert action.name in bpy.data.actions


def test_rebake_replaces_the_previous_bake():
    obj = cloth(n=4, pins=[12, 15], frames=(1, 6))
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    bpy.context.scene.cloth_solver.frame_start = 3
    bpy.context.scene.cloth_solver.frame_end = 5
    expected = reference(obj, 2, pins=[12, 15],
                         start_world=_unbaked_world(obj, 3))
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    assert [kb.name for kb in obj.data.shape_keys.key_blocks] == \
        ["Basis", "cloth_0003", "cloth_0004", "cloth_0005"]
    assert len(fcurve_paths(obj)) == 3
    assert_matches(obj, expected, frame_start=3)


def _unbaked_world(obj, frame):
    """World positions at ``frame`` as if the object had no bake (bake keys muted)."""
    keys = [kb for kb in obj.data.shape_keys.key_blocks if kb.name.startswith("cloth_")]
    for kb in keys:
        kb.mute = True
    try:
        return evaluated_world(obj, frame)
    finally:
        for kb in keys:
            kb.mute = False


def test_cancelled_bake_leaves_the_previous_bake_untouched():
    obj = cloth(n=4, pins=[12, 15], frames=(1, 4))
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    world = evaluated_world(obj, 3)
    before = key_state(obj)  # at frame 3, like after the job (it restores the current frame)
    obj.cloth_solver.solver = "MASS_SPRING"
    job = addon().cloth_addon.bake.BakeJob(bpy.context).start(live=True)  # as the modal one
    advance(job, 2)
    assert job.frames_kept >= 2
    job.cancel()  # Esc: the operator drops the job without writing
    assert not any(m.type == "MESH_CACHE" for m in obj.modifiers)  # the live view is gone
    assert same_key_state(before, key_state(obj))
    np.testing.assert_array_equal(evaluated_world(obj, 3), world)
    assert obj.cloth_solver.bake_model == "implicit"


def test_failures_name_the_problem_and_keep_the_previous_bake(monkeypatch):
    obj = cloth(n=4, pins=[12, 15], frames=(1, 3))
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    before = key_state(obj)

    obj.modifiers.new("Mirror", "MIRROR")  # more on modifiers: test_modifiers.py
    with pytest.raises(RuntimeError, match="'Mirror' .* vertex count from 16 to 32"):
        bpy.ops.cloth_solver.bake()
    obj.modifiers.remove(obj.modifiers["Mirror"])
    assert same_key_state(before, key_state(obj))

    obj.cloth_solver.area_density = 0.0
    with pytest.raises(RuntimeError, match="area_density: must be > 0 kg/m²"):
        bpy.ops.cloth_solver.bake()
    obj.cloth_solver.area_density = 0.15

    obj.cloth_solver.pin_group = "missing"
    with pytest.raises(RuntimeError, match="pin group 'missing' does not exist"):
        bpy.ops.cloth_solver.bake()
    obj.cloth_solver.pin_group = "pins"

    # The solver blowing up on the second frame (as it reports it): nothing is kept.
    simulation = addon().solver.simulation.Simulation
    real_step = simulation.step

    def blow_up_on_frame_2(self):
        if self.frame == 1:
            self.result.error = "frame 2: simulation blew up (test); frames 0-1 are kept."
            return None
        return real_step(self)

    monkeypatch.setattr(simulation, "step", blow_up_on_frame_2)
    obj.cloth_solver.solver = "MASS_SPRING"
    with pytest.raises(RuntimeError, match="'Cloth': frame 2: simulation blew up"):
        bpy.ops.cloth_solver.bake()
    monkeypatch.undo()
    assert same_key_state(before, key_state(obj))
    assert obj.cloth_solver.bake_model == "implicit"

    obj.cloth_solver.role = "NONE"
    with pytest.raises(RuntimeError, match="no cloth objects"):
        bpy.ops.cloth_solver.bake()


def test_a_failure_while_writing_keys_puts_every_previous_bake_back(monkeypatch):
    a = cloth("A", n=4, pins=[12, 15], frames=(1, 4), location=(-1, 0, 1))
    b = cloth("B", n=4, pins=[12, 15], frames=(1, 4), location=(1, 0, 1))
    mod = b.modifiers.new("Lift", "DISPLACE")
    mod.strength, mod.direction, mod.mid_level = 0.1, "Z", 0.0
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    bpy.context.scene.frame_set(3)
    before = {o.name: (key_state(o), fcurve_paths(o), evaluated_world(o, 3)) for o in (a, b)}
    assert not mod.show_viewport
    for obj in (a, b):
        obj.cloth_solver.solver = "MASS_SPRING"

    keys = addon().cloth_addon.shape_keys
    real_write = keys.write_bake
    calls = []

    def fail_halfway_through_b(obj, frame_start, positions):
        calls.append(obj.name)
        if calls == ["A", "B"]:  # A is already replaced; B gets two keys, then it fails
            real_write(obj, frame_start, positions[:2])
            raise MemoryError("out of memory (test)")
        return real_write(obj, frame_start, positions)

    monkeypatch.setattr(keys, "write_bake", fail_halfway_through_b)
    with pytest.raises(RuntimeError, match=r"writing the bake of 'B' failed \(out of memory "
                                           r"\(test\)\); every cloth keeps its previous bake"):
        bpy.ops.cloth_solver.bake()
    for obj in (a, b):
        bpy.context.scene.frame_set(3)
        keys_before, paths_before, world_before = before[obj.name]
        assert same_key_state(keys_before, key_state(obj)), obj.name
        assert fcurve_paths(obj) == paths_before
        np.testing.assert_array_equal(evaluated_world(obj, 3), world_before)
        s = obj.cloth_solver
        assert (s.is_baked, s.bake_frame_start, s.bake_frame_end, s.bake_model) == \
            (True, 1, 4, "implicit")
    assert not mod.show_viewport and not mod.show_render  # still switched off by the bake
    assert calls[:2] == ["A", "B"] and sorted(calls[2:]) == ["A", "B"]  # both were put back
    monkeypatch.undo()
    assert bpy.ops.cloth_solver.free_bake() == {"FINISHED"}  # the restored record is whole
    assert a.data.shape_keys is None and b.data.shape_keys is None
    assert mod.show_viewport and mod.show_render


def test_user_key_with_a_bake_name_is_refused():
    obj = cloth(n=3, frames=(1, 3))
    obj.shape_key_add(name="Basis", from_mix=False)
    obj.shape_key_add(name="cloth_0002", from_mix=False)
    with pytest.raises(RuntimeError, match="already has a shape key named cloth_0002"):
        bpy.ops.cloth_solver.bake()
    assert [kb.name for kb in obj.data.shape_keys.key_blocks] == ["Basis", "cloth_0002"]


def test_save_and_reload_keep_the_bake(tmp_path):
    obj = cloth(n=4, pins=[12, 15], frames=(1, 4))
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    worlds = [evaluated_world(obj, f) for f in range(1, 5)]
    path = str(tmp_path / "baked.blend")
    bpy.ops.wm.save_as_mainfile(filepath=path)
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=path)
    obj = bpy.data.objects["Cloth"]
    assert obj.cloth_solver.is_baked and obj.cloth_solver.bake_frame_end == 4
    for f, world in zip(range(1, 5), worlds):
        np.testing.assert_array_equal(evaluated_world(obj, f), world)
    assert bpy.ops.cloth_solver.free_bake() == {"FINISHED"}
    assert obj.data.shape_keys is None


def test_several_cloth_objects_bake_in_one_go_with_their_own_materials():
    S = solver()
    a = cloth("Cotton", n=4, pins=[12, 15], frames=(1, 4), location=(-2, 0, 1))
    b = cloth("Silk", n=4, pins=[12, 15], frames=(1, 4), location=(2, 0, 1))
    for obj, preset in ((a, "cotton"), (b, "silk")):
        bpy.context.view_layer.objects.active = obj
        assert bpy.ops.cloth_solver.preset_apply(name=preset) == {"FINISHED"}
    expected = {o.name: reference(o, 3, pins=[12, 15], material=S.load_preset(p))
                for o, p in ((a, "cotton"), (b, "silk"))}
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    # One simulation holding both pieces converges like two separate ones, not bit for bit.
    for obj in (a, b):
        for i, f in enumerate(range(1, 5)):
            np.testing.assert_allclose(evaluated_world(obj, f), expected[obj.name][i], atol=1e-3)
    assert not np.allclose(expected["Cotton"][-1] - [-2, 0, 0], expected["Silk"][-1] - [2, 0, 0],
                           atol=1e-4)  # the materials really differ


def test_modal_bake_steps_on_timer_events_and_writes_at_the_end():
    obj = cloth(n=4, pins=[12, 15], frames=(1, 4))
    expected = reference(obj, 3, pins=[12, 15])
    cls, op = modal_operator(addon().cloth_addon.bake.BakeJob(bpy.context))
    event = types_event("MOUSEMOVE")
    assert cls.modal(op, bpy.context, event) == {"PASS_THROUGH"}
    result = run_modal(cls, op)  # Blender stops after FINISHED
    assert result == {"FINISHED"} and op._job is None
    assert op.reports[-1][0] == {"INFO"} and "Baked 1 cloth object (" in op.reports[-1][1]
    assert_matches(obj, expected)


def test_modal_bake_esc_cancels_and_keeps_the_previous_bake():
    obj = cloth(n=4, pins=[12, 15], frames=(1, 4))
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    world = evaluated_world(obj, 3)
    before = key_state(obj)
    obj.cloth_solver.solver = "MASS_SPRING"
    cls, op = modal_operator(addon().cloth_addon.bake.BakeJob(bpy.context))
    assert cls.modal(op, bpy.context, types_event("ESC")) == {"CANCELLED"}
    assert op.reports == [({"WARNING"}, "Bake cancelled before its first frame was simulated; "
                                        "nothing was written, the previous bake of 'Cloth' is "
                                        "unchanged")]
    assert op._job is None
    assert same_key_state(before, key_state(obj))
    np.testing.assert_array_equal(evaluated_world(obj, 3), world)


def test_a_solver_exception_stops_the_bake_with_the_frame_and_keeps_the_previous_bake(monkeypatch):
    """A bug inside the solver (any exception, not only a blow-up) ends the bake with a message
    naming the cloth and the frame; nothing is written, both from scripts and in the modal UI
    path, and the modal bake removes its timer and progress bar."""
    obj = cloth(n=4, pins=[12, 15], frames=(1, 4))
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    world = evaluated_world(obj, 3)
    before = key_state(obj)
    simulation = addon().solver.simulation.Simulation
    real_step = simulation.step

    def fail_on_frame_4(self):  # scene frame 4 = simulation frame 3
        if self.frame == 2:
            raise ValueError("boom")
        return real_step(self)

    monkeypatch.setattr(simulation, "step", fail_on_frame_4)
    obj.cloth_solver.solver = "MASS_SPRING"
    message = (r"'Cloth': internal solver error at frame 4 \(ValueError: boom\); nothing was "
               r"written and the previous bake is unchanged")
    with pytest.raises(RuntimeError, match=message):
        bpy.ops.cloth_solver.bake()
    assert same_key_state(before, key_state(obj))

    # the modal bake on a thread of this process, where the patch applies (a bake beside the
    # UI runs in the worker process: test_worker.py fails one there)
    monkeypatch.setenv("CLOTH_SOLVER_WORKER", "0")
    cls, op = modal_operator(addon().cloth_addon.bake.BakeJob(bpy.context))
    result = run_modal(cls, op)
    assert result == {"CANCELLED"} and op._job is None and op._timer is None
    assert op.reports[-1][0] == {"ERROR"}
    assert "internal solver error at frame 4 (ValueError: boom)" in op.reports[-1][1]
    assert same_key_state(before, key_state(obj))
    np.testing.assert_array_equal(evaluated_world(obj, 3), world)


def types_event(kind):
    import types
    return types.SimpleNamespace(type=kind, value="PRESS")
