"""Baked frames as shape keys: write them (keyed so each shows on its own frame), free them, and
hide a previous bake while the scene is read for a new one.

A bake adds to a cloth object exactly: one key block per frame named ``cloth_0001``... (the
frame number), one F-curve per key block, the Basis key if the mesh had none, an Action if the
shape keys had none, and it switches off the object's enabled modifiers above the cloth (their
effect is already inside the keys; the refining ones below stay on: modifier_stack.py). The
object's ``cloth_solver`` bake record lists all of it, so Free Bake removes exactly that and
restores the modifiers.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from dataclasses import dataclass

import bpy
import numpy as np

from . import modifier_stack
from .errors import BakeError
from .mesh_io import key_block_positions, set_key_block_positions, vertex_group_weights

KEY_PREFIX = "cloth_"


def key_name(frame: int) -> str:
    """Name of the shape key holding ``frame``: ``cloth_0001``."""
    return f"{KEY_PREFIX}{frame:04d}"


def baked_key_names(settings) -> list[str]:
    """Names of the key blocks of an object's current bake ([] if not baked)."""
    if not settings.is_baked:
        return []
    return [key_name(f) for f in range(settings.bake_frame_start, settings.bake_frame_end + 1)]


def _data_path(name: str) -> str:
    return f'key_blocks["{name}"].value'


def _fcurves(key):
    """The F-curve collection animating ``key`` (None if it has no action): ``action.fcurves``
    before Blender 4.4, the assigned slot's channelbag from 4.4 on (slotted actions)."""
    ad = key.animation_data
    if ad is None or ad.action is None:
        return None
    if hasattr(ad.action, "fcurves"):
        return ad.action.fcurves
    from bpy_extras import anim_utils
    return anim_utils.action_ensure_channelbag_for_slot(ad.action, ad.action_slot).fcurves


def user_key_offset(obj, exclude) -> np.ndarray | None:
    """Displacement (V, 3) [object-local m] that the object's own shape keys add to its Basis at
    the current frame (their current, possibly animated, values), or None if there is none.

    The bake subtracts it from each cloth key so that Basis + user keys + cloth key lands
    exactly on the simulated positions.
    """
    key = obj.data.shape_keys
    if key is None:
        return None
    if not key.use_relative:
        raise BakeError(f"'{obj.name}' uses absolute shape keys; Bake Cloth writes relative "
                        "shape keys. Switch 'Relative' on in its Shape Keys panel")
    exclude = set(exclude)
    basis = key.reference_key
    total = None
    cache = {}

    def co(kb):
        if kb.name not in cache:
            cache[kb.name] = key_block_positions(kb)
        return cache[kb.name]

    for kb in key.key_blocks:
        if kb == basis or kb.name in exclude or kb.mute or kb.value == 0.0:
            continue
        delta = kb.value * (co(kb) - co(kb.relative_key))
        if kb.vertex_group:
            delta *= vertex_group_weights(obj, kb.vertex_group)[:, None]
        total = delta if total is None else total + delta
    return total


@contextmanager
def previous_bake_hidden(objects):
    """While reading the scene for a new bake, show each cloth as if it had no bake: its cloth
    keys muted (or its disk cache's modifier off) and the modifiers the bake switched off
    switched back on. Restored on exit."""
    muted_keys, modifiers = [], []
    try:
        for obj in objects:
            key = obj.data.shape_keys
            for name in baked_key_names(obj.cloth_solver):
                kb = key.key_blocks.get(name) if key else None
                if kb is not None and not kb.mute:
                    kb.mute = True
                    muted_keys.append(kb)
            for name, viewport, render in _muted_record(obj):
                mod = obj.modifiers.get(name)
                if mod is not None:
                    modifiers.append((mod, mod.show_viewport, mod.show_render))
                    mod.show_viewport, mod.show_render = viewport, render
            cache = obj.cloth_solver.bake_cache_modifier  # a disk-cache bake's (disk_cache.py)
            mod = obj.modifiers.get(cache) if cache else None
            if mod is not None:
                modifiers.append((mod, mod.show_viewport, mod.show_render))
                mod.show_viewport = mod.show_render = False
        yield
    finally:
        for kb in muted_keys:
            kb.mute = False
        for mod, viewport, render in modifiers:
            mod.show_viewport, mod.show_render = viewport, render


def _muted_record(obj) -> list:
    text = obj.cloth_solver.bake_muted_modifiers
    return json.loads(text) if text else []


