"""Simulate on Play (play.py): stepping the timeline forward simulates and shows each frame
(the viewport's evaluated mesh is the solver's positions), frames played are kept in memory and
shown again when scrubbing back, a change that would outdate a bake throws them away, and Bake
Cloth writes them and simulates the rest. Background Blender runs no timers and no playback:
frames are stepped with frame_set and the timer's ``tick`` is called by hand
(test_ui_session.py plays the timeline in a real window)."""

from __future__ import annotations

import time

import numpy as np

import bpy
from scenes import addon, cloth, evaluated_local


def _play():
    return addon().cloth_addon.play



def _solver_local(job, f) -> np.ndarray:
    to_local = addon().cloth_addon.mesh_io.to_local
    c = job.groups[0].cloths[0]
    return to_local(job.groups[0].frames[f], c.matrices[f]).astype(np.float32)


def _step(frame: int, timeout: float = 120.0):
    """Move to ``frame`` as playback does, run the timer until the frames allowed are taken;
    returns the session."""
    play = _play()
    bpy.context.scene.frame_set(frame)
    end = time.monotonic() + timeout
    while play.tick() is not None:
        assert time.monotonic() < end, "the session did not simulate its frames"
        time.sleep(0.01)
    return play.session()


def _live(obj) -> list:
    return [m.name for m in obj.modifiers if m.type == "MESH_CACHE"]


def _scene(frames=(1, 20)):
    obj = cloth(n=5, pins=[20, 24], frames=frames, location=(0.1, 0.0, 1.0))
    scene = bpy.context.scene
    scene.cloth_solver.simulate_on_play = True
    scene.frame_set(1)
    return obj, scene


def test_playing_forward_simulates_each_frame_and_scrubbing_back_replays_it():
    obj, scene = _scene()
    session = None
    for frame in range(2, 6):
        session = _step(frame)
        assert session.frames == frame - 1  # one frame simulated per frame played
        bpy.context.view_layer.update()
        np.testing.assert_array_equal(evaluated_local(obj), _solver_local(session.job,
                                                                           frame - 1))
    job = session.job
    assert _live(obj) == ["Cloth Solver Live"] and obj.data.shape_keys is None
    assert not obj.cloth_solver.is_baked
    # back to frame 3: shown from memory, nothing more simulated
    assert _step(3) is session and session.frames == 4 and job.runner.allowed == 4
    bpy.context.view_layer.update()
    np.testing.assert_array_equal(evaluated_local(obj), _solver_local(job, 2))
    # a jump forward while not playing simulates nothing (as Blender's cloth)
    assert _step(12).frames == 4
    # Bake Cloth keeps what was played and simulates the rest
    played = list(job.groups[0].frames)
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    assert _play().session() is None and len(job.groups[0].frames) == 20
    assert all(a is b for a, b in zip(played, job.groups[0].frames))
    assert obj.cloth_solver.is_baked and _live(obj) == []
    assert [kb.name for kb in obj.data.shape_keys.key_blocks][1:] == [
        f"cloth_{f:04d}" for f in range(1, 21)]
    scene.frame_set(4)
    np.testing.assert_allclose(evaluated_local(obj), _solver_local(job, 3), atol=2e-6)
    # an up-to-date bake plays as it is
    scene.frame_set(1)
    assert _step(2) is None


def test_a_change_a_bake_would_call_outdated_throws_the_frames_away():
    obj, scene = _scene()
    _step(2)
    session = _step(3)
    assert session.frames == 2
    # the live view's own updates are no change
    bpy.context.view_layer.update()
    assert _play().session() is session
    obj.location.x += 0.1  # the cloth moved
    bpy.context.view_layer.update()
    assert _play().session() is None and _live(obj) == []
    assert session.job.runner.join(timeout=30.0)
    # played again from the start, then a setting changes
    scene.frame_set(1)
    _step(2)
    assert _play().session().frames == 1
    obj.cloth_solver.solver = "MASS_SPRING"
    assert _play().session() is None and _live(obj) == []
    # and Free Bake throws them away too
    scene.frame_set(1)
    _step(2)
    assert bpy.ops.cloth_solver.free_bake() == {"FINISHED"}
    assert _play().session() is None and _live(obj) == [] and obj.data.shape_keys is None


def test_off_nothing_simulates_and_a_failed_start_says_why():
    obj, scene = _scene()
    scene.cloth_solver.simulate_on_play = False
    assert _step(2) is None and _live(obj) == []
    scene.cloth_solver.simulate_on_play = True
    obj.cloth_solver.pin_group = "missing"
    scene.frame_set(1)
    assert _step(2) is None
    text = _play().status_text(scene)
    assert text.startswith("Simulate on Play: ") and "missing" in text, text
    obj.cloth_solver.pin_group = "pins"  # a change: it tries again
    scene.frame_set(1)
    assert _step(2).frames == 1
    _play().discard()
