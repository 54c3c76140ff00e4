"""Rest-state data of a cloth: ``build_model`` computes everything fixed during a simulation.

That is the geometry every solver shares (lumped masses, vertex areas, triangle frames, hinges,
polygon edges, pins) and every element's coefficients, frozen from each piece's SI material by
the force term that uses them (solver/forces/), so that the cloth behaves the same at every mesh
resolution and several pieces of different materials form one model of plain arrays.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from .degenerate import thin_triangles
from .forces.bending import hinge_coefficients
from .forces.membrane import triangle_coefficients
from .forces.seams import seam_coefficients
from .forces.springs import diagonal_spring_coefficients, edge_spring_coefficients
from .geometry import (angles_and_grams, averaged_hinges, clamped_hinge_area, membrane_corners,
                       triangle_frames, warp_directions)
from .mesh import MeshError
from .params import MaterialParams
from .spec import ClothSetup
from .topology import polygon_diagonal_pairs, polygon_edge_pairs, triangulate, unique_edges


@dataclass(frozen=True)
class ClothModel:
    """Everything fixed during a simulation, for one piece of cloth or several simulated
    together (their arrays stacked, piece i's vertices after piece i − 1's).

    Geometry:
        rest_positions: rest shape [m], (V, 3).
        triangles: (T, 3) vertex indices of the surface (each polygon fan-split; collisions and
            the report use it); tri_area: their rest areas [m²], (T,).
        membrane_triangles: (M, 3) the membrane's elements: every quad split along both
            diagonals (the energy averaged over the two splits, so no diagonal direction is
            preferred), other polygons fan-split; membrane_area: each one's rest area times its
            weight (1/2 in a quad) [m²], 0 for a degenerate one (degenerate.py), (M,); membrane_frame_u, membrane_frame_v: warp and weft
            unit directions in each, (M, 3).
        edges: polygon edges (E, 2) and edge_rest_length [m], (E,): strain is measured on these.
        diagonals: shear diagonals of quads and n-gons, (D, 2), with diagonal_rest_length [m].
        hinges: (H, 4) bending hinges (both diagonal splits of every quad, see geometry; none
            with a degenerate wing),
            hinge_rest_angle [rad], (H,), and hinge_rest_gram [1/m²], (H, 4, 4): the Gram
            matrix of each rest angle's gradient over the hinge's four vertices, the implicit
            solve's constant bending Jacobian (forces/bending.py).
        piece_offsets: (n + 1,) vertices of piece i are piece_offsets[i]:piece_offsets[i + 1].
        seams: (S, 2) sewn vertex pairs (forces/seams.py), within a piece or across pieces; no
            stretch, bend or membrane term uses them, and contact between the cloth's features
            treats the two vertices of a pair as one (collision/pipeline.py).
    Pins:
        pin_indices: (P,) pinned vertices; pin_weights (P,) in (0, 1].
        hard_pins: vertices held exactly (weight 1), (Ph,).
        soft_pins: vertices pulled by goal springs, (Ps,), with soft_pin_stiffness [N/m].
    Coefficients (each piece's material mapped onto its elements, see solver/forces/):
        mass: lumped vertex masses [kg], (V,): each polygon's mass shared equally by its corners.
        vertex_drag: air drag coefficient of each vertex, air_drag × vertex area [kg/s], (V,).
        membrane_stiffness: (M, 6) each membrane triangle's k_u, k_v, k_s [N/m] and c_u, c_v,
            c_s [N·s/m].
        hinge_stiffness [N·m], hinge_damping [N·m·s]: (H,).
        edge_stiffness [N/m], edge_damping [N·s/m]: (E,) structural springs on the edges.
        diagonal_stiffness [N/m], diagonal_damping [N·s/m]: (D,) shear springs.
        seam_pull [N], seam_reach [m], seam_damping [N·s/m]: (S,) each seam pair's force, the
            gap within which it holds, and its damping (forces/seams.py).
        materials: each piece's SI material, for what is not per element (the strain limit,
            the collision thickness, flexion springs).
    """

    rest_positions: np.ndarray
    triangles: np.ndarray
    tri_area: np.ndarray
    membrane_triangles: np.ndarray
    membrane_area: np.ndarray
    membrane_frame_u: np.ndarray
    membrane_frame_v: np.ndarray
    edges: np.ndarray
    edge_rest_length: np.ndarray
    diagonals: np.ndarray
    diagonal_rest_length: np.ndarray
    hinges: np.ndarray
    hinge_rest_angle: np.ndarray
    hinge_rest_gram: np.ndarray
    piece_offsets: np.ndarray
    pin_indices: np.ndarray
    pin_weights: np.ndarray
    hard_pins: np.ndarray
    soft_pins: np.ndarray
    soft_pin_stiffness: np.ndarray
    mass: np.ndarray
    vertex_drag: np.ndarray
    membrane_stiffness: np.ndarray
    hinge_stiffness: np.ndarray
    hinge_damping: np.ndarray
    edge_stiffness: np.ndarray
    edge_damping: np.ndarray
    diagonal_stiffness: np.ndarray
    diagonal_damping: np.ndarray
    materials: tuple[MaterialParams, ...]
    seams: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), np.int64))
    seam_pull: np.ndarray = field(default_factory=lambda: np.zeros(0))
    seam_reach: np.ndarray = field(default_factory=lambda: np.zeros(0))
    seam_damping: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def vertex_count(self) -> int:
        return int(self.rest_positions.shape[0])

    @property
    def free_mask(self) -> np.ndarray:
        """True where a vertex moves under forces (not a hard pin, not massless), (V,)."""
        free = self.mass > 0.0
        free[self.hard_pins] = False
        return free

    @property
    def max_strain(self) -> float | None:
        """The strictest strain limit of the pieces (None: no piece has one)."""
        limits = [m.max_strain for m in self.materials if m.max_strain is not None]
        return min(limits) if limits else None

    @property
    def thickness(self) -> float:
        """The collision thickness [m]: the largest of the pieces'."""
        return max(m.thickness for m in self.materials)

    @property
    def cloth_friction(self) -> float:
        """Friction coefficient of cloth–cloth contacts (one for all pairs): the first piece's."""
        return self.materials[0].friction

    def piece_of(self, vertices: np.ndarray) -> np.ndarray:
        """Index of the piece each vertex belongs to."""
        return np.searchsorted(self.piece_offsets, vertices, side="right") - 1