def free_bake(obj, delete_files: bool = True) -> bool:
    """Remove what the last bake added to ``obj`` and restore its modifiers; False if there was
    no bake. A disk-cache bake's file is deleted unless ``delete_files`` is False."""
    s = obj.cloth_solver
    if not s.is_baked:
        return False
    if s.bake_cache_file or s.bake_cache_modifier:
        from . import disk_cache
        disk_cache.free(obj, delete_file=delete_files)
    names = baked_key_names(s)
    key = obj.data.shape_keys
    if key is not None:
        fcurves = _fcurves(key)
        if fcurves is not None:
            for name in names:
                fc = fcurves.find(_data_path(name))
                if fc is not None:
                    fcurves.remove(fc)
        for name in names:
            kb = key.key_blocks.get(name)
            if kb is not None:
                obj.shape_key_remove(kb)
        _remove_created_action(key, s.bake_created_action)
        if s.bake_created_basis and len(key.key_blocks) == 1:
            obj.shape_key_remove(key.key_blocks[0])
    for name, viewport, render in _muted_record(obj):
        mod = obj.modifiers.get(name)
        if mod is not None:
            mod.show_viewport, mod.show_render = viewport, render
    s.is_baked = False
    s.bake_stopped_of = 0
    s.bake_created_basis = False
    s.bake_created_action = ""
    s.bake_muted_modifiers = ""
    s.bake_outdated = ""
    s.bake_fingerprint = ""
    return True


def _remove_created_action(key, action_name: str) -> None:
    """Remove the Action the bake created, if nothing else was keyed into it since."""
    if not action_name:
        return
    ad = key.animation_data
    action = bpy.data.actions.get(action_name)
    if action is None or ad is None or ad.action != action:
        return
    fcurves = _fcurves(key)
    if fcurves is not None and len(fcurves) == 0 and action.users <= 1:
        key.animation_data_clear()
        bpy.data.actions.remove(action)


def check_local(obj) -> None:
    """Raise BakeError if ``obj`` or its mesh is linked from a library: keys written into linked
    data are not saved with this file (the library's version comes back on reload)."""
    for what, block in ((f"'{obj.name}'", obj), (f"the mesh of '{obj.name}'", obj.data)):
        if block.library is not None:
            raise BakeError(f"{what} is linked from the library '{block.library.filepath}'; "
                            "a bake written into it would be lost on reload. Make it local "
                            "(Object > Relations > Make Local > Selected Objects and Data) or "
                            "bake it in the library's file")


def check_mesh_owner(obj) -> None:
    """Raise BakeError if another object uses ``obj``'s mesh (a linked duplicate): shape keys
    belong to the mesh, so the bake would move every object that shares it."""
    others = sorted(o.name for o in bpy.data.objects
                    if o.data == obj.data and o != obj and o.users > 0)
    if others:
        names = ", ".join(f"'{n}'" for n in others)
        raise BakeError(f"'{obj.name}' shares its mesh '{obj.data.name}' with {names}; shape keys "
                        "belong to the mesh, so the bake would move those objects too. Make the "
                        "mesh single-user (Object > Relations > Make Single User > Object & Data) "
                        "and bake again")


def check_key_names(obj, frame_start: int, frame_end: int) -> None:
    """Raise BakeError if a shape key the bake would write already exists and is not part of
    the object's current bake (a user's key that happens to be called cloth_0005)."""
    key = obj.data.shape_keys
    if key is None:
        return
    ours = set(baked_key_names(obj.cloth_solver))
    for frame in range(frame_start, frame_end + 1):
        name = key_name(frame)
        if name in key.key_blocks and name not in ours:
            raise BakeError(f"'{obj.name}' already has a shape key named {name} that no bake "
                            "made; rename it and bake again")


