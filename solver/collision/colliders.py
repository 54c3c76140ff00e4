"""Colliders as arrays: analytic spheres and planes, and one combined triangle mesh of all mesh
colliders, with their state (positions) at every frame.

A collider moves by its rigid ``velocity`` from frame 0, or, for meshes, through per-frame
vertex positions (animated or deforming bodies). Within a frame the state is interpolated
linearly, so every collider point moves in a straight line over each substep, which is what
the continuous tests assume.

Contact distances: the cloth is a sheet of thickness t_c around its mid-surface and a collider
has an outer thickness t_o, so a cloth vertex is kept t_o + t_c/2 from a collider surface and
two cloth layers t_c apart.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..spec import Collider
from ..topology import canonical_triangles, components, unique_edges


# An open mesh collider encloses an inside when its holes, closed by fans, cover at most this
# fraction of its surface: a body scanned without a bottom or with a neck hole (a sphere
# without its lowest fifth: 0.2), but not a floor quad (1) or a bowl (0.5 and more)
SOLID_HOLES = 0.4


@dataclass(frozen=True)
class ColliderState:
    """Where the colliders are at one instant.

    Attributes:
        mesh_positions: vertices of all mesh colliders [m], (Vc, 3).
        sphere_centers: (S, 3) [m]. plane_points: a point of each plane (P, 3) [m].
    """

    mesh_positions: np.ndarray
    sphere_centers: np.ndarray
    plane_points: np.ndarray

    def lerp(self, other: "ColliderState", s: float) -> "ColliderState":
        """The state at fraction s of the straight motion from self to other."""
        return ColliderState(*((1.0 - s) * a + s * b for a, b in
                               ((self.mesh_positions, other.mesh_positions),
                                (self.sphere_centers, other.sphere_centers),
                                (self.plane_points, other.plane_points))))


@dataclass(frozen=True)
class ColliderFrame:
    """Collider states at the start and the end of one frame."""

    start: ColliderState
    end: ColliderState

    def at(self, s: float) -> ColliderState:
        """State at fraction s in [0, 1] of the frame."""
        if s <= 0.0:
            return self.start
        if s >= 1.0:
            return self.end
        return self.start.lerp(self.end, s)


class ColliderSet:
    """All colliders of a simulation, packed for the kernels.

    Args:
        colliders: the spec's colliders.
        cloth_thickness: t_c [m].
        fps: frames per second; frames: number of simulated frames (for per-frame positions).

    Attributes:
        sphere_radius, sphere_gap, sphere_mu (S,); plane_normal (P, 3), plane_gap, plane_mu (P,).
        mesh_tris: triangles of all mesh colliders (Tc, 3) into the combined vertices;
        mesh_group: the collider (index among mesh colliders) of each vertex (Vc,);
        mesh_gap, mesh_mu, mesh_closed: per mesh collider (G,); mesh_closed marks watertight
        meshes, for which "inside" is defined.
        mesh_orientation: per mesh collider (G,), +1 where its faces' normals (by their corner
        order) point out of it, −1 where the whole mesh is turned inside out.
        mesh_solid: per mesh collider (G,): it encloses an inside (closed, or open with holes
        that cover at most SOLID_HOLES of its surface: a scanned body, not a floor or a bowl).
        cap_edges, cap_loop: the boundary edges of the solid open meshes (B, 2), each as its
        face runs it, and the hole (boundary loop) of each (B,).
    """

    def __init__(self, colliders: tuple[Collider, ...], cloth_thickness: float, fps: float,
                 frames: int):
        self.fps = float(fps)
        self.frames = int(frames)
        half = 0.5 * float(cloth_thickness)
        spheres = [c for c in colliders if c.kind == "sphere"]
        planes = [c for c in colliders if c.kind == "plane"]
        meshes = [c for c in colliders if c.kind == "mesh"]
        unknown = [c.kind for c in colliders if c.kind not in ("sphere", "plane", "mesh")]
        if unknown:
            raise ValueError(f"unknown collider kind {unknown[0]!r} (sphere, plane or mesh)")

        def vec(c, name):
            v = np.asarray(getattr(c, name), dtype=np.float64).reshape(-1)
            if v.shape != (3,) or not np.all(np.isfinite(v)):
                raise ValueError(f"collider {name} must be 3 finite numbers, got {v.tolist()}")
            return v

        self.sphere_center = np.array([vec(c, "center") for c in spheres]).reshape(-1, 3)
        self.sphere_velocity = np.array([vec(c, "velocity") for c in spheres]).reshape(-1, 3)
        self.sphere_radius = np.array([float(c.radius) for c in spheres])
        if np.any(~(self.sphere_radius > 0)):
            raise ValueError("a sphere collider needs a radius > 0")
        self.sphere_gap = np.array([c.thickness + half for c in spheres])
        self.sphere_mu = np.array([float(c.friction) for c in spheres])

        normals = np.array([vec(c, "normal") for c in planes]).reshape(-1, 3)
        length = np.linalg.norm(normals, axis=1)
        if np.any(~(length > 0)):
            raise ValueError("a plane collider needs a non-zero normal")
        self.plane_normal = normals / np.where(length > 0, length, 1.0)[:, None]
        self.plane_point = np.array([vec(c, "point") for c in planes]).reshape(-1, 3)
        self.plane_velocity = np.array([vec(c, "velocity") for c in planes]).reshape(-1, 3)
        self.plane_gap = np.array([c.thickness + half for c in planes])
        self.plane_mu = np.array([float(c.friction) for c in planes])

        tris, groups, rest, motion, offset = [], [], [], [], 0
        for g, c in enumerate(meshes):
            if c.mesh is None:
                raise ValueError("a mesh collider needs a mesh")
            t = canonical_triangles(c.mesh)
            V = c.mesh.vertex_count
            tris.append(t + offset)
            groups.append(np.full(V, g, np.int64))
            rest.append(np.asarray(c.mesh.positions, dtype=np.float64))
            if c.positions is not None:
                pos = np.asarray(c.positions, dtype=np.float64)
                if pos.shape != (self.frames + 1, V, 3):
                    raise ValueError(f"mesh collider positions must have shape "
                                     f"{(self.frames + 1, V, 3)} (frames + 1, vertices, 3), "
                                     f"got {pos.shape}")
                motion.append(("positions", pos))
            else:
                motion.append(("velocity", vec(c, "velocity")))
            offset += V
        self.mesh_tris = np.concatenate(tris) if tris else np.zeros((0, 3), np.int64)
        self.mesh_group = np.concatenate(groups) if groups else np.zeros(0, np.int64)
        self._mesh_rest = np.concatenate(rest) if rest else np.zeros((0, 3))
        self._mesh_motion = motion
        self._mesh_ranges = np.cumsum([0] + [len(r) for r in rest])
        self.mesh_gap = np.array([c.thickness + half for c in meshes])
        self.mesh_mu = np.array([float(c.friction) for c in meshes])
        self.mesh_thickness = np.array([float(c.thickness) for c in meshes])
        self.mesh_closed = np.array([_is_closed(t - s) for t, s in
                                     zip(tris, self._mesh_ranges[:-1])], dtype=bool)
        self.mesh_orientation = np.array([_orientation(t, self._mesh_rest) for t in tris],
                                         dtype=np.int64)
        # holes, closed by a fan per boundary loop for inside/outside (inside.py)
        holes = [_holes(t, self._mesh_rest) for t in tris]
        self.mesh_solid = np.array([closed or hole <= SOLID_HOLES * area for closed, (_, _, hole,
                                    area) in zip(self.mesh_closed, holes)], dtype=bool)
        edges = [h[0] for h, solid in zip(holes, self.mesh_solid) if solid]
        loops, count = [], 0
        for h, solid in zip(holes, self.mesh_solid):
            if solid:
                loops.append(h[1] + count)
                count += int(h[1].max(initial=-1)) + 1
        self.cap_edges = np.concatenate(edges) if edges else np.zeros((0, 2), np.int64)
        self.cap_loop = np.concatenate(loops) if loops else np.zeros(0, np.int64)

    @property
    def has_mesh(self) -> bool:
        return len(self.mesh_tris) > 0

    @property
    def has_analytic(self) -> bool:
        return len(self.sphere_radius) + len(self.plane_gap) > 0

    @property
    def mesh_vertex_count(self) -> int:
        return len(self._mesh_rest)

    def state(self, frame: int) -> ColliderState:
        """Collider positions at a frame (frame 0 is the initial state)."""
        t = frame / self.fps
        mesh = self._mesh_rest.copy()
        for (kind, data), a, b in zip(self._mesh_motion, self._mesh_ranges[:-1],
                                      self._mesh_ranges[1:]):
            mesh[a:b] = data[frame] if kind == "positions" else mesh[a:b] + t * data
        return ColliderState(mesh, self.sphere_center + t * self.sphere_velocity,
                             self.plane_point + t * self.plane_velocity)

    def frame(self, frame: int) -> ColliderFrame:
        """States at the start (frame − 1) and end of simulated frame ``frame`` (>= 1)."""
        return ColliderFrame(self.state(frame - 1), self.state(frame))


def _is_closed(tris: np.ndarray) -> bool:
    """True if every edge of the triangles is shared by exactly two of them, once each way
    (a consistently oriented watertight surface)."""
    if len(tris) == 0:
        return False
    directed = np.stack([tris, np.roll(tris, -1, axis=1)], axis=2).reshape(-1, 2)
    edges, inverse = unique_edges(directed)
    count = np.bincount(inverse[inverse >= 0], minlength=len(edges))
    forward = np.bincount(inverse[(inverse >= 0) & (directed[:, 0] < directed[:, 1])],
                          minlength=len(edges))
    return bool(np.all(count == 2) and np.all(forward == 1))


def _orientation(tris: np.ndarray, positions: np.ndarray) -> int:
    """+1 if the triangles' normals point outwards on the whole, else −1: the sign of the
    volume they enclose as seen from their centroid (for an open mesh, the volume of the
    cone over its faces from there)."""
    p = positions[tris]
    p = p - p.reshape(-1, 3).mean(axis=0)
    volume = np.einsum("ij,ij->i", p[:, 0], np.cross(p[:, 1], p[:, 2])).sum()
    return 1 if volume >= 0.0 else -1


def _holes(tris: np.ndarray, positions: np.ndarray):
    """The holes of a triangle mesh: (boundary edges (B, 2) as their faces run them, the loop
    of each (B,), area of the fans that close the loops from their centroids [m²], area of the
    mesh [m²]). A boundary edge is one side of exactly one triangle."""
    sides = np.stack([tris, np.roll(tris, -1, axis=1)], axis=2).reshape(-1, 2)
    _, inverse = unique_edges(sides)
    count = np.bincount(inverse[inverse >= 0], minlength=inverse.max(initial=-1) + 1)
    edges = sides[(inverse >= 0) & (count[np.maximum(inverse, 0)] == 1)]
    p = positions[tris]
    area = 0.5 * float(np.linalg.norm(np.cross(p[:, 1] - p[:, 0], p[:, 2] - p[:, 0]),
                                      axis=1).sum())
    if len(edges) == 0:
        return edges, np.zeros(0, np.int64), 0.0, area
    loop = components(len(positions), edges)[edges[:, 0]]
    _, loop = np.unique(loop, return_inverse=True)
    centre = cap_centres(edges, loop.ravel(), positions)
    c = centre[loop.ravel()]
    fan = 0.5 * np.linalg.norm(np.cross(positions[edges[:, 0]] - c, positions[edges[:, 1]] - c),
                               axis=1).sum()
    return edges, loop.ravel(), float(fan), area


def cap_centres(edges: np.ndarray, loop: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The centroid of each hole's boundary vertices (L, 3) [m]: where its fan meets."""
    L = int(loop.max(initial=-1)) + 1
    total = np.zeros((L, 3))
    np.add.at(total, loop, positions[edges[:, 0]])
    return total / np.maximum(np.bincount(loop, minlength=L), 1)[:, None]
