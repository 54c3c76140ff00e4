"""Final against Preview quality against Blender's defaults: time, iterations, and distance
from each solver's own converged run.

Scenes (4k = ``-n 65``): ``hanging`` (1 m cotton held at two corners, ``scenarios.hanging_cloth``)
and ``sphere`` (2 m cotton onto a sphere, ``bench_collision.sphere_spec``); Blender's are the
same scenes through ``blender_builtin.run_builtin`` (its defaults: Cotton, quality 5).

* Deviation: the largest distance of any vertex in any frame from a converged run of the same
  solver. Ours against 32 steps per frame, 4 Newton iterations, CG 1e-5 (the reference of
  docs/benchmarks.md, "Final and Preview quality"); Blender's quality 5 against its quality 80.
* Time: ``--rounds`` rounds, each running Final, Preview and Blender's defaults once in a
  rotating order (the machine is shared): per round the median ms per frame (frames 2..N) and
  the ratios Final / Preview and Blender / Preview; the table gives the medians over rounds
  and, in brackets, the best round (the least disturbed), with the ratios of the best too;
  and the CPU time per frame of each run (all threads, ``time.process_time`` around the run,
  set-up included), less disturbed by other processes than the wall time.
* Counts: Newton and PCG iterations per frame (the frame reports' ``newton_iterations`` and
  ``iterations``; the latter also counts strain-limiter passes), worst-frame strain, deepest
  penetration. Counts are deterministic, times are not.

``--variant NAME:key=value,...`` adds our runs with other settings (deviation and counts only,
for choosing Preview's bundle: docs/solver.md, "Preview quality").

    .venv/bin/python bench/quality.py -n 65 --frames 40 --rounds 3 --json out/quality.json
    .venv/bin/python bench/quality.py -n 65 --scenes hanging --no-blender \\
        --variant "one:newton_iterations=1" --variant "r10:quality=preview,newton_residual=0.1"
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))  # scenarios.py: set-ups with known answers

from bench_collision import sphere_spec  # noqa: E402
import figures  # noqa: E402
from record import save_json  # noqa: E402
from scenarios import hanging_cloth  # noqa: E402
from solver import SolverSettings  # noqa: E402
from solver.formats.presets import load_preset  # noqa: E402
from solver.simulation import simulate  # noqa: E402

SCENES = ("hanging", "sphere")
# The converged run ours is measured against (docs/benchmarks.md, "Final and Preview quality")
CONVERGED = {"substeps": 32, "newton_iterations": 4, "cg_tolerance": 1e-5}
BLENDER_CONVERGED_QUALITY = 80
CACHE = ROOT / ".cache" / "bench-quality"


def spec(scene: str, n: int, frames: int, settings: dict):
    settings = dict(settings)
    if scene == "hanging":
        return hanging_cloth(n, load_preset("cotton"), SolverSettings(**settings), frames=frames)
    return sphere_spec(n, frames, False, settings.pop("substeps", None), **settings)


def deviation(positions: np.ndarray, reference: np.ndarray) -> float:
    """Largest vertex distance over all frames [m] (frame 0, the rest state, included)."""
    k = min(len(positions), len(reference))
    return float(np.linalg.norm(positions[:k] - reference[:k], axis=2).max())


def run_ours(scene: str, n: int, frames: int, settings: dict) -> dict:
    cpu = time.process_time()
    result = simulate(spec(scene, n, frames, settings))
    cpu = time.process_time() - cpu
    rows = result.report()["frames"]
    wall = np.array([f["wall_time_s"] for f in rows]) * 1e3
    return {
        "settings": settings, "error": result.error,
        "median_ms": float(np.median(wall[1:])),
        "cpu_ms": 1e3 * cpu / frames,
        "newton_per_frame": float(np.mean([f["newton_iterations"] for f in rows])),
        "iterations_per_frame": float(np.mean([f["iterations"] for f in rows])),
        "worst_frame_strain": max(f["max_strain"] for f in rows),
        "deepest_penetration_m": max(f["deepest_penetration_m"] for f in rows),
        "positions": result.positions,
    }


def ours_reference(scene: str, n: int, frames: int) -> np.ndarray:
    """The converged run's positions, cached under .cache/ (``--fresh`` recomputes)."""
    path = CACHE / f"ours_{scene}_{n}_{frames}.npy"
    if path.exists():
        return np.load(path)
    print(f"  converged run of ours ({scene}, n={n}): {CONVERGED}", flush=True)
    pos = run_ours(scene, n, frames, CONVERGED)["positions"]
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, pos)
    return pos


def run_blender(scene: str, n: int, frames: int, quality: int | None = None) -> dict:
    from blender_builtin import run_builtin
    cpu = time.process_time()
    r = run_builtin(n, frames + 1, scene=scene, quality=quality, every_frame=True)
    cpu = time.process_time() - cpu
    return {"median_ms": r["median_ms"], "cpu_ms": 1e3 * cpu / frames, "worst_frame_strain": r["worst_frame_strain"],
            "quality": r["quality"], "positions": r.pop("frame_positions")}


def blender_reference(scene: str, n: int, frames: int) -> np.ndarray:
    path = CACHE / f"blender_{scene}_{n}_{frames}_q{BLENDER_CONVERGED_QUALITY}.npy"
    if path.exists():
        return np.load(path)
    print(f"  converged run of Blender ({scene}, n={n}, quality "
          f"{BLENDER_CONVERGED_QUALITY})", flush=True)
    pos = run_blender(scene, n, frames, BLENDER_CONVERGED_QUALITY)["positions"]
    CACHE.mkdir(parents=True, exist_ok=True)
    np.save(path, pos)
    return pos


