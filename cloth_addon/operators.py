"""Operators: Bake Cloth (modal in the UI: the simulation runs in a worker process and each
frame shows in the viewport as it is simulated; from scripts and ``blender -b`` it simulates on
the calling thread), Stop and Cancel for a running bake, Free Bake, and the preset actions.

Bake Cloth and Free Bake are one undo step each: Blender pushes it when the operator finishes
(for the modal bake, on the timer event that writes the keys; a stopped bake writes the frames
simulated so far and finishes the same way), never for a cancelled or failed bake, which changes
nothing. An undo, redo or file load while the modal bake simulates replaces the objects it read,
so it cancels the bake (handlers below).
"""

from __future__ import annotations

import os
import sys
import time

import bpy
from bpy.props import BoolProperty, StringProperty

from . import bake, blender_physics, live, play, presets, warmup
from .errors import BakeError
from .formats import count, frame_range

# The modal bake's timer: how often it takes the frames the bake's thread simulated (runner.py)
# and the longest it spends doing so per event (writing them to the live view, live.py).
TICK_S = 0.05
UPDATE_BUDGET_S = 0.03
# Shortest time between two frames the view follows: a frame change redraws the 3D view and
# every editor showing the frame, which competes with the simulation for the cores; frames
# simulated faster than this are skipped on screen (scrubbing shows each of them).
FOLLOW_INTERVAL_S = 0.2
# Longest a script's bake waits for another Blender's background compilation.
WARMUP_WAIT_S = 900.0


def _live_view() -> bool:
    """Show each frame as it is simulated (live.py); CLOTH_SOLVER_LIVE_VIEW=0 turns it off
    (bench/live_bake.py measures what it costs)."""
    return os.environ.get("CLOTH_SOLVER_LIVE_VIEW", "1") != "0"


def _background_binary() -> bool:
    """True in ``blender -b`` (not in the bpy Python module, where exceptions are the way)."""
    return bpy.app.background and bool(bpy.app.binary_path)


def _fail(op, message: str):
    """Report a failed bake; in ``blender -b`` also end Blender with status 1, so pipelines
    notice (set CLOTH_SOLVER_NO_EXIT=1 to get the Python exception instead, e.g. in tests)."""
    op.report({"ERROR"}, message)
    if _background_binary() and not os.environ.get("CLOTH_SOLVER_NO_EXIT"):
        print(f"cloth_solver: bake failed: {message}", file=sys.stderr, flush=True)
        sys.exit(1)
    return {"CANCELLED"}


def _report_summary(op, summary) -> None:
    """The summary in the status bar; a warning first if objects were skipped."""
    if summary.skipped:
        op.report({"WARNING"}, f"Not baked: {', '.join(summary.skipped)}")
    for text in summary.warnings:  # e.g. Blender's Cloth modifier switched off
        op.report({"WARNING"}, text[:1].upper() + text[1:])
    op.report({"INFO"}, summary.text())


@bpy.app.handlers.persistent
def _cancel_on_undo(*_args):
    bake.invalidate_running("an undo or redo happened")


@bpy.app.handlers.persistent
def _cancel_on_load(*_args):
    bake.invalidate_running("another file was opened")


@bpy.app.handlers.persistent
def _live_off_for_save(*_args):
    """A file saved while a bake runs gets no live-view modifier (live.py)."""
    for job in bake.shown_jobs():
        job.live.hide()


@bpy.app.handlers.persistent
def _live_on_after_save(*_args):
    for job in bake.shown_jobs():
        job.live.show()


@bpy.app.handlers.persistent
def _no_stray_live_view(*_args):
    """An undo step taken while a bake ran may hold its live-view modifier: never bring it
    back once that bake has ended."""
    if not bake.shown_jobs():
        live.remove_all()


HANDLERS = (("undo_pre", _cancel_on_undo), ("redo_pre", _cancel_on_undo),
            ("load_pre", _cancel_on_load), ("save_pre", _live_off_for_save),
            ("save_post", _live_on_after_save), ("undo_post", _no_stray_live_view),
            ("redo_post", _no_stray_live_view), ("load_post", _no_stray_live_view))


