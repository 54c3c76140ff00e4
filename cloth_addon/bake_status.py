"""Bake status of each cloth, as Blender's point cache shows it: not baked, baked, or outdated
since the user changed something the bake read.

The status lives in the object's bake record (``bake_outdated``: why it is outdated, "" = up to
date; ``bake_fingerprint``), so it survives save/reload and undo. What marks a bake outdated:

- the cloth's settings, a collider's settings, a role, or the scene's bake settings changed:
  the properties' ``update`` callbacks (properties.py) call ``settings_changed``;
- the cloth was moved, or its mesh, user shape keys or modifiers changed (of the modifiers on
  top of the bake, modifier_stack.py, only their place in the stack): a depsgraph update of
  the object (a transform update, or a geometry update whose fingerprint differs from the one
  recorded at bake time; our own bake writes shape keys and switches modifiers off, which the
  fingerprint leaves out, so it does not mark itself outdated);
- a collider (our role or Blender's Collision modifier) or a Wind/Turbulence field was moved or
  its mesh or settings changed (depsgraph updates of that object);
- the scene's frame range differs from the baked one (compared when the status is read).

Frame changes (playback, scrubbing) run no depsgraph_update_post handler, so they never mark a
bake. Edits of other objects that drive the cloth (an armature, a parent's animation) are not
tracked.
"""

from __future__ import annotations

import hashlib
import json
import traceback
from contextlib import contextmanager

import bpy
import numpy as np

from . import blender_physics, modifier_stack, shape_keys
from .formats import frame_range

# Skips a modifier's UI state and read-only values (e.g. execution_time changes every
# evaluation) in the fingerprint; its settings are what the bake reads.
# Roles whose objects Bake Cloth simulates and writes keys into (a Yarn is a knit swatch).
BAKED_ROLES = ("CLOTH", "YARN")
_SKIPPED_PREFIXES = ("show_", "is_", "use_pin_to_last")

_suspended = 0


@contextmanager
def suspended():
    """While the bake reads the scene it switches modifiers and shape keys and puts them back;
    the handler ignores the updates that causes."""
    global _suspended
    _suspended += 1
    try:
        yield
    finally:
        _suspended -= 1


def is_suspended() -> bool:
    """True while a bake reads the scene (its frame changes and switches are its own)."""
    return _suspended > 0


def status(obj, scene) -> tuple[str, str]:
    """('NOT_BAKED' | 'BAKED' | 'OUTDATED', text for the panel) of a cloth object."""
    s = obj.cloth_solver
    if not s.is_baked:
        return "NOT_BAKED", "Not baked"
    reason = s.bake_outdated
    sc = scene.cloth_solver
    # a stopped bake (Stop keeps the frames simulated so far) is up to date with the range it
    # was asked for
    asked = s.bake_stopped_of or s.bake_frame_end
    if not reason and (sc.frame_start, sc.frame_end) != (s.bake_frame_start, asked):
        reason = (f"the frame range is {frame_range(sc.frame_start, sc.frame_end)}, the bake "
                  f"has {frame_range(s.bake_frame_start, asked)}")
    if reason:
        return "OUTDATED", f"Outdated: {reason}"
    if s.bake_stopped_of:
        return "BAKED", (f"Baked frames {frame_range(s.bake_frame_start, s.bake_frame_end)} of "
                         f"{frame_range(s.bake_frame_start, s.bake_stopped_of)}, stopped "
                         f"({s.bake_model})")
    return "BAKED", (f"Baked frames {frame_range(s.bake_frame_start, s.bake_frame_end)} "
                     f"({s.bake_model})")


# Who else wants to know what would make a bake outdated (play.py: Simulate on Play's frames in
# memory): callables (reason, obj=None, moved=None), obj the cloth concerned (None: the scene),
# moved None for a changed setting, else True for a move and False for a geometry update (which
# need not be a change: the watcher compares fingerprints itself).
_watchers: list = []


def watch(fn) -> None:
    if fn not in _watchers:
        _watchers.append(fn)


def unwatch(fn) -> None:
    while fn in _watchers:
        _watchers.remove(fn)


def _tell(reason: str, obj=None, moved: bool | None = None) -> None:
    for fn in list(_watchers):
        try:
            fn(reason, obj, moved)
        except Exception:  # advisory, as the status itself
            traceback.print_exc()


def mark(obj, reason: str) -> bool:
    """Mark a baked cloth outdated (the first reason is kept until the next bake); True if this
    changed its status."""
    _tell(reason, obj)
    s = obj.cloth_solver
    if s.is_baked and not s.bake_outdated:
        s.bake_outdated = reason
        _redraw_properties()
        return True
    return False


