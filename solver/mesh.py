"""Polygon meshes as arrays, and the grid generator of the scene-file contract.

A ``PolyMesh`` keeps the user's polygons (triangles, quads, n-gons) exactly, with vertex order
and count unchanged; ``topology.py`` derives triangles, edges and bending hinges from it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


class MeshError(ValueError):
    """The mesh cannot be simulated (bad indices, non-finite coordinates, ...)."""


@dataclass(frozen=True)
class PolyMesh:
    """A polygon mesh.

    Attributes:
        positions: vertex positions [m], shape (V, 3), float64.
        face_indices: vertex indices of all faces concatenated, shape (sum of sizes,), int64.
        face_offsets: start of face f in ``face_indices`` is ``face_offsets[f]``,
            shape (F + 1,), int64, ``face_offsets[-1] == len(face_indices)``.
    """

    positions: np.ndarray
    face_indices: np.ndarray
    face_offsets: np.ndarray

    @property
    def vertex_count(self) -> int:
        return int(self.positions.shape[0])

    @property
    def face_count(self) -> int:
        return int(self.face_offsets.shape[0] - 1)

    def faces(self) -> list[np.ndarray]:
        """Faces as a list of index arrays (for tests and small meshes only)."""
        o = self.face_offsets
        return [self.face_indices[o[f]:o[f + 1]] for f in range(self.face_count)]

    @staticmethod
    def from_faces(positions, faces) -> "PolyMesh":
        """Build from positions (V, 3) and a sequence of faces (each a sequence of indices)."""
        sizes = np.array([len(f) for f in faces], dtype=np.int64)
        offsets = np.zeros(len(faces) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        flat = (np.concatenate([np.asarray(f, dtype=np.int64) for f in faces])
                if len(faces) else np.zeros(0, dtype=np.int64))
        mesh = PolyMesh(np.array(positions, dtype=np.float64).reshape(-1, 3), flat, offsets)
        mesh.validate()
        return mesh

    def validate(self) -> None:
        """Raise MeshError naming the first problem found."""
        p = self.positions
        if p.ndim != 2 or p.shape[1] != 3:
            raise MeshError(f"positions must have shape (V, 3), got {p.shape}")
        if p.shape[0] == 0:
            raise MeshError("mesh has no vertices")
        if not np.all(np.isfinite(p)):
            raise MeshError("mesh has non-finite vertex coordinates")
        sizes = np.diff(self.face_offsets)
        if np.any(sizes < 3):
            f = int(np.argmax(sizes < 3))
            raise MeshError(f"face {f} has {int(sizes[f])} vertices; a face needs at least 3")
        idx = self.face_indices
        if idx.size and (idx.min() < 0 or idx.max() >= p.shape[0]):
            raise MeshError(f"face vertex index out of range 0..{p.shape[0] - 1}")


def grid_mesh(size=(1.0, 1.0), resolution=(21, 21), center=(0.0, 0.0, 1.0)) -> PolyMesh:
    """A flat quad grid in the XY plane.

    Vertex (i, j) has index ``j * nx + i`` and sits at
    ``center + ((i / (nx - 1) - 0.5) * sx, (j / (ny - 1) - 0.5) * sy, 0)``.

    Args:
        size: (sx, sy) extent [m].
        resolution: (nx, ny) vertex counts, each >= 2.
        center: grid centre [m].
    """
    nx, ny = int(resolution[0]), int(resolution[1])
    if nx < 2 or ny < 2:
        raise MeshError(f"grid resolution must be at least 2 x 2, got {nx} x {ny}")
    sx, sy = float(size[0]), float(size[1])
    if not (sx > 0 and sy > 0):
        raise MeshError(f"grid size must be positive, got {sx} x {sy}")
    i, j = np.meshgrid(np.arange(nx), np.arange(ny))  # shape (ny, nx): row j, column i
    pos = np.zeros((ny * nx, 3))
    pos[:, 0] = ((i.ravel() / (nx - 1)) - 0.5) * sx
    pos[:, 1] = ((j.ravel() / (ny - 1)) - 0.5) * sy
    pos += np.asarray(center, dtype=np.float64)
    a = (j[:-1, :-1] * nx + i[:-1, :-1]).ravel()  # lower-left corner of each quad
    quads = np.stack([a, a + 1, a + 1 + nx, a + nx], axis=1)
    offsets = np.arange(0, 4 * len(quads) + 1, 4, dtype=np.int64)
    return PolyMesh(pos, quads.ravel().astype(np.int64), offsets)
