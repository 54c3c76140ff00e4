"""Blender never waits for a bake, and showing its frames costs (almost) nothing.

Two measurements, each cold (an empty numba cache: the session's first bake compiles every
kernel it needs) and warm (the cache the cold session left):

- **A real window** (Debian's Blender 3.4 under Xvfb, the one Blender with a window here; the add-on
  installed as a legacy add-on from this checkout), driven by tests/blender/live_ui_session.py:
  a sheet of N x N vertices falling onto a sphere collider. A 10 ms timer records how late it
  runs: the longest main-thread block (Blender drawing, the add-on's Python, the GIL) during the
  session's first bake and during each later one, and how long Esc takes to end a bake. The warm
  session then bakes the same scene REPEATS times clicked with the live view, clicked without it
  and from a script, interleaved: the clicked bakes' times with and without the view are what
  showing the frames costs.
- **The bpy wheels** (4.2 LTS, 5.0, 5.2 LTS; no window): bench/live_probe.py runs a bake as
  the modal bake does (in the worker process) while the main thread takes its frames between
  10 ms sleeps; how late it wakes is how long the main thread was kept from Blender's events.

Xvfb draws with Mesa's software renderer on the CPU, which a GPU does on a workstation: the
blocks measured in the window include the viewport's drawing on two shared cores (an upper
bound), and the machine's load is recorded before and after.

Usage: ``python bench/live_bake.py [--sizes 12 40] [--frames 48] [--repeats 3]
[--skip-wheels] [--skip-window] [--shots docs/ui]`` writes bench/results/live_bake.json
(run it with a Python that does not put another ``python3.11`` first on PATH, such as
``.venv/bin/python``: Debian's Blender 3.4 takes the first one as its own).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SESSION = ROOT / "tests" / "blender" / "live_ui_session.py"
PROBE = ROOT / "bench" / "live_probe.py"
WHEELS = {"4.2": ".venv-bpy42", "5.0": ".venv", "5.2": ".venv-bpy52"}
sys.path[:0] = [str(ROOT / "scripts"), str(ROOT / "bench")]


def window_session(out: Path, user: Path, cache: Path, n: int, frames: int,
                   repeats: int, shots: Path | None = None) -> dict:
    env = {**os.environ, "BLENDER_USER_SCRIPTS": str(user), "NUMBA_CACHE_DIR": str(cache),
           "CLOTH_SOLVER_WARMUP": "0", "CLOTH_SOLVER_BASELINE": "1"}
    cmd = ["xvfb-run", "-a", "-s", "-screen 0 1280x720x24", shutil.which("blender"),
           "--factory-startup", "--enable-event-simulate", "--addons", "cloth_solver",
           "--python", str(SESSION), "--", str(out), str(n), str(frames), str(repeats),
           str(shots or "")]
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
    if not out.is_file():
        raise RuntimeError(run.stdout[-3000:] + run.stderr[-3000:])
    result = json.loads(out.read_text())
    if "error" in result:
        raise RuntimeError(result["error"] + run.stdout[-2000:] + run.stderr[-2000:])
    return result


def window_summary(result: dict) -> dict:
    timing = result["timing"]
    out = {
        "runner": result["runner"],
        "first_bake_worst_block_s": round(result["first bake"]["worst_block_s"], 3),
        "esc_answered_s": round(result["esc"]["answered_s"], 3),
        "play_worst_block_s": round(result["play"]["worst_block_s"], 3),
        "idle_worst_block_s": round(result["idle worst_block_s"], 3),
    }
    if timing:
        out.update({
            "worst_block_s": round(max(max(t["clicked_worst_block_s"],
                                           t["clicked_no_view_worst_block_s"])
                                       for t in timing), 3),
            "clicked_s": [round(t["clicked_s"], 2) for t in timing],
            "clicked_no_view_s": [round(t["clicked_no_view_s"], 2) for t in timing],
            "scripted_s": [round(t["scripted_s"], 2) for t in timing],
            # what showing the frames costs: each clicked bake against the one without the
            # view right after it, the median of the repeats
            "live_view_cost": round(statistics.median(
                t["clicked_s"] / t["clicked_no_view_s"] - 1.0 for t in timing), 3),
            "clicked_over_scripted": round(statistics.median(
                t["clicked_s"] / t["scripted_s"] for t in timing), 3),
        })
    return out


def wheel_session(venv: str, out: Path, addon: Path, cache: Path, n: int, frames: int) -> dict:
    python = ROOT / venv / "bin" / "python"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "CLOTH_SOLVER_WARMUP": "0"}
    run = subprocess.run([str(python), str(PROBE), str(out), str(n), str(frames), str(addon)],
                         capture_output=True, text=True, env=env, timeout=3600)
    if not out.is_file():
        raise RuntimeError(run.stdout[-3000:] + run.stderr[-3000:])
    return json.loads(out.read_text())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[12, 40])
    parser.add_argument("--frames", type=int, default=48)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-wheels", action="store_true")
    parser.add_argument("--skip-window", action="store_true")
    parser.add_argument("--shots", type=Path, default=None,
                        help="write the window's screenshots mid-bake (the last size's warm "
                             "session) into this folder, e.g. docs/ui")
    parser.add_argument("--json", type=Path,
                        default=ROOT / "bench" / "results" / "live_bake.json")
    args = parser.parse_args()
    import dev_addon
    work = Path(tempfile.mkdtemp(prefix="cloth_solver_live_bench_"))
    out: dict = json.loads(args.json.read_text()) if args.json.is_file() else {}
    out.update({"frames": args.frames, "scene": "N x N sheet (2 m) onto a sphere collider",
                "load_before": round(os.getloadavg()[0], 2)})
    if not args.skip_wheels:
        out["wheels"] = {}
        for version, venv in WHEELS.items():
            n = args.sizes[-1]
            cache, addon = work / f"numba-{version}", work / f"addon-{version}"
            runs = {}
            for name in ("cold", "warm"):
                t = time.perf_counter()
                runs[name] = wheel_session(venv, work / f"{version}-{name}.json", addon, cache,
                                           n, args.frames)
                runs[name]["session_s"] = round(time.perf_counter() - t, 1)
            runs["n"] = n
            out["wheels"][f"bpy_{version.replace('.', '_')}"] = runs  # no dot: docs' paths
            print(version, json.dumps(runs), flush=True)
    if not args.skip_window:
        user, cache = work / "user", work / "numba"
        dev_addon._copy(user / "addons")
        out["window"] = {}
        for i, n in enumerate(args.sizes):
            sizes = {}
            # the cold session once (for the first size), then warm sessions for every size
            for name in (("cold",) if i == 0 else ()) + ("warm",):
                repeats = 0 if name == "cold" else args.repeats
                shots = args.shots if name == "warm" and n == args.sizes[-1] else None
                result = window_session(work / f"{n}-{name}.json", user, cache, n,
                                        args.frames, repeats, shots)
                out["blender_window"] = result["blender"]
                sizes[name] = window_summary(result)
                print(n, name, json.dumps(sizes[name]), flush=True)
            out["window"][f"{n}x{n}"] = sizes
        costs = [s["warm"]["live_view_cost"] for s in out["window"].values()]
        out["live_view_cost_max"] = max(costs)
        out["window_worst_block_s"] = max(
            max(s.get("first_bake_worst_block_s", 0.0), s.get("worst_block_s", 0.0))
            for sizes in out["window"].values() for s in sizes.values())
    out["load_after"] = round(os.getloadavg()[0], 2)
    from record import save_json
    save_json(args.json, out)
    print(json.dumps(out, indent=1))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
