"""Drives Blender with a real window (run under Xvfb by test_ui_session.py and
bench/live_bake.py): a bake watched as it simulates, Esc and Stop while it runs, and how long
Blender's main thread is ever blocked meanwhile.

Usage: ``blender --factory-startup --enable-event-simulate --addons cloth_solver --python
live_ui_session.py -- OUT.json [N FRAMES REPEATS SHOTS_DIR]``: a sheet of N x N vertices
(2 m, the default material) falls onto a sphere collider over frames 1-FRAMES. The steps run
from a timer; a second timer every 10 ms records how late it runs (the longest main-thread
block: Blender drawing, the add-on's Python, the GIL), and every add-on callback on the main
thread is timed (class Ours). With CLOTH_SOLVER_XDOTOOL=1 (and without
--enable-event-simulate) keys are pressed through the X server with xdotool, as a user
presses them. Writes OUT.json:

- ``idle before worst_block_s`` (CLOTH_SOLVER_BASELINE=1): Blender doing nothing for 5 s in
  this window, before any bake;
- ``esc first`` (CLOTH_SOLVER_ESC_FIRST=1): Esc pressed 3 s into the session's first bake
  (compiling on a cold cache): seconds from the key press to the bake operator's modal reading
  it, to the bake ended in the UI and to the worker idle (see esc_timing);
- ``live``: during the first bake, the evaluated mesh at the frame shown against the solver's
  positions of that frame (the largest difference), and the frames simulated then;
- ``esc``: Esc pressed mid-bake: frames simulated, the times as above, and whether the cloth had
  keys afterwards;
- ``stop``: the panel's Stop mid-bake: the keys and status written;
- ``play``: Simulate on Play, the timeline played until six frames are simulated: the frames
  simulated and allowed, the frames allowed after scrubbing back to frame 3 and the evaluated mesh
  there against the solver's frame, and Bake Cloth then keeping the frames played;
- ``timing``: REPEATS times the same bake clicked (modal, live view), clicked without the live
  view and from a script (no UI while it runs), interleaved: wall seconds of each, and the
  longest main-thread block during each clicked bake;
- ``ours``: per add-on callback (and per garbage-collection generation) the calls, total and
  longest seconds; ``blocks``: the longest blocks over 0.1 s with the add-on's share of each;
  ``load``: the machine's 1-minute load average as the session started and ended.

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

sys.path[:0] = [str(Path(__file__).resolve().parents[2] / "scripts"), str(Path(__file__).parent)]
from scenes import evaluated_local  # noqa: E402
from timer_steps import run_steps  # noqa: E402
from window_areas import properties_area, window_context  # noqa: E402

ARGS = sys.argv[sys.argv.index("--") + 1:]
OUT = Path(ARGS[0])
N = int(ARGS[1]) if len(ARGS) > 1 else 16
FRAMES = int(ARGS[2]) if len(ARGS) > 2 else 24
REPEATS = int(ARGS[3]) if len(ARGS) > 3 else 1
SHOTS = Path(ARGS[4]) if len(ARGS) > 4 and ARGS[4] else None
RESULT: dict = {"n": N, "frames": FRAMES, "blender": bpy.app.version_string}
OURS = None  # Ours(), once the add-on is loaded
PROBE = None


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
    NOTED = 0.1  # blocks longer than this are listed with the add-on's share

    def __init__(self):
        import os
        self.blocks: list[tuple[float, float]] = []
        self.last = time.perf_counter()
        self.worst = 0.0
        dump = os.environ.get("CLOTH_SOLVER_BLOCK_DUMP")
        self.dump = open(dump, "w") if dump else None
        bpy.app.timers.register(self.tick, first_interval=self.INTERVAL, persistent=True)

    def tick(self):
        now = time.perf_counter()
        block = now - self.last - self.INTERVAL
        self.worst = max(self.worst, block)
        self.last = now
        if OURS is not None:
            if block > self.NOTED:  # what of it was the add-on's Python
                self.blocks.append((round(block, 3), round(OURS.since, 3)))
            OURS.since = 0.0
        if self.dump is not None:
            import faulthandler
            import os
            faulthandler.cancel_dump_traceback_later()
            faulthandler.dump_traceback_later(float(os.environ.get("CLOTH_SOLVER_BLOCK_DUMP_S", "1.0")), file=self.dump)
        return self.INTERVAL

    def reset(self) -> None:
        self.last, self.worst = time.perf_counter(), 0.0
        if OURS is not None:
            OURS.since = 0.0

    def exclude(self) -> None:
        """After this session's own work on the main thread (comparing meshes, screenshots):
        not counted as a block."""
        self.last = time.perf_counter()
        if OURS is not None:
            OURS.since = 0.0


class Ours:
    """Times every add-on callback on the main thread (the bake operator's modal and invoke,
    its timers, handlers and panel draws), wrapped where Blender looks them up at each call:
    per callback the calls, total and longest [s]; ``since`` what ran since the probe last
    ran (its share of a block). Esc's arrival at the modal is stamped in ``esc_at``."""

    def __init__(self):
        self.stats: dict[str, list] = {}
        self.since = 0.0
        self.esc_at: float | None = None
        import gc  # Python's garbage collections, whoever's Python they interrupt
        self._gc_start = 0.0
        gc.callbacks.append(self._gc)
        ops = _module("cloth_solver.cloth_addon.operators")
        panels = _module("cloth_solver.cloth_addon.panels")
        bake_op = ops.CLOTH_SOLVER_OT_bake
        self._method(bake_op, "modal", lambda args: f"bake.modal {args[2].type}",
                     esc=lambda args: args[2].type == "ESC")
        self._method(bake_op, "invoke", lambda args: "bake.invoke")
        self._method(ops.CLOTH_SOLVER_OT_bake_stop, "execute", lambda args: "bake_stop")
        for cls in vars(panels).values():
            if isinstance(cls, type) and issubclass(cls, bpy.types.Panel):
                for name in ("draw", "draw_header", "draw_header_preset"):
                    if name in vars(cls):
                        self._method(cls, name, lambda args, n=f"{cls.__name__}.{name}": n)
        for module, name in (("play", "tick"), ("warmup", "_poll")):
            m = _module(f"cloth_solver.cloth_addon.{module}")
            setattr(m, name, self._wrap(getattr(m, name), lambda args, n=f"{module}.{name}": n))
        for kind in dir(bpy.app.handlers):
            handlers = getattr(bpy.app.handlers, kind)
            if not isinstance(handlers, list):
                continue
            for i, fn in enumerate(handlers):
                if "cloth_solver" in getattr(fn, "__module__", ""):
                    label = f"{kind}:{fn.__module__.rpartition('.')[2]}.{fn.__name__}"
                    handlers[i] = bpy.app.handlers.persistent(
                        self._wrap(fn, lambda args, n=label: n))

    def _gc(self, phase, info):
        if phase == "start":
            self._gc_start = time.perf_counter()
            return
        d = time.perf_counter() - self._gc_start
        row = self.stats.setdefault(f"gc generation {info['generation']}", [0, 0.0, 0.0])
        row[0] += 1
        row[1] += d
        row[2] = max(row[2], d)

    def _wrap(self, fn, label, esc=None):
        import functools

        def call(*args):
            if esc is not None and self.esc_at is None and esc(args):
                self.esc_at = time.perf_counter()
            t = time.perf_counter()
            try:
                return fn(*args)
            finally:
                d = time.perf_counter() - t
                self.since += d
                row = self.stats.setdefault(label(args), [0, 0.0, 0.0])
                row[0] += 1
                row[1] += d
                row[2] = max(row[2], d)

        # Blender passes a callback as many arguments as its code object names: the wrapper
        # names as many as the function it wraps
        code = fn.__code__
        if code.co_flags & 0x04:  # *args
            def timed(*args):
                return call(*args)
        else:
            params = ", ".join(f"a{i}" for i in range(code.co_argcount))
            scope = {"call": call}
            exec(f"def timed({params}):\n    return call({params})", scope)
            timed = scope["timed"]
        return functools.wraps(fn)(timed)

    def _method(self, cls, name, label, esc=None):
        setattr(cls, name, self._wrap(getattr(cls, name), label, esc))

    def table(self) -> dict:
        return {k: dict(calls=n, total_s=round(t, 4), longest_s=round(m, 4))
                for k, (n, t, m) in sorted(self.stats.items(), key=lambda kv: -kv[1][2])}


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