def build_model(cloth: ClothSetup | Sequence[ClothSetup], seams=None) -> ClothModel:
    """Rest-state data of a cloth, or of several cloths simulated together (see ClothModel).

    Pieces are concatenated in order: piece i's vertices follow piece i − 1's. ``seams``
    (S, 2): vertex pairs sewn across pieces, in that combined numbering (each piece's own
    ``ClothSetup.seams`` are in its own numbering).
    """
    setups = [cloth] if isinstance(cloth, ClothSetup) else list(cloth)
    if not setups:
        raise MeshError("no cloth to simulate")
    pieces = [_build_piece(s) for s in setups]
    model = pieces[0] if len(pieces) == 1 else _concatenate(pieces)
    own = [_seam_pairs(f"piece {k} seams" if len(setups) > 1 else "seams", s.seams,
                       p.vertex_count, p.mass) + model.piece_offsets[k]
           for k, (s, p) in enumerate(zip(setups, pieces))]
    if seams is not None:
        own.append(_seam_pairs("seams", seams, model.vertex_count, model.mass))
    return _with_seams(model, np.concatenate(own))


def _seam_pairs(key: str, seams, vertex_count: int, mass: np.ndarray) -> np.ndarray:
    """Validated seam pairs (S, 2) int64; MeshError names the first bad one."""
    pairs = np.asarray(seams if seams is not None else np.zeros((0, 2)))
    if pairs.size == 0:
        return np.zeros((0, 2), np.int64)
    if pairs.ndim != 2 or pairs.shape[1] != 2:
        raise MeshError(f"{key}: expected vertex index pairs, shape (S, 2), got {pairs.shape}")
    if not np.issubdtype(pairs.dtype, np.integer):
        raise MeshError(f"{key}: vertex indices must be integers, got {pairs.dtype}")
    pairs = pairs.astype(np.int64)
    bad = np.flatnonzero((pairs < 0).any(1) | (pairs >= vertex_count).any(1))
    if len(bad):
        raise MeshError(f"{key}[{bad[0]}]: vertex index out of range 0..{vertex_count - 1}, "
                        f"got {pairs[bad[0]].tolist()}")
    bad = np.flatnonzero(pairs[:, 0] == pairs[:, 1])
    if len(bad):
        raise MeshError(f"{key}[{bad[0]}]: joins vertex {pairs[bad[0], 0]} to itself")
    bad = np.flatnonzero((mass[pairs] <= 0).any(1))
    if len(bad):
        v = pairs[bad[0]][mass[pairs[bad[0]]] <= 0][0]
        raise MeshError(f"{key}[{bad[0]}]: vertex {v} belongs to no polygon; a seam joins "
                        "vertices of the cloth's faces")
    return pairs


