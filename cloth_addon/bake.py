"""Bake Cloth as a pipeline without UI: read the scene, simulate, write shape keys.

``BakeJob(context)`` validates everything and reads the scene (every frame of the range: pin
targets and collider shapes from the evaluated meshes, in world space), touching no data
that it does not restore. ``start()`` has a runner simulate it (runner.py: in a worker process
beside the UI, on this thread for ``run()``), and ``update()`` takes each frame as it is
simulated (the modal operator calls it between UI events; a cancelled job simply is dropped).
``finish()`` converts the results to
each object's local space, checks that every object can still take its keys, and only then
replaces the previous bake, in one go: nothing is written before the last frame is simulated,
so a cancel, a failure or Blender quitting mid-bake leaves the previous bake as it was.

Only objects that the view layer's depsgraph evaluates take part: an object excluded from the
view layer or disabled in viewports has no evaluated mesh (no modifiers, no animation), so it
is skipped and named in the summary. A hidden object (the eye icon) is evaluated and bakes.

Blender's own physics take part as docs/user-guide.md ("Blender's own physics") says
(blender_physics.py):
objects with a Collision modifier are colliders, Wind and Turbulence fields add to the wind,
Blender's Cloth modifier is left out while the scene is read. Lengths are converted by the
scene's unit scale (units.py): the solver works in metres, the keys are written in Blender units.
"""

from __future__ import annotations

import functools
import json
import sys
import time
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import bpy
import numpy as np

from ..solver import (ClothSetup, Collider, MeshError, ParameterError, Simulation,
                      SimulationSpec, SolverSettings, Wind, set_thread_ceiling, sew_lines)
from . import (bake_status, blender_physics, disk_cache, modifier_stack, runner, shape_keys, units,
               warmup, worker, yarn_bake)
from .convert import (collider_from_props, material_from_props, solver_settings_from_props,
                      threads_ceiling, wind_from_props)
from .errors import BakeError
from .formats import count, duration, frame_range, millimetres, per_frame, strain
from .live import LiveView
from .mesh_io import EvaluatedMesh, to_local, vertex_group_weights


@dataclass
class ClothInput:
    """One cloth object as read from the scene (world space [m]).

    Attributes:
        obj: the Blender object.
        setup: its ClothSetup (mesh at the first frame, material, pins with per-frame targets).
        settings: its solver settings.
        matrices: its world matrix at every frame, (frames + 1, 4, 4).
        key_offsets: displacement its own shape keys add at every frame, (frames + 1, V, 3)
            [object-local m], or None when they add none.
        name: the object's name when the scene was read (for messages once it is gone).
    """

    obj: object
    setup: ClothSetup
    settings: SolverSettings
    matrices: np.ndarray
    key_offsets: np.ndarray | None
    name: str = ""

    @property
    def vertex_count(self) -> int:
        return len(self.setup.mesh.positions)


@dataclass
class Group:
    """Cloth objects simulated together (same solver settings) and their simulation: built by
    ``factory`` on the runner's thread (runner.py), its frames handed back into ``frames``."""

    cloths: list[ClothInput]
    factory: Callable[[], Any]
    spec: SimulationSpec | None = None  # what a cloth group simulates (None for a yarn)
    simulation: Any = None  # the stepper, once built (on this process's thread only)
    model_name: str = ""  # once built
    piece_offsets: Any = None  # each cloth's first vertex in the positions (None: one)
    frames: list = field(default_factory=list)  # positions (P, 3) world [m]; [0] = first frame
    # frame index -> (its world positions, BakeJob._local of them): converted as each frame is
    # shown, so writing the keys at the end does not convert every frame again
    local: dict = field(default_factory=dict)
    wall_time_s: float = 0.0
    max_strain: float = 0.0
    deepest_penetration_m: float = 0.0
    # most intersecting triangle pairs in one frame: cloth/collider, and cloth/cloth where
    # self-collision is on (off, the cloth may pass through itself: that is no error)
    intersections: int = 0
    self_collision: bool = True
    retried: dict = field(default_factory=dict)  # scene frame -> tries that blew up
    untangled: int = 0  # vertices moved out of colliders they started inside
    tangled_pairs: int = 0  # intersecting cloth triangle pairs the cloth started with
    tangled_frames: int = 0  # frames that began with the cloth intersecting itself
    threads: list = field(default_factory=list)  # numba threads each frame had (its report's)