def write_bake(obj, frame_start: int, local_positions: np.ndarray) -> None:
    """Write one keyed shape key per frame; ``local_positions`` (frames, V, 3) are the key
    coordinates (object-local [m]) of frames ``frame_start``, ``frame_start + 1``, ...

    Any previous bake must have been freed. Key ``cloth_f`` has value 1 on frame f and 0 on its
    neighbours with constant interpolation, so exactly one cloth key is active on every frame
    of the range; before the range the first key holds, after it the last.
    """
    s = obj.cloth_solver
    if s.is_baked:
        raise RuntimeError("free the previous bake first")
    count = local_positions.shape[0]
    frame_end = frame_start + count - 1
    s.bake_created_basis = obj.data.shape_keys is None
    if s.bake_created_basis:
        obj.shape_key_add(name="Basis", from_mix=False)
    key = obj.data.shape_keys
    had_action = key.animation_data is not None and key.animation_data.action is not None
    # Record first: if anything below fails, Free Bake can still remove what was written.
    s.bake_frame_start, s.bake_frame_end, s.is_baked = frame_start, frame_end, True
    for i in range(count):
        frame = frame_start + i
        kb = obj.shape_key_add(name=key_name(frame), from_mix=False)
        set_key_block_positions(kb, local_positions[i])
        kb.slider_max = 1.0
        kb.value = 1.0
        kb.keyframe_insert("value", frame=frame)  # creates action/slot/F-curve as this Blender needs
    s.bake_created_action = "" if had_action else key.animation_data.action.name
    fcurves = _fcurves(key)
    for i in range(count):
        frame = frame_start + i
        fc = fcurves.find(_data_path(key_name(frame)))
        points = [(frame, 1.0)]
        if frame > frame_start:
            points.insert(0, (frame - 1, 0.0))
        if frame < frame_end:
            points.append((frame + 1, 0.0))
        points.remove((frame, 1.0))
        points.insert(0, (frame, 1.0))  # the point keyframe_insert made comes first
        fc.keyframe_points.add(len(points) - 1)
        fc.keyframe_points.foreach_set("co", [c for p in points for c in p])
        for kp in fc.keyframe_points:
            kp.interpolation = "CONSTANT"
        fc.update()


@dataclass
class SavedBake:
    """A copy of an object's bake, to put back if writing its replacement fails.

    Attributes:
        frame_start: first baked frame.
        positions: the cloth keys' coordinates as stored, (frames, V, 3) float32 [object-local m]
            (None for a disk-cache bake).
        muted_modifiers: the bake's record of the modifiers it switched off (JSON).
        outdated, fingerprint: its bake status (bake_status.py).
    """

    frame_start: int
    positions: np.ndarray
    muted_modifiers: str
    outdated: str = ""
    fingerprint: str = ""
    stopped_of: int = 0
    cache_file: str = ""  # a disk-cache bake: its file (the bake's record, disk_cache.py)
    frame_end: int = 0


def save_bake(obj) -> SavedBake | None:
    """Copy ``obj``'s bake (None if it has none, or if keys of it were deleted by hand)."""
    s = obj.cloth_solver
    key = obj.data.shape_keys
    if s.is_baked and s.bake_cache_file:
        return SavedBake(s.bake_frame_start, None, s.bake_muted_modifiers, s.bake_outdated,
                         s.bake_fingerprint, s.bake_stopped_of, s.bake_cache_file,
                         s.bake_frame_end)
    if not s.is_baked or key is None:
        return None
    blocks = [key.key_blocks.get(name) for name in baked_key_names(s)]
    if any(kb is None for kb in blocks):
        return None
    positions = np.empty((len(blocks), len(obj.data.vertices) * 3), dtype=np.float32)
    for kb, row in zip(blocks, positions):
        kb.data.foreach_get("co", row)
    return SavedBake(s.bake_frame_start, positions.reshape(len(blocks), -1, 3),
                     s.bake_muted_modifiers, s.bake_outdated, s.bake_fingerprint,
                     s.bake_stopped_of)


def restore_bake(obj, saved: SavedBake | None) -> None:
    """Remove whatever bake ``obj`` has now, even half-written, and put ``saved`` back (None:
    leave it unbaked)."""
    free_bake(obj, delete_files=False)  # the files are the caller's (disk_cache.undo)
    if saved is None:
        return
    if saved.cache_file:
        from pathlib import Path
        from . import disk_cache
        disk_cache.write_bake(obj, saved.frame_start, saved.frame_end - saved.frame_start + 1,
                              Path(bpy.path.abspath(saved.cache_file)))
    else:
        write_bake(obj, saved.frame_start, saved.positions)
    for name, _viewport, _render in json.loads(saved.muted_modifiers or "[]"):
        mod = obj.modifiers.get(name)
        if mod is not None:
            mod.show_viewport = mod.show_render = False
    s = obj.cloth_solver
    s.bake_muted_modifiers = saved.muted_modifiers
    s.bake_outdated, s.bake_fingerprint = saved.outdated, saved.fingerprint
    s.bake_stopped_of = saved.stopped_of


def mute_modifiers(obj) -> None:
    """Switch off the enabled modifiers above the cloth of a baked cloth (the keys already hold
    their effect; those on top of the bake stay: modifier_stack.py) and record their previous
    state for Free Bake."""
    record = []
    for mod in modifier_stack.muted_by_bake(obj):
        record.append([mod.name, mod.show_viewport, mod.show_render])
        mod.show_viewport = mod.show_render = False
    obj.cloth_solver.bake_muted_modifiers = json.dumps(record) if record else ""
