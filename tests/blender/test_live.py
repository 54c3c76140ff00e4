"""Watching a bake simulate: each frame shows in the viewport's evaluated mesh as soon as it is
simulated, without writing into the user's data (a temporary Mesh Cache modifier, live.py);
Stop keeps the frames so far as a shorter bake, Cancel keeps the previous bake; the progress
counts the bake's own frames. The modal operator's own methods, driven by timer events as
Blender sends them (background Blender cannot run it modally; tests/blender/test_ui_session.py
does the same in a real window)."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import bpy
from scenes import (addon, advance, cloth, evaluated_local, fcurve_paths, key_state,
                    modal_operator, run_modal, same_key_state)



def _live_modifiers(obj) -> list:
    return [m.name for m in obj.modifiers if m.type == "MESH_CACHE"]


def _solver_local(job, obj, f) -> np.ndarray:
    """The solver's positions of simulated frame ``f`` in the object's local space."""
    to_local = addon().cloth_addon.mesh_io.to_local
    c = job.groups[0].cloths[0]
    return to_local(job.groups[0].frames[f], c.matrices[f]).astype(np.float32)


def test_each_frame_shows_in_the_evaluated_mesh_before_the_bake_has_finished():
    obj = cloth(n=6, pins=[30, 35], frames=(1, 40), location=(0.2, 0.1, 1.0),
                rotation=(0.3, 0.0, 0.5))
    sub = obj.modifiers.new("Subdivision", "SUBSURF")  # stays on top of the bake
    sub.show_viewport = False  # (off: the evaluated vertices are the cloth's own)
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}  # a previous bake
    before, paths = key_state(obj), fcurve_paths(obj)
    status = addon().cloth_addon.bake_status
    obj.cloth_solver.solver = "MASS_SPRING"
    job = addon().cloth_addon.bake.BakeJob(bpy.context).start(live=True)
    advance(job, 3)
    assert job.frames_kept >= 3 and not obj.cloth_solver.bake_model == "mass_spring"
    # Only the live view's modifier was added, where the cloth is read (above Subdivision);
    # the previous bake's keys are untouched and its status is not marked by it.
    assert _live_modifiers(obj) == ["Cloth Solver Live"]
    assert [m.name for m in obj.modifiers] == ["Cloth Solver Live", "Subdivision"]
    assert same_key_state(before, key_state(obj)) and fcurve_paths(obj) == paths
    for f in (0, 1, 3):
        np.testing.assert_array_equal(evaluated_local(obj, 1 + f), _solver_local(job, obj, f))
    bpy.context.view_layer.update()
    assert status.status(obj, bpy.context.scene)[0] == "OUTDATED"  # (the solver changed)
    assert "settings" in obj.cloth_solver.bake_outdated
    summary = job.run()  # the rest, then the keys
    assert summary.stopped_of is None
    assert _live_modifiers(obj) == []
    for f in (1, 3, 39):  # the bake shows what the live view showed
        np.testing.assert_allclose(evaluated_local(obj, 1 + f), _solver_local(job, obj, f),
                                   atol=2e-6)


def test_a_cancelled_live_bake_leaves_the_file_as_it_was(tmp_path):
    obj = cloth(n=5, pins=[20, 24], frames=(1, 30))
    job = addon().cloth_addon.bake.BakeJob(bpy.context).start(live=True)
    advance(job, 2)
    assert _live_modifiers(obj) == ["Cloth Solver Live"]
    # the frames shown are no change of the cloth's: a previous bake stays up to date
    job.cancel()
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    job = addon().cloth_addon.bake.BakeJob(bpy.context).start(live=True)
    advance(job, 2)
    bpy.context.view_layer.update()
    status = addon().cloth_addon.bake_status.status(obj, bpy.context.scene)
    assert status == ("BAKED", "Baked frames 1-30 (implicit)")
    job.cancel()
    assert bpy.ops.cloth_solver.free_bake() == {"FINISHED"}
    job = addon().cloth_addon.bake.BakeJob(bpy.context).start(live=True)
    advance(job, 2)
    # A file saved while the bake runs holds no live view; it comes back after the save.
    path = tmp_path / "saved.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(path), copy=True)
    assert _live_modifiers(obj) == ["Cloth Solver Live"]
    folder = job.live.folder
    job.cancel()
    assert _live_modifiers(obj) == [] and obj.data.shape_keys is None
    assert not obj.cloth_solver.is_baked and not folder.exists()
    assert job.runner.join(timeout=30.0)  # the thread ends after its frame
    bpy.ops.wm.open_mainfile(filepath=str(path))
    assert _live_modifiers(bpy.data.objects["Cloth"]) == []


def test_stop_keeps_the_frames_so_far_as_a_shorter_bake_and_says_so():
    obj = cloth(n=5, pins=[20, 24], frames=(1, 48))
    cls, op = modal_operator(addon().cloth_addon.bake.BakeJob(bpy.context))
    job = op._job
    job.runner.allow(8)  # the thread waits there: Stop comes before the bake's end
    run_modal(cls, op, until=lambda op: op._job.frames_kept >= 5)
    # the frame follows the bake (at most five frames a second: operators.FOLLOW_INTERVAL_S)
    assert 1 < bpy.context.scene.frame_current == op._shown <= job.scene_frame
    job.stop_requested = True  # the panel's Stop button
    assert run_modal(cls, op) == {"FINISHED"}
    kept = job.frames_kept
    assert 5 <= kept <= 8, kept
    s = obj.cloth_solver
    assert (s.is_baked, s.bake_frame_start, s.bake_frame_end) == (True, 1, 1 + kept)
    assert [kb.name for kb in obj.data.shape_keys.key_blocks][1:] == [
        f"cloth_{f:04d}" for f in range(1, 2 + kept)]
    assert op.reports[-1][0] == {"INFO"}
    assert f"frames 1-{1 + kept} (stopped: the range was 1-48)" in op.reports[-1][1]
    status = addon().cloth_addon.bake_status.status(obj, bpy.context.scene)
    assert status == ("BAKED", f"Baked frames 1-{1 + kept} of 1-48, stopped (implicit)")
    assert _live_modifiers(obj) == [] and bpy.context.scene.frame_current == 1
    np.testing.assert_allclose(evaluated_local(obj, 1 + kept), _solver_local(job, obj, kept),
                               atol=2e-6)
    bpy.context.scene.cloth_solver.frame_end = 60  # another range: outdated as usual
    assert addon().cloth_addon.bake_status.status(obj, bpy.context.scene)[0] == "OUTDATED"
    assert bpy.ops.cloth_solver.free_bake() == {"FINISHED"}
    assert obj.cloth_solver.bake_stopped_of == 0


def test_cancel_says_when_there_was_no_previous_bake():
    obj = cloth(n=5, pins=[20, 24], frames=(1, 48))
    cls, op = modal_operator(addon().cloth_addon.bake.BakeJob(bpy.context))
    run_modal(cls, op, until=lambda op: op._job.frames_kept >= 3)
    frame = op._job.scene_frame
    op._job.cancel_requested = True  # the panel's Cancel (Esc does the same)
    assert run_modal(cls, op) == {"CANCELLED"}
    assert op.reports == [({"WARNING"}, f"Bake cancelled at frame {frame} of 1-48; nothing "
                                        "was written (there was no previous bake)")]
    assert obj.data.shape_keys is None and _live_modifiers(obj) == []
    assert bpy.context.scene.frame_current == 1  # the user's frame back


def test_the_progress_counts_the_bakes_own_frames():
    """Frames 1-48 read "frame 16 of 1-48" once frame 16 is simulated (not "15/47")."""
    cloth(n=4, pins=[12, 15], frames=(1, 48))
    job = addon().cloth_addon.bake.BakeJob(bpy.context)
    assert job.progress_text() == "frame 1 of 1-48"
    job.start()
    advance(job, 15)
    assert job.frames_kept >= 15
    assert job.progress_text() == f"frame {1 + job.frames_kept} of 1-48"
    job.cancel()
    assert job.runner.join(timeout=30.0)


def test_the_headless_log_names_each_frame_in_the_bakes_range(capsys):
    cloth(n=4, pins=[12, 15], frames=(1, 4))
    job = addon().cloth_addon.bake.BakeJob(bpy.context, log=print)
    job.run()
    out = capsys.readouterr().out
    assert "frame 2 of 1-4 Cloth" in out and "frame 4 of 1-4 Cloth" in out


def test_a_scripts_bake_steps_on_the_main_thread_each_frame_logged_as_it_is_simulated(
        monkeypatch):
    """A script's bake (and ``blender -b``'s) simulates on the calling thread, the process's
    main thread, where numba's parallel kernels run fastest (runner.InlineRunner); each frame's
    log line comes as soon as it is simulated; the keys are bit for bit a thread's."""
    obj = cloth(n=4, pins=[12, 15], frames=(1, 4))
    Simulation = addon().solver.simulation.Simulation
    real, events = Simulation.step, []

    def step(self):
        events.append(("step", threading.current_thread() is threading.main_thread()))
        return real(self)

    monkeypatch.setattr(Simulation, "step", step)
    bake = addon().cloth_addon.bake
    bake.BakeJob(bpy.context).start().run()  # started: on a thread (Simulate on Play's)
    assert len(events) == 3 and not any(main for _, main in events)
    on_thread = key_state(obj)
    events.clear()
    log = lambda text: events.append(("log", text)) if " frame " in text else None  # noqa: E731
    assert bake.BakeJob(bpy.context, log=log).run().frame_end == 4
    assert [kind for kind, _ in events] == ["step", "log"] * 3  # each logged as it is done
    assert all(main for _, main in events[::2])
    assert [text.split(" of ")[0] for _, text in events[1::2]] == [
        f"cloth_solver: frame {f}" for f in (2, 3, 4)]
    assert same_key_state(key_state(obj), on_thread)
    events.clear()
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}  # the operator from a script
    assert events == [("step", True)] * 3 and same_key_state(key_state(obj), on_thread)


def test_the_bake_waits_for_its_thread_and_fails_like_before(monkeypatch):
    """A failure on the thread (here the model refusing the mesh) is the bake's error on
    Blender's side, with the cloth named; nothing is written."""
    obj = cloth(n=4, pins=[12, 15], frames=(1, 4))
    S = addon().solver.simulation

    def refuse(spec):
        raise ValueError("test: refused")

    monkeypatch.setattr(addon().cloth_addon.bake, "Simulation", refuse)
    with pytest.raises(RuntimeError, match="'Cloth': test: refused"):
        bpy.ops.cloth_solver.bake()
    assert obj.data.shape_keys is None and S.Simulation is not refuse