class CLOTH_SOLVER_OT_bake(bpy.types.Operator):
    """Simulate every cloth object of the scene over the bake frame range and write one shape
    key per frame; the cloth moves in the viewport as each frame is simulated"""

    bl_idname = "cloth_solver.bake"
    bl_label = "Bake Cloth"
    bl_options = {"REGISTER", "UNDO"}

    _job = None
    _timer = None
    _compiling = False
    _frame_before = None
    _shown = None  # the frame the bake last showed (None: it does not follow the bake)
    _shown_at = 0.0
    _progress = -1
    _status_text = None

    @classmethod
    def poll(cls, context):
        return context.scene is not None

    def _start(self, context, log=None):
        try:
            return bake.BakeJob(context, log=log)
        except BakeError as err:
            self._error = str(err)
            return None

    def execute(self, context):
        log = (lambda text: print(text, flush=True)) if bpy.app.background else None
        if warmup.running():  # compiling kernels in the background: see warmup.py
            if log:
                log("cloth_solver: stopping the background compilation of the solver kernels")
            warmup.make_way(timeout=WARMUP_WAIT_S)
        job = play.take(context.scene) or self._start(context, log)  # frames played are kept
        if job is None:
            return _fail(self, self._error)
        if log:
            log(f"cloth_solver: baking {job.frames} frames "
                f"({frame_range(job.frame_start, job.frame_end)}, "
                f"{count(len(job.groups), 'simulation')})")
        try:
            summary = job.run()
        except BakeError as err:
            return _fail(self, str(err))
        if log:
            log(f"cloth_solver: {summary.text()}")
        _report_summary(self, summary)
        return {"FINISHED"}

    def invoke(self, context, event):
        if bake.active_jobs():  # the panel shows Stop and Cancel instead; a shortcut may not
            self.report({"WARNING"}, "A cloth bake is running: Stop or Cancel it first (Bake "
                                     "panel, or Esc)")
            return {"CANCELLED"}
        if bpy.app.background or context.window is None:
            return self.execute(context)
        # The simulation runs on a background thread (runner.py), compiling kernels the first
        # time; this operator takes its frames on timer events. Another Blender's warm-up is
        # waited for (this session's stops: see warmup.py).
        warmup.stop()
        self._compiling = not warmup.kernels_ready()
        self._frame_before = context.scene.frame_current
        self._shown = self._frame_before
        wm = context.window_manager
        self._job = play.take(context.scene)  # Simulate on Play's frames are kept
        if self._job is not None:
            self._compiling = False
        elif not warmup.running() and not self._begin(context):
            return _fail(self, self._error)
        wm.progress_begin(0, 1)
        self._timer = wm.event_timer_add(TICK_S, window=context.window)
        wm.modal_handler_add(self)
        warmup.set_bake_compiling(self._compiling)
        self._status(context)
        return {"RUNNING_MODAL"}

    def _begin(self, context) -> bool:
        self._job = self._start(context)
        if self._job is None:
            return False
        self._job.start(live=_live_view(), ui=True)
        return True

    def modal(self, context, event):
        if event.type == "ESC":
            return self._cancel(context)
        if event.type != "TIMER":
            return {"PASS_THROUGH"}
        job = self._job
        if job is None:  # waiting for another Blender's warm-up
            if warmup.running():
                return {"RUNNING_MODAL"}
            if not self._begin(context):
                self._end(context)
                self.report({"ERROR"}, self._error)
                return {"CANCELLED"}
            return {"RUNNING_MODAL"}
        if job.cancel_requested:
            return self._cancel(context)
        if job.stop_requested and not job.stopped:
            job.stop()
        try:
            more = job.update(budget_s=UPDATE_BUDGET_S)
            if job.frames_done:
                warmup.mark_loaded()
                warmup.set_bake_compiling(False)
            self._follow(context, job)
            if job.frames_kept != self._progress:
                context.window_manager.progress_update(job.frames_kept / max(job.frames, 1))
                self._progress = job.frames_kept
            self._status(context)
            if more:
                return {"RUNNING_MODAL"}
            summary = job.finish()
        except (BakeError, ReferenceError) as err:  # ReferenceError: an object was deleted
            self._end(context)
            self.report({"WARNING"} if job.stopped else {"ERROR"}, str(err))
            return {"CANCELLED"}
        self._end(context)
        _report_summary(self, summary)
        return {"FINISHED"}

    def _follow(self, context, job) -> None:
        """The current frame follows the bake until the user moves it (then they scrub
        through the frames simulated so far)."""
        scene = context.scene
        if not _live_view():
            return
        if self._shown is None or scene.frame_current != self._shown:
            self._shown = None
            return
        frame = job.scene_frame
        now = time.perf_counter()
        if frame != self._shown and (now - self._shown_at >= FOLLOW_INTERVAL_S
                                     or frame == job.frame_end):
            scene.frame_current = frame
            self._shown, self._shown_at = frame, now

    def _cancel(self, context):
        job = self._job
        where = ""
        had = []
        if job is not None:
            where = (f" at {job.progress_text()}" if job.frames_kept else
                     " before its first frame was simulated")
            had = job.had_previous_bake()
            names = [c.name for g in job.groups for c in g.cloths]
        self._end(context)
        if job is None:
            self.report({"WARNING"}, "Bake cancelled before it started; nothing was written")
        elif not had:
            self.report({"WARNING"}, f"Bake cancelled{where}; nothing was written (there was "
                                     "no previous bake)")
        else:
            kept = ", ".join(f"'{n}'" for n in had)
            none = [f"'{n}'" for n in names if n not in had]
            stay = "stays" if len(none) == 1 else "stay"
            rest = f"; {', '.join(none)} had none and {stay} unbaked" if none else ""
            self.report({"WARNING"}, f"Bake cancelled{where}; nothing was written, the previous "
                                     f"bake of {kept} is unchanged{rest}")
        return {"CANCELLED"}

    def cancel(self, context):
        self._end(context)

    def _status(self, context):
        job = self._job
        if context.workspace is None:
            return
        if job is None or (self._compiling and job.frames_done == 0):
            text = f"{warmup.MESSAGE} · Esc to cancel"
        elif job.stopped:
            text = f"Stopping cloth bake after {job.progress_text()}…"
        else:
            text = (f"Baking cloth: {job.progress_text()} · Esc cancels · Stop (Physics > Cloth "
                    "Solver > Bake) keeps the frames so far")
        if text != self._status_text:  # each change redraws the status bar
            context.workspace.status_text_set(text)
            self._status_text = text

    def _end(self, context):
        wm = context.window_manager
        if self._timer is not None:
            wm.event_timer_remove(self._timer)
            self._timer = None
        wm.progress_end()
        if context.workspace is not None:
            context.workspace.status_text_set(None)
        self._status_text = None
        warmup.set_bake_compiling(False)
        if self._job is not None:
            self._job.cancel()  # a finished job has nothing left to cancel
            self._job = None
        scene = context.scene
        if self._shown is not None and scene is not None and scene.frame_current == self._shown \
                and self._frame_before is not None:
            scene.frame_current = self._frame_before  # the user's frame back
        self._shown = None
        _redraw_properties(context)