@dataclass
class BakeSummary:
    objects: list[str]
    frame_start: int
    frame_end: int
    wall_time_s: float
    max_strain: float
    deepest_penetration_m: float
    intersections: int
    models: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "cloth 'Name' (why)" per skipped object
    warnings: list[str] = field(default_factory=list)  # what the user should know (Cloth modifier)
    notes: list[str] = field(default_factory=list)  # inputs taken from Blender's physics
    retried: dict = field(default_factory=dict)  # scene frame -> tries that blew up
    untangled: int = 0  # vertices moved out of colliders they started inside
    tangled_pairs: int = 0  # intersecting cloth triangle pairs the cloth started with
    tangled_frames: int = 0  # frames that began with the cloth intersecting itself
    threads: list = field(default_factory=list)  # numba threads each frame had (its report's)
    stopped_of: int | None = None  # a stopped bake: the end frame of the range it was asked for

    @property
    def frames_simulated(self) -> int:
        return self.frame_end - self.frame_start  # the first frame is the initial state

    @property
    def warning_count(self) -> int:
        """What the artist should look at in the full report: skipped objects, warnings,
        retries after a blow-up, a start inside a collider or intersecting itself."""
        return (len(self.skipped) + len(self.warnings) + bool(self.retried)
                + bool(self.untangled) + bool(self.tangled_pairs))

    def details(self) -> list[str]:
        """The summary as items: what was baked, the result's checks, then each thing to know
        (retries, moved vertices, skipped objects, notes, warnings)."""
        stopped = (f" (stopped: the range was {frame_range(self.frame_start, self.stopped_of)})"
                   if self.stopped_of is not None else "")
        out = [f"Baked {count(len(self.objects), 'cloth object')} ({', '.join(self.objects)}), "
               f"frames {frame_range(self.frame_start, self.frame_end)}{stopped} with "
               f"{'/'.join(self.models)} in {duration(self.wall_time_s)} "
               f"({per_frame(self.wall_time_s, self.frames_simulated)})",
               f"max strain {strain(self.max_strain)}, deepest penetration "
               f"{millimetres(self.deepest_penetration_m)}, "
               f"{count(self.intersections, 'intersecting triangle pair')} at most"]
        if self.retried:
            frames = sorted(self.retried)
            shown = ", ".join(str(f) for f in frames[:5]) + (", …" if len(frames) > 5 else "")
            out.append(f"{count(sum(self.retried.values()), 'retry', 'retries')} with finer "
                       f"steps after a blow-up (frames {shown})")
        if self.untangled:
            out.append(f"{count(self.untangled, 'vertex', 'vertices')} started inside a collider "
                       "and were moved out")
        if self.tangled_pairs:
            out.append(f"the cloth started intersecting itself "
                       f"({count(self.tangled_pairs, 'triangle pair')}) and was separated over "
                       f"{count(self.tangled_frames, 'frame')}")
        if self.skipped:
            out.append(f"skipped {', '.join(self.skipped)}")
        return out + self.notes + self.warnings

    def text(self) -> str:
        """The whole summary in one line (the operator's report, the console, last_report)."""
        return "; ".join(self.details())

    def record(self) -> dict:
        """What the panel keeps of the last bake (scene.cloth_solver.last_bake, as JSON)."""
        return {"objects": [str(name) for name in self.objects],
                "frame_start": int(self.frame_start), "frame_end": int(self.frame_end),
                "stopped_of": None if self.stopped_of is None else int(self.stopped_of),
                "wall_time_s": float(self.wall_time_s), "max_strain": float(self.max_strain),
                "deepest_penetration_m": float(self.deepest_penetration_m),
                "intersections": int(self.intersections), "warnings": self.warning_count,
                "details": self.details()}


@dataclass
class _Reading:
    """What reading the scene's frames collects, per object name (world space [m])."""

    pins: dict
    positions0: dict = field(default_factory=dict)  # cloth PolyMesh at the first frame
    uv: dict = field(default_factory=dict)  # its active UV map per polygon corner, or None
    seams: dict = field(default_factory=dict)  # its loose edges (L, 2) when Sewing is on
    pin_targets: dict = field(default_factory=dict)  # (frames + 1, P, 3)
    matrices: dict = field(default_factory=dict)  # (frames + 1, 4, 4), metres per unit folded in
    offsets: dict = field(default_factory=dict)  # user shape-key offsets (frames + 1, V, 3)
    collider_first: dict = field(default_factory=dict)  # collider PolyMesh at the first frame
    collider_positions: dict = field(default_factory=dict)  # (frames + 1, V, 3)
    field_winds: dict = field(default_factory=dict)  # a FieldWind per frame


def cloth_objects(scene) -> list:
    return [o for o in scene.objects if o.type == "MESH" and o.cloth_solver.role == "CLOTH"]


def collider_objects(scene) -> list:
    """Objects with the role Collider, and those that Blender's Collision modifier makes one."""
    return [o for o in scene.objects if o.type == "MESH" and (
        o.cloth_solver.role == "COLLIDER" or blender_physics.uses_collision_modifier(o, scene))]


def frame_rate(scene) -> float:
    return scene.render.fps / scene.render.fps_base


def not_evaluated_reason(obj, view_layer, depsgraph) -> str | None:
    """Why the view layer's depsgraph does not evaluate ``obj`` (None if it does). Such an
    object's ``evaluated_get`` is the original: no modifiers, no animation, stale matrix."""
    if obj.evaluated_get(depsgraph).is_evaluated:
        return None
    if obj.name not in view_layer.objects:
        return f"excluded from the view layer '{view_layer.name}'"
    return "disabled in viewports (its own or its collection's monitor icon)"


# Jobs in progress: an undo, redo or file load while a modal bake runs replaces the objects the
# job holds, so the job must not write into them (see ``invalidate_running``).
_running: weakref.WeakSet = weakref.WeakSet()


def active_jobs(play: bool = False) -> list:
    """Bakes whose simulation is running (started and not ended); ``play``: also Simulate on
    Play's (play.py), which run beside the UI without being a bake."""
    return [job for job in list(_running) if job.running and (play or not job.play)]


def shown_jobs() -> list:
    """Jobs whose frames the live view shows (a bake's, or Simulate on Play's, ended or not)."""
    return [job for job in list(_running) if job.live is not None]


