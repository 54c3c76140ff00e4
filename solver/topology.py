"""Mesh connectivity derived once per bake (numpy, plus one small numba kernel).

Everything here is integer bookkeeping: triangles from polygons, unique edges, bending hinges,
flexion-spring chains, and the gather maps that let element kernels run in parallel without
racing on shared vertices.
"""

from __future__ import annotations

import numpy as np

from ._jit import njit
from .mesh import PolyMesh


def triangulate(mesh: PolyMesh) -> tuple[np.ndarray, np.ndarray]:
    """Fan-triangulate every polygon, keeping its winding.

    Returns:
        (triangles (T, 3) int64, tri_face (T,) index of the polygon each came from); polygon f
        with n corners gives n - 2 consecutive triangles (c0, c_{k+1}, c_{k+2}).
    """
    corners, tri_face = fan_corners(mesh)
    return mesh.face_indices[corners].astype(np.int64), tri_face


def fan_corners(mesh: PolyMesh) -> tuple[np.ndarray, np.ndarray]:
    """``triangulate``'s triangles as polygon corners (indices into ``face_indices``, where
    per-corner data such as UVs live), (T, 3) int64, and each one's polygon (T,)."""
    sizes = np.diff(mesh.face_offsets)
    n_tri = sizes - 2
    tri_face = np.repeat(np.arange(len(sizes)), n_tri)
    k = np.arange(len(tri_face)) - np.repeat(np.cumsum(n_tri) - n_tri, n_tri)
    start = mesh.face_offsets[tri_face]
    corners = np.stack([start, start + k + 1, start + k + 2], axis=1)
    return corners.astype(np.int64), tri_face.astype(np.int64)


def canonical_triangles(mesh: PolyMesh) -> np.ndarray:
    """Triangles of ``mesh`` independent of its polygon order and of where each loop starts.

    Each polygon is rotated to start at its lowest vertex index (winding kept), fan-triangulated,
    and the triangles are sorted. Two meshes with the same vertices and the same polygons then
    give the same array, so a collider's contacts do not depend on how Blender happened to order
    its faces (``bmesh.ops.create_uvsphere`` orders them differently from run to run).

    Returns:
        triangles (T, 3) int64, rows in lexicographic order.
    """
    o = mesh.face_offsets
    idx = np.asarray(mesh.face_indices, dtype=np.int64)
    sizes = np.diff(o)
    if len(sizes) == 0:
        return np.zeros((0, 3), np.int64)
    face = np.repeat(np.arange(len(sizes)), sizes)
    lowest = np.minimum.reduceat(idx, o[:-1])
    at_lowest = np.flatnonzero(idx == lowest[face])
    first = np.unique(face[at_lowest], return_index=True)[1]
    shift = at_lowest[first] - o[:-1]
    local = np.arange(len(idx)) - o[:-1][face]
    rotated = idx[o[:-1][face] + (local + shift[face]) % sizes[face]]
    tris, _ = triangulate(PolyMesh(mesh.positions, rotated, o))
    return tris[np.lexsort(tris.T[::-1])]


def alternate_quad_triangles(mesh: PolyMesh) -> np.ndarray:
    """Triangles of every quad split along its *other* diagonal (1, 3), shape (2·Q, 3).

    Averaging an energy over both splits of each quad removes the directional bias a single
    diagonal gives ([Vo2006] §7.1.1–7.1.2 in docs/references.md); for bending it removes a
    spurious coupling of bending to twist that made strips about 20% too soft.
    """
    return mesh.face_indices[alternate_quad_corners(mesh)].astype(np.int64)


def alternate_quad_corners(mesh: PolyMesh) -> np.ndarray:
    """``alternate_quad_triangles`` as polygon corners (indices into ``face_indices``)."""
    o = mesh.face_offsets
    q = o[:-1][np.diff(o) == 4]
    return np.concatenate([np.stack([q + 1, q + 2, q + 3], 1),
                           np.stack([q + 1, q + 3, q], 1)]).astype(np.int64)


