"""Bakes to a point cache on disk that Blender reads natively, instead of shape keys.

With the scene's *Bake To* set to *Disk Cache (PC2)*, each cloth's frames go into
``<Cache Directory>/<object name>.pc2`` (solver/formats/pc2.py), written frame by frame while the
bake simulates (into ``<name>.pc2.part`` beside it), and the object gets a Mesh Cache modifier
("Cloth Cache") reading it where the cloth is read (modifier_stack.py), so the .blend grows by a
modifier, not by vertices × frames. Shape keys would add the whole animation to the file (a
16k-vertex cloth over 250 frames: about 50 MB).

The cache behaves like the keys: the bake record names the file and the modifier
(``bake_cache_file``), so the bake status, Free Bake (which deletes the file, as Blender's own
Free Bake deletes its cache) and a re-bake work the same; the modifiers above the cloth are
switched off as for keys (the cache holds their effect). A bake replaces the previous file only
once it is accepted: the ``.part`` file is renamed over it, and the previous file is put back
should installing the new one fail; a cancelled or failed bake deletes its ``.part``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import bpy
import numpy as np

from ..solver import PC2Writer
from . import modifier_stack
from .errors import BakeError

MODIFIER = "Cloth Cache"
PART = ".part"


def enabled(scene) -> bool:
    return scene.cloth_solver.bake_to == "PC2"


def folder(scene) -> Path:
    """The scene's cache directory as an absolute path; BakeError if it cannot be one."""
    raw = scene.cloth_solver.cache_directory
    if not raw:
        raise BakeError("Bake To is Disk Cache but the Cache Directory is empty; choose a folder")
    if raw.startswith("//") and not bpy.data.filepath:
        raise BakeError(f"the Cache Directory '{raw}' is relative to the .blend file, which is "
                        "not saved yet; save the file first or choose an absolute folder")
    return Path(bpy.path.abspath(raw))


def file_name(obj) -> str:
    """A file name for the object's cache (its name, with what a file system refuses replaced)."""
    return re.sub(r'[\\/:*?"<>|\x00-\x1f]', "_", obj.name) + ".pc2"


def stored_path(path: Path) -> str:
    """How the modifier and the record store ``path``: relative to the .blend when it is saved
    (the folder travels with the file), else absolute."""
    if bpy.data.filepath:
        try:
            return bpy.path.relpath(str(path))
        except ValueError:  # another drive (Windows)
            pass
    return str(path)


class CacheWriter:
    """One cloth's cache while the bake simulates: frames appended to ``<name>.pc2.part``."""

    def __init__(self, path: Path, vertex_count: int, frame_start: int):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self.part = path.with_name(path.name + PART)
        self.writer = PC2Writer(self.part, vertex_count, start=frame_start)

    def append(self, local: np.ndarray) -> None:
        self.writer.append(local)

    def close(self, frames: int | None = None) -> None:
        """Close the file; ``frames``: keep only the first ones (a stopped bake)."""
        if frames is not None and frames < self.writer.frames:
            self.writer.truncate(frames)
        self.writer.close()

    def discard(self) -> None:
        self.writer.close()
        try:
            self.part.unlink()
        except FileNotFoundError:
            pass


@dataclass
class Installed:
    """A cache put in place: what ``undo`` needs to put the previous file back. ``stale``: a
    previous bake's file under another name (the object was renamed), deleted on commit."""

    path: Path
    backup: Path | None
    stale: bool = False


def install(writer: CacheWriter) -> Installed:
    """Move the finished ``.part`` over the cache file, keeping the previous file aside."""
    backup = None
    if writer.path.exists():
        backup = writer.path.with_name(writer.path.name + ".previous")
        os.replace(writer.path, backup)
    os.replace(writer.part, writer.path)
    return Installed(writer.path, backup)


def undo(done: Installed) -> None:
    if done.stale:
        return
    if done.backup is not None:
        os.replace(done.backup, done.path)
    else:
        done.path.unlink(missing_ok=True)


def commit(done: Installed) -> None:
    if done.stale:
        done.path.unlink(missing_ok=True)
    elif done.backup is not None:
        done.backup.unlink(missing_ok=True)


def add_modifier(obj, path: Path, frame_start: int):
    """The Mesh Cache modifier of a disk-cache bake, where the cloth is read."""
    index = modifier_stack.cloth_index(obj)
    mod = obj.modifiers.new(MODIFIER, "MESH_CACHE")
    mod.cache_format = "PC2"
    mod.filepath = stored_path(path)
    mod.frame_start = frame_start
    mod.interpolation = "NONE"
    mod.deform_mode = "OVERWRITE"
    last = len(obj.modifiers) - 1
    if index < last:
        if hasattr(obj.modifiers, "move"):
            obj.modifiers.move(last, index)
        else:
            with bpy.context.temp_override(object=obj, active_object=obj):
                bpy.ops.object.modifier_move_to_index(modifier=mod.name, index=index)
    return mod


def write_bake(obj, frame_start: int, frames: int, path: Path) -> None:
    """Record a disk-cache bake of ``frames`` frames from ``frame_start`` in ``path`` (already
    in place) and add its modifier. Any previous bake must have been freed."""
    s = obj.cloth_solver
    if s.is_baked:
        raise RuntimeError("free the previous bake first")
    s.bake_frame_start, s.bake_frame_end, s.is_baked = frame_start, frame_start + frames - 1, True
    s.bake_cache_file = stored_path(path)
    mod = add_modifier(obj, path, frame_start)
    s.bake_cache_modifier = mod.name


def free(obj, delete_file: bool = True) -> None:
    """Remove a disk-cache bake's modifier (and its file) from the record's object."""
    s = obj.cloth_solver
    mod = obj.modifiers.get(s.bake_cache_modifier) if s.bake_cache_modifier else None
    if mod is not None and mod.type == "MESH_CACHE":
        obj.modifiers.remove(mod)
    if delete_file and s.bake_cache_file:
        Path(bpy.path.abspath(s.bake_cache_file)).unlink(missing_ok=True)
    s.bake_cache_file = ""
    s.bake_cache_modifier = ""


def check_file(obj) -> None:
    """BakeError if another object's disk-cache bake uses the file this one would write."""
    name = file_name(obj)
    for other in bpy.data.objects:
        if other != obj and other.type == "MESH" and other.cloth_solver.bake_cache_file:
            if Path(other.cloth_solver.bake_cache_file).name == name:
                raise BakeError(f"'{obj.name}' would write its cache to {name}, which the bake "
                                f"of '{other.name}' uses; rename one of them")
