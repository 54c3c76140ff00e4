"""Collider bodies as artists have them, built from arrays for the tests and benchmarks: faceted
(a UV sphere as Blender makes it, low-poly cylinders), open (no bottom cap, a hole) and made of
parts that touch (arms hanging against a torso, one mesh), and cloth tubes to pose around them."""

from __future__ import annotations

import numpy as np

from solver import PolyMesh


def uv_sphere(radius, center=(0.0, 0.0, 0.0), segments=32, rings=16) -> PolyMesh:
    """Blender's UV sphere: a pole vertex at each end, rings of quads, triangle fans at the
    poles (outward faces)."""
    c = np.asarray(center, dtype=np.float64)
    th = np.pi * np.arange(1, rings) / rings
    ph = 2 * np.pi * np.arange(segments) / segments
    ring = np.stack([np.outer(np.sin(th), np.cos(ph)), np.outer(np.sin(th), np.sin(ph)),
                     np.repeat(np.cos(th)[:, None], segments, axis=1)], axis=-1).reshape(-1, 3)
    pos = c + radius * np.concatenate([[[0.0, 0.0, 1.0]], ring, [[0.0, 0.0, -1.0]]])
    bottom = len(pos) - 1

    def at(r, k):
        return 1 + (r - 1) * segments + k % segments

    faces = [(0, at(1, k), at(1, k + 1)) for k in range(segments)]
    faces += [(at(r, k), at(r + 1, k), at(r + 1, k + 1), at(r, k + 1))
              for r in range(1, rings - 1) for k in range(segments)]
    faces += [(bottom, at(rings - 1, k + 1), at(rings - 1, k)) for k in range(segments)]
    return PolyMesh.from_faces(pos, faces)


def cylinder(radius, length, center=(0.0, 0.0, 0.0), axis="z", segments=12, caps=(True, True),
             rings=1) -> PolyMesh:
    """A faceted cylinder along ``axis`` with outward faces: ``segments`` sides, ``rings``
    rows of quads along its length, and a polygon cap at each end that ``caps`` (low, high)
    asks for."""
    ph = 2 * np.pi * np.arange(segments) / segments
    z = length * (np.arange(rings + 1) / rings - 0.5)
    local = np.stack([np.tile(radius * np.cos(ph), rings + 1),
                      np.tile(radius * np.sin(ph), rings + 1), np.repeat(z, segments)], axis=1)
    faces = [(r * segments + k, r * segments + (k + 1) % segments,
              (r + 1) * segments + (k + 1) % segments, (r + 1) * segments + k)
             for r in range(rings) for k in range(segments)]
    if caps[0]:
        faces.append(tuple(range(segments - 1, -1, -1)))
    if caps[1]:
        faces.append(tuple(rings * segments + np.arange(segments)))
    turn = {"x": [2, 0, 1], "y": [1, 2, 0], "z": [0, 1, 2]}[axis]
    return PolyMesh.from_faces(local[:, turn] + np.asarray(center, dtype=np.float64), faces)


def without_faces(mesh: PolyMesh, drop) -> PolyMesh:
    """The mesh less the faces whose centre satisfies drop(centre (3,)) -> bool (a hole, a
    missing cap); unused vertices are kept (they change nothing)."""
    faces = [f for f in mesh.faces() if not drop(mesh.positions[f].mean(axis=0))]
    return PolyMesh.from_faces(mesh.positions, faces)


def joined(*meshes: PolyMesh) -> PolyMesh:
    """One mesh of several parts (as an artist's body is one object)."""
    pos, faces, offset = [], [], 0
    for m in meshes:
        pos.append(m.positions)
        faces += [np.asarray(f) + offset for f in m.faces()]
        offset += m.vertex_count
    return PolyMesh.from_faces(np.concatenate(pos), faces)


def torso_with_arms(overlap=0.005, open_bottom=False) -> PolyMesh:
    """A low-poly body as one mesh: a 12-sided torso (radius 0.15 m, 0.6 m tall, centred at
    z = 1.1 m) and two 8-sided arms (radius 0.045 m, 0.55 m) hanging against its sides, each
    reaching ``overlap`` [m] into it (0: touching), their tops 5 cm below the torso's top.
    open_bottom: the torso has no bottom cap (as scanned bodies come)."""
    caps = (not open_bottom, True)
    torso = cylinder(0.15, 0.6, (0.0, 0.0, 1.1), "z", 12, caps, rings=4)
    side = 0.15 + 0.045 - overlap
    arms = [cylinder(0.045, 0.55, (s * side, 0.0, 1.1 - 0.025), "z", 8, rings=3)
            for s in (-1.0, 1.0)]
    return joined(torso, *arms)


def tube(radius, length, center=(0.0, 0.0, 0.0), around=24, along=12) -> PolyMesh:
    """An open cloth tube along z (a sleeve, a skirt), ``around`` x ``along`` vertices, its
    quads' corners ordered so the normals point out."""
    ph = 2 * np.pi * np.arange(around) / around
    z = length * (np.arange(along) / (along - 1) - 0.5)
    pos = np.stack([np.tile(radius * np.cos(ph), along), np.tile(radius * np.sin(ph), along),
                    np.repeat(z, around)], axis=1) + np.asarray(center, dtype=np.float64)
    faces = [(r * around + k, r * around + (k + 1) % around,
              (r + 1) * around + (k + 1) % around, (r + 1) * around + k)
             for r in range(along - 1) for k in range(around)]
    return PolyMesh.from_faces(pos, faces)