def unique_edges(pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted unique undirected edges and, for each input pair, its row in them.

    Returns:
        (edges (E, 2) int64 with rows (low, high), inverse (N,) int64; -1 for self-loops).
    """
    e = np.sort(np.asarray(pairs, dtype=np.int64).reshape(-1, 2), axis=1)
    ok = e[:, 0] != e[:, 1]
    inverse = np.full(len(e), -1, dtype=np.int64)
    if not ok.any():
        return np.zeros((0, 2), dtype=np.int64), inverse
    edges, inv = np.unique(e[ok], axis=0, return_inverse=True)
    inverse[ok] = inv.ravel()
    return edges, inverse


def polygon_edge_pairs(mesh: PolyMesh) -> tuple[np.ndarray, np.ndarray]:
    """Boundary edges of each polygon (not triangulation diagonals), with repeats.

    Returns:
        (pairs (N, 2), face (N,)): every polygon contributes its n sides.
    """
    o = mesh.face_offsets
    idx = mesh.face_indices
    sizes = np.diff(o)
    face = np.repeat(np.arange(len(sizes)), sizes)
    corner = np.arange(len(idx))
    nxt = np.where(corner + 1 < o[1:][face], corner + 1, o[:-1][face])
    return np.stack([idx, idx[nxt]], axis=1), face


def polygon_diagonal_pairs(mesh: PolyMesh) -> tuple[np.ndarray, np.ndarray]:
    """Shear diagonals: both diagonals of each quad, fan diagonals of larger polygons.

    Returns:
        (pairs (N, 2), face (N,)).
    """
    o = mesh.face_offsets
    idx = mesh.face_indices
    sizes = np.diff(o)
    qf = np.nonzero(sizes == 4)[0]
    q = o[:-1][qf]
    pairs = [np.stack([idx[q], idx[q + 2]], 1), np.stack([idx[q + 1], idx[q + 3]], 1)]
    faces = [qf, qf]
    for f in np.nonzero(sizes > 4)[0]:  # n-gons are rare: a loop over them is fine
        c = idx[o[f]:o[f + 1]]
        pairs.append(np.stack([np.full(len(c) - 3, c[0]), c[2:-1]], 1))
        faces.append(np.full(len(c) - 3, f))
    return np.concatenate(pairs).astype(np.int64), np.concatenate(faces).astype(np.int64)


def hinges(tris: np.ndarray) -> np.ndarray:
    """Pairs of triangles sharing an edge, as (edge_a, edge_b, wing_1, wing_2), shape (H, 4).

    The ordering does not depend on the triangles' winding, so flipped faces still rest at a
    dihedral angle of 0 when flat. An edge shared by n > 2 triangles (non-manifold) gives n - 1
    hinges between consecutive triangles.
    """
    t = np.asarray(tris, dtype=np.int64)
    if len(t) == 0:
        return np.zeros((0, 4), dtype=np.int64)
    # all (edge, wing) triples: edge (t[k], t[k+1]) with wing t[k+2]
    a = np.concatenate([t[:, 0], t[:, 1], t[:, 2]])
    b = np.concatenate([t[:, 1], t[:, 2], t[:, 0]])
    w = np.concatenate([t[:, 2], t[:, 0], t[:, 1]])
    lo, hi = np.minimum(a, b), np.maximum(a, b)
    order = np.lexsort((w, hi, lo))
    lo, hi, w = lo[order], hi[order], w[order]
    same = (lo[1:] == lo[:-1]) & (hi[1:] == hi[:-1]) & (w[1:] != w[:-1])
    k = np.nonzero(same)[0]
    return np.stack([lo[k], hi[k], w[k], w[k + 1]], axis=1)


@njit
def _straight_chains_kernel(nbr_ptr, nbr_idx, pos, min_cos):
    """For each middle vertex b and neighbour a, the neighbour c most opposite to a.

    Returns pairs (a, c) whose chain a-b-c turns by less than acos(-min_cos).
    """
    out = []
    for b in range(len(nbr_ptr) - 1):
        for p in range(nbr_ptr[b], nbr_ptr[b + 1]):
            a = nbr_idx[p]
            da = pos[a] - pos[b]
            la = np.sqrt(np.sum(da * da))
            best, best_cos = -1, min_cos
            for q in range(nbr_ptr[b], nbr_ptr[b + 1]):
                c = nbr_idx[q]
                if c == a:
                    continue
                dc = pos[c] - pos[b]
                cs = -np.sum(da * dc) / (la * np.sqrt(np.sum(dc * dc)) + 1e-300)
                if cs > best_cos:
                    best, best_cos = c, cs
            if best >= 0 and a < best:
                out.append((a, b, best))
    res = np.empty((len(out), 3), dtype=np.int64)
    for i in range(len(out)):
        res[i, 0], res[i, 1], res[i, 2] = out[i]
    return res


def flexion_chains(edges: np.ndarray, positions: np.ndarray, vertex_count: int,
                   max_turn_deg: float = 30.0) -> np.ndarray:
    """Provot's skip-one bending chains along straight edge lines.

    Args:
        edges: polygon edges (E, 2).
        positions: rest positions [m], (V, 3).
        vertex_count: V.
        max_turn_deg: largest turning angle at the middle vertex for a chain to count.

    Returns:
        Chains (a, b, c), shape (C, 3); the flexion spring joins a and c. A chain is kept when b
        is the straightest continuation from both ends, so each grid line gives one spring per
        pair of vertices two apart.
    """
    ptr, nbr = vertex_neighbours(edges, vertex_count)
    min_cos = float(np.cos(np.radians(max_turn_deg)))
    chains = _straight_chains_kernel(ptr, nbr, np.ascontiguousarray(positions), min_cos)
    return np.unique(chains, axis=0) if len(chains) else chains


def vertex_neighbours(edges: np.ndarray, vertex_count: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR adjacency (ptr (V+1,), idx) of an undirected edge list."""
    both = np.concatenate([edges, edges[:, ::-1]]) if len(edges) else np.zeros((0, 2), np.int64)
    order = np.lexsort((both[:, 1], both[:, 0]))
    both = both[order]
    ptr = np.zeros(vertex_count + 1, dtype=np.int64)
    np.cumsum(np.bincount(both[:, 0], minlength=vertex_count), out=ptr[1:])
    return ptr, both[:, 1].copy()




def components(vertex_count: int, edges: np.ndarray) -> np.ndarray:
    """The connected part of each of vertex_count vertices joined by edges (E, 2), numbered
    from 0, (V,) int64."""
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    e = np.asarray(edges, dtype=np.int64).reshape(-1, 2)
    graph = coo_matrix((np.ones(len(e)), (e[:, 0], e[:, 1])), shape=(vertex_count, vertex_count))
    return connected_components(graph, directed=False)[1].astype(np.int64)


def welds(pairs: np.ndarray, vertex_count: int) -> np.ndarray:
    """For every vertex, the lowest vertex it is joined to through ``pairs`` (E, 2) (seams:
    a vertex sewn to a vertex sewn to a third joins all three), itself if none; (V,) int64.
    Contact tests treat vertices with the same entry as one point."""
    if len(pairs) == 0:
        return np.arange(vertex_count, dtype=np.int64)
    label = components(vertex_count, pairs)
    lowest = np.full(label.max() + 1, vertex_count, dtype=np.int64)
    np.minimum.at(lowest, label, np.arange(vertex_count))
    return lowest[label]


def seam_line(edges: np.ndarray, vertices: np.ndarray, name: str = "seam"
              ) -> tuple[np.ndarray, bool]:
    """``vertices`` in their order along the mesh ``edges`` (E, 2) that join them: an open
    line (from its end with the lower index) or a closed loop (from its lowest vertex).

    Returns:
        (ordered vertices (n,) int64, closed). Raises MeshError naming the problem when the
        vertices do not form one simple line or loop.
    """
    from .mesh import MeshError

    verts = np.unique(np.asarray(vertices, dtype=np.int64))
    if len(verts) < 2:
        raise MeshError(f"{name}: a seam line needs at least 2 vertices, got {len(verts)}")
    inside = np.zeros(int(max(verts.max(), edges.max(initial=0))) + 1, bool)
    inside[verts] = True
    e = edges[inside[edges[:, 0]] & inside[edges[:, 1]]]
    nbr: dict[int, list[int]] = {int(v): [] for v in verts}
    for a, b in e:
        nbr[int(a)].append(int(b))
        nbr[int(b)].append(int(a))
    branch = [v for v, n in nbr.items() if len(n) > 2]
    if branch:
        raise MeshError(f"{name}: vertex {branch[0]} has {len(nbr[branch[0]])} neighbours in "
                        "the seam line; it must be a single line or loop of edges")
    ends = sorted(v for v, n in nbr.items() if len(n) < 2)
    closed = not ends
    start = int(verts[0]) if closed else ends[0]
    order, prev = [start], -1
    while True:
        step = [n for n in nbr[order[-1]] if n != prev]
        if not step or (closed and step[0] == start):
            break
        prev = order[-1]
        order.append(step[0])
    if len(order) != len(verts):
        raise MeshError(f"{name}: its {len(verts)} vertices are not joined by edges into one "
                        f"line or loop ({len(order)} of them are)")
    return np.array(order, dtype=np.int64), closed


def match_seam_lines(a: np.ndarray, a_closed: bool, xa: np.ndarray, b: np.ndarray,
                     b_closed: bool, xb: np.ndarray, name: str = "seam") -> np.ndarray:
    """Vertex pairs (n, 2) joining two seam lines (``seam_line``) vertex by vertex, line b
    run forwards or backwards (and, for loops, started where) the pairs are closest in all at
    positions xa, xb [m] (the layout an artist makes: the two edges that meet face each other).
    Raises MeshError when the lines differ in vertex count or one is closed and the other not.
    """
    from .mesh import MeshError

    if len(a) != len(b):
        raise MeshError(f"{name}: the seam lines have {len(a)} and {len(b)} vertices; sewn "
                        "vertex by vertex, they need the same number")
    if a_closed != b_closed:
        raise MeshError(f"{name}: one seam line is a closed loop and the other is not")
    pa = xa[a]
    best, pairs = np.inf, b
    for seq in (b, b[::-1]):
        for shift in range(len(b) if a_closed else 1):
            cand = np.roll(seq, -shift)
            cost = float(np.sum((pa - xb[cand]) ** 2))
            if cost < best:
                best, pairs = cost, cand
    return np.stack([a, pairs], 1)


def sew_lines(mesh_a: PolyMesh, vertices_a, mesh_b: PolyMesh, vertices_b,
              name: str = "seam") -> np.ndarray:
    """Seam pairs (n, 2) (vertex of mesh_a, vertex of mesh_b) joining the line or loop of
    ``vertices_a`` along mesh_a's polygon edges to that of ``vertices_b`` vertex by vertex
    (``seam_line``, ``match_seam_lines``, at the meshes' positions). MeshError says why not."""
    lines = []
    for mesh, verts in ((mesh_a, vertices_a), (mesh_b, vertices_b)):
        edges, _ = unique_edges(polygon_edge_pairs(mesh)[0])
        lines.append(seam_line(edges, verts, name))
    (a, ca), (b, cb) = lines
    return match_seam_lines(a, ca, mesh_a.positions, b, cb, mesh_b.positions, name)
