"""How much bending energy a mesh stores for a known curvature, against the continuum.

Bends each flat mesh isometrically into a cylinder of curvature κ about an axis at angle φ in
its plane and sums the model's hinge energies ½·k·θ² (k = ``ClothModel.hinge_stiffness``) over
the hinges away from the boundary; prints that sum divided by ∫B/2·κ² dA over the same
triangles. 1.0 means the discretisation keeps B's meaning on that mesh; the ratio for the drape
harness's ring meshes at each edge length is what presets/README.md ("Mesh resolution") cites.

Run:  PYTHONPATH=. NUMBA_CACHE_DIR=$PWD/.cache/numba-py311 .venv/bin/python bench/bending_consistency.py
"""

from __future__ import annotations

import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [ROOT, os.path.join(ROOT, "bench")]

from drape import specimen_mesh

from solver import ClothSetup, MaterialParams, PolyMesh, build_model
from solver.forces.bending import hinge_coefficients
from solver.geometry import angles_and_grams

CURVATURE = 5.0   # 1/m: a 20 cm radius, gentle against every mesh here


def bent_onto_cylinder(pos: np.ndarray, kappa: float, phi: float) -> np.ndarray:
    """Flat positions (V, 3) wrapped without stretching onto a cylinder of curvature ``kappa``
    [1/m] whose axis lies in the xy plane at angle ``phi`` [rad] from x."""
    a = np.array([np.cos(phi), np.sin(phi)])
    b = np.array([-np.sin(phi), np.cos(phi)])
    u, s = pos[:, :2] @ a, pos[:, :2] @ b
    r = 1.0 / kappa
    along, across = r * np.sin(s / r), r * (1.0 - np.cos(s / r))
    return np.column_stack([u * a[0] + along * b[0], u * a[1] + along * b[1], across])


def energy_ratio(pos, faces, interior, phi, kappa=CURVATURE) -> float:
    """Hinge energy over ∫B/2·κ² dA, both over the hinges whose four vertices are all
    ``interior`` (a boolean per vertex); a hinge's share of the area is a third of its two
    triangles' (each triangle has three hinges), so the region's edge biases neither sum."""
    bend = 1.0e-5
    mat = MaterialParams(bend_stiffness=bend)
    model = build_model(ClothSetup(mesh=PolyMesh.from_faces(pos, faces), material=mat))
    h = model.hinges
    theta = angles_and_grams(bent_onto_cylinder(pos, kappa, phi), h, grams=False)[0]
    keep = interior[h].all(axis=1)

    def area(a, b, c):
        return 0.5 * np.linalg.norm(np.cross(pos[b] - pos[a], pos[c] - pos[a]), axis=1)
    # hinge_stiffness carries each hinge's weight (½ for each split of a quad), so does its area
    weight = model.hinge_stiffness / hinge_coefficients(
        mat, pos, h, area(h[:, 0], h[:, 1], h[:, 2]) + area(h[:, 0], h[:, 1], h[:, 3]),
        np.ones(len(h)))[0]
    share = weight * (area(h[:, 0], h[:, 1], h[:, 2]) + area(h[:, 0], h[:, 1], h[:, 3])) / 3.0
    energy = 0.5 * float((model.hinge_stiffness * theta ** 2)[keep].sum())
    return energy / (0.5 * bend * kappa ** 2 * float(share[keep].sum()))


def equilateral_mesh(edge=0.01, n=60):
    from scipy.spatial import Delaunay
    xy = np.array([(i * edge + (j % 2) * edge / 2, j * edge * np.sqrt(3) / 2)
                   for j in range(n) for i in range(n)])
    pos = np.column_stack([xy, np.zeros(len(xy))])
    return pos, Delaunay(xy).simplices.astype(np.int64)


def quad_grid(edge=0.01, n=50):
    pos = np.array([(i * edge, j * edge, 0.0) for j in range(n) for i in range(n)])
    v = (np.arange(n - 1)[:, None] * n + np.arange(n - 1)[None, :]).ravel()
    return pos, np.column_stack([v, v + 1, v + n + 1, v + n]).astype(np.int64)


def one_diagonal_grid(edge=0.01, n=50):
    pos = np.array([(i * edge, j * edge, 0.0) for j in range(n) for i in range(n)])
    v = (np.arange(n - 1)[:, None] * n + np.arange(n - 1)[None, :]).ravel()
    tris = np.concatenate([np.column_stack([v, v + 1, v + n + 1]),
                           np.column_stack([v, v + n + 1, v + n])])
    return pos, tris.astype(np.int64)


def main():
    rows = []
    for name, (pos, tris) in (("equilateral, 10 mm", equilateral_mesh()),
                              ("square grid, one diagonal, 10 mm", one_diagonal_grid()),
                              ("square grid of quads, 10 mm", quad_grid())):
        c = pos[:, :2].mean(axis=0)
        interior = np.linalg.norm(pos[:, :2] - c, axis=1) < 0.18
        for phi in (0.0, 22.5, 45.0, 90.0, 135.0):
            rows.append((name, phi, energy_ratio(pos, tris, interior, np.radians(phi))))
    for edge in (0.0035, 0.005, 0.007, 0.01):
        for seed in (0, 1):
            pos, tris, _ = specimen_mesh(edge, seed)
            r = np.hypot(pos[:, 0], pos[:, 1])
            interior = (r > 0.10) & (r < 0.14)
            for phi in (0.0, 30.0):
                rows.append((f"drape ring mesh {edge * 1e3:g} mm, seed {seed}", phi,
                             energy_ratio(pos, tris, interior, np.radians(phi))))
    print("| mesh | bending axis φ [deg] | hinge energy / ∫B/2·κ² dA |")
    print("|---|---|---|")
    for name, phi, ratio in rows:
        print(f"| {name} | {phi:g} | {ratio:.3f} |")


if __name__ == "__main__":
    main()