def parse_variant(text: str) -> tuple[str, dict]:
    name, _, body = text.partition(":")
    out = {}
    for item in filter(None, body.split(",")):
        key, _, value = item.partition("=")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return name, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", "--resolution", type=int, default=65)
    ap.add_argument("--frames", type=int, default=40)
    ap.add_argument("--scenes", nargs="+", choices=SCENES, default=list(SCENES))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--no-blender", action="store_true")
    ap.add_argument("--variant", action="append", default=[], help="NAME:key=value,...")
    ap.add_argument("--fresh", action="store_true", help="recompute the converged runs")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    n, frames = args.resolution, args.frames
    if args.fresh:
        for p in CACHE.glob(f"*_{n}_{frames}*.npy"):
            p.unlink()
    run_ours("hanging", 9, 3, {})  # compile (or load) the kernels outside the timings
    qualities = {"final": {"quality": "final"}, "preview": {"quality": "preview"}}
    out = {"resolution": n, "frames": frames, "scenes": {}}
    for scene in args.scenes:
        print(f"{scene}, n={n}, {frames} frames", flush=True)
        ref = ours_reference(scene, n, frames)
        rows: dict[str, dict] = {}
        runs: dict[str, list] = {k: [] for k in (*qualities, "blender")}
        order = list(runs) if not args.no_blender else list(qualities)
        for k in range(max(1, args.rounds)):
            shift = k % len(order)
            for name in order[shift:] + order[:shift]:
                r = run_blender(scene, n, frames) if name == "blender" else \
                    run_ours(scene, n, frames, qualities[name])
                runs[name].append(r)
                print(f"   round {k + 1} {name}: {r['median_ms']:.1f} ms per frame", flush=True)
        for name, rs in runs.items():
            if not rs:
                continue
            r = dict(rs[-1])
            r["runs_ms"] = [x["median_ms"] for x in rs]
            r["median_ms"] = float(np.median(r["runs_ms"]))
            r["best_ms"] = float(min(r["runs_ms"]))  # the least disturbed run
            # CPU time (all threads) per frame: the work done, much less disturbed by other
            # processes than the wall time on a shared machine
            r["runs_cpu_ms"] = [x["cpu_ms"] for x in rs]
            r["cpu_ms"] = float(np.median(r["runs_cpu_ms"]))
            r["deviation_m"] = deviation(r.pop("positions"), blender_reference(scene, n, frames)
                                         if name == "blender" else ref)
            rows[name] = r
        for name, settings in map(parse_variant, args.variant):
            r = run_ours(scene, n, frames, settings)
            r["deviation_m"] = deviation(r.pop("positions"), ref)
            rows[name] = r
        ratios = {
            "final_over_preview": [f["median_ms"] / p["median_ms"]
                                   for f, p in zip(runs["final"], runs["preview"])],
            "blender_over_preview": [b["median_ms"] / p["median_ms"]
                                     for b, p in zip(runs["blender"], runs["preview"])],
            "blender_over_final": [b["median_ms"] / f["median_ms"]
                                   for b, f in zip(runs["blender"], runs["final"])],
        }
        if runs["blender"]:
            ratios["best_blender_over_preview"] = [rows["blender"]["best_ms"]
                                                   / rows["preview"]["best_ms"]]
            ratios["best_blender_over_final"] = [rows["blender"]["best_ms"]
                                                 / rows["final"]["best_ms"]]
        ratios["best_final_over_preview"] = [rows["final"]["best_ms"] / rows["preview"]["best_ms"]]
        for a, b in (("final", "preview"), ("blender", "preview"), ("blender", "final")):
            if runs[a] and runs[b]:
                ratios[f"cpu_{a}_over_{b}"] = [x["cpu_ms"] / y["cpu_ms"]
                                               for x, y in zip(runs[a], runs[b])]
        out["scenes"][scene] = {"rows": rows, "ratios": ratios}
        print(f"| {scene} | ms/frame (best) | CPU ms/frame | Newton/frame | PCG+limiter its/frame | worst strain | "
              f"deepest pen. | deviation |")
        for name, r in rows.items():
            newton = r.get("newton_per_frame")
            its = r.get("iterations_per_frame")
            pen = r.get("deepest_penetration_m")
            best = f" ({r['best_ms']:.1f})" if "best_ms" in r else ""
            cpu = f"{r['cpu_ms']:.1f}" if "cpu_ms" in r else "-"
            print(f"| {name} | {r['median_ms']:.1f}{best} | {cpu} | "
                  f"{'-' if newton is None else f'{newton:.2f}'} | "
                  f"{'-' if its is None else f'{its:.1f}'} | "
                  f"{100 * r['worst_frame_strain']:.2f}% | "
                  f"{'-' if pen is None else f'{1e3 * pen:.2f} mm'} | "
                  f"{1e3 * r['deviation_m']:.0f} mm |", flush=True)
        for key, values in ratios.items():
            if values:
                print(f"   {key}: median {np.median(values):.2f} "
                      f"({', '.join(f'{v:.2f}' for v in values)})", flush=True)
    out["figures"] = figures.quality(out["scenes"])
    save_json(args.json, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