def _redraw_properties() -> None:
    """Properties editors show the status; a value set from a handler redraws nothing by
    itself (seen in a real window: the panel kept 'Baked' until the mouse moved over it)."""
    wm = getattr(bpy.context, "window_manager", None)
    for window in (wm.windows if wm is not None else ()):
        for area in window.screen.areas:
            if area.type == "PROPERTIES":
                area.tag_redraw()


def mark_scene(scene, reason: str) -> None:
    """Mark every baked cloth of ``scene`` outdated."""
    if scene is None:
        return
    _tell(reason)
    for obj in scene.objects:
        if obj.type == "MESH" and obj.cloth_solver.role in BAKED_ROLES:
            mark(obj, reason)


def record(obj) -> None:
    """Called once a bake is written: the bake is up to date with the object as it is now."""
    s = obj.cloth_solver
    try:
        s.bake_fingerprint = fingerprint(obj)
    except Exception:  # the status is advisory: it must never fail a bake that is written
        traceback.print_exc()
        s.bake_fingerprint = ""  # any later geometry update then marks it outdated
    s.bake_outdated = ""


def fingerprint(obj) -> str:
    """A hash of what the bake reads from the cloth object itself that a depsgraph geometry
    update can change: its mesh (vertices, polygons; edges too while Sewing makes its loose
    edges seams), its own shape keys and its modifiers,
    with the modifiers the bake switched off counted in the state the bake found them."""
    h = hashlib.blake2b(digest_size=16)
    mesh = obj.data
    h.update(np.array([len(mesh.vertices), len(mesh.polygons), len(mesh.loops)]).tobytes())
    h.update(_mesh_array(mesh, "position", "vector", mesh.vertices, "co", 3 * len(mesh.vertices),
                         np.float32).tobytes())
    h.update(_mesh_array(mesh, ".corner_vert", "value", mesh.loops, "vertex_index",
                         len(mesh.loops), np.int32).tobytes())
    if obj.cloth_solver.use_sewing:  # its loose edges are seams (bakes without it unchanged)
        edges = np.empty(2 * len(mesh.edges), dtype=np.int32)
        mesh.edges.foreach_get("vertices", edges)
        h.update(edges.tobytes())
    key = mesh.shape_keys
    if key is not None:
        ours = set(shape_keys.baked_key_names(obj.cloth_solver))
        fcurves = _fcurves(key)
        for kb in key.key_blocks:
            if kb.name in ours:
                continue
            animated = fcurves is not None and fcurves.find(
                f'key_blocks["{kb.name}"].value') is not None
            value = None if animated else round(kb.value, 6)
            h.update(repr((kb.name, kb.relative_key.name, kb.vertex_group, kb.mute,
                           value)).encode())
            h.update(_floats(kb.data, "co", 3 * len(kb.data)).tobytes())
    muted = {name: viewport for name, viewport, _render in
             json.loads(obj.cloth_solver.bake_muted_modifiers or "[]")}
    # the modifiers on top of the bake act on the baked keys: only their place in the stack
    # counts (a Subdivision level changed after the bake leaves it up to date)
    top = {m.name for m in modifier_stack.on_top(obj) if m.type != "CLOTH"}
    for mod in obj.modifiers:
        if modifier_stack.is_live(mod):  # a running bake's display, not the user's
            continue
        if mod.name in top:
            h.update(repr((mod.name, mod.type)).encode())
            continue
        h.update(repr((mod.name, mod.type, muted.get(mod.name, mod.show_viewport),
                       _settings(mod))).encode())
    return h.hexdigest()


def _fcurves(key):
    """The F-curves animating ``key``, or None; unlike shape_keys._fcurves it creates nothing
    (it runs inside a depsgraph handler)."""
    ad = key.animation_data
    if ad is None or ad.action is None:
        return None
    if hasattr(ad.action, "fcurves"):
        return ad.action.fcurves
    from bpy_extras import anim_utils
    bag = anim_utils.action_get_channelbag_for_slot(ad.action, ad.action_slot)
    return None if bag is None else bag.fcurves


def _mesh_array(mesh, attribute: str, field: str, collection, attr: str, n: int, dtype):
    """A mesh array through its generic attribute where this Blender has one (Blender 4+: much
    faster than the loops' vertex_index; docs/solver.md, "Mesh arrays in the add-on"),
    else the old accessor."""
    layer = mesh.attributes.get(attribute)
    buf = np.empty(n, dtype=dtype)
    if layer is not None:
        try:  # a size or type mismatch raises: then the old accessor
            layer.data.foreach_get(field, buf)
            return buf
        except (TypeError, RuntimeError, AttributeError):
            pass
    collection.foreach_get(attr, buf)
    return buf