def press(key: str) -> float:
    """Press and release ``key``; returns when it was pressed (perf_counter). With
    CLOTH_SOLVER_XDOTOOL=1 (Blender started without --enable-event-simulate) as a user does: the
    X server gets the key from xdotool (started, not waited for: the time counts from its
    start) with the pointer over the window, and Blender reads it from its event queue."""
    import os
    t = time.perf_counter()
    if os.environ.get("CLOTH_SOLVER_XDOTOOL") == "1":
        import subprocess
        win = bpy.context.window_manager.windows[0]
        keysym = {"ESC": "Escape"}[key]
        subprocess.Popen(["xdotool", "mousemove", str(win.width // 2), str(win.height // 2),
                          "key", keysym])
        return t
    win = bpy.context.window_manager.windows[0]
    win.event_simulate(type=key, value="PRESS")
    win.event_simulate(type=key, value="RELEASE")
    return t


# a worker compiling when Esc came finishes the kernel it compiles (the next bake loads it);
# the session does not wait for that
WORKER_IDLE_WAIT_S = 10.0


def esc_timing(job):
    """Esc pressed in the middle of ``job``: yields (a step generator) until the bake has
    ended and its worker is idle; returns seconds from the key press to the operator's modal
    reading it (answered), to the bake ended in the add-on (the report set, nothing running)
    and to the worker idle again (it ends after the step in progress)."""
    frames = job.frames_kept
    OURS.esc_at = None
    t = press("ESC")
    yield from until(lambda: not running(), timeout=60, step=0.002)
    ended = time.perf_counter() - t
    runner_ = job.runner
    end = time.monotonic() + WORKER_IDLE_WAIT_S
    while getattr(runner_, "alive", False) and time.monotonic() < end:
        yield 0.01
    idle = not getattr(runner_, "alive", False)
    return dict(frames_simulated=frames,
                answered_s=None if OURS.esc_at is None else OURS.esc_at - t,
                ended_s=ended, worker_idle_s=time.perf_counter() - t if idle else None,
                report=last_report())


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
    press("ESC")  # the splash screen
    yield 0.5
    global OURS, PROBE
    OURS = Ours()
    probe = PROBE = Probe()
    yield 0.2
    to_local = _module("cloth_solver.cloth_addon.mesh_io").to_local
    import os
    RESULT["load"] = [round(os.getloadavg()[0], 2)]  # the machine's, 1-minute average
    RESULT["window_size"] = [bpy.context.window_manager.windows[0].width,
                             bpy.context.window_manager.windows[0].height]
    if os.environ.get("CLOTH_SOLVER_BASELINE") == "1":  # Blender doing nothing, this window
        probe.reset()
        yield 5.0
        RESULT["idle before worst_block_s"] = probe.worst

    # 0. Esc in the session's first bake (kernels compiling on a cold cache, loading on a warm
    # one), 3 s after the click.
    if os.environ.get("CLOTH_SOLVER_ESC_FIRST") == "1":
        probe.reset()
        click_bake(FRAMES // 2)
        job = jobs()[0]
        yield 3.0
        RESULT["esc first"] = yield from esc_timing(job)
        RESULT["esc first"]["worst_block_s"] = probe.worst
        del job
        bpy.ops.cloth_solver.free_bake()
        yield 0.2

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
    RESULT["esc"] = yield from esc_timing(job)
    RESULT["esc"].update(keys=sheet.data.shape_keys is not None,
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
        probe.exclude()  # a script's bake holds the UI by design: not a block of the UI's
        yield 0.3
        timing.append(row)
    RESULT["timing"] = timing


def _write(error):
    import os
    if error:
        RESULT["error"] = error
    RESULT["load"] = [RESULT.get("load", [None])[0], round(os.getloadavg()[0], 2)]
    if OURS is not None:  # what of the main thread's time was the add-on's
        RESULT["ours"] = OURS.table()
        RESULT["blocks"] = sorted(PROBE.blocks, reverse=True)[:40]
    OUT.write_text(json.dumps(RESULT, indent=1))


run_steps(steps(), _write)
