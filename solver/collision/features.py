"""Vertices and edges of a triangle mesh, each assigned to exactly one triangle.

Collision tests run over pairs of triangles whose boxes overlap; testing every vertex and edge
of both triangles would test each vertex–triangle pair up to six times and each edge pair up to
four times. Instead each vertex and each edge is *owned* by one triangle that contains it (the
first one), and a triangle pair tests only the features its triangles own. Since a triangle's
box contains its features, every close feature pair is still tested, exactly once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..topology import unique_edges


@dataclass(frozen=True)
class MeshFeatures:
    """Triangles with their edges and the features each triangle owns.

    Attributes:
        tris: vertex indices (T, 3).
        edges: unique edges (E, 2) (low, high).
        tri_edges: the edge of each triangle side (T, 3): side k joins corners k and k + 1.
        own_vertices: vertices owned by each triangle (T, 3), −1 padded.
        own_edges: edges owned by each triangle (T, 3), −1 padded.
    """

    tris: np.ndarray
    edges: np.ndarray
    tri_edges: np.ndarray
    own_vertices: np.ndarray
    own_edges: np.ndarray


def mesh_features(tris: np.ndarray, vertex_count: int) -> MeshFeatures:
    """Edges and feature ownership of triangles (T, 3) over vertex_count vertices."""
    tris = np.ascontiguousarray(tris, dtype=np.int64).reshape(-1, 3)
    T = len(tris)
    sides = np.stack([tris, np.roll(tris, -1, axis=1)], axis=2).reshape(-1, 2)
    edges, inverse = unique_edges(sides)
    tri_edges = inverse.reshape(T, 3)
    own_v = np.full((T, 3), -1, np.int64)
    own_e = np.full((T, 3), -1, np.int64)
    # the first occurrence of each vertex / edge in triangle order owns it
    flat_v = tris.ravel()
    _, first_v = np.unique(flat_v, return_index=True)
    own_v.ravel()[first_v] = flat_v[first_v]
    flat_e = tri_edges.ravel()
    ok = flat_e >= 0
    _, first_e = np.unique(np.where(ok, flat_e, -1), return_index=True)
    first_e = first_e[flat_e[first_e] >= 0]
    own_e.ravel()[first_e] = flat_e[first_e]
    return MeshFeatures(tris, edges, tri_edges, own_v, own_e)