def _redraw_properties(context) -> None:
    for window in context.window_manager.windows:
        for area in window.screen.areas:
            if area.type == "PROPERTIES":
                area.tag_redraw()


class CLOTH_SOLVER_OT_bake_stop(bpy.types.Operator):
    """Stop the running cloth bake after the frame in progress and keep the frames simulated so
    far as a bake of that shorter range"""

    bl_idname = "cloth_solver.bake_stop"
    bl_label = "Stop"

    @classmethod
    def poll(cls, context):
        return any(not job.stopped for job in bake.active_jobs())

    def execute(self, context):
        for job in bake.active_jobs():
            job.stop_requested = True
        return {"FINISHED"}


class CLOTH_SOLVER_OT_bake_cancel(bpy.types.Operator):
    """Cancel the running cloth bake (Esc): nothing is written, the previous bake stays"""

    bl_idname = "cloth_solver.bake_cancel"
    bl_label = "Cancel"

    @classmethod
    def poll(cls, context):
        return bool(bake.active_jobs())

    def execute(self, context):
        for job in bake.active_jobs():
            job.cancel_requested = True
        return {"FINISHED"}


class CLOTH_SOLVER_OT_free_bake(bpy.types.Operator):
    """Remove the shape keys, keyframes and settings that Bake Cloth added to the scene's
    objects"""

    bl_idname = "cloth_solver.free_bake"
    bl_label = "Free Bake"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        played = play.session() is not None
        play.discard()  # Simulate on Play's frames go too
        freed = bake.free_all(context.scene)
        if not freed and played:
            self.report({"INFO"}, "Freed the frames played (Simulate on Play)")
            return {"FINISHED"}
        if not freed:
            self.report({"INFO"}, "Nothing to free: no object has a cloth bake")
            return {"CANCELLED"}
        context.scene.frame_set(context.scene.frame_current)
        self.report({"INFO"}, f"Freed the cloth bake of {', '.join(freed)}")
        return {"FINISHED"}


