"""Where in a cloth object's modifier stack the cloth is read, and the modifiers that stay on top
of its bake.

The bake writes one shape-key position per vertex of the object's own mesh, and shape keys act
before every modifier. So the cloth is read where Blender's own Cloth modifier usually sits:
just above the first enabled *refining* modifier (``REFINING``: Subdivision Surface,
Multiresolution, Solidify, Bevel, Triangulate, Edge Split, Wireframe, Weighted Normal, Normal
Edit, and the Smooth by Angle node group; enabled = shown in viewports or renders). The
modifiers above that point are inputs: their result is in the keys, and the bake switches them
off (Free Bake switches them back on). That modifier and every one below it stay on top of the
bake, as they are: while the scene is read they are switched off in viewports, after the bake
they refine the simulated cage at playback and render.

The modifiers above the cloth must keep the vertex count (deformers such as Displace, Armature,
Hook, Shrinkwrap); one that does not (Decimate, Mirror, Array, Remesh, Weld, a generating
Geometry Nodes modifier) stops the bake with an error naming it, before anything is written.
Such modifiers are refused rather than put on top because the cloth would then be simulated on a
mesh other than the one the user built above them: Mirror and Array would simulate one copy,
Decimate the dense mesh.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

from .errors import BakeError

# Blender's modifier types that add detail to a surface without being what the cloth should
# simulate: artists put them below Blender's Cloth modifier. The normal modifiers are among
# them because shape keys hold positions only: switched off after a bake as inputs, their
# shading would be lost.
REFINING = {
    "SUBSURF": "Subdivision Surface",
    "MULTIRES": "Multiresolution",
    "SOLIDIFY": "Solidify",
    "BEVEL": "Bevel",
    "TRIANGULATE": "Triangulate",
    "EDGE_SPLIT": "Edge Split",
    "WIREFRAME": "Wireframe",
    "WEIGHTED_NORMAL": "Weighted Normal",
    "NORMAL_EDIT": "Normal Edit",
}
# Blender 4.1+'s Shade Auto Smooth adds a Geometry Nodes modifier with this node group (only
# its sharp edges): refining like the normal modifiers
SMOOTH_BY_ANGLE = "Smooth by Angle"


# The temporary modifier that shows a running bake's frames (live.py): never part of the stack
# the bake reads or keeps.
LIVE_NAME = "Cloth Solver Live"


def is_live(mod) -> bool:
    return mod.type == "MESH_CACHE" and mod.name.startswith(LIVE_NAME)


def _ours(obj, mod) -> bool:
    """The live view's modifier, or the Mesh Cache modifier of the object's disk-cache bake
    (disk_cache.py): the bake's output, never an input of the next bake."""
    return is_live(mod) or (mod.type == "MESH_CACHE"
                            and mod.name == obj.cloth_solver.bake_cache_modifier)


def refining(mod) -> bool:
    """True for a modifier that sits on top of a bake (see REFINING)."""
    if mod.type == "NODES":
        group = getattr(mod, "node_group", None)
        return group is not None and group.name.startswith(SMOOTH_BY_ANGLE)
    return mod.type in REFINING


def _enabled(mod) -> bool:
    return mod.show_viewport or mod.show_render


def cloth_index(obj) -> int:
    """Index in ``obj.modifiers`` of the first enabled refining modifier (the number of
    modifiers if there is none): the cloth is read above it."""
    for i, mod in enumerate(obj.modifiers):
        if refining(mod) and _enabled(mod) and not _ours(obj, mod):
            return i
    return len(obj.modifiers)


def on_top(obj) -> list:
    """The modifiers that stay on top of the bake: the first refining one and those below it."""
    return [m for m in list(obj.modifiers)[cloth_index(obj):] if not _ours(obj, m)]


def inputs(obj) -> list:
    """The enabled modifiers above the cloth (their effect goes into the keys)."""
    return [m for m in list(obj.modifiers)[:cloth_index(obj)]
            if _enabled(m) and not _ours(obj, m)]


def muted_by_bake(obj) -> list:
    """The enabled modifiers a bake switches off: the inputs, and Blender's Cloth modifier
    wherever it is (on top it would simulate again at playback)."""
    return inputs(obj) + [m for m in on_top(obj) if m.type == "CLOTH" and _enabled(m)]


