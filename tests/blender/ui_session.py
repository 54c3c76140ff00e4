"""Drives Blender with a real window (run under Xvfb by test_ui_session.py): the modal Bake
Cloth as a click starts it, undo/redo, Esc and Ctrl+Z as simulated key presses that go
through Blender's own event handling and keymaps, and quitting while the bake runs.

Usage: ``blender --enable-event-simulate scene.blend --addons cloth_solver --python
ui_session.py -- OUT.json``. ``scene.blend`` holds one cloth object "Cloth" (not baked) with
the bake range 1-12. The steps run from a timer, one after the other; each records the state
of the cloth in OUT.json, and the last one quits Blender while a bake runs (Blender then writes
``quit.blend`` into the temporary directory, set to OUT.json's folder).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import bpy

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from timer_steps import run_steps  # noqa: E402
from window_areas import window_context  # noqa: E402

OUT = Path(sys.argv[sys.argv.index("--") + 1])
RESULT: dict = {"steps": []}


def _running_jobs() -> list:
    bake = next(m for name, m in sys.modules.items()
                if name.endswith("cloth_solver.cloth_addon.bake"))
    return list(bake._running)


def _status(obj) -> str:
    """The bake status the panel shows (bake_status.py), e.g. 'Not baked', 'Outdated: ...'."""
    module = next(m for name, m in sys.modules.items()
                  if name.endswith("cloth_solver.cloth_addon.bake_status"))
    return module.status(obj, bpy.context.scene)[1]


def state() -> dict:
    """What the bake writes, in JSON-able form (key names, a checksum of their coordinates),
    and the bake status."""
    obj = bpy.data.objects["Cloth"]
    s = obj.cloth_solver
    key = obj.data.shape_keys
    names = [kb.name for kb in key.key_blocks] if key else []
    total = sum(sum(c for d in kb.data for c in d.co) for kb in key.key_blocks) if key else 0.0
    return dict(keys=names, key_sum=total, baked=s.is_baked, model=s.bake_model,
                solver=s.solver, frame_end=bpy.context.scene.cloth_solver.frame_end,
                modifier=obj.modifiers["Lift"].show_viewport, jobs=len(_running_jobs()),
                status=_status(obj))


def record(name: str) -> None:
    RESULT["steps"].append([name, state()])
    OUT.write_text(json.dumps(RESULT, indent=1))


def click_bake() -> None:
    with window_context():
        assert bpy.ops.cloth_solver.bake("INVOKE_DEFAULT") == {"RUNNING_MODAL"}


def press(key: str, **modifiers) -> None:
    win = bpy.context.window_manager.windows[0]
    win.event_simulate(type=key, value="PRESS", **modifiers)
    win.event_simulate(type=key, value="RELEASE", **modifiers)


def until(condition, timeout=300.0):
    """Yield timer delays until ``condition()`` holds."""
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise TimeoutError(f"waited {timeout} s for {condition.__doc__}")
        yield 0.05


def baked():
    """the bake to finish"""
    return bpy.data.objects["Cloth"].cloth_solver.is_baked and not _running_jobs()


def under_way():
    """a bake to simulate a few frames"""
    return any(job.frames_done >= 3 for job in _running_jobs())


def stopped():
    """the bake to stop"""
    return not _running_jobs()


def steps():
    record("start")
    click_bake()  # the modal bake: timer events step it, the last one writes the keys
    yield from until(baked)
    yield 0.2  # Blender pushes the operator's undo step after its last modal call
    yield 0.3  # redraws: the depsgraph updates of the written keys reach the status handler
    record("baked")
    with window_context():
        bpy.ops.ed.undo()
    record("undo")
    with window_context():
        bpy.ops.ed.redo()
    record("redo")

    # A long bake with other settings, to be interrupted; one undo step holds the settings.
    bpy.data.objects["Cloth"].cloth_solver.solver = "MASS_SPRING"
    bpy.context.scene.cloth_solver.frame_end = 2000
    bpy.ops.ed.undo_push(message="long bake settings")
    click_bake()
    yield from until(under_way)
    press("ESC")
    yield from until(stopped)
    record("esc")
    with window_context():  # lands on the first bake if the cancelled one pushed no step
        bpy.ops.ed.undo()
    record("undo after esc")
    with window_context():
        bpy.ops.ed.redo()

    click_bake()
    yield from until(under_way)
    job = _running_jobs()[0]
    press("Z", ctrl=True)  # Ctrl+Z through the window's keymap while the bake runs
    yield from until(lambda: job.invalidated)
    RESULT["ctrl+z job"] = dict(invalidated=job.invalidated, frames_done=job.frames_done,
                                total_frames=job.total_frames)
    del job  # (the running-jobs set holds it while anything does)
    yield from until(stopped)
    record("ctrl+z")
    with window_context():  # a step pushed after the undo would have dropped the redo
        bpy.ops.ed.redo()
    record("redo after ctrl+z")

    bpy.context.preferences.filepaths.temporary_directory = str(OUT.parent)
    click_bake()
    yield from until(under_way)
    record("quit")
    bpy.ops.wm.quit_blender()  # writes quit.blend (session recovery) into OUT's folder
    yield 10.0


def _report_error(error):
    if error:  # the steps record their own results; a failure is reported to the test
        RESULT["error"] = error
        OUT.write_text(json.dumps(RESULT, indent=1))


run_steps(steps(), _report_error)