def invalidate_running(reason: str) -> None:
    """Make every unfinished job refuse to go on (``step``/``finish`` raise BakeError)."""
    for job in list(_running):
        job.invalidated = reason


class BakeJob:
    """One bake of every cloth object of the scene (see module docstring)."""

    def __init__(self, context, log=None):
        self.scene = context.scene
        self.log = log
        self.invalidated: str | None = None
        s = self.scene.cloth_solver
        set_thread_ceiling(threads_ceiling(s))  # Bake > Performance, from reading the scene on
        self.frame_start, self.frame_end = s.frame_start, s.frame_end
        if self.frame_end <= self.frame_start:
            raise BakeError(f"the bake frame range {frame_range(self.frame_start, self.frame_end)} "
                            "is empty; set End after Start")
        self.skipped: list[str] = []
        self.warnings: list[str] = []
        self.notes: list[str] = []
        self.metres = units.metres_per_unit(self.scene)
        depsgraph = context.evaluated_depsgraph_get()
        cloths = self._evaluated(cloth_objects(self.scene), context.view_layer, depsgraph)
        yarns = self._evaluated(yarn_bake.yarn_objects(self.scene), context.view_layer,
                                depsgraph)
        if not cloths and not yarns:
            if self.skipped:
                raise BakeError(f"no cloth object to bake in view layer "
                                f"'{context.view_layer.name}': {', '.join(self.skipped)}")
            raise BakeError("no cloth objects: set an object's Cloth Solver role to Cloth")
        for obj in cloths + yarns:
            if obj.mode == "EDIT" or obj.data.is_editmode:
                raise BakeError(f"'{obj.name}' is in Edit Mode; leave it before baking")
            shape_keys.check_local(obj)
            shape_keys.check_mesh_owner(obj)
            shape_keys.check_key_names(obj, self.frame_start, self.frame_end)
        self.cache_folder = disk_cache.folder(self.scene) if disk_cache.enabled(self.scene) \
            else None
        if self.cache_folder is not None:
            for obj in cloths:
                disk_cache.check_file(obj)
        self.settings = {obj.name: self._solver_settings(obj) for obj in cloths}
        self.materials = {obj.name: self._material(obj) for obj in cloths}
        colliders = self._evaluated(collider_objects(self.scene), context.view_layer, depsgraph)
        from_modifier = [o.name for o in colliders if o.cloth_solver.role == "NONE"]
        if from_modifier:
            self.notes.append("colliders from Blender's Collision modifier: "
                              + ", ".join(f"'{n}'" for n in from_modifier))
        fields = []
        if self.scene.cloth_solver.use_force_fields:
            fields = [o for o in blender_physics.field_objects(self.scene)
                      if not_evaluated_reason(o, context.view_layer, depsgraph) is None]
        note = units.gravity_note(self.scene)
        if note:
            self.warnings.append(note)
        with bake_status.suspended():
            # yarns collide with the same colliders, read at every frame (force fields act on
            # cloth only)
            inputs, colliders_read, field_winds = self._read_scene(
                context, cloths, colliders, fields if cloths else []) \
                if cloths or (yarns and colliders) else ([], (), {})
            yarn_groups = self._read_yarns(context, yarns, colliders_read)
        self.wind, self.wind_frames = self._wind(field_winds)
        self.groups = self._build(inputs, colliders_read) + yarn_groups
        self.total_frames = len(self.groups) * self.frames
        self.frames_done = 0  # frames simulated, over all groups
        self.runner: runner.Runner | runner.InlineRunner | None = None
        self.live: LiveView | None = None
        self.ended = False  # the runner's thread has ended (done, stopped or failed)
        self.stopped = False  # Stop: write the frames simulated so far
        self.stop_requested = self.cancel_requested = False  # the panel's Stop and Cancel
        self.caches: dict[str, disk_cache.CacheWriter] = {}  # Bake To: Disk Cache, per cloth
        self.started = 0.0
        self.play = False  # Simulate on Play's frames (play.py), not (yet) a bake
        _running.add(self)
        if self.log is not None:
            for text in self.skipped:
                self.log(f"cloth_solver: warning: skipped {text}")
            for text in self.warnings:
                self.log(f"cloth_solver: warning: {text}")

    @property
    def frames(self) -> int:
        return self.frame_end - self.frame_start

    # ---- validation ----

    def _evaluated(self, objects, view_layer, depsgraph) -> list:
        """The objects the depsgraph evaluates; the others are recorded in ``skipped``."""
        kept = []
        for obj in objects:
            why = not_evaluated_reason(obj, view_layer, depsgraph)
            if why is None:
                kept.append(obj)
            else:
                role = {"CLOTH": "cloth", "YARN": "yarn"}.get(obj.cloth_solver.role, "collider")
                self.skipped.append(f"{role} '{obj.name}' ({why})")
        return kept

    def _check_valid(self) -> None:
        if self.invalidated:
            raise BakeError(f"Bake cancelled: {self.invalidated} while baking; nothing was "
                            "written. Bake again")

    def __del__(self):
        if getattr(self, "runner", None) is not None:
            self.runner.stop()

    @staticmethod
    def _solver_settings(obj) -> SolverSettings:
        try:
            return solver_settings_from_props(obj.cloth_solver, name=f"'{obj.name}'")
        except ParameterError as err:
            raise BakeError(str(err)) from None

    @staticmethod
    def _material(obj):
        try:
            return material_from_props(obj.cloth_solver, name=f"'{obj.name}'")
        except ParameterError as err:
            raise BakeError(str(err)) from None

    # ---- reading the scene ----

    def _read_scene(self, context, cloths, colliders, fields):
        """Evaluate every frame once; returns per-cloth ClothInputs, the Colliders and what each
        force field adds to the wind at every frame."""
        scene = self.scene
        frame_before = scene.frame_current
        r = _Reading(pins={o.name: self._pins(o) for o in cloths})
        pins, positions0, pin_targets, matrices, offsets = (
            r.pins, r.positions0, r.pin_targets, r.matrices, r.offsets)
        collider_first, collider_positions = r.collider_first, r.collider_positions
        # Blender's Cloth modifier is switched off inside the previous bake's hiding (which
        # switches the modifiers that bake muted back on), so it is off while frames are read.
        with shape_keys.previous_bake_hidden(cloths):
            for obj in cloths:
                warning = blender_physics.cloth_modifier_warning(obj, self.scene)
                if warning:
                    self.warnings.append(warning)
                note = modifier_stack.note(obj)
                if note:
                    self.notes.append(note)
            # the cloth is read above its first refining modifier (modifier_stack.py)
            with blender_physics.cloth_modifiers_off(cloths), \
                    modifier_stack.on_top_off(cloths) as stacks:
                try:
                    self._read_frames(context, cloths, colliders, fields, r, stacks)
                finally:
                    scene.frame_set(frame_before)
        inputs = []
        for obj in cloths:
            idx, weights = pins[obj.name]
            # the grain: U of the UV map, else the object's own X axis
            setup = ClothSetup(positions0[obj.name], self.materials[obj.name], pin_indices=idx,
                               pin_weights=weights, pin_targets=pin_targets[obj.name],
                               uv=r.uv[obj.name], grain=matrices[obj.name][0, :3, 0],
                               seams=r.seams[obj.name])
            inputs.append(ClothInput(obj, setup, self.settings[obj.name], matrices[obj.name],
                                     offsets.get(obj.name), name=obj.name))
        result = []
        for obj in colliders:
            pos = collider_positions[obj.name]
            moving = not np.array_equal(pos, np.broadcast_to(pos[0], pos.shape))
            if obj.cloth_solver.role == "COLLIDER":  # our own settings win over Collision's
                thickness, friction = collider_from_props(obj.cloth_solver)
                thickness *= self.metres
            else:
                thickness, friction = blender_physics.collision_settings(obj, self.metres)
            result.append(Collider(kind="mesh", mesh=collider_first[obj.name],
                                   thickness=thickness, friction=friction,
                                   positions=pos if moving else None))
        return inputs, tuple(result), r.field_winds

    def _read_frames(self, context, cloths, colliders, fields, r: _Reading, stacks: dict):
        """Read every frame of the range into ``r`` (see _read_scene); world positions in m.
        ``stacks``: each cloth's modifier_stack.Stack."""
        scene, n, metres = self.scene, self.frames + 1, self.metres
        pins, positions0, pin_targets, matrices, offsets = (
            r.pins, r.positions0, r.pin_targets, r.matrices, r.offsets)
        collider_first, collider_positions = r.collider_first, r.collider_positions
        for i in range(n):
            scene.frame_set(self.frame_start + i)
            depsgraph = context.evaluated_depsgraph_get()
            for obj in cloths:
                ev = EvaluatedMesh(obj, depsgraph, topology=(i == 0), scale=metres,
                                   loose=(i == 0 and obj.cloth_solver.use_sewing))
                modifier_stack.check_vertex_count(obj, len(ev.positions), stacks[obj.name],
                                                  context, self.frame_start + i)
                idx, _ = pins[obj.name]
                if i == 0:
                    positions0[obj.name] = ev.mesh
                    r.uv[obj.name] = ev.uv
                    r.seams[obj.name] = _seams(obj, ev)
                    pin_targets[obj.name] = np.empty((n, len(idx), 3))
                    matrices[obj.name] = np.empty((n, 4, 4))
                pin_targets[obj.name][i] = ev.positions[idx]
                matrices[obj.name][i] = ev.matrix
                offset = shape_keys.user_key_offset(
                    obj, shape_keys.baked_key_names(obj.cloth_solver))
                if offset is not None:
                    offsets.setdefault(obj.name, np.zeros((n,) + ev.positions.shape))
                    offsets[obj.name][i] = offset
            if i == 0 and cloths:  # fields act at the cloths' centre at the start (see docs)
                centre = np.mean([positions0[o.name].positions.mean(axis=0)
                                  for o in cloths], axis=0) / metres
            for obj in fields:
                r.field_winds.setdefault(obj.name, []).append(blender_physics.field_wind(
                    obj, depsgraph, centre, scene.cloth_solver.field_speed, metres))
            for obj in colliders:
                ev = EvaluatedMesh(obj, depsgraph, topology=(i == 0), scale=metres)
                if i == 0:
                    collider_first[obj.name] = ev.mesh
                    collider_positions[obj.name] = np.empty((n,) + ev.positions.shape)
                elif ev.positions.shape != collider_positions[obj.name].shape[1:]:
                    raise BakeError(
                        f"collider '{obj.name}' changes its vertex count during the "
                        f"bake (frame {self.frame_start + i}); colliders must keep "
                        "their topology")
                collider_positions[obj.name][i] = ev.positions

    def _wind(self, field_winds: dict) -> tuple[Wind, tuple[Wind, ...] | None]:
        """The scene's wind (Blender units -> m/s and m) plus the force fields', at the first
        frame, and per frame when a field is animated (else None)."""
        base = wind_from_props(self.scene.cloth_solver)

        def at(i: int) -> Wind:
            velocity, turbulence, scale = blender_physics.combine(
                base.velocity * self.metres, base.turbulence,
                base.turbulence_scale * self.metres, [w[i] for w in field_winds.values()])
            return Wind(velocity=velocity, turbulence=turbulence, turbulence_scale=scale,
                        turbulence_frequency=base.turbulence_frequency, seed=base.seed)

        animated = False
        for name, winds in field_winds.items():
            f = winds[0]
            self.notes.append(f"force field '{name}': wind {np.linalg.norm(f.velocity):.3g} "
                              f"m/s, r.m.s. gusts {f.turbulence:.3g} m/s")
            if any(not w.close_to(f) for w in winds[1:]):
                animated = True
                self.notes.append(f"force field '{name}' is animated: its wind is read at every "
                                  "frame")
        if not animated:
            return at(0), None
        return at(0), tuple(at(i) for i in range(self.frames + 1))

    @staticmethod
    def _pins(obj):
        """Pinned vertex indices and weights from the pin group (weight 0 = free)."""
        name = obj.cloth_solver.pin_group
        if not name:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        w = np.clip(vertex_group_weights(obj, name), 0.0, 1.0)
        idx = np.flatnonzero(w > 0.0)
        return idx.astype(np.int64), w[idx]

    def _read_yarns(self, context, yarns, colliders) -> list[Group]:
        """One group per Yarn object, read at the first frame (yarn_bake.py), colliding with
        ``colliders`` (the Colliders _read_scene made)."""
        if not yarns:
            return []
        scene, groups = self.scene, []
        frame_before = scene.frame_current
        try:
            scene.frame_set(self.frame_start)
            depsgraph = context.evaluated_depsgraph_get()
            for obj in yarns:
                pins, weights = self._pins(obj)   # weight 1 holds a point, below pulls it
                yarn, run = yarn_bake.read_yarn(
                    obj, depsgraph, self.metres, self.frames, pins, units.gravity(scene),
                    frame_rate(scene), colliders, weights)
                groups.append(Group([yarn], run))  # run: builds the YarnRun
        finally:
            scene.frame_set(frame_before)
        return groups

    # ---- simulations ----

    def _spec(self, cloth, colliders, settings, seams=None) -> SimulationSpec:
        scene = self.scene
        return SimulationSpec(cloth, settings, frames=self.frames, fps=frame_rate(scene),
                              gravity=units.gravity(scene), wind=self.wind, colliders=colliders,
                              wind_frames=self.wind_frames,
                              seams=np.zeros((0, 2), np.int64) if seams is None else seams)

    def _build(self, inputs, colliders) -> list[Group]:
        """Cloths with equal solver settings simulate together (one model, shared colliders);
        before the solver takes several pieces at once, each cloth simulates on its own. The
        simulations are built on the runner's thread (building compiles kernels the first
        time)."""
        batches: dict[SolverSettings, list[ClothInput]] = {}
        for c in inputs:
            batches.setdefault(c.settings, []).append(c)
        groups = []
        for batch in batches.values():
            cloth = batch[0].setup if len(batch) == 1 else tuple(c.setup for c in batch)
            seams = _seams_between(batch, inputs)
            spec = self._spec(cloth, colliders, batch[0].settings, seams)
            groups.append(Group(batch, functools.partial(Simulation, spec), spec=spec,
                                self_collision=batch[0].settings.self_collision))
        return groups

    # ---- simulating (runner.py: on a worker process, a thread, or this one) ----

    def start(self, live: bool = False, ui: bool = False, limit: int | None = None,
              inline: bool = False) -> "BakeJob":
        """Start simulating on the runner's thread; ``live``: show each frame in the viewport
        as it arrives (live.py); ``ui``: Blender's UI runs meanwhile (leave it a core);
        ``limit``: simulate that many frames until ``runner.allow`` allows more; ``inline``:
        simulate on this thread, as ``update`` asks for frames (``run``)."""
        if live:
            self.live = LiveView()
        ceiling = threads_ceiling(self.scene.cloth_solver)
        tasks = [runner.Task(g.factory, [f"'{c.name}'" for c in g.cloths]) for g in self.groups]
        # beside the UI, in the worker process (worker.py); a script waiting for the bake, on
        # its own thread; where no worker can start, and a play session without UI, on a thread
        self.runner = None
        if inline:
            set_thread_ceiling(ceiling)  # numba's thread count is this thread's
            self.runner = runner.InlineRunner(tasks)
            self.runner.allow(limit)
        elif ui:
            self.runner = worker.start(tasks, warmup.python_executable(), ceiling, limit)
        if self.runner is None:
            self.runner = runner.Runner(tasks, spare_core=ui,
                                        prepare=lambda: set_thread_ceiling(ceiling))
            self.runner.allow(limit)
            self.runner.start()
        self.started = time.perf_counter()
        return self

    @property
    def frames_kept(self) -> int:
        """Frames simulated for every group so far (a stopped bake keeps these)."""
        return max(0, min(len(g.frames) for g in self.groups) - 1) if self.groups else 0

    @property
    def scene_frame(self) -> int:
        """The last scene frame simulated for every group."""
        return self.frame_start + self.frames_kept

    def progress_text(self) -> str:
        """'frame 16 of 1-48': the last frame simulated for every cloth, in the bake's range."""
        return f"frame {self.scene_frame} of {frame_range(self.frame_start, self.frame_end)}"

    @property
    def running(self) -> bool:
        return self.runner is not None and not self.ended

    def stop(self) -> None:
        """Stop after the frame in progress; ``finish`` then writes the frames simulated so far
        (``stopped`` is set)."""
        self.stopped = True
        if self.runner is not None:
            self.runner.stop()

    def cancel(self) -> None:
        """Drop the bake: the thread ends after its step, nothing is written."""
        if self.runner is not None:
            self.runner.stop()
        self._close_live()
        self._discard_caches()
        _running.discard(self)

    def update(self, budget_s: float = 0.05, wait_s: float = 0.0) -> bool:
        """Take the frames the thread has simulated (for at most ``budget_s`` of work, waiting
        up to ``wait_s`` for the first message; an inline runner simulates them now, at least
        one); True while the bake goes on. Raises BakeError on a failure (the thread has
        stopped) or when the bake was invalidated."""
        self._check_valid()
        end = time.perf_counter() + budget_s
        messages = self.runner.poll(limit=1) if wait_s <= 0 else self.runner.wait(wait_s)
        while messages:
            for msg in messages:
                self._receive(msg)
            if self.ended or time.perf_counter() > end:
                break
            messages = self.runner.poll(limit=1)
        return not self.ended

    def _receive(self, msg) -> None:
        if isinstance(msg, runner.Ended):
            self.ended = True
            return
        g = self.groups[msg.task]
        names = ", ".join(f"'{c.name}'" for c in g.cloths)
        if isinstance(msg, runner.Built):
            g.simulation, g.model_name, g.piece_offsets = (msg.stepper, msg.model_name,
                                                           msg.piece_offsets)
            # degenerate elements simulated around, vertices where the cloth is split
            self.notes.extend(msg.notes)
            for text in msg.notes if self.log is not None else ():
                self.log(f"cloth_solver: {text}")
            g.frames = [msg.first]
            self._show(g, 0)
            return
        if isinstance(msg, runner.Failed):
            self.ended = True
            self.runner.stop()
            if msg.error is None:
                raise BakeError(f"{names}: {msg.message}")
            if isinstance(msg.error, (MeshError, ParameterError, ValueError)) \
                    and not g.frames:  # the model refused the scene
                raise BakeError(f"{names}: {msg.error}")
            print(msg.trace, file=sys.stderr)  # a solver bug: keep the traceback for a report
            raise BakeError(
                f"{names}: internal solver error at frame "
                f"{self.frame_start + len(g.frames)} ({type(msg.error).__name__}: "
                f"{msg.error}); nothing was written and the previous bake is unchanged. "
                "Please report this with the console output")
        rep = msg.report
        g.frames.append(msg.positions)
        g.threads.append(rep.threads)
        g.wall_time_s += rep.wall_time_s
        g.max_strain = max(g.max_strain, rep.max_strain)
        g.deepest_penetration_m = max(g.deepest_penetration_m, rep.deepest_penetration_m)
        g.intersections = max(g.intersections, rep.collider_crossings
                              + (rep.self_intersections if g.self_collision else 0))
        g.untangled += rep.untangled
        if rep.tangled_pairs:
            g.tangled_pairs = max(g.tangled_pairs, rep.tangled_pairs)
            g.tangled_frames += 1
        retried = ""
        if rep.retries:
            frame = self.frame_start + rep.frame
            g.retried[frame] = g.retried.get(frame, 0) + rep.retries
            retried = (f", blew up and retried {rep.retries}x: steps 1/{rep.step_refinement} "
                       "of the usual")
        self.frames_done += 1
        self._show(g, len(g.frames) - 1)
        if self.log is not None:
            names = ",".join(c.name for c in g.cloths)
            self.log(f"cloth_solver: frame {self.frame_start + rep.frame} of "
                     f"{frame_range(self.frame_start, self.frame_end)} {names}: "
                     f"{per_frame(rep.wall_time_s, 1)}, max strain {strain(rep.max_strain)}"
                     f"{retried}")
        self.notes.extend(msg.notes)  # after its last frame (a yarn's closest approach)

    def _local(self, g: Group, f: int) -> list:
        """[(cloth, object-local positions at simulated frame f)] of a group's cloths (the
        keys' positions before their user-key offsets are taken off)."""
        offsets = g.piece_offsets
        world = g.frames[f]
        known = g.local.get(f)
        if known is not None and known[0] is world:
            return known[1]
        out = []
        for i, c in enumerate(g.cloths):
            part = world if offsets is None else world[offsets[i]:offsets[i + 1]]
            out.append((c, to_local(part, c.matrices[f], c.name)))
        if self.live is not None or self.cache_folder is not None:  # shown: _write needs it
            g.local[f] = (world, out)
        return out

    def _show(self, g: Group, f: int) -> None:
        """A frame arrived: into the live view and the disk caches (as it is simulated)."""
        if self.live is None and self.cache_folder is None:
            return
        try:
            for c, local in self._local(g, f):
                if self.live is not None:
                    if f == 0:
                        self.live.begin(c.obj, self.frame_start, local)
                    else:  # redrawn only where it shows: at or after its frame
                        self.live.append(c.obj, local,
                                         shown=self.scene.frame_current >= self.frame_start + f)
                if self.cache_folder is not None and c.obj.cloth_solver.role == "CLOTH":
                    if f == 0:
                        self.caches[c.name] = disk_cache.CacheWriter(
                            self.cache_folder / disk_cache.file_name(c.obj), len(local),
                            self.frame_start)
                    self.caches[c.name].append(local)
        except ReferenceError:  # the object was deleted: finish() says so
            pass
        except OSError as err:
            raise BakeError(f"writing the disk cache in {self.cache_folder} failed: {err}; "
                            "nothing was written") from None

    def _close_live(self) -> None:
        if self.live is not None:
            self.live.close()
            self.live = None

    def _discard_caches(self) -> None:
        for writer in self.caches.values():
            writer.discard()
        self.caches = {}

    def run(self) -> BakeSummary:
        """Simulate everything, then write the keys. A job not started yet simulates on this
        thread (a script's or ``blender -b``'s main thread); a started one (Simulate on Play's
        frames taken over) goes on where it runs, this thread waiting."""
        if self.runner is None:
            self.start(inline=True)
        try:
            while self.update(budget_s=1.0, wait_s=0.5):
                pass
        except BaseException:
            self.cancel()
            raise
        return self.finish()

    # ---- writing ----

    def finish(self) -> BakeSummary:
        """Replace each cloth's previous bake by the new keys: checks and conversions first, then
        the writes; should a write fail, every previous bake is put back. A stopped bake writes
        the frames simulated for every cloth so far (at least one)."""
        kept = self.frames_kept
        if kept < self.frames and not self.stopped:
            raise RuntimeError("the bake is not finished")
        try:
            self._check_valid()
            if kept < 1:
                raise BakeError("Bake stopped before its first frame was simulated; nothing "
                                "was written")
            return self._write(kept)
        finally:
            self._close_live()
            self._discard_caches()  # (the accepted ones were moved into place)
            _running.discard(self)

    def _write(self, kept: int) -> BakeSummary:
        frame_end = self.frame_start + kept
        # Everything that could stop a write is checked before the first previous bake goes.
        for g in self.groups:
            for c in g.cloths:
                self._check_writable(c, frame_end)
        start = time.perf_counter()
        writes = []
        for g in self.groups:
            local_frames = [self._local(g, f) for f in range(kept + 1)]
            for i, c in enumerate(g.cloths):
                local = np.stack([frame[i][1] for frame in local_frames])
                if c.key_offsets is not None:
                    local -= c.key_offsets[:kept + 1]
                writes.append((c.obj, local, g))
        # The live view goes first: the keys it would hide are what the user gets now.
        self._close_live()
        for writer in self.caches.values():
            writer.close(frames=kept + 1)
        # The checks above cover every failure we know of; should writing fail anyway (out of
        # memory, a bug), every object written so far gets its previous bake back.
        saved = [shape_keys.save_bake(obj) for obj, _, _ in writes]
        started, installed = 0, []
        try:
            for obj, local, _ in writes:
                started += 1
                old_file = obj.cloth_solver.bake_cache_file
                shape_keys.free_bake(obj, delete_files=False)
                writer = self.caches.pop(obj.name, None)
                if writer is None:
                    shape_keys.write_bake(obj, self.frame_start, local)
                else:
                    installed.append(disk_cache.install(writer))
                    disk_cache.write_bake(obj, self.frame_start, kept + 1, writer.path)
                if old_file and Path(bpy.path.abspath(old_file)) != \
                        Path(bpy.path.abspath(obj.cloth_solver.bake_cache_file or "//")):
                    installed.append(disk_cache.Installed(
                        Path(bpy.path.abspath(old_file)), None, stale=True))
                if obj.cloth_solver.role == "CLOTH":  # a yarn's sweep draws on top of its keys
                    shape_keys.mute_modifiers(obj)
        except Exception as err:
            failed = writes[started - 1][0].name
            for (obj, _, _), old in zip(writes[:started], saved):
                shape_keys.restore_bake(obj, old)
            for done in reversed(installed):
                disk_cache.undo(done)
            raise BakeError(f"writing the bake of '{failed}' failed ({err}); every cloth keeps "
                            "its previous bake") from err
        for done in installed:
            disk_cache.commit(done)
        # the time of writing counts in every figure of the bake's time, so that the panel's
        # time of a one-simulation bake and the summary's are one number
        writing = time.perf_counter() - start
        for obj, _, g in writes:
            s = obj.cloth_solver
            bake_status.record(obj)
            s.bake_model = g.model_name
            s.bake_time = g.wall_time_s + writing
            s.bake_max_strain = g.max_strain
            s.bake_deepest_penetration = g.deepest_penetration_m
            s.bake_intersections = g.intersections
            s.bake_stopped_of = self.frame_end if kept < self.frames else 0
        self.scene.frame_set(self.scene.frame_current)
        summary = BakeSummary(
            objects=[c.obj.name for g in self.groups for c in g.cloths],
            frame_start=self.frame_start, frame_end=frame_end,
            wall_time_s=sum(g.wall_time_s for g in self.groups) + writing,
            max_strain=max(g.max_strain for g in self.groups),
            deepest_penetration_m=max(g.deepest_penetration_m for g in self.groups),
            intersections=max(g.intersections for g in self.groups),
            models=sorted({g.model_name for g in self.groups}),
            skipped=list(self.skipped), warnings=list(self.warnings), notes=list(self.notes),
            retried=_merged(g.retried for g in self.groups),
            untangled=sum(g.untangled for g in self.groups),
            tangled_pairs=sum(g.tangled_pairs for g in self.groups),
            tangled_frames=max(g.tangled_frames for g in self.groups),
            stopped_of=self.frame_end if kept < self.frames else None)
        self.scene.cloth_solver.last_report = summary.text()
        self.scene.cloth_solver.last_bake = json.dumps(summary.record())
        return summary

    def had_previous_bake(self) -> list[str]:
        """Names of this bake's objects that have a bake of their own (what Cancel keeps)."""
        out = []
        for g in self.groups:
            for c in g.cloths:
                try:
                    if c.obj.cloth_solver.is_baked:
                        out.append(c.obj.name)
                except ReferenceError:
                    pass
        return out

    def _check_writable(self, cloth: ClothInput, frame_end: int) -> None:
        """Raise BakeError if the cloth's object changed since the scene was read so that its
        keys cannot be written (the modal bake lets the user go on working while it runs)."""
        obj, vertex_count = cloth.obj, cloth.vertex_count
        try:
            name = obj.name
        except ReferenceError:
            raise BakeError(f"'{cloth.name}' was deleted while baking; nothing was written. "
                            "Bake again") from None
        if obj.mode == "EDIT" or obj.data.is_editmode:
            raise BakeError(f"'{name}' entered Edit Mode while baking; nothing was written. "
                            "Leave Edit Mode and bake again")
        if len(obj.data.vertices) != vertex_count:
            raise BakeError(f"'{name}': its mesh changed from {vertex_count} to "
                            f"{len(obj.data.vertices)} vertices while baking; nothing was "
                            "written. Bake again")
        shape_keys.check_mesh_owner(obj)
        shape_keys.check_key_names(obj, self.frame_start, frame_end)