def _with_seams(model: ClothModel, pairs: np.ndarray) -> ClothModel:
    """The model with its seams (duplicates merged) and their coefficients."""
    seams, _ = unique_edges(pairs) if len(pairs) else (np.zeros((0, 2), np.int64), None)
    piece = model.piece_of(np.arange(model.vertex_count))
    force = np.array([m.seam_force for m in model.materials])[piece]
    thickness = np.array([m.thickness for m in model.materials])[piece]
    pull, reach, damping = seam_coefficients(seams, model.rest_positions, model.edges,
                                             model.edge_rest_length, model.mass, force,
                                             thickness)
    return dataclasses.replace(model, seams=seams, seam_pull=pull, seam_reach=reach,
                               seam_damping=damping)


def _build_piece(setup: ClothSetup) -> ClothModel:
    """Rest-state data of one piece of cloth."""
    mesh = setup.mesh
    mesh.validate()
    if mesh.face_count == 0:  # valid as a collider or a point cloud, but no cloth: no mass
        raise MeshError("mesh has no faces: a cloth needs at least one polygon")
    pos = mesh.positions
    V = mesh.vertex_count
    mat = setup.material
    tris, tri_face = triangulate(mesh)
    _check_grain(setup, len(mesh.face_indices))
    corners, mem_weight = membrane_corners(mesh)
    mem_tris = mesh.face_indices[corners].astype(np.int64)
    warp = warp_directions(pos, mem_tris, corners, setup.uv, setup.grain)
    mem_area, mem_u, mem_v = triangle_frames(pos, mem_tris, warp)
    # the fan split's triangles come first among the membrane's (geometry.membrane_corners)
    area, fu, fv = mem_area[:len(tris)], mem_u[:len(tris)], mem_v[:len(tris)]
    face_area = np.bincount(tri_face, weights=area, minlength=mesh.face_count)
    face_first_tri = np.searchsorted(tri_face, np.arange(mesh.face_count))
    sides = np.diff(mesh.face_offsets).astype(np.float64)
    # lump per polygon corner: a fan split would give two quad corners twice the mass
    vertex_area = np.bincount(mesh.face_indices, weights=np.repeat(face_area / sides,
                              sides.astype(np.int64)), minlength=V)
    # structural edges: area share and direction relative to the warp of the adjacent polygon
    pairs, face = polygon_edge_pairs(mesh)
    edges, inv = unique_edges(pairs)
    edge_area = np.bincount(inv[inv >= 0], weights=(2.0 * face_area / sides)[face[inv >= 0]],
                            minlength=len(edges))
    rest_len = np.linalg.norm(pos[edges[:, 1]] - pos[edges[:, 0]], axis=1)
    owner = np.zeros(len(edges), dtype=np.int64)
    owner[inv[inv >= 0][::-1]] = face_first_tri[face[inv >= 0][::-1]]
    d = (pos[edges[:, 1]] - pos[edges[:, 0]]) / np.maximum(rest_len, 1e-300)[:, None]
    cu, cv = np.sum(d * fu[owner], 1), np.sum(d * fv[owner], 1)
    warp_cos2 = cu * cu / np.maximum(cu * cu + cv * cv, 1e-300)
    # shear diagonals
    dpairs, dface = polygon_diagonal_pairs(mesh)
    n_diag = np.maximum(np.bincount(dface, minlength=mesh.face_count), 1)
    diagonals, dinv = unique_edges(dpairs)
    diag_area = np.bincount(dinv[dinv >= 0], weights=(4.0 * face_area / n_diag)[dface[dinv >= 0]],
                            minlength=len(diagonals))
    diag_len = np.linalg.norm(pos[diagonals[:, 1]] - pos[diagonals[:, 0]], axis=1)
    hg, hinge_area, hinge_weight = averaged_hinges(mesh, tris, area, pos)
    # a hinge with a wing of no area has no angle to keep (degenerate.py): no element at all
    sound = ~(thin_triangles(pos, hg[:, [0, 1, 2]]) | thin_triangles(pos, hg[:, [0, 1, 3]]))
    hg, hinge_area, hinge_weight = hg[sound], hinge_area[sound], hinge_weight[sound]
    pins = np.asarray(setup.pin_indices, dtype=np.int64)
    w = setup.weights()
    if len(pins) and (pins.min() < 0 or pins.max() >= V):
        raise MeshError(f"pin index out of range 0..{V - 1}")
    hard, soft = pins[w >= 1.0], pins[w < 1.0]
    clamped = np.zeros(V, dtype=bool)
    clamped[hard] = True
    hinge_area = clamped_hinge_area(pos, hg, hinge_area, clamped)
    hinge_k, hinge_c = hinge_coefficients(mat, pos, hg, hinge_area, hinge_weight)
    hinge_angle, hinge_gram = angles_and_grams(pos, hg)
    edge_k, edge_c = edge_spring_coefficients(mat, edge_area, rest_len, warp_cos2)
    diag_k, diag_c = diagonal_spring_coefficients(mat, diag_area, diag_len)
    return ClothModel(
        rest_positions=pos.copy(), triangles=tris, tri_area=area, membrane_triangles=mem_tris,
        membrane_area=np.where(thin_triangles(pos, mem_tris), 0.0, mem_weight * mem_area),
        membrane_frame_u=mem_u, membrane_frame_v=mem_v,
        edges=edges, edge_rest_length=rest_len, diagonals=diagonals,
        diagonal_rest_length=diag_len, hinges=hg,
        hinge_rest_angle=hinge_angle, hinge_rest_gram=hinge_gram,
        piece_offsets=np.array([0, V], dtype=np.int64), pin_indices=pins, pin_weights=w,
        hard_pins=hard, soft_pins=soft,
        soft_pin_stiffness=w[w < 1.0] * mat.pin_stiffness * vertex_area[soft],
        mass=mat.area_density * vertex_area, vertex_drag=mat.air_drag * vertex_area,
        membrane_stiffness=triangle_coefficients(mat, len(mem_tris)), hinge_stiffness=hinge_k,
        hinge_damping=hinge_c, edge_stiffness=edge_k, edge_damping=edge_c,
        diagonal_stiffness=diag_k, diagonal_damping=diag_c, materials=(mat,))


