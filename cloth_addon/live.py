"""Frames shown in the viewport while they are simulated, without writing into the user's data.

Each cloth of a running bake gets a temporary Mesh Cache modifier ("Cloth Solver Live") where
the cloth is read (modifier_stack.py: above the first refining modifier), reading a PC2 file in
a temporary folder that the bake appends a frame to as soon as the frame is simulated
(solver/formats/pc2.py). The modifier overwrites the positions, so the evaluated mesh at a
simulated frame is exactly that frame's positions, whatever the previous bake's keys or the
modifiers above it do, and the refining modifiers below it act on it as they will on the bake;
frames not simulated yet show the last one simulated.

The modifier is the only thing the bake adds before it is accepted, and it never outlives the
bake: removed when the bake ends (accepted, stopped, cancelled or failed), before a file is
saved (and put back after), and by the undo/load handlers should an undo step taken during a
bake bring one back. Blender's session-recovery file on quit is written from the undo memory,
which does not hold it. It is left out of the bake status's fingerprint and of the stack the
bake reads (bake_status.py, modifier_stack.py).
"""

from __future__ import annotations

import shutil
import tempfile
import traceback
from pathlib import Path

import bpy
import numpy as np

from ..solver import PC2Writer
from . import modifier_stack

NAME = modifier_stack.LIVE_NAME
is_live = modifier_stack.is_live


def add_modifier(obj, name: str, path: Path, frame_start: int):
    """A Mesh Cache modifier reading the PC2 file ``path`` (sample 0 at ``frame_start``),
    placed where the bake reads the cloth."""
    index = modifier_stack.cloth_index(obj)
    mod = obj.modifiers.new(name, "MESH_CACHE")
    mod.cache_format = "PC2"
    mod.filepath = str(path)
    mod.frame_start = frame_start
    mod.interpolation = "NONE"  # whole frames, bit for bit
    mod.deform_mode = "OVERWRITE"
    mod.show_in_editmode = False
    _move(obj, mod, index)
    return mod


def _move(obj, mod, index: int) -> None:
    last = len(obj.modifiers) - 1
    if index >= last:
        return
    if hasattr(obj.modifiers, "move"):  # Blender 4.0+
        obj.modifiers.move(last, index)
        return
    with bpy.context.temp_override(object=obj, active_object=obj):
        bpy.ops.object.modifier_move_to_index(modifier=mod.name, index=index)


class LiveView:
    """The running bake's frames in the viewport: ``begin`` per cloth object with its first
    frame, ``append`` per simulated frame (object-local positions, Blender units), ``close``
    when the bake ends."""

    def __init__(self):
        self.folder = Path(tempfile.mkdtemp(prefix="cloth_solver_live_"))
        self._writers: dict[str, PC2Writer] = {}
        self._objects: dict[str, object] = {}
        self._frame_start: dict[str, int] = {}
        self.hidden = False  # modifiers taken off for a save

    def begin(self, obj, frame_start: int, local: np.ndarray) -> None:
        name = obj.name
        path = self.folder / f"{len(self._writers):03d}.pc2"
        writer = PC2Writer(path, len(local), start=frame_start)
        writer.append(local)
        self._writers[name], self._objects[name] = writer, obj
        self._frame_start[name] = frame_start
        add_modifier(obj, NAME, path, frame_start)

    def append(self, obj, local: np.ndarray, shown: bool = True) -> None:
        """The next frame; ``shown``: the scene is at that frame or after it, where the
        modifier shows it (at an earlier frame the view does not change: no redraw, which
        costs the simulation its time on a machine that draws on the CPU)."""
        self._writers[obj.name].append(local)
        if shown:
            # the modifier reads the file again at the next evaluation; a geometry update only
            # (a bare update_tag also flags the transform, which bake_status takes for a move)
            obj.update_tag(refresh={"DATA"})

    def frames(self, obj) -> int:
        return self._writers[obj.name].frames

    def hide(self) -> None:
        """Take the modifiers off (a file is about to be saved)."""
        remove_all()
        self.hidden = True

    def show(self) -> None:
        """Put them back after a save."""
        if not self.hidden:
            return
        self.hidden = False
        for name, obj in self._objects.items():
            try:
                add_modifier(obj, NAME, self._writers[name].path, self._frame_start[name])
            except ReferenceError:
                pass

    def close(self) -> None:
        for writer in self._writers.values():
            writer.close()
        remove_all()
        shutil.rmtree(self.folder, ignore_errors=True)


def remove_all() -> int:
    """Remove every live modifier of the file (the objects of a bake may have been replaced by
    an undo); returns how many."""
    removed = 0
    for obj in bpy.data.objects:
        if obj.type != "MESH" or obj.library is not None:
            continue
        for mod in [m for m in obj.modifiers if is_live(m)]:
            try:
                obj.modifiers.remove(mod)
                removed += 1
            except Exception:
                traceback.print_exc()
    return removed