def _floats(collection, attr: str, n: int) -> np.ndarray:
    buf = np.empty(n, dtype=np.float32)
    collection.foreach_get(attr, buf)
    return buf


def _settings(mod) -> tuple:
    """A modifier's own settings (numbers, switches, choices, names of the objects it uses)."""
    out = []
    for prop in mod.bl_rna.properties:
        name = prop.identifier
        if (prop.is_readonly or name in ("rna_type", "name") or name.startswith(_SKIPPED_PREFIXES)
                or prop.type == "COLLECTION"):
            continue
        value = getattr(mod, name, None)
        if prop.type == "POINTER":
            value = getattr(value, "name", None) if isinstance(value, bpy.types.ID) else None
        elif getattr(prop, "is_array", False):
            value = tuple(value)
        out.append((name, value))
    if mod.type == "NODES":  # Geometry Nodes inputs are ID properties, not RNA properties
        for key in mod.keys():
            value = mod[key]
            out.append((key, repr(getattr(value, "name", value))))
    return tuple(out)


# ---- property update callbacks (properties.py) ----

def _scene(context):
    return getattr(context, "scene", None) or bpy.context.scene


def cloth_settings_changed(settings, context) -> None:
    """A setting of an object's cloth_solver changed (material, solver, pins, collider...)."""
    obj = settings.id_data
    if settings.role in BAKED_ROLES:
        mark(obj, f"the cloth settings of '{obj.name}' changed")
    elif settings.role == "COLLIDER":
        mark_scene(_scene(context), f"the settings of collider '{obj.name}' changed")


def role_changed(settings, context) -> None:
    obj = settings.id_data
    mark_scene(_scene(context), f"the role of '{obj.name}' changed")


def scene_settings_changed(settings, context) -> None:
    """A scene bake setting (wind, Blender physics options) changed."""
    mark_scene(settings.id_data, "the scene's wind or physics settings changed")


# ---- depsgraph handler ----

def _input_kind(obj) -> str | None:
    """'collider' or 'force field' if the bake reads this non-cloth object (a Collision-modifier
    object counts also right after its Collision was switched off), else None."""
    if obj.type == "MESH" and (obj.cloth_solver.role == "COLLIDER" or (
            obj.cloth_solver.role == "NONE" and any(m.type == "COLLISION"
                                                    for m in obj.modifiers))):
        return "collider"
    field = getattr(obj, "field", None)
    if field is not None and field.type in blender_physics.FIELD_TYPES:
        return "force field"
    return None


def _check(scene, depsgraph) -> None:
    for update in depsgraph.updates:
        if not isinstance(update.id, bpy.types.Object):
            continue
        if not (update.is_updated_transform or update.is_updated_geometry):
            continue
        obj = update.id.original
        if obj.type == "MESH" and obj.cloth_solver.role in BAKED_ROLES:
            s = obj.cloth_solver
            moved = f"'{obj.name}' was moved"
            changed = f"the mesh, shape keys or modifiers of '{obj.name}' changed"
            if obj.mode != "EDIT":
                _tell(moved if update.is_updated_transform else changed, obj,
                      update.is_updated_transform)
            if not s.is_baked or s.bake_outdated:
                continue
            if update.is_updated_transform:
                mark(obj, moved)
            elif obj.mode != "EDIT" and fingerprint(obj) != s.bake_fingerprint:
                mark(obj, changed)
        else:
            kind = _input_kind(obj)
            if kind is not None:
                mark_scene(scene, f"{kind} '{obj.name}' changed")


@bpy.app.handlers.persistent
def after_undo(*_args):
    """An undo or redo restores the status with the data; the depsgraph update that follows
    lists every object it restored (a collider moved back), so evaluate it now, ignored."""
    with suspended():
        try:
            bpy.context.view_layer.update()
        except Exception:
            traceback.print_exc()


@bpy.app.handlers.persistent
def on_depsgraph_update(scene, depsgraph=None):
    if _suspended or depsgraph is None:
        return
    try:
        _check(scene, depsgraph)
    except Exception:  # a handler must never break Blender's updates; the status is advisory
        traceback.print_exc()


HANDLERS = (("depsgraph_update_post", on_depsgraph_update), ("undo_post", after_undo),
            ("redo_post", after_undo))


def register():
    for name, fn in HANDLERS:
        getattr(bpy.app.handlers, name).append(fn)


def unregister():
    for name, fn in HANDLERS:
        handlers = getattr(bpy.app.handlers, name)
        while fn in handlers:
            handlers.remove(fn)
