"""Degenerate elements of a cloth mesh, and how a simulation goes around them.

Meshes from modelling, retopology and scans carry collapsed faces, zero-length edges and
zero-area triangles. Such an element has no shape to restore: its stiffness per unit length or
area divides by zero, and a single one sent a sheet flying. So an element is *degenerate* when
it is small beside the mesh (``DEGENERATE``), and it gets no stiffness of its own; its vertices
are carried by their neighbours:

- vertices joined by a degenerate edge or polygon diagonal (shorter than ``DEGENERATE`` times
  the piece's median edge) are simulated as one vertex (welded), as Blender's *Merge by
  Distance* would join them; a quad with a collapsed side becomes a triangle;
- a polygon left with fewer than three distinct corners, or thinner than ``DEGENERATE`` times
  its longest edge (corners in a line), is left out;
- a vertex of left-out polygons only is carried by the nearest segment of its polygons' other
  vertices (on it, when the corners lie in a line), unless a pin of weight 1 holds it.

Vertices that lie on one another without an edge between them are not degenerate: the cloth is
split there (pattern pieces meeting, a mesh whose faces were never joined). They are simulated
as they are, and ``notes`` says where (``split_vertices``).

``reduce_spec`` turns a SimulationSpec into the spec actually simulated and an ``Expansion``
that maps its positions back onto every vertex of the user's meshes; the vertices keep their
starting offsets from what carries them, so frame 0 is the input exactly. Zero-area triangles
inside an otherwise sound polygon get no stiffness in the model itself (``thin_triangles``,
used by model.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from .mesh import MeshError, PolyMesh
from .spec import ClothSetup, SimulationSpec
from .topology import polygon_diagonal_pairs, polygon_edge_pairs, welds

# An edge shorter than this fraction of the mesh's median edge, or a polygon or triangle thinner
# than this fraction of its longest edge, is degenerate (for a 5 cm mesh: 0.05 mm; Blender's
# Merge by Distance defaults to 0.1 mm).
DEGENERATE = 1e-3


def thin_triangles(pos: np.ndarray, tris: np.ndarray) -> np.ndarray:
    """True for triangles whose height over their longest edge is below DEGENERATE times that
    edge (zero area, corners in a line or on one point), (T,) bool; pos [m] (V, 3)."""
    if len(tris) == 0:
        return np.zeros(0, dtype=bool)
    a, b, c = pos[tris[:, 0]], pos[tris[:, 1]], pos[tris[:, 2]]
    two_area = np.linalg.norm(np.cross(b - a, c - a), axis=1)
    longest2 = np.max(np.stack([np.sum((b - a) ** 2, 1), np.sum((c - b) ** 2, 1),
                                np.sum((a - c) ** 2, 1)]), axis=0)
    # height = 2·area / longest edge < DEGENERATE · longest edge
    return two_area < DEGENERATE * longest2


@dataclass(frozen=True)
class PieceReduction:
    """How one piece's mesh is simulated around its degenerate elements.

    Attributes:
        setup: the ClothSetup simulated (reduced mesh, pins, UVs, seams).
        kept: (V_r,) the original vertex each simulated vertex stands for.
        vertex_map: (V,) the simulated vertex of each original vertex (-1: carried).
        carry_rows, carry_cols, carry_weights: the carried vertices' weights: original vertex
            carry_rows[k] follows simulated vertex carry_cols[k] with weight carry_weights[k].
        offset: (V, 3) [m] each original vertex's rest offset from what carries it.
        welded: groups of original vertices simulated as one (each a sorted list).
        collapsed: original polygons left out (fewer than three distinct corners).
        flat: original polygons left out (corners in a line).
        carried: original vertices carried by a segment of their polygons' vertices.
    """

    setup: ClothSetup
    kept: np.ndarray
    vertex_map: np.ndarray
    carry_rows: np.ndarray
    carry_cols: np.ndarray
    carry_weights: np.ndarray
    offset: np.ndarray
    welded: list
    collapsed: np.ndarray
    flat: np.ndarray
    carried: np.ndarray

    def expand(self, x: np.ndarray) -> np.ndarray:
        """Positions of every original vertex (V, 3) from the simulated ones x (V_r, 3) [m]."""
        out = np.zeros(self.offset.shape)
        direct = self.vertex_map >= 0
        out[direct] = x[self.vertex_map[direct]]
        np.add.at(out, self.carry_rows, self.carry_weights[:, None] * x[self.carry_cols])
        return out + self.offset

    def note(self, name: str) -> str:
        """What was done, for the user (Blender's face and vertex indices)."""
        parts = []
        if self.welded:
            merged = [v for g in self.welded for v in g]
            n = len(self.welded)
            parts.append(f"vertices {_listed(merged)} joined by zero-length edges simulated as "
                         + ("one vertex" if n == 1 else f"{n} vertices"))
        gone = np.union1d(self.collapsed, self.flat)
        if len(gone):
            parts.append(f"{'face' if len(gone) == 1 else 'faces'} {_listed(gone)} without area "
                         "left out, their vertices carried by their neighbours")
        return (f"{name}: {'; '.join(parts)} (Mesh > Clean Up > Merge by Distance, Degenerate "
                "Dissolve remove such elements)")


def _listed(values, most: int = 5) -> str:
    values = [int(v) for v in values]
    text = ", ".join(str(v) for v in values[:most])
    return text + (", …" if len(values) > most else "")


def reduce_piece(setup: ClothSetup) -> PieceReduction | None:
    """The reduction of one piece (module docstring), or None when it has no degenerate
    element. Raises MeshError when degenerate polygons share no vertex with the rest."""
    mesh = setup.mesh
    mesh.validate()
    V, pos = mesh.vertex_count, mesh.positions
    if mesh.face_count == 0:
        return None
    edge_pairs, _ = polygon_edge_pairs(mesh)
    diag_pairs, _ = polygon_diagonal_pairs(mesh)
    pairs = np.concatenate([edge_pairs, diag_pairs])
    length = np.linalg.norm(pos[pairs[:, 1]] - pos[pairs[:, 0]], axis=1)
    edge_length = length[:len(edge_pairs)]
    positive = edge_length[edge_length > 0]
    if len(positive) == 0:
        raise MeshError("every edge of the mesh has zero length: the cloth has no extent")
    short = (length < DEGENERATE * np.median(positive)) & (pairs[:, 0] != pairs[:, 1])
    o = mesh.face_offsets
    sides = np.diff(o)
    if not short.any() and not np.any(_thin_faces(pos, mesh.face_indices, o)) \
            and not _repeats(mesh.face_indices, o).any():
        return None
    # ---- weld: vertices joined by short edges or diagonals become one ----
    hard = np.zeros(V, dtype=bool)
    w = setup.weights()
    pins = np.asarray(setup.pin_indices, dtype=np.int64)
    hard[pins[w >= 1.0]] = True
    rep = _weld(pairs[short], V, hard)
    welded = _groups(rep)
    # ---- faces with their corners mapped to the welded vertices ----
    corner_rep = rep[mesh.face_indices]
    keep_corner = np.ones(len(corner_rep), dtype=bool)
    face_of = np.repeat(np.arange(mesh.face_count), sides)
    nxt = np.where(np.arange(len(corner_rep)) + 1 < o[1:][face_of],
                   np.arange(len(corner_rep)) + 1, o[:-1][face_of])
    keep_corner &= corner_rep != corner_rep[nxt]  # a corner equal to the next is merged into it
    # a face whose corners all merged keeps none: it has no distinct corner at all
    new_sides = np.bincount(face_of[keep_corner], minlength=mesh.face_count)
    new_offsets = np.zeros(mesh.face_count + 1, dtype=np.int64)
    np.cumsum(new_sides, out=new_offsets[1:])
    reduced_idx = corner_rep[keep_corner]
    collapsed = new_sides < 3
    collapsed |= _repeats(reduced_idx, new_offsets)  # a loop through one vertex twice: folded
    flat = ~collapsed & _thin_faces(pos, reduced_idx, new_offsets)
    good = ~collapsed & ~flat
    if not good.any():
        raise MeshError(f"every face of the mesh is degenerate (no area): faces "
                        f"{_listed(np.arange(mesh.face_count))}")
    keep_corner_idx = np.flatnonzero(keep_corner)[np.repeat(good, new_sides)]
    kept_faces_idx = reduced_idx[np.repeat(good, new_sides)]
    kept_sides = new_sides[good]
    # ---- vertices: welded representatives in kept faces, loose or hard-pinned ones ----
    in_face = np.zeros(V, dtype=bool)
    in_face[mesh.face_indices] = True
    supported = np.zeros(V, dtype=bool)
    supported[kept_faces_idx] = True
    is_rep = rep == np.arange(V)
    simulated = is_rep & (supported | ~in_face | hard)
    orphans = np.flatnonzero(is_rep & ~simulated)
    kept = np.flatnonzero(simulated)
    new_index = np.full(V, -1, dtype=np.int64)
    new_index[kept] = np.arange(len(kept))
    # ---- carried vertices: the nearest segment of their faces' other vertices ----
    anchors = _carry(orphans, rep, mesh, face_of, pos, simulated)
    vertex_map = new_index[rep]
    direct = vertex_map >= 0
    offset = np.zeros((V, 3))
    offset[direct] = pos[direct] - pos[kept[vertex_map[direct]]]
    rows, cols, weights = [], [], []
    for v in np.flatnonzero(~direct):  # orphans and the vertices welded to them
        offset[v] = pos[v]
        for a, wa in anchors[int(rep[v])]:
            rows.append(int(v))
            cols.append(int(new_index[a]))
            weights.append(wa)
            offset[v] -= wa * pos[a]
    carry_rows = np.array(rows, dtype=np.int64)
    carry_cols = np.array(cols, dtype=np.int64)
    carry_weights = np.array(weights, dtype=np.float64)
    new_offsets = np.zeros(len(kept_sides) + 1, dtype=np.int64)
    np.cumsum(kept_sides, out=new_offsets[1:])
    reduced = PolyMesh(pos[kept].copy(), new_index[kept_faces_idx], new_offsets)
    reduced.validate()
    red_setup = _reduced_setup(setup, reduced, keep_corner_idx,
                               _follow(vertex_map, carry_rows, carry_cols, carry_weights))
    return PieceReduction(
        setup=red_setup, kept=kept, vertex_map=vertex_map, carry_rows=carry_rows,
        carry_cols=carry_cols, carry_weights=carry_weights, offset=offset, welded=welded, collapsed=np.flatnonzero(collapsed),
        flat=np.flatnonzero(flat), carried=np.flatnonzero(vertex_map < 0))


def _follow(vertex_map, rows, cols, weights) -> np.ndarray:
    """The simulated vertex each original vertex goes with most, (V,): its own, or for a
    carried one the one of largest weight (for pins and seams on carried vertices)."""
    out = vertex_map.copy()
    best = np.zeros(len(out))
    for r, c, w in zip(rows, cols, weights):
        if w > best[r]:
            out[r], best[r] = c, w
    return out


def _reduced_setup(setup: ClothSetup, mesh: PolyMesh, corners: np.ndarray,
                   follow: np.ndarray) -> ClothSetup:
    """The ClothSetup of the reduced mesh: UVs of the corners kept, pins and seams on the
    simulated vertices (a pin on a carried vertex holds nothing: such a vertex has no mass; of
    pins merged into one vertex, the strongest holds it)."""
    pins = np.asarray(setup.pin_indices, dtype=np.int64)
    w = setup.weights()
    if len(pins):
        target = follow[pins]
        order = np.lexsort((np.arange(len(pins)), -w))  # strongest first
        keep = order[target[order] >= 0]
        _, first = np.unique(target[keep], return_index=True)
        keep = np.sort(keep[first])
        pins_r, w_r = target[keep], w[keep]
        targets = None if setup.pin_targets is None \
            else np.asarray(setup.pin_targets)[:, keep]
    else:
        pins_r, w_r, targets = pins, w, setup.pin_targets
    seams = _pairs_in_range("seams", setup.seams, len(follow))
    if len(seams):
        seams = follow[seams]
        seams = seams[(seams[:, 0] != seams[:, 1]) & (seams >= 0).all(1)]
    return dataclasses.replace(
        setup, mesh=mesh, pin_indices=pins_r,
        pin_weights=None if setup.pin_weights is None else w_r, pin_targets=targets,
        uv=None if setup.uv is None else np.asarray(setup.uv)[corners], seams=seams)


def _pairs_in_range(key: str, pairs, n: int) -> np.ndarray:
    """Vertex pairs (S, 2) int64, checked as model.py checks seams (the reduction renumbers
    them, so a bad one is named here, in the user's numbering)."""
    p = np.asarray(pairs if pairs is not None else np.zeros((0, 2)))
    if p.size == 0:
        return np.zeros((0, 2), np.int64)
    if p.ndim != 2 or p.shape[1] != 2 or not np.issubdtype(p.dtype, np.integer):
        raise MeshError(f"{key}: expected integer vertex index pairs, shape (S, 2), got "
                        f"{p.shape} {p.dtype}")
    bad = np.flatnonzero(((p < 0) | (p >= n)).any(1))
    if len(bad):
        raise MeshError(f"{key}[{bad[0]}]: vertex index out of range 0..{n - 1}, "
                        f"got {p[bad[0]].tolist()}")
    return p.astype(np.int64)


def _fan(idx, offsets):
    sizes = np.diff(offsets)
    n_tri = np.maximum(sizes - 2, 0)
    face = np.repeat(np.arange(len(sizes)), n_tri)
    k = np.arange(len(face)) - np.repeat(np.cumsum(n_tri) - n_tri, n_tri)
    start = offsets[:-1][face]
    return np.stack([idx[start], idx[start + k + 1], idx[start + k + 2]], 1), face


def _thin_faces(pos, idx, offsets) -> np.ndarray:
    """True for polygons whose fan triangles' total area is below DEGENERATE·(longest side)²/2
    (thinner than DEGENERATE times their longest side), (F,)."""
    F = len(offsets) - 1
    tris, face = _fan(idx, offsets)
    a, b, c = pos[tris[:, 0]], pos[tris[:, 1]], pos[tris[:, 2]]
    two_area = np.bincount(face, np.linalg.norm(np.cross(b - a, c - a), axis=1), minlength=F)
    sizes = np.diff(offsets)
    f_of = np.repeat(np.arange(F), sizes)
    corner = np.arange(len(idx))
    nxt = np.where(corner + 1 < offsets[1:][f_of], corner + 1, offsets[:-1][f_of])
    side2 = np.sum((pos[idx[nxt]] - pos[idx]) ** 2, axis=1)
    longest2 = np.zeros(F)
    np.maximum.at(longest2, f_of, side2)
    return two_area < DEGENERATE * longest2


def _repeats(idx, offsets) -> np.ndarray:
    """True for polygons that visit a vertex more than once, (F,)."""
    F = len(offsets) - 1
    if len(idx) == 0:
        return np.zeros(F, dtype=bool)
    f_of = np.repeat(np.arange(F), np.diff(offsets))
    # corners sorted by vertex within each face (a stable sort of the vertices, then of the
    # faces): a repeat is two neighbours with the same face and vertex
    order = np.argsort(idx, kind="stable")
    order = order[np.argsort(f_of[order], kind="stable")]
    v, f = idx[order], f_of[order]
    same = (v[1:] == v[:-1]) & (f[1:] == f[:-1])
    out = np.zeros(F, dtype=bool)
    out[f[1:][same]] = True
    return out


def _weld(pairs: np.ndarray, V: int, hard: np.ndarray) -> np.ndarray:
    """For every vertex, the vertex its group is simulated as, (V,): the lowest hard-pinned
    vertex of the group, else its lowest vertex."""
    if len(pairs) == 0:
        return np.arange(V, dtype=np.int64)
    from scipy.sparse import coo_matrix
    from scipy.sparse.csgraph import connected_components

    graph = coo_matrix((np.ones(len(pairs)), (pairs[:, 0], pairs[:, 1])), shape=(V, V))
    _, label = connected_components(graph, directed=False)
    # hard-pinned vertices first (key 0), then by index
    order = np.lexsort((np.arange(V), ~hard))
    first = np.full(label.max() + 1, -1, dtype=np.int64)
    for v in order[::-1]:  # the last write wins: the first in order
        first[label[v]] = v
    return first[label]


def _groups(rep: np.ndarray) -> list:
    """The welded groups of more than one vertex, each sorted."""
    order = np.argsort(rep, kind="stable")
    r = rep[order]
    starts = np.flatnonzero(np.r_[True, r[1:] != r[:-1]])
    ends = np.r_[starts[1:], len(r)]
    return [sorted(int(v) for v in order[s:e]) for s, e in zip(starts, ends) if e - s > 1]


def _carry(orphans, rep, mesh, face_of, pos, simulated) -> dict:
    """For each orphan (a welded representative in left-out faces only), [(vertex, weight)]:
    the simulated vertices it follows, found through its left-out faces, repeated while
    orphans of orphans get carried. MeshError when some cannot be reached."""
    faces_of: dict[int, set] = {int(v): set() for v in orphans}
    is_orphan = np.zeros(len(rep), dtype=bool)
    is_orphan[orphans] = True
    corner_rep = rep[mesh.face_indices]
    for c in np.flatnonzero(is_orphan[corner_rep]):
        faces_of[int(corner_rep[c])].add(int(face_of[c]))
    o = mesh.face_offsets
    anchors: dict[int, list] = {}
    resolved = simulated.copy()
    pending = [int(v) for v in orphans]
    while pending:
        left = []
        for v in pending:
            cand = sorted({int(r) for f in faces_of[v] for r in rep[mesh.face_indices[o[f]:o[f + 1]]]
                           if resolved[r] and r != v})
            if not cand:
                left.append(v)
                continue
            anchors[v] = _nearest_segment(pos[v], cand, pos, anchors)
            resolved[v] = True
        if len(left) == len(pending):
            faces = sorted({f for v in left for f in faces_of[v]})
            raise MeshError(f"faces {_listed(faces)} have no area (degenerate) and share no "
                            "vertex with the rest of the cloth; delete them (Mesh > Clean Up > "
                            "Degenerate Dissolve)")
        pending = left
    return anchors


def _nearest_segment(p, cand, pos, anchors) -> list:
    """[(simulated vertex, weight)] carrying point p: the closest point to p on the segments
    between candidate vertices (a candidate carried itself contributes its own anchors)."""
    best, best_d = [(cand[0], 1.0)], float(np.linalg.norm(p - pos[cand[0]]))
    for i, a in enumerate(cand):
        d = float(np.linalg.norm(p - pos[a]))
        if d < best_d:
            best, best_d = [(a, 1.0)], d
        for b in cand[i + 1:]:
            ab = pos[b] - pos[a]
            L2 = float(ab @ ab)
            if L2 == 0.0:
                continue
            t = float(np.clip((p - pos[a]) @ ab / L2, 0.0, 1.0))
            d = float(np.linalg.norm(p - pos[a] - t * ab))
            if d < best_d - 1e-15:
                best, best_d = [(a, 1.0 - t), (b, t)], d
    out: dict[int, float] = {}
    for a, wa in best:  # compose with an anchor that is itself carried
        for b, wb in anchors.get(a, [(a, 1.0)]):
            out[b] = out.get(b, 0.0) + wa * wb
    return [(k, v) for k, v in out.items() if v != 0.0]


@dataclass(frozen=True)
class Expansion:
    """Maps the positions of a reduced simulation back onto the user's pieces.

    Attributes:
        pieces: each piece's PieceReduction, or None where it had nothing degenerate.
        offsets: (n + 1,) the user's vertices of piece i are offsets[i]:offsets[i + 1].
        reduced_offsets: (n + 1,) the same in the simulation.
    """

    pieces: tuple
    offsets: np.ndarray
    reduced_offsets: np.ndarray

    def expand(self, x: np.ndarray) -> np.ndarray:
        """Every user vertex's position (V, 3) from the simulation's x (V_r, 3) [m]."""
        out = np.empty((int(self.offsets[-1]), 3))
        for i, r in enumerate(self.pieces):
            part = x[self.reduced_offsets[i]:self.reduced_offsets[i + 1]]
            out[self.offsets[i]:self.offsets[i + 1]] = part if r is None else r.expand(part)
        return out

    def user_vertex(self, i: int) -> int:
        """The user's index (pieces one after another) of the simulation's vertex i."""
        piece = int(np.searchsorted(self.reduced_offsets, i, side="right") - 1)
        local = i - int(self.reduced_offsets[piece])
        r = self.pieces[piece]
        return int(self.offsets[piece]) + (local if r is None else int(r.kept[local]))


def reduce_spec(spec: SimulationSpec) -> tuple[SimulationSpec, Expansion | None]:
    """The spec simulated around degenerate elements (module docstring) and the Expansion of
    its results, or (spec, None) when no piece has a degenerate element."""
    pieces = spec.pieces()
    reductions = tuple(reduce_piece(c) for c in pieces)
    if all(r is None for r in reductions):
        return spec, None
    sizes = [c.mesh.vertex_count for c in pieces]
    red_sizes = [c.mesh.vertex_count if r is None else r.setup.mesh.vertex_count
                 for c, r in zip(pieces, reductions)]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    red_offsets = np.concatenate([[0], np.cumsum(red_sizes)]).astype(np.int64)
    cloth = tuple(c if r is None else r.setup for c, r in zip(pieces, reductions))
    seams = _pairs_in_range("seams", spec.seams, int(offsets[-1]))
    if len(seams):
        follow = np.concatenate([
            np.arange(n) if r is None else _follow(r.vertex_map, r.carry_rows, r.carry_cols,
                                                   r.carry_weights)
            for n, r in zip(sizes, reductions)])
        piece = np.searchsorted(offsets, seams, side="right") - 1
        local = follow[seams]
        seams = np.where(local >= 0, local + red_offsets[piece], -1)
        seams = seams[(seams >= 0).all(1) & (seams[:, 0] != seams[:, 1])]
    reduced = dataclasses.replace(
        spec, cloth=cloth[0] if isinstance(spec.cloth, ClothSetup) else cloth, seams=seams)
    return reduced, Expansion(reductions, offsets, red_offsets)


def split_vertices(setup: ClothSetup, reduction: PieceReduction | None = None) -> np.ndarray:
    """Vertices of the piece's faces that lie on another one (in one cell of DEGENERATE times
    the median edge) without being simulated as one with it (``reduction``'s welds) or sewn to
    it: the cloth is split there, (n,) sorted."""
    mesh = setup.mesh
    if mesh.face_count == 0:
        return np.zeros(0, dtype=np.int64)
    pos = mesh.positions
    pairs, _ = polygon_edge_pairs(mesh)
    length = np.linalg.norm(pos[pairs[:, 1]] - pos[pairs[:, 0]], axis=1)
    positive = length[length > 0]
    used = np.unique(mesh.face_indices)
    if len(positive) == 0:
        return np.zeros(0, dtype=np.int64)
    cell = np.floor(pos[used] / (DEGENERATE * np.median(positive))).astype(np.int64)
    _, group, count = np.unique(cell, axis=0, return_inverse=True, return_counts=True)
    group = group.ravel()
    if not np.any(count > 1):
        return np.zeros(0, dtype=np.int64)
    joins = [np.asarray(setup.seams, dtype=np.int64).reshape(-1, 2)]
    for g in (reduction.welded if reduction is not None else ()):
        joins.append(np.stack([np.full(len(g) - 1, g[0]), g[1:]], 1))
    label = welds(np.concatenate(joins), mesh.vertex_count)[used]
    distinct = np.unique(np.stack([group, label], 1), axis=0)
    apart = np.bincount(distinct[:, 0], minlength=len(count)) > 1
    return used[apart[group]]


def notes(spec: SimulationSpec, expansion: Expansion | None, names=None) -> list[str]:
    """What the user should know about the meshes of ``spec``, one line per piece that has
    something: degenerate elements simulated around (``expansion``) and vertices where the
    cloth is split. ``names``: the pieces' names (default "the mesh", "piece i")."""
    pieces = spec.pieces()
    out = []
    for i, setup in enumerate(pieces):
        name = names[i] if names is not None else (
            "the mesh" if len(pieces) == 1 else f"piece {i}")
        reduction = expansion.pieces[i] if expansion is not None else None
        if reduction is not None:
            out.append(reduction.note(name))
        split = split_vertices(setup, reduction)
        if len(split):
            out.append(f"{name}: vertices {_listed(split)} lie on other vertices without an "
                       "edge between them: the cloth is split there (Mesh > Clean Up > Merge "
                       "by Distance joins them, loose edges with Sewing on sew them)")
    return out
