"""Rest-state data of one cloth, and the mapping of SI materials onto each model's elements.

``build_model`` computes what every model shares (lumped masses, vertex areas, triangle frames,
hinges, polygon edges, pins). ``membrane_terms``, ``bending_terms`` and ``spring_terms`` turn
the material into per-element coefficients so that the cloth behaves the same at every mesh
resolution.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from .mesh import MeshError
from .params import MaterialParams
from .spec import ClothSetup
from .topology import (alternate_quad_triangles, flexion_chains, hinges, polygon_diagonal_pairs,
                       polygon_edge_pairs, triangulate, unique_edges)

# Flexion springs are quartic in the bend angle; they are matched to the continuum bending
# energy at this curvature [1/m] (a 10 cm fold radius) since no single stiffness can match all.
FLEXION_MATCH_CURVATURE = 10.0


@dataclass(frozen=True)
class ClothModel:
    """Everything fixed during a simulation.

    Attributes:
        rest_positions: rest shape [m], (V, 3).
        triangles: (T, 3) vertex indices.
        tri_area: rest areas [m²], (T,).
        tri_frame_u, tri_frame_v: warp and weft unit directions of each rest triangle, (T, 3).
            mass: lumped vertex masses [kg], (V,): each polygon's mass shared equally by its corners.
        vertex_area: each polygon's area shared equally by its corners [m²], (V,).
        edges: polygon edges (E, 2) and edge_rest_length [m], (E,): strain is measured on these.
        hinges: (H, 4) bending hinges; hinge_rest_angle [rad], hinge_area_sum [m²] (A1 + A2);
            hinge_weight (H,): 1, or 1/2 for hinges that exist in only one of a quad's two
            diagonal splits (bending is averaged over both splits, see topology).
        pin_indices: (P,) pinned vertices; pin_weights (P,) in (0, 1].
        hard_pins: vertices held exactly (weight 1), (Ph,).
        soft_pins: vertices pulled by goal springs, (Ps,), with soft_pin_stiffness [N/m].
        material: the SI material.
        edge_area: area carried by each polygon edge, Σ 2·A_f/n_f over adjacent polygons [m²].
        edge_warp_cos2: cos² of each edge's angle to the warp direction, (E,).
        diagonals: shear diagonals of quads and n-gons, (D, 2); diagonal_area: 4·A_f/(number of
            diagonals of the polygon) [m²] (the quad area doubled for each quad diagonal).
        tri_stiffness: (T, 6) each triangle's k_u, k_v, k_s [N/m] and c_u, c_v, c_s [N·s/m].
        vertex_drag: air drag coefficient of each vertex, air_drag × vertex area [kg/s], (V,).
        piece_offsets: (n + 1,) vertices of piece i are piece_offsets[i]:piece_offsets[i + 1].
        parts: the single-piece models when several cloths are simulated together (empty for
            one piece). Per-element arrays then hold every piece's own material values;
            ``material`` holds the pieces' shared scalars: the strictest ``max_strain`` and
            the largest ``thickness`` (other fields are the first piece's).
    """

    rest_positions: np.ndarray
    triangles: np.ndarray
    tri_area: np.ndarray
    tri_frame_u: np.ndarray
    tri_frame_v: np.ndarray
    mass: np.ndarray
    vertex_area: np.ndarray
    edges: np.ndarray
    edge_rest_length: np.ndarray
    hinges: np.ndarray
    hinge_rest_angle: np.ndarray
    hinge_area_sum: np.ndarray
    hinge_weight: np.ndarray
    pin_indices: np.ndarray
    pin_weights: np.ndarray
    hard_pins: np.ndarray
    soft_pins: np.ndarray
    soft_pin_stiffness: np.ndarray
    material: MaterialParams
    edge_area: np.ndarray
    edge_warp_cos2: np.ndarray
    diagonals: np.ndarray
    diagonal_area: np.ndarray
    tri_stiffness: np.ndarray
    vertex_drag: np.ndarray
    piece_offsets: np.ndarray
    parts: tuple = field(default=())

    @property
    def vertex_count(self) -> int:
        return int(self.rest_positions.shape[0])

    @property
    def free_mask(self) -> np.ndarray:
        """True where a vertex moves under forces (not a hard pin, not massless), (V,)."""
        free = self.mass > 0.0
        free[self.hard_pins] = False
        return free


def triangle_frames(pos: np.ndarray, tris: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rest areas and warp/weft directions of each triangle.

    Warp (u) is world X projected into the triangle's plane (world Y where X is nearly normal to
    it); weft (v) = n × u. For a flat grid in the XY plane u = X and v = Y exactly.
    """
    e1 = pos[tris[:, 1]] - pos[tris[:, 0]]
    e2 = pos[tris[:, 2]] - pos[tris[:, 0]]
    n = np.cross(e1, e2)
    two_a = np.linalg.norm(n, axis=1)
    safe = np.where(two_a > 0, two_a, 1.0)
    n = n / safe[:, None]
    ref = np.where((np.abs(n[:, 0]) > 0.99)[:, None], [0.0, 1.0, 0.0], [1.0, 0.0, 0.0])
    u = ref - np.sum(ref * n, axis=1)[:, None] * n
    u /= np.linalg.norm(u, axis=1)[:, None]
    v = np.cross(n, u)
    return 0.5 * two_a, u, v


def build_model(cloth: ClothSetup | Sequence[ClothSetup]) -> ClothModel:
    """Rest-state data of a cloth, or of several cloths simulated together (see ClothModel).

    Pieces are concatenated in order: piece i's vertices follow piece i − 1's.
    """
    setups = [cloth] if isinstance(cloth, ClothSetup) else list(cloth)
    if not setups:
        raise MeshError("no cloth to simulate")
    parts = [_build_piece(s) for s in setups]
    return parts[0] if len(parts) == 1 else _concatenate(parts)


def _build_piece(setup: ClothSetup) -> ClothModel:
    """Rest-state data of one piece of cloth."""
    mesh = setup.mesh
    mesh.validate()
    if mesh.face_count == 0:  # valid as a collider or a point cloud, but no cloth: no mass
        raise MeshError("mesh has no faces: a cloth needs at least one polygon")
    pos = mesh.positions
    V = mesh.vertex_count
    tris, tri_face = triangulate(mesh)
    area, fu, fv = triangle_frames(pos, tris)
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
    hg, hinge_area, hinge_weight = _averaged_hinges(mesh, tris, area, pos)
    pins = np.asarray(setup.pin_indices, dtype=np.int64)
    w = setup.weights()
    if len(pins) and (pins.min() < 0 or pins.max() >= V):
        raise MeshError(f"pin index out of range 0..{V - 1}")
    hard, soft = pins[w >= 1.0], pins[w < 1.0]
    mat = setup.material
    stiff = (mat.stretch_stiffness, mat.weft_stiffness, mat.shear_stiffness,
             mat.stretch_damping, mat.stretch_damping, mat.shear_damping)
    return ClothModel(
        rest_positions=pos.copy(), triangles=tris, tri_area=area, tri_frame_u=fu,
        tri_frame_v=fv, mass=setup.material.area_density * vertex_area, vertex_area=vertex_area,
        edges=edges, edge_rest_length=rest_len, hinges=hg, hinge_rest_angle=_rest_angles(pos, hg),
        hinge_area_sum=hinge_area, hinge_weight=hinge_weight, pin_indices=pins, pin_weights=w,
        hard_pins=hard, soft_pins=soft,
        soft_pin_stiffness=w[w < 1.0] * setup.material.pin_stiffness * vertex_area[soft],
        material=setup.material, edge_area=edge_area, edge_warp_cos2=warp_cos2,
        diagonals=diagonals, diagonal_area=diag_area,
        tri_stiffness=np.tile(np.array(stiff, dtype=np.float64), (len(tris), 1)),
        vertex_drag=mat.air_drag * vertex_area, piece_offsets=np.array([0, V], dtype=np.int64))


_VERTEX_INDEXED = ("triangles", "edges", "hinges", "pin_indices", "hard_pins", "soft_pins",
                   "diagonals")


def _concatenate(parts: list[ClothModel]) -> ClothModel:
    """One model of several pieces: arrays stacked, vertex indices shifted (see ClothModel)."""
    offsets = np.concatenate([[0], np.cumsum([p.vertex_count for p in parts])]).astype(np.int64)
    arrays = {}
    for name in ClothModel.__dataclass_fields__:
        if name in ("material", "piece_offsets", "parts"):
            continue
        chunks = [getattr(p, name) for p in parts]
        if name in _VERTEX_INDEXED:
            chunks = [c + off for c, off in zip(chunks, offsets[:-1])]
        arrays[name] = np.concatenate(chunks)
    limits = [p.material.max_strain for p in parts if p.material.max_strain is not None]
    material = replace(parts[0].material, max_strain=min(limits) if limits else None,
                       thickness=max(p.material.thickness for p in parts))
    return ClothModel(**arrays, material=material, piece_offsets=offsets, parts=tuple(parts))


def _averaged_hinges(mesh, tris, area, pos):
    """Hinges of the fan split and of the other diagonal split of every quad, averaged.

    A hinge present in both splits keeps weight 1; one present in only one split gets 1/2.

    Returns:
        (hinges (H, 4), area sums A1 + A2 [m²] (H,), weights (H,)).
    """
    alt = alternate_quad_triangles(mesh)
    if len(alt) == 0:
        hg = hinges(tris)
        return hg, _hinge_area_sum(hg, tris, area), np.ones(len(hg))
    quad_tris = np.repeat(np.diff(mesh.face_offsets) == 4, np.diff(mesh.face_offsets) - 2)
    tris_b = np.concatenate([tris[~quad_tris], alt])
    area_b = np.concatenate([area[~quad_tris], triangle_frames(pos, alt)[0]])
    ha, hb = hinges(tris), hinges(tris_b)
    both = np.concatenate([ha, hb])
    aa = np.concatenate([_hinge_area_sum(ha, tris, area), _hinge_area_sum(hb, tris_b, area_b)])
    key = np.concatenate([np.sort(both[:, :2], 1), np.sort(both[:, 2:], 1)], 1)
    uniq, first, count = np.unique(key, axis=0, return_index=True, return_counts=True)
    return both[first], aa[first], count / 2.0


def _hinge_area_sum(hg, tris, area):
    """A1 + A2 of the two triangles of each hinge [m²]."""
    if len(hg) == 0:
        return np.zeros(0)
    keys = np.sort(tris, axis=1)
    V = int(tris.max()) + 1
    code = (keys[:, 0] * V + keys[:, 1]) * V + keys[:, 2]
    order = np.argsort(code)

    def tri_area_of(c):
        k = np.sort(np.stack([hg[:, 0], hg[:, 1], hg[:, c]], 1), axis=1)
        q = (k[:, 0] * V + k[:, 1]) * V + k[:, 2]
        return area[order[np.searchsorted(code[order], q)]]

    return tri_area_of(2) + tri_area_of(3)


def _rest_angles(pos, hg):
    return _hinge_angles_and_grams(pos, hg, grams=False)[0]


def _hinge_angles_and_grams(pos, hg, grams=True):
    """(H,) rest angles [rad] and (H, 4, 4) Gram matrices of the angles' gradients [1/m²]
    (an empty array unless ``grams``)."""
    from .forces.bending import hinge_angles_and_grams
    angle, gram = np.zeros(len(hg)), np.zeros((len(hg) if grams else 0, 4, 4))
    hinge_angles_and_grams(np.ascontiguousarray(pos, dtype=np.float64),
                           np.ascontiguousarray(hg, dtype=np.int64), angle, gram)
    return angle, gram


@dataclass(frozen=True)
class MembraneTerms:
    """Baraff–Witkin coefficients: W_u = Σ coef_u·x, W_v = Σ coef_v·x over each triangle."""

    coef_u: np.ndarray
    coef_v: np.ndarray
    area: np.ndarray


def membrane_terms(model: ClothModel) -> MembraneTerms:
    """Per-triangle B&W coefficients from the rest triangles' (u, v) coordinates."""
    pos, tris = model.rest_positions, model.triangles
    d1 = pos[tris[:, 1]] - pos[tris[:, 0]]
    d2 = pos[tris[:, 2]] - pos[tris[:, 0]]
    u1, u2 = np.sum(d1 * model.tri_frame_u, 1), np.sum(d2 * model.tri_frame_u, 1)
    v1, v2 = np.sum(d1 * model.tri_frame_v, 1), np.sum(d2 * model.tri_frame_v, 1)
    det = u1 * v2 - u2 * v1
    ok = np.abs(det) > 1e-14 * np.maximum(model.tri_area, 1e-300) + 1e-300
    inv = np.where(ok, 1.0 / np.where(ok, det, 1.0), 0.0)  # degenerate triangles get no force
    cu = np.stack([(v1 - v2) * inv, v2 * inv, -v1 * inv], 1)
    cv = np.stack([(u2 - u1) * inv, -u2 * inv, u1 * inv], 1)
    return MembraneTerms(cu, cv, np.where(ok, model.tri_area, 0.0))


@dataclass(frozen=True)
class HingeTerms:
    """Per-hinge bending stiffness k [N·m], damping c [N·m·s], rest angle [rad] and the Gram
    matrix of ∇θ at rest [1/m²], (H, 4, 4) (see forces/bending.py)."""

    stiffness: np.ndarray
    damping: np.ndarray
    rest_angle: np.ndarray
    rest_gram: np.ndarray


def bending_terms(model: ClothModel) -> HingeTerms:
    """k = B·|e|²/(A1 + A2) per hinge, so that E → ∫ B/2·κ² dA (see forces/bending.py)."""
    if model.parts:
        terms = [bending_terms(p) for p in model.parts]
        return HingeTerms(*(np.concatenate(a) for a in zip(
            *((t.stiffness, t.damping, t.rest_angle, t.rest_gram) for t in terms))))
    hg = model.hinges
    pos = model.rest_positions
    e2 = np.sum((pos[hg[:, 1]] - pos[hg[:, 0]]) ** 2, axis=1)
    area = model.hinge_area_sum
    scale = np.where(area > 0, e2 / np.where(area > 0, area, 1.0), 0.0)
    m = model.material
    scale = scale * model.hinge_weight
    gram = _hinge_angles_and_grams(pos, hg)[1]
    return HingeTerms(m.bend_stiffness * scale, m.bend_damping * scale, model.hinge_rest_angle,
                      gram)


@dataclass(frozen=True)
class SpringTerms:
    """Springs (S, 2) with rest length [m], stiffness [N/m] and damping [N·s/m]."""

    springs: np.ndarray
    rest_length: np.ndarray
    stiffness: np.ndarray
    damping: np.ndarray


def spring_terms(model: ClothModel, flexion: bool) -> SpringTerms:
    """Provot's spring network with SI-consistent stiffness.

    Structural springs (polygon edges) get k = k_dir·A_e/L², with A_e = Σ 2·A_f/n_f over the
    adjacent polygons and k_dir the warp/weft stiffness interpolated by the edge's direction.
    Shear springs (polygon diagonals) get G·A_d/L², which for a square grid is the spring
    network whose small-strain shear stiffness is G. Because diagonals also resist stretching,
    k_dir is lowered so that the uniaxial stiffness of a square grid (free to contract
    sideways) equals the material's. On triangle meshes the mapping is only approximate, a
    known limit of spring networks (digest P18, P33). Flexion springs (optional) join vertices
    two apart along straight edge lines, matched to the bending energy at
    FLEXION_MATCH_CURVATURE.
    """
    if model.parts:
        terms = [spring_terms(p, flexion) for p in model.parts]
        offsets = model.piece_offsets[:-1]
        return SpringTerms(np.concatenate([t.springs + o for t, o in zip(terms, offsets)]),
                           *(np.concatenate(a) for a in zip(
                               *((t.rest_length, t.stiffness, t.damping) for t in terms))))
    m = model.material
    pos = model.rest_positions
    G = m.shear_stiffness
    ku, kv = _structural_for_uniaxial(m.stretch_stiffness, m.weft_stiffness, G)
    c2 = model.edge_warp_cos2
    L = model.edge_rest_length
    w = model.edge_area / np.where(L > 0, L * L, 1.0)
    diag = model.diagonals
    ld = np.linalg.norm(pos[diag[:, 1]] - pos[diag[:, 0]], axis=1)
    wd = model.diagonal_area / np.where(ld > 0, ld * ld, 1.0)
    parts = [(model.edges, L, (ku * c2 + kv * (1 - c2)) * w, m.stretch_damping * w),
             (diag, ld, G * wd, m.shear_damping * wd)]
    if flexion:
        parts.append(_flexion_springs(model))
    springs = np.concatenate([p[0] for p in parts]).astype(np.int64).reshape(-1, 2)
    rest = np.concatenate([p[1] for p in parts])
    keep = rest > 0
    return SpringTerms(springs[keep], rest[keep], np.concatenate([p[2] for p in parts])[keep],
                       np.concatenate([p[3] for p in parts])[keep])


def _structural_for_uniaxial(k_u: float, k_v: float, g: float, iterations: int = 60):
    """Spring constants (a, b) along warp/weft of a square grid with diagonal springs g [N/m].

    That grid's uniaxial stiffness along u is a + g·b/(b + g) (lateral direction free, from
    minimising its strain energy); solve a + g·b/(b + g) = k_u and b + g·a/(a + g) = k_v.
    """
    a, b = k_u, k_v
    if g <= 0:
        return a, b
    for _ in range(iterations):
        a = max(k_u - g * b / (b + g), 1e-3 * k_u)
        b = max(k_v - g * a / (a + g), 1e-3 * k_v)
    return a, b


def _flexion_springs(model: ClothModel):
    """Skip-one springs (a, c) of each straight chain a-b-c, with their SI-matched stiffness.

    A chain of two edges of length h bent by angle φ = κh shortens by h·φ²/4, so a spring of
    stiffness k stores k·h²·φ⁴/32 while the continuum stores B·κ²·h·w/2 over the chain's
    area; equating them at κ = FLEXION_MATCH_CURVATURE gives k = 16·B·w/(κ²·h⁵) (w ≈ h).
    Being axial springs, they are damped with the stretch damping time c/k of the material
    (the bending damping time would make them far too viscous for an explicit step).
    """
    pos = model.rest_positions
    chains = flexion_chains(model.edges, pos, model.vertex_count)
    a, c = chains[:, 0], chains[:, 2]
    span = np.linalg.norm(pos[c] - pos[a], axis=1)
    h = 0.5 * span
    kappa = FLEXION_MATCH_CURVATURE
    safe_h = np.where(h > 0, h, 1.0)
    k = 16.0 * model.material.bend_stiffness / (kappa ** 2 * safe_h ** 4)
    mat = model.material
    tau = mat.stretch_damping / mat.stretch_stiffness
    return np.stack([a, c], 1), span, k, tau * k
