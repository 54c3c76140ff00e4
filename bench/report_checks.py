"""What the frame report's checks cost, part by part, on the states of a headline bake.

The scene is the headline's (bench/headline.py, built through the add-on as bench/phases.py
builds it); it is baked once, one thread, keeping every frame's positions and velocities, and
then each frame's report is computed again from those states, the parts timed (CPU time) in
turn, each old way and new way one after the other in one process:

* ``energy_forces``: the elastic energy as the force kernels write it (``ForceSystem.internal``
  without a Jacobian, then ``elastic_energy``), against ``energy_only``: the energy-only
  kernels (``ForceSystem.energy``, what the report uses);
* ``inside_winding``: which vertices are inside a mesh collider by every vertex's winding
  number (``InsideTest.winding`` >= INSIDE), against ``inside_rays``: ``InsideTest.inside``
  (what the report uses: a ray proves most vertices outside, inside.py);
* ``intersections``: the two triangle-pair counts with their tree refits (unchanged), and
  ``report``: the whole ``frame_report`` as it is now.

Counts over the frames: vertices in the collider tree's root box, those a ray proved
outside, those inside; whether both ways found the same inside vertices (then the depths are
the same: the same kernel measures them), the deepest penetration reported, and the largest
relative difference of the two energies.

    .venv/bin/python bench/report_checks.py --json bench/results/report_checks.json
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import headline  # noqa: E402  (sets up the scratch Blender resources before bpy)
from record import save_json  # noqa: E402


def bake_states(module: str, spec) -> tuple[object, list, list]:
    """The Simulation after baking ``spec`` and every frame's (positions, velocities)."""
    Simulation = importlib.import_module(f"{module}.solver.simulation").Simulation
    sim = Simulation(spec)
    states = []
    while not sim.done:
        sim.step()
        states.append((sim.solver.x.copy(), sim.solver.v.copy()))
    if sim.result.error:
        raise RuntimeError(sim.result.error)
    return sim, states


def run(scene: str, quality: str, n: int, frames: int, rounds: int) -> dict:
    """The report's parts on every frame of one bake, ``rounds`` times: CPU seconds per
    part over the bake (the fastest round), and the counts."""
    import bpy
    import numba
    module, cloth = headline._scene_objects(scene, n, frames)
    cloth.cloth_solver.quality = quality.upper()
    bake = importlib.import_module(f"{module}.cloth_addon.bake")
    spec = bake.BakeJob(bpy.context, log=lambda line: None).groups[0].spec
    threads = importlib.import_module(f"{module}.solver.threads")
    threads.set_governor(threads.ThreadGovernor(enabled=False))
    numba.set_num_threads(1)
    simulation = importlib.import_module(f"{module}.solver.simulation")
    INSIDE = importlib.import_module(f"{module}.solver.collision.inside").INSIDE
    count = importlib.import_module(f"{module}.solver.collision.intersections") \
        .count_intersections
    sim, states = bake_states(module, spec)
    s, m = sim.solver, sim.model
    h = s.collisions
    c = h.colliders
    info = sim.result.frames[0]
    best: dict[str, float] = {}
    counts = {"frames": len(states), "in_root_box": 0, "proved_by_ray": 0, "inside": 0,
              "same_inside": True, "deepest_m": 0.0, "energy_rel_diff": 0.0}
    for r in range(rounds):
        seconds: dict[str, float] = {}

        def clock(name, f):
            t = time.process_time()
            out = f()
            seconds[name] = seconds.get(name, 0.0) + time.process_time() - t
            return out

        for f, (x, v) in enumerate(states, start=1):
            s.x[:], s.v[:] = x, v
            state = c.frame(f).end
            X = state.mesh_positions

            def forces_energy():
                s.system.internal(x, v)
                return s.system.elastic_energy()
            old = clock("energy_forces", forces_energy)
            new = clock("energy_only", lambda: s.system.energy(x))
            w = clock("inside_winding", lambda: h.inside.winding(x, X) >= INSIDE)
            inside = clock("inside_rays", lambda: h.inside.inside(x, X))

            def intersections():
                h.cloth_tree.refit(x, x, np.zeros(h.T))
                n = count(h.cloth_tree, h.cloth_tree, m.triangles, m.triangles, x, x, h.weld)
                if c.has_mesh:
                    h.collider_tree.refit(X, X, np.zeros(len(c.mesh_tris)))
                    n += count(h.cloth_tree, h.collider_tree, m.triangles, c.mesh_tris, x, X,
                               np.zeros(0, np.int64))
                return n
            clock("intersections", intersections)
            rep = clock("report", lambda: simulation.frame_report(f, 0.0, s, info, spec.gravity,
                                                                   state))
            if r == 0:
                counts["energy_rel_diff"] = max(counts["energy_rel_diff"],
                                                abs(new - old) / max(abs(old), 1e-300))
                t = h.inside.tree
                box = np.all((x >= t.lo[0]) & (x <= t.hi[0]), axis=1)
                counts["in_root_box"] += int(box.sum())
                counts["inside"] += int(w.sum())
                counts["same_inside"] &= bool(np.array_equal(w, inside))
                P = h.inside.fit(X)
                ray = importlib.import_module(f"{module}.solver.collision.inside").clear_ray
                pad = 1e-6 * float((t.hi[0] - t.lo[0]).max())
                stack = np.empty(128, np.int64)
                counts["proved_by_ray"] += sum(
                    ray(tuple(p), h.inside.tris, P, t.left, t.right, t.first, t.order, t.lo,
                        t.hi, pad, stack) for p in x[box])
                counts["deepest_m"] = max(counts["deepest_m"], rep.deepest_penetration_m)
        for k, v in seconds.items():
            best[k] = min(best.get(k, np.inf), v)
    out = {k: round(v, 4) for k, v in sorted(best.items())}
    return {"scene": scene, "quality": quality, "vertices": n * n, "frames": frames,
            "rounds": rounds, "seconds": out,
            "energy_ratio": round(best["energy_forces"] / best["energy_only"], 2),
            "inside_ratio": round(best["inside_winding"] / best["inside_rays"], 2),
            "report_before_s": round(best["report"] - best["energy_only"]
                                     - best["inside_rays"] + best["energy_forces"]
                                     + best["inside_winding"], 4),
            "counts": counts}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=65)
    ap.add_argument("--frames", type=int, default=48)
    ap.add_argument("--scenes", nargs="+", choices=headline.SCENES,
                    default=["sphere_self", "sphere"])
    ap.add_argument("--qualities", nargs="+", choices=("final", "preview"),
                    default=["final", "preview"])
    ap.add_argument("--rounds", type=int, default=3, help="rounds over the frames; the "
                    "fastest of each part is kept")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    importlib.import_module("numba")
    rows = {}
    for scene in args.scenes:
        for quality in args.qualities:
            r = run(scene, quality, args.size, args.frames, args.rounds)
            rows[f"{scene}_{quality}"] = r
            print(f"{scene} {quality}: " + ", ".join(f"{k} {v:.3f} s"
                                                     for k, v in r["seconds"].items())
                  + f"; before {r['report_before_s']:.3f} s; energy x{r['energy_ratio']}, "
                  f"inside x{r['inside_ratio']}; {r['counts']}", flush=True)
    save_json(args.json, {"args": vars(args) | {"json": str(args.json)},
                          "load": os.getloadavg()[0], "runs": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
