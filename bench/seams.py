"""Seams: the gap against frames, and what sewing costs per frame.

    python bench/seams.py              # prints the tables of docs/solver.md, "Seams"

Scenes (tests/test_seams.py's, finer): a tube sewn from two cotton panels 0.26 m apart around
a horizontal cylinder (r = 0.1 m, self-collision), and two cotton panels 6 cm apart side by
side, the left one pinned at its left edge (the Blender test's scene), in both models.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from solver import (ClothSetup, Collider, PolyMesh, SimulationSpec, SolverSettings,  # noqa: E402
                    grid_mesh, load_preset, simulate)
from solver.forces.bending import bending_terms  # noqa: E402
from solver.forces.membrane import membrane_terms  # noqa: E402
from solver.forces.seams import seam_gaps  # noqa: E402
from solver.model import build_model  # noqa: E402
from solver.system import ForceSystem  # noqa: E402
from test_seams import _cylinder, _panels  # noqa: E402


def side_by_side(n=9):
    g = grid_mesh((0.2, 0.2), (n, n), (0.0, 0.0, 1.0))
    V = g.vertex_count
    mesh = PolyMesh(np.concatenate([g.positions - [0.13, 0, 0], g.positions + [0.13, 0, 0]]),
                    np.concatenate([g.face_indices, g.face_indices + V]),
                    np.concatenate([g.face_offsets, g.face_offsets[1:] + len(g.face_indices)]))
    rows = n * np.arange(n)
    return mesh, np.stack([rows + n - 1, rows + V], 1), rows


def run(spec, seams):
    t = time.perf_counter()
    res = simulate(spec)
    wall = time.perf_counter() - t
    gaps = np.array([seam_gaps(x, seams) for x in res.positions])
    frame = np.median([f.wall_time_s for f in res.frames])
    return res, gaps, wall, frame


def main():
    cotton = load_preset("cotton")
    print(f"cotton: thickness {cotton.thickness * 1e3:.1f} mm, seam force "
          f"{cotton.seam_force:g} N/m\n")
    mesh, seams = _panels(17, 27, 0.3, 0.5, 0.13)
    cyl = (Collider("mesh", mesh=_cylinder(0.1, 0.6), thickness=0.002),)
    rows = {}
    for sewn in (True, False):
        spec = SimulationSpec(ClothSetup(mesh, cotton, seams=seams if sewn else None),
                              SolverSettings(self_collision=True), frames=48, colliders=cyl)
        res, gaps, wall, frame = run(spec, seams)
        rows[sewn] = (res, gaps, frame)
        print(f"tube {mesh.vertex_count} vertices, seams {'on' if sewn else 'off'}: "
              f"median frame {frame:.3f} s, total {wall:.1f} s, error {res.error}")
    res, gaps, _ = rows[True]
    print("\n| frame | " + " | ".join(str(f) for f in range(0, 49, 6)) + " |")
    print("|---|" + "---|" * 9)
    print("| tube, widest gap [mm] | " + " | ".join(f"{1e3 * gaps[f].max():.2f}"
                                                  for f in range(0, 49, 6)) + " |")
    print(f"tube: penetration {max(f.deepest_penetration_m for f in res.frames)} m, "
          f"self-intersections {max(f.self_intersections for f in res.frames)}, "
          f"collider crossings {max(f.collider_crossings for f in res.frames)}")
    mesh, seams, pins = side_by_side()
    for model in ("implicit", "mass_spring"):
        spec = SimulationSpec(ClothSetup(mesh, cotton, pin_indices=pins, seams=seams),
                              SolverSettings(model=model), frames=24)
        res, gaps, wall, frame = run(spec, seams)
        free = simulate(SimulationSpec(ClothSetup(mesh, cotton, pin_indices=pins),
                                       SolverSettings(model=model), frames=2))
        print(f"| side by side, {model}, widest gap [mm] | " + " | ".join(
            f"{1e3 * gaps[f].max():.3f}" for f in range(0, 25, 3)) + " |")
        print(f"  substeps frame 1: {res.frames[0].substeps} sewn, "
              f"{free.frames[0].substeps} not sewn; median frame {frame:.3f} s")
    # the force system alone: one evaluation with its matrix, with and without the seams
    mesh, seams = _panels(17, 27, 0.3, 0.5, 0.13)
    for sewn in (True, False):
        m = build_model(ClothSetup(mesh, cotton, seams=seams if sewn else None))
        s = ForceSystem(m, membrane=membrane_terms(m), hinges=bending_terms(m))
        x, v = m.rest_positions, np.zeros_like(m.rest_positions)
        s.internal(x, v, (1.0, 1.0))
        best = np.inf
        for _ in range(10):  # the fastest of 10 batches: the machine is shared
            t = time.perf_counter()
            for _ in range(50):
                s.internal(x, v, (1.0, 1.0))
            best = min(best, (time.perf_counter() - t) / 50)
        print(f"force evaluation with matrix, {len(m.seams)} seams: {best * 1e6:.0f} µs")


if __name__ == "__main__":
    main()
