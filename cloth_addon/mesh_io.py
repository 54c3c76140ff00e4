"""The bpy <-> numpy bridge for meshes: evaluated world-space vertices, polygons, vertex-group
weights and shape-key data, all through ``foreach_get``/``foreach_set`` (no per-vertex Python
loops, except vertex-group weights, which have no bulk accessor; read once per bake).
"""

from __future__ import annotations

import numpy as np

from ..solver import PolyMesh
from .errors import BakeError


def matrix(obj) -> np.ndarray:
    """``obj.matrix_world`` as a (4, 4) float64 array (evaluated object: its animated value)."""
    return np.array(obj.matrix_world, dtype=np.float64)


def to_world(local: np.ndarray, m: np.ndarray) -> np.ndarray:
    """Object-local points (N, 3) [m] -> world space under the 4x4 matrix ``m`` (any scale,
    negative or not uniform)."""
    return local @ m[:3, :3].T + m[:3, 3]


def to_local(world: np.ndarray, m: np.ndarray, name: str = "object") -> np.ndarray:
    """World points (..., N, 3) -> object-local under ``m``; a singular matrix is an error."""
    linear = m[:3, :3]
    # The inverse from the columns' cross products, not LAPACK: inside Blender beside numba's
    # threads each np.linalg.inv of a 3x3 took ~9 ms (its BLAS threads waking), 0.4 s on the
    # main thread for the 48 frames of a bake's keys.
    c0, c1, c2 = linear[:, 0], linear[:, 1], linear[:, 2]
    rows = np.array([np.cross(c1, c2), np.cross(c2, c0), np.cross(c0, c1)])
    det = float(rows[0] @ c0)
    if abs(det) < 1e-18:
        raise BakeError(f"'{name}' has zero scale on some axis; its shape keys cannot hold the "
                        "cloth. Fix the object's scale and bake again")
    return (world - m[:3, 3]) @ (rows / det).T


def vertex_positions(mesh) -> np.ndarray:
    """Mesh vertex coordinates (V, 3) float64 (as stored: object-local)."""
    buf = np.empty(len(mesh.vertices) * 3, dtype=np.float32)
    mesh.vertices.foreach_get("co", buf)
    return buf.reshape(-1, 3).astype(np.float64)


def polygons(mesh) -> tuple[np.ndarray, np.ndarray]:
    """Polygon vertex indices concatenated (sum of sizes,) and offsets (F + 1,), int64."""
    loops, offsets = _polygon_loops(mesh)
    loop_vertex = np.empty(len(mesh.loops), dtype=np.int32)
    mesh.loops.foreach_get("vertex_index", loop_vertex)
    return loop_vertex[loops].astype(np.int64), offsets


def loose_edges(mesh) -> np.ndarray:
    """The mesh's loose edges (edges of no polygon) as vertex pairs (L, 2) int64 (sewing
    springs in Blender's cloth; seams here)."""
    pairs = np.empty(len(mesh.edges) * 2, dtype=np.int32)
    mesh.edges.foreach_get("vertices", pairs)
    used = np.zeros(len(mesh.edges), dtype=bool)
    loop_edge = np.empty(len(mesh.loops), dtype=np.int32)
    mesh.loops.foreach_get("edge_index", loop_edge)
    used[loop_edge] = True
    return pairs.reshape(-1, 2)[~used].astype(np.int64)


def active_uv(mesh) -> np.ndarray | None:
    """The active UV map's (u, v) of every polygon corner, in ``polygons`` order, (C, 2)
    float64; None without a UV map."""
    layer = mesh.uv_layers.active
    if layer is None:
        return None
    uv = np.empty(len(mesh.loops) * 2, dtype=np.float32)
    layer.data.foreach_get("uv", uv)
    return uv.reshape(-1, 2)[_polygon_loops(mesh)[0]].astype(np.float64)


def _polygon_loops(mesh) -> tuple[np.ndarray, np.ndarray]:
    """Loop indices of every polygon's corners in polygon order, and the offsets (F + 1,)."""
    n = len(mesh.polygons)
    start = np.empty(n, dtype=np.int32)
    total = np.empty(n, dtype=np.int32)
    mesh.polygons.foreach_get("loop_start", start)
    mesh.polygons.foreach_get("loop_total", total)
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(total, out=offsets[1:])
    if np.array_equal(start, offsets[:-1]):  # the usual layout: loops stored polygon by polygon
        return np.arange(offsets[-1]), offsets
    return np.repeat(start - offsets[:-1], total) + np.arange(offsets[-1]), offsets


class EvaluatedMesh:
    """An object's evaluated mesh (modifiers, shape keys, armatures applied) in world space,
    read at the depsgraph's current frame.

    ``scale`` is the scene's metres per Blender unit: it is folded into ``matrix`` (world
    metres = scale * world units), so ``to_local(positions, matrix)`` gives the object's own
    coordinates back in Blender units.

    Attributes:
        positions: world-space vertex positions [m], (V, 3).
        matrix: the object's world matrix at that frame, times ``scale``, (4, 4).
        mesh: a PolyMesh of the evaluated polygons (only when ``topology`` was asked for).
        uv: the active UV map per polygon corner (C, 2), or None (no map, or no ``topology``).
        loose_edges: the loose edges (L, 2) when ``loose`` was asked for, else None.
    """

    def __init__(self, obj, depsgraph, topology: bool = False, scale: float = 1.0,
                 loose: bool = False):
        ev = obj.evaluated_get(depsgraph)
        mesh = ev.to_mesh()
        try:
            local = vertex_positions(mesh)
            faces = polygons(mesh) if topology else None
            self.uv = active_uv(mesh) if topology else None
            self.loose_edges = loose_edges(mesh) if loose else None
        finally:
            ev.to_mesh_clear()
        self.matrix = matrix(ev)
        if scale != 1.0:
            self.matrix[:3] *= scale
        self.positions = to_world(local, self.matrix)
        self.mesh = None
        if faces is not None:
            if len(faces[1]) < 2:
                raise BakeError(f"'{obj.name}' has no faces; cloth and colliders need faces")
            self.mesh = PolyMesh(self.positions, faces[0], faces[1])


def vertex_group_weights(obj, group_name: str, what: str = "pin group") -> np.ndarray:
    """Weights (V,) of vertex group ``group_name`` on the object's own mesh (0 outside it);
    ``what`` names the group's use in the error when it does not exist."""
    group = obj.vertex_groups.get(group_name)
    if group is None:
        raise BakeError(f"'{obj.name}': {what} '{group_name}' does not exist "
                        f"(vertex groups: {', '.join(g.name for g in obj.vertex_groups) or 'none'})")
    index = group.index
    weights = np.zeros(len(obj.data.vertices))
    for v in obj.data.vertices:  # no bulk accessor for deform weights; once per bake
        for g in v.groups:
            if g.group == index:
                weights[v.index] = g.weight
                break
    return weights


def key_block_positions(key_block) -> np.ndarray:
    """A shape key's coordinates (V, 3) float64 (object-local)."""
    buf = np.empty(len(key_block.data) * 3, dtype=np.float32)
    key_block.data.foreach_get("co", buf)
    return buf.reshape(-1, 3).astype(np.float64)


def set_key_block_positions(key_block, positions: np.ndarray) -> None:
    """Write (V, 3) object-local coordinates into a shape key."""
    key_block.data.foreach_set("co", np.ascontiguousarray(positions, dtype=np.float32).ravel())
