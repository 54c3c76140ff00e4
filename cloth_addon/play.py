"""Simulate on Play: playing the timeline forward simulates the cloth, as Blender's own cloth does.

With the scene's *Simulate on Play* on and no bake running, a frame change forward inside the
bake range (playback, or stepping one frame) starts a *play session*: a bake job (bake.py) whose
thread may simulate only up to the frame the playhead reached (``Runner.allow``), with its live
view (live.py) showing each frame as it arrives. The session keeps its frames in memory (the
job's, and the live view's file), so playing or scrubbing back shows them again without
simulating. A frame change to the next frame to simulate waits up to ``PLAY_WAIT_S`` for it, so a
cloth quick to simulate plays at the speed it simulates; a slower one fills in behind the
playhead. Nothing of the user's is written.

The session is thrown away when anything a bake reads changes (the rules that make a bake
Outdated: bake_status.watch), the range changes, a file is loaded, an undo is taken, Simulate on
Play is turned off or the bake is freed. *Bake Cloth* takes it over (``take``): the frames played
are kept, and the rest of the range is simulated.

Starting a session reads the scene (every frame of the range), which sets frames: never from a
frame-change handler (the frame changes of a bake's reading are ignored), so it is left to a timer (``tick``), which also takes the frames the
thread simulated while no frame changes. Background Blender runs no timers: scripts and tests
call ``tick`` themselves.
"""

from __future__ import annotations

import traceback

import bpy

from . import bake, bake_status
from .errors import BakeError
from .formats import frame_range

# Longest a frame change waits for the frame it moved to (the frame being simulated): short
# enough that Esc and the UI are answered meanwhile.
PLAY_WAIT_S = 0.3
TICK_S = 0.05


class Session:
    """A play session's job and what it was read from."""

    def __init__(self, job):
        self.job = job
        self.scene = job.scene
        self.fingerprints = {c.name: bake_status.fingerprint(c.obj)
                             for g in job.groups for c in g.cloths}
        self.range = (job.frame_start, job.frame_end)

    @property
    def frames(self) -> int:
        """Frames simulated so far (after the first)."""
        return self.job.frames_kept

    def allow_to(self, frame: int) -> bool:
        """Let the thread simulate up to scene frame ``frame``; True if that is more than
        before."""
        want = min(frame - self.job.frame_start, self.job.frames)
        runner = self.job.runner
        if runner is None or want <= (runner.allowed or 0):
            return False
        runner.allow(want)
        return True

    def update(self, wait_s: float = 0.0) -> None:
        self.job.update(budget_s=0.03, wait_s=wait_s)

    def pending(self) -> bool:
        """Frames allowed that the main thread has not taken yet (the timer goes on)."""
        runner = self.job.runner
        return self.job.running and runner is not None and (
            self.job.frames_kept < (runner.allowed or 0) or any(
                not g.frames for g in self.job.groups))


_session: Session | None = None
_pending_start = False
_last_frame: int | None = None
failed = ""  # why the last session could not start (shown in the panel) until a change


def session() -> Session | None:
    return _session


def discard(reason: str = "") -> None:
    """Throw the session's frames away (its live view goes, nothing was written)."""
    global _session, _pending_start
    _pending_start = False
    s, _session = _session, None
    if s is not None:
        s.job.cancel()
        _redraw()


def take(scene):
    """The session's job for Bake Cloth to go on with (its frames kept, the rest allowed), or
    None where there is none for this scene and its range."""
    global _session
    s = _session
    if s is None:
        return None
    if s.scene != scene or s.range != (scene.cloth_solver.frame_start,
                                       scene.cloth_solver.frame_end) or s.job.invalidated:
        discard()
        return None
    _session = None
    s.job.play = False
    if s.job.runner is not None:
        s.job.runner.allow(None)
    return s.job


def _changed(reason: str, obj=None, moved: bool | None = None) -> None:
    """bake_status's watcher: something a bake reads changed (``obj``: the cloth concerned,
    ``moved`` None for a setting, else whether it was moved or only its geometry updated)."""
    global failed
    failed = ""
    s = _session
    if s is None:
        return
    if obj is not None and moved is False:  # a geometry update: ours (the live view) or not
        name = obj.name
        if name not in s.fingerprints:
            return
        try:
            if bake_status.fingerprint(obj) == s.fingerprints[name]:
                return
        except ReferenceError:
            pass
    discard(reason)


def _playing() -> bool:
    wm = getattr(bpy.context, "window_manager", None)
    return any(w.screen is not None and w.screen.is_animation_playing
               for w in (wm.windows if wm is not None else ()))