def note(obj) -> str | None:
    """A line for the bake summary naming the modifiers kept on top (None if there are none)."""
    kept = [m for m in on_top(obj) if _enabled(m) and m.type != "CLOTH"]
    if not kept:
        return None
    names = ", ".join(f"'{m.name}'" for m in kept)
    return (f"'{obj.name}' is baked above its {'modifier' if len(kept) == 1 else 'modifiers'} "
            f"{names}, which {'stays' if len(kept) == 1 else 'stay'} on")


@contextmanager
def on_top_off(objects):
    """While the bake reads the scene, switch each object's modifiers on top of the bake off in
    viewports (the bake reads the viewport evaluation); yields {object name: Stack} as the
    stacks were before. Restored on exit."""
    stacks = {obj.name: Stack(inputs(obj), on_top(obj)) for obj in objects}
    switched = []
    try:
        for obj in objects:
            for mod in stacks[obj.name].on_top:
                if mod.show_viewport:
                    mod.show_viewport = False
                    switched.append(mod)
        yield stacks
    finally:
        for mod in switched:
            mod.show_viewport = True


@dataclass
class Stack:
    """A cloth object's modifiers split where the cloth is read.

    Attributes:
        inputs: the enabled modifiers above the cloth.
        on_top: the modifiers from the first enabled refining one down (maybe disabled ones).
    """

    inputs: list
    on_top: list


def check_vertex_count(obj, count: int, stack: Stack, context, frame: int) -> None:
    """Raise BakeError naming the modifier above the cloth that changes the vertex count, if
    the evaluated mesh read for the cloth (``count`` vertices at ``frame``) differs from the
    object's mesh. Call while ``on_top_off`` holds (``stack`` is what it yielded); finding the
    culprit switches the input modifiers off and on one by one (restored before returning)."""
    own = len(obj.data.vertices)
    if count == own:
        return
    culprit, changed = _culprit(obj, stack.inputs, context, own)
    if culprit is None:  # not one modifier alone (should not happen): name them all
        names = ", ".join(f"'{m.name}'" for m in stack.inputs) or "none"
        raise BakeError(f"'{obj.name}': the modifiers above the cloth ({names}) change the vertex "
                        f"count from {own} to {count} at frame {frame}; the bake writes one "
                        "shape-key position per vertex of the mesh. Apply or remove the one that "
                        "adds or removes vertices")
    if stack.on_top:
        first = stack.on_top[0].name
        fix = (f"Apply '{culprit.name}' (Modifier > Apply), or move it below '{first}': the "
               f"modifiers from '{first}' down stay on top of the bake")
    else:
        kinds = ", ".join([*REFINING.values(), SMOOTH_BY_ANGLE])
        fix = (f"Apply '{culprit.name}' (Modifier > Apply) or remove it; only the modifiers "
               f"from the first {kinds} modifier down may change the vertex count (they stay on "
               "top of the bake)")
    kind = culprit.type.replace("_", " ").title()
    raise BakeError(f"'{obj.name}': modifier '{culprit.name}' ({kind}) changes the vertex "
                    f"count from {own} to {changed} above the point where the cloth is read "
                    f"(frame {frame}); the bake writes one shape-key position per vertex of the "
                    f"mesh. {fix}")


def _culprit(obj, inputs: list, context, own: int):
    """(the first of ``inputs`` after which the evaluated vertex count differs from ``own``,
    that count), or (None, own): the inputs shown in viewports are switched on one at a time."""
    mods = [m for m in inputs if m.show_viewport]
    saved = [m.show_viewport for m in mods]
    try:
        for m in mods:
            m.show_viewport = False
        for m in mods:
            m.show_viewport = True
            ev = obj.evaluated_get(context.evaluated_depsgraph_get())
            mesh = ev.to_mesh()
            try:
                count = len(mesh.vertices)
            finally:
                ev.to_mesh_clear()
            if count != own:
                return m, count
        return None, own
    finally:
        for m, shown in zip(mods, saved):
            m.show_viewport = shown