def _check_grain(setup: ClothSetup, corner_count: int) -> None:
    """Raise MeshError naming a malformed UV map or grain direction."""
    if setup.uv is not None:
        uv = np.asarray(setup.uv)
        if uv.shape != (corner_count, 2):
            raise MeshError(f"uv: expected shape ({corner_count}, 2), one (u, v) per polygon "
                            f"corner, got {uv.shape}")
        if not np.all(np.isfinite(uv)):
            raise MeshError("uv: contains NaN or infinite values")
    if setup.grain is not None:
        g = np.asarray(setup.grain, dtype=np.float64)
        if g.shape != (3,) or not np.all(np.isfinite(g)) or not np.any(g):
            raise MeshError(f"grain: expected a non-zero direction (x, y, z), got {setup.grain!r}")


_VERTEX_INDEXED = ("triangles", "membrane_triangles", "edges", "diagonals", "hinges", "pin_indices", "hard_pins",
                   "soft_pins", "seams")


def _concatenate(pieces: list[ClothModel]) -> ClothModel:
    """One model of several pieces: arrays stacked, vertex indices shifted (see ClothModel)."""
    offsets = np.concatenate([[0], np.cumsum([p.vertex_count for p in pieces])]).astype(np.int64)
    arrays = {}
    for name in ClothModel.__dataclass_fields__:
        if name in ("materials", "piece_offsets"):
            continue
        chunks = [getattr(p, name) for p in pieces]
        if name in _VERTEX_INDEXED:
            chunks = [c + off for c, off in zip(chunks, offsets[:-1])]
        arrays[name] = np.concatenate(chunks)
    return ClothModel(**arrays, piece_offsets=offsets,
                      materials=tuple(m for p in pieces for m in p.materials))