class CLOTH_SOLVER_OT_take_cloth_modifier(bpy.types.Operator):
    """Make the object a cloth with its Blender Cloth modifier's pin group, self-collision,
    sewing, quality steps and cache frame range (blender_physics.TAKEN); the material stays
    ours (Blender's mass and stiffness have no SI meaning)"""

    bl_idname = "cloth_solver.take_cloth_modifier"
    bl_label = "Take Cloth Modifier Settings"
    bl_options = {"REGISTER", "UNDO"}

    all_objects: BoolProperty(name="All Objects",
                              description="Every object of the scene with a Cloth modifier")

    @classmethod
    def poll(cls, context):
        return context.scene is not None

    def execute(self, context):
        objects = ([o for o in context.scene.objects if o.type == "MESH"] if self.all_objects
                   else [context.object] if context.object is not None else [])
        mods = {o: blender_physics.cloth_modifier(o) for o in objects}
        mods = {o: m for o, m in mods.items() if m is not None}
        taken = []
        for obj, mod in mods.items():  # the bake range covers every modifier's cache
            changes = blender_physics.take_cloth_modifier(
                obj, mod, context.scene, frames=blender_physics.cache_range(mods.values()))
            taken.append(f"'{obj.name}' ('{mod.name}'): {', '.join(changes) or 'nothing new'}")
        if not taken:
            self.report({"ERROR"}, "No Blender Cloth modifier to take settings from")
            return {"CANCELLED"}
        self.report({"INFO"}, f"Took from Blender's Cloth modifier: {'; '.join(taken)}. The "
                              "material stays ours (choose a preset)")
        return {"FINISHED"}


class CLOTH_SOLVER_OT_preset_apply(bpy.types.Operator):
    """Set the active object's cloth material from a preset"""

    bl_idname = "cloth_solver.preset_apply"
    bl_label = "Apply Cloth Preset"
    bl_options = {"REGISTER", "UNDO"}

    name: StringProperty(name="Preset", description="Preset identifier (file name stem)")
    user: BoolProperty(name="User Preset", description="One of the user's own presets")

    @classmethod
    def poll(cls, context):
        return context.object is not None and context.object.type == "MESH"

    def execute(self, context):
        try:
            shown = presets.apply(context.object.cloth_solver, self.name, self.user)
        except ValueError as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        self.report({"INFO"}, f"Applied preset {shown}")
        return {"FINISHED"}


class CLOTH_SOLVER_OT_preset_save(bpy.types.Operator):
    """Save the active object's cloth material as a user preset"""

    bl_idname = "cloth_solver.preset_save"
    bl_label = "Save Cloth Preset"

    name: StringProperty(name="Name", default="My Fabric")
    description: StringProperty(name="Description", default="")

    @classmethod
    def poll(cls, context):
        return context.object is not None and context.object.type == "MESH"

    def invoke(self, context, event):
        return context.window_manager.invoke_props_dialog(self)

    def execute(self, context):
        try:
            path = presets.save(context.object.cloth_solver, self.name, self.description)
        except (ValueError, OSError) as err:
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        self.report({"INFO"}, f"Saved preset {self.name} to {path}")
        return {"FINISHED"}


class CLOTH_SOLVER_OT_preset_remove(bpy.types.Operator):
    """Delete one of the user's cloth presets"""

    bl_idname = "cloth_solver.preset_remove"
    bl_label = "Remove Cloth Preset"

    name: StringProperty(name="Preset")

    def execute(self, context):
        presets.remove(self.name)
        self.report({"INFO"}, f"Removed preset {self.name}")
        return {"FINISHED"}


classes = (CLOTH_SOLVER_OT_bake, CLOTH_SOLVER_OT_bake_stop, CLOTH_SOLVER_OT_bake_cancel,
           CLOTH_SOLVER_OT_free_bake, CLOTH_SOLVER_OT_take_cloth_modifier,
           CLOTH_SOLVER_OT_preset_apply, CLOTH_SOLVER_OT_preset_save,
           CLOTH_SOLVER_OT_preset_remove)


def register():
    for cls in classes:
        bpy.utils.register_class(cls)
    for name, fn in HANDLERS:
        getattr(bpy.app.handlers, name).append(fn)


def unregister():
    for job in bake.active_jobs():
        job.cancel()
    for name, fn in HANDLERS:
        handlers = getattr(bpy.app.handlers, name)
        if fn in handlers:
            handlers.remove(fn)
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