@bpy.app.handlers.persistent
def on_frame_change(scene, depsgraph=None):
    """Playing forward allows the session's thread one more frame; the first such frame
    change asks the timer to start a session."""
    global _pending_start, _last_frame
    if bake_status.is_suspended():  # a bake reading the scene sets frames
        return
    try:
        frame, last = scene.frame_current, _last_frame
        _last_frame = frame
        settings = scene.cloth_solver
        if not settings.simulate_on_play or bake.active_jobs():
            return
        forward = _playing() or (last is not None and frame == last + 1)
        if not forward or not settings.frame_start < frame <= settings.frame_end:
            return
        s = _session
        if s is None:
            if not failed:
                _pending_start = True
                _ensure_timer()
            return
        if s.scene != scene:
            return
        if s.range != (settings.frame_start, settings.frame_end):
            discard()
            return
        if s.allow_to(frame):
            if frame - s.job.frame_start == s.frames + 1:  # the frame being simulated
                s.update(wait_s=PLAY_WAIT_S)
            _ensure_timer()
    except BakeError as err:
        discard(str(err))
    except Exception:  # a handler must never break playback
        traceback.print_exc()


def _start(scene) -> None:
    global _session, failed, _pending_start
    if scene is None or not scene.cloth_solver.simulate_on_play or bake.active_jobs():
        return
    if not any(bake_status.status(o, scene)[0] != "BAKED" for o in scene.objects
               if o.type == "MESH" and o.cloth_solver.role in bake_status.BAKED_ROLES):
        return  # every cloth has an up-to-date bake: playback shows it
    from . import warmup
    warmup.stop()  # this session's compilation makes way, as for a bake
    if warmup.running():  # another Blender's: wait for it (two compiling at once is unsafe)
        _pending_start = True
        return
    frame = scene.frame_current
    try:
        job = bake.BakeJob(bpy.context)
    except BakeError as err:
        failed = str(err)
        _redraw()
        return
    job.play = True
    limit = max(0, min(frame - job.frame_start, job.frames))
    job.start(live=True, ui=not bpy.app.background, limit=limit)
    _session = Session(job)
    _redraw()


def tick():
    """Start a session that a frame change asked for, and take the frames its thread has
    simulated; returns the interval until the next call, or None when there is nothing to do
    (a bpy.app.timers callback)."""
    global _pending_start
    try:
        if _pending_start:
            _pending_start = False
            _start(bpy.context.scene)
        s = _session
        if s is None:
            return 0.5 if _pending_start else None
        before = s.frames
        s.update()
        if s.frames != before:
            _redraw()
        return TICK_S if s.pending() else None
    except BakeError as err:
        discard(str(err))
    except Exception:
        traceback.print_exc()
        discard()
    return None


def _ensure_timer() -> None:
    if not bpy.app.timers.is_registered(tick):
        bpy.app.timers.register(tick, first_interval=0.0)


def _redraw() -> None:
    wm = getattr(bpy.context, "window_manager", None)
    for window in (wm.windows if wm is not None else ()):
        for area in window.screen.areas:
            if area.type in ("PROPERTIES", "VIEW_3D"):
                area.tag_redraw()


def setting_changed(settings, context) -> None:
    """Simulate on Play switched: off throws the session away."""
    global failed
    failed = ""
    if not settings.simulate_on_play:
        discard()


def status_text(scene) -> str:
    """The Bake panel's line about the session ('' without one)."""
    s = _session
    if failed and scene.cloth_solver.simulate_on_play:
        return f"Simulate on Play: {failed}"
    if s is None or s.scene != scene:
        return ""
    if not s.frames:
        return "Simulate on Play: starting…"
    played = frame_range(s.job.frame_start, s.job.frame_start + s.frames)
    return f"Played frames {played} in memory; Bake Cloth keeps them"


@bpy.app.handlers.persistent
def _drop(*_args):
    discard()
    global _last_frame
    _last_frame = None


HANDLERS = (("frame_change_post", on_frame_change), ("load_pre", _drop), ("undo_pre", _drop),
            ("redo_pre", _drop))


def register():
    for name, fn in HANDLERS:
        getattr(bpy.app.handlers, name).append(fn)
    bake_status.watch(_changed)


def unregister():
    bake_status.unwatch(_changed)
    for name, fn in HANDLERS:
        handlers = getattr(bpy.app.handlers, name)
        while fn in handlers:
            handlers.remove(fn)
    if bpy.app.timers.is_registered(tick):
        bpy.app.timers.unregister(tick)
    discard()
