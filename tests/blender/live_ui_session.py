"""Drives Blender with a real window (run under Xvfb by test_ui_session.py and
bench/live_bake.py): a bake watched as it simulates, Esc and Stop while it runs, and how long
Blender's main thread is ever blocked meanwhile.

Usage: ``blender --factory-startup --enable-event-simulate --addons cloth_solver --python
live_ui_session.py -- OUT.json [N FRAMES REPEATS SHOTS_DIR]``: a sheet of N x N vertices
(2 m, the default material) falls onto a sphere collider over frames 1-FRAMES. The steps run
from a timer; a second timer every 10 ms records how late it runs (the longest main-thread
block: Blender drawing, the add-on's Python, the GIL). Writes OUT.json:

- ``live``: during the first bake, the evaluated mesh at the frame shown against the solver's
  positions of that frame (the largest difference), and the frames simulated then;
- ``esc``: Esc pressed mid-bake: frames simulated, seconds until the bake had ended, what it
  reported, and whether the cloth had keys afterwards;
- ``stop``: the panel's Stop mid-bake: the keys and status written;
- ``play``: Simulate on Play, the timeline played until six frames are simulated: the frames
  simulated and allowed, the frames allowed after scrubbing back to frame 3 and the evaluated mesh
  there against the solver's frame, and Bake Cloth then keeping the frames played;
- ``timing``: REPEATS times the same bake clicked (modal, live view), clicked without the live
  view and from a script (no UI while it runs), interleaved: wall seconds of each, and the
  longest main-thread block during each clicked bake.

SHOTS_DIR (optional): screenshots of the window mid-bake (``bake_in_progress.png``) and of the
Properties editor's Bake panel then (``bake_panel_running.png``).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import bpy
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from timer_steps import run_steps  # noqa: E402
from window_areas import properties_area, window_context  # noqa: E402

ARGS = sys.argv[sys.argv.index("--") + 1:]
OUT = Path(ARGS[0])
N = int(ARGS[1]) if len(ARGS) > 1 else 16
FRAMES = int(ARGS[2]) if len(ARGS) > 2 else 24
REPEATS = int(ARGS[3]) if len(ARGS) > 3 else 1
SHOTS = Path(ARGS[4]) if len(ARGS) > 4 and ARGS[4] else None
RESULT: dict = {"n": N, "frames": FRAMES, "blender": bpy.app.version_string}


def _module(suffix):
    return next(m for name, m in sys.modules.items() if name.endswith(suffix))


def jobs() -> list:
    return list(_module("cloth_solver.cloth_addon.bake")._running)


class Probe:
    """A 10 ms timer: how late each call comes is how long the main thread was busy. With
    CLOTH_SOLVER_BLOCK_DUMP=FILE, every thread's Python stack is written to FILE whenever the
    main thread has not come back for a second (faulthandler's watchdog needs no GIL): what
    blocked it."""

    INTERVAL = 0.01

    def __init__(self):
        import os
        self.last = time.perf_counter()
        self.worst = 0.0
        dump = os.environ.get("CLOTH_SOLVER_BLOCK_DUMP")
        self.dump = open(dump, "w") if dump else None
        bpy.app.timers.register(self.tick, first_interval=self.INTERVAL, persistent=True)

    def tick(self):
        now = time.perf_counter()
        self.worst = max(self.worst, now - self.last - self.INTERVAL)
        self.last = now
        if self.dump is not None:
            import faulthandler
            import os
            faulthandler.cancel_dump_traceback_later()
            faulthandler.dump_traceback_later(float(os.environ.get("CLOTH_SOLVER_BLOCK_DUMP_S", "1.0")), file=self.dump)
        return self.INTERVAL

    def reset(self) -> None:
        self.last, self.worst = time.perf_counter(), 0.0

    def exclude(self) -> None:
        """After this session's own work on the main thread (comparing meshes, screenshots):
        not counted as a block."""
        self.last = time.perf_counter()


def build():
    for o in list(bpy.data.objects):
        bpy.data.objects.remove(o)
    bpy.ops.mesh.primitive_uv_sphere_add(segments=32, ring_count=16, radius=0.5,
                                         location=(0, 0, 0))
    sphere = bpy.context.object
    sphere.name = "Sphere"
    sphere.cloth_solver.role = "COLLIDER"
    bpy.ops.object.shade_smooth()
    bpy.ops.mesh.primitive_grid_add(x_subdivisions=N - 1, y_subdivisions=N - 1, size=2.0,
                                    location=(0, 0, 0.9))
    sheet = bpy.context.object
    sheet.name = "Sheet"
    sheet.cloth_solver.role = "CLOTH"
    sc = bpy.context.scene.cloth_solver
    sc.frame_start, sc.frame_end = 1, FRAMES
    bpy.context.scene.frame_end = FRAMES
    bpy.context.scene.frame_set(1)
    bpy.context.view_layer.objects.active = sheet
    sheet.select_set(True)
    return sheet


def frame_view(view3d) -> None:
    """The 3D view looking at the sheet and sphere from the front, slightly above."""
    space = view3d.spaces[0]
    r3d = space.region_3d
    r3d.view_location = (0.0, 0.0, 0.3)
    r3d.view_distance = 4.2
    from mathutils import Euler
    r3d.view_rotation = Euler((1.2, 0.0, 0.6)).to_quaternion()
    space.overlay.show_floor = True
    space.shading.type = "SOLID"


def evaluated_local(obj) -> np.ndarray:
    ev = obj.evaluated_get(bpy.context.evaluated_depsgraph_get())
    mesh = ev.to_mesh()
    buf = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", buf)
    ev.to_mesh_clear()
    return buf.reshape(-1, 3)


def click_bake(limit=None) -> float:
    """Bake Cloth as a click starts it; returns how long the click itself took [s].
    ``limit``: the bake simulates that many frames until allowed more (given as it starts: the
    worker process could otherwise be past it before a later allow() arrives)."""
    job_class = _module("cloth_solver.cloth_addon.bake").BakeJob
    start = job_class.start
    if limit is not None:
        job_class.start = lambda job, live=False, ui=False, limit_=None: start(job, live, ui, limit)
    t = time.perf_counter()
    try:
        with window_context():
            assert bpy.ops.cloth_solver.bake("INVOKE_DEFAULT") == {"RUNNING_MODAL"}
    finally:
        job_class.start = start
    return time.perf_counter() - t


def press(key: str) -> None:
    win = bpy.context.window_manager.windows[0]
    win.event_simulate(type=key, value="PRESS")
    win.event_simulate(type=key, value="RELEASE")


def until(condition, timeout=1800.0, step=0.01):
    end = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > end:
            raise TimeoutError(f"waited {timeout} s")
        yield step


def running() -> bool:
    return any(job.running for job in jobs())


def last_report() -> str:
    return bpy.context.scene.cloth_solver.last_report


def steps():
    sheet = build()
    props = properties_area()
    view3d = next(a for a in bpy.context.window_manager.windows[0].screen.areas
                  if a.type == "VIEW_3D")
    frame_view(view3d)
    yield 0.5
    props.spaces[0].context = "PHYSICS"
    if SHOTS is not None:
        press("ESC")  # the splash screen
    yield 0.5
    probe = Probe()
    yield 0.2
    to_local = _module("cloth_solver.cloth_addon.mesh_io").to_local

    # 1. The first bake of the session (kernels load, or compile on a cold cache), watched.
    probe.reset()
    t0 = time.perf_counter()
    RESULT["first click s"] = click_bake(FRAMES // 2)  # it waits there until compared
    job = jobs()[0]
    RESULT["runner"] = type(job.runner).__name__  # ProcessRunner: the worker process
    yield from until(lambda: job.frames_kept >= max(3, FRAMES // 3) or not job.running)
    yield 0.3  # the frame shown is drawn
    frame = bpy.context.scene.frame_current
    f = frame - 1
    c = job.groups[0].cloths[0]
    solver_local = to_local(job.groups[0].frames[f], c.matrices[f]).astype(np.float32)
    live = evaluated_local(sheet)
    RESULT["live"] = dict(frame_shown=frame, frames_simulated=job.frames_kept,
                          finished=not job.running and sheet.cloth_solver.is_baked,
                          max_difference=float(np.abs(live - solver_local).max()),
                          modifiers=[m.name for m in sheet.modifiers])
    probe.exclude()
    if SHOTS is not None:
        SHOTS.mkdir(parents=True, exist_ok=True)
        region = next(r for r in props.regions if r.type == "WINDOW")
        with bpy.context.temp_override(window=bpy.context.window_manager.windows[0],
                                       area=props, region=region):
            for _ in range(6):  # down to the Bake sub-panel
                bpy.ops.view2d.scroll_down(page=True)
        yield 0.5
        with window_context():
            bpy.ops.screen.screenshot(filepath=str(SHOTS / "bake_in_progress.png"))
        with window_context(props):
            bpy.ops.screen.screenshot_area(filepath=str(SHOTS / "bake_panel_running.png"))
        probe.exclude()
    job.runner.allow(None)
    yield from until(lambda: not jobs())
    RESULT["first bake"] = dict(wall_s=time.perf_counter() - t0, worst_block_s=probe.worst,
                                report=last_report())

    # 2. Esc in the middle of a bake: answered at once, nothing written, the right message.
    bpy.ops.cloth_solver.free_bake()
    yield 0.2
    click_bake(FRAMES // 2)  # the bake waits there: Esc comes before the end
    job = jobs()[0]
    yield from until(lambda: job.frames_kept >= 2)
    frames = job.frames_kept
    t = time.perf_counter()
    press("ESC")
    yield from until(lambda: not running(), step=0.002)
    RESULT["esc"] = dict(frames_simulated=frames, answered_s=time.perf_counter() - t,
                         keys=sheet.data.shape_keys is not None,
                         modifiers=[m.name for m in sheet.modifiers])
    del job

    # 3. Stop (the Bake panel's button) in the middle of a bake: the frames so far are kept.
    click_bake(FRAMES // 2)  # (as above: Stop comes before the end)
    job = jobs()[0]
    yield from until(lambda: job.frames_kept >= 3, step=0.002)
    with window_context(props):
        bpy.ops.cloth_solver.bake_stop()
    yield from until(lambda: not jobs())
    yield 0.2
    status = _module("cloth_solver.cloth_addon.bake_status").status(sheet, bpy.context.scene)
    RESULT["stop"] = dict(
        keys=len(sheet.data.shape_keys.key_blocks) - 1 if sheet.data.shape_keys else 0,
        bake_frame_end=sheet.cloth_solver.bake_frame_end, status=list(status),
        report=last_report(), modifiers=[m.name for m in sheet.modifiers])
    del job

    # 4. Simulate on Play: the timeline played forward simulates and shows each frame; the
    # frames stay in memory for scrubbing back, and Bake Cloth keeps them.
    bpy.ops.cloth_solver.free_bake()
    scene = bpy.context.scene
    scene.cloth_solver.simulate_on_play = True
    scene.frame_set(1)
    yield 0.3
    play = _module("cloth_solver.cloth_addon.play")
    probe.reset()
    with window_context(view3d):
        bpy.ops.screen.animation_play()
    yield from until(lambda: play.session() is not None and play.session().frames >= 6,
                     timeout=600)
    with window_context(view3d):
        bpy.ops.screen.animation_cancel(restore_frame=False)
    worst = probe.worst
    yield 0.3
    session = play.session()
    frames, allowed = session.frames, session.job.runner.allowed
    scene.frame_set(3)  # back: from memory, nothing more allowed
    yield 0.3
    c = session.job.groups[0].cloths[0]
    solver_local = to_local(session.job.groups[0].frames[2], c.matrices[2]).astype(np.float32)
    RESULT["play"] = dict(frames=frames, allowed=allowed,
                          allowed_after_scrub=session.job.runner.allowed,
                          max_difference=float(np.abs(evaluated_local(sheet)
                                                      - solver_local).max()),
                          modifiers=[m.name for m in sheet.modifiers], worst_block_s=worst)
    job = session.job
    played = list(job.groups[0].frames)
    click_bake()
    yield from until(lambda: not jobs())
    RESULT["play"].update(kept=all(a is b for a, b in zip(played, job.groups[0].frames)),
                          report=last_report(), keys=len(sheet.data.shape_keys.key_blocks) - 1)
    scene.cloth_solver.simulate_on_play = False
    del job, session

    # 5. The same bake clicked with the live view, clicked without it (the frame does not
    # follow either) and run from a script (no UI while it runs), interleaved; with
    # CLOTH_SOLVER_BASELINE=1 first how late the probe runs in Blender doing nothing (the
    # machine's own share of every block measured here).
    import os
    if os.environ.get("CLOTH_SOLVER_BASELINE") == "1":
        probe.reset()
        yield 10.0
        RESULT["idle worst_block_s"] = probe.worst
    timing = []
    for _ in range(REPEATS):
        row = {}
        for view in ("1", "0"):
            os.environ["CLOTH_SOLVER_LIVE_VIEW"] = view
            probe.reset()
            t = time.perf_counter()
            click_bake()
            yield from until(lambda: not jobs(), step=0.05)
            key = "clicked" if view == "1" else "clicked_no_view"
            row[f"{key}_s"], row[f"{key}_worst_block_s"] = time.perf_counter() - t, probe.worst
            row[f"{key}_report"] = last_report()
            yield 0.3
        os.environ.pop("CLOTH_SOLVER_LIVE_VIEW")
        t = time.perf_counter()
        with window_context():
            bpy.ops.cloth_solver.bake()
        row["scripted_s"] = time.perf_counter() - t
        yield 0.3
        timing.append(row)
    RESULT["timing"] = timing


def _write(error):
    if error:
        RESULT["error"] = error
    OUT.write_text(json.dumps(RESULT, indent=1))


run_steps(steps(), _write)
