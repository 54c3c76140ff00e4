"""Operators: Bake Cloth (modal with progress and Esc in the UI, synchronous from scripts and
``blender -b``), Free Bake, and the preset actions.

Bake Cloth and Free Bake are one undo step each: Blender pushes it when the operator finishes
(for the modal bake, on the timer event that writes the keys), never for a cancelled or failed
bake, which changes nothing. An undo, redo or file load while the modal bake simulates replaces
the objects it read, so it cancels the bake (handlers below).
"""

from __future__ import annotations

import os
import sys
import time

import bpy
from bpy.props import BoolProperty, StringProperty

from . import bake, blender_physics, presets, warmup
from .errors import BakeError

# Seconds of simulation per modal timer event: long enough to be efficient, short enough that
# the UI stays responsive and Esc is seen promptly.
MODAL_SLICE_S = 0.1
# Longest a script's bake waits for another Blender's background compilation.
WARMUP_WAIT_S = 900.0


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


HANDLERS = (("undo_pre", _cancel_on_undo), ("redo_pre", _cancel_on_undo),
            ("load_pre", _cancel_on_load))


class CLOTH_SOLVER_OT_bake(bpy.types.Operator):
    """Simulate every cloth object of the scene over the bake frame range and write one shape
    key per frame"""

    bl_idname = "cloth_solver.bake"
    bl_label = "Bake Cloth"
    bl_options = {"REGISTER", "UNDO"}

    _job = None
    _timer = None
    _compiling = False

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
        job = self._start(context, log)
        if job is None:
            return _fail(self, self._error)
        if log:
            log(f"cloth_solver: baking {job.total_frames} frames "
                f"({job.frame_start}-{job.frame_end}, {len(job.groups)} simulation(s))")
        try:
            summary = job.run()
        except BakeError as err:
            return _fail(self, str(err))
        if log:
            log(f"cloth_solver: {summary.text()}")
        _report_summary(self, summary)
        return {"FINISHED"}

    def invoke(self, context, event):
        if bpy.app.background or context.window is None:
            return self.execute(context)
        # Kernels not compiled yet (reading the scene compiles some): say so first, and start
        # on a timer event once the message is drawn (after another Blender's warm-up; this
        # session's stops: see warmup.py).
        warmup.stop()
        self._compiling = not warmup.kernels_ready()
        if not self._compiling:
            self._job = self._start(context)
            if self._job is None:
                return _fail(self, self._error)
        wm = context.window_manager
        wm.progress_begin(0, self._job.total_frames if self._job else 1)
        self._timer = wm.event_timer_add(0.01, window=context.window)
        wm.modal_handler_add(self)
        warmup.set_bake_compiling(self._compiling)
        self._status(context)
        return {"RUNNING_MODAL"}

    def modal(self, context, event):
        if event.type == "ESC":
            self._end(context)
            self.report({"WARNING"}, "Bake cancelled; the previous bake is unchanged")
            return {"CANCELLED"}
        if event.type != "TIMER":
            return {"PASS_THROUGH"}
        if self._job is None:  # a first bake, still to read the scene
            if warmup.running():
                return {"RUNNING_MODAL"}
            self._job = self._start(context)
            if self._job is None:
                self._end(context)
                self.report({"ERROR"}, self._error)
                return {"CANCELLED"}
            context.window_manager.progress_begin(0, self._job.total_frames)
            return {"RUNNING_MODAL"}
        job = self._job
        try:
            deadline = time.perf_counter() + MODAL_SLICE_S
            more = True
            while more and time.perf_counter() < deadline:
                more = job.step()
            context.window_manager.progress_update(job.frames_done)
            if job.frames_done:
                warmup.mark_loaded()
                warmup.set_bake_compiling(False)
            self._status(context)
            if more:
                return {"RUNNING_MODAL"}
            summary = job.finish()
        except (BakeError, ReferenceError) as err:  # ReferenceError: an object was deleted
            self._end(context)
            self.report({"ERROR"}, str(err))
            return {"CANCELLED"}
        self._end(context)
        _report_summary(self, summary)
        return {"FINISHED"}

    def cancel(self, context):
        self._end(context)

    def _status(self, context):
        job = self._job
        if context.workspace is None:
            return
        if job is None or (self._compiling and job.frames_done == 0):
            context.workspace.status_text_set(f"{warmup.MESSAGE} (Esc to cancel)")
        else:
            context.workspace.status_text_set(
                f"Baking cloth: frame {job.frames_done}/{job.total_frames} (Esc to cancel)")

    def _end(self, context):
        wm = context.window_manager
        if self._timer is not None:
            wm.event_timer_remove(self._timer)
            self._timer = None
        wm.progress_end()
        if context.workspace is not None:
            context.workspace.status_text_set(None)
        warmup.set_bake_compiling(False)
        self._job = None


class CLOTH_SOLVER_OT_free_bake(bpy.types.Operator):
    """Remove the shape keys, keyframes and settings that Bake Cloth added to the scene's
    objects"""

    bl_idname = "cloth_solver.free_bake"
    bl_label = "Free Bake"
    bl_options = {"REGISTER", "UNDO"}

    def execute(self, context):
        freed = bake.free_all(context.scene)
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


classes = (CLOTH_SOLVER_OT_bake, CLOTH_SOLVER_OT_free_bake, CLOTH_SOLVER_OT_take_cloth_modifier,
           CLOTH_SOLVER_OT_preset_apply, CLOTH_SOLVER_OT_preset_save,
           CLOTH_SOLVER_OT_preset_remove)


def register():
    for cls in classes:
        bpy.utils.register_class(cls)
    for name, fn in HANDLERS:
        getattr(bpy.app.handlers, name).append(fn)


def unregister():
    for name, fn in HANDLERS:
        handlers = getattr(bpy.app.handlers, name)
        if fn in handlers:
            handlers.remove(fn)
    for cls in reversed(classes):
        bpy.utils.unregister_class(cls)