def _seams_between(batch, inputs) -> np.ndarray:
    """Seams between the cloth objects of one simulation, in its combined vertex numbering:
    a cloth with Sewing on and a Sew To object has its Seam Group's line (or loop) of
    vertices sewn, vertex by vertex, to the line of the group of the same name on that object
    (``solver.sew_lines``: same vertex count, run in the direction that pairs them closest)."""
    offsets = np.cumsum([0] + [c.setup.mesh.vertex_count for c in batch])
    index = {c.obj.name: k for k, c in enumerate(batch)}
    out = [np.zeros((0, 2), np.int64)]
    for k, c in enumerate(batch):
        s = c.obj.cloth_solver
        other = s.sew_to
        if not s.use_sewing or other is None:
            continue
        name = c.obj.name
        if other.name == name:
            raise BakeError(f"'{name}' is sewn to itself: seams within one object are its "
                            "loose edges; clear Sew To")
        if other.name not in index:
            why = ("has other solver settings, so it bakes in another simulation; give both "
                   "the same solver settings" if any(i.obj.name == other.name for i in inputs)
                   else "is not a cloth of this bake")
            raise BakeError(f"'{name}' is sewn to '{other.name}', which {why}")
        if not s.seam_group:
            raise BakeError(f"'{name}' is sewn to '{other.name}' but has no Seam Group: name "
                            "the vertex group of the seam line, the same on both objects")
        j = index[other.name]
        lines = []
        for cloth in (c, batch[j]):
            w = vertex_group_weights(cloth.obj, s.seam_group, what="seam group")
            lines.append(np.flatnonzero(w > 0.0))
        try:
            pairs = sew_lines(c.setup.mesh, lines[0], batch[j].setup.mesh, lines[1],
                              name=f"seam group '{s.seam_group}' of '{name}' and "
                                   f"'{other.name}'")
        except MeshError as err:
            raise BakeError(str(err)) from None
        out.append(pairs + offsets[[k, j]])
    return np.concatenate(out)


def _seams(obj, ev) -> np.ndarray:
    """The cloth's seams: its loose edges while Sewing is on (none otherwise); a loose edge
    must join two vertices of faces."""
    if ev.loose_edges is None:
        return np.zeros((0, 2), dtype=np.int64)
    in_faces = np.zeros(len(ev.positions), dtype=bool)
    in_faces[ev.mesh.face_indices] = True
    bad = np.flatnonzero(~in_faces[ev.loose_edges].all(axis=1))
    if len(bad):
        a, b = (int(v) for v in ev.loose_edges[bad[0]])
        raise BakeError(f"'{obj.name}': Sewing is on, and the loose edge between vertices {a} "
                        f"and {b} has an end on no face; a seam joins two vertices of the "
                        "cloth's faces. Delete that edge or turn Sewing off")
    return ev.loose_edges


def _merged(counts) -> dict:
    """Sum per-frame counts over groups."""
    out: dict = {}
    for c in counts:
        for frame, n in c.items():
            out[frame] = out.get(frame, 0) + n
    return out


def free_all(scene) -> list[str]:
    """Free the bake of every object of the scene that has one; returns their names."""
    return [o.name for o in scene.objects
            if o.type == "MESH" and shape_keys.free_bake(o)]
