"""Blender never waits for a bake, and showing its frames costs (almost) nothing.

Two measurements, each cold (an empty numba cache: the session's first bake compiles every
kernel it needs) and warm (the cache the cold session left):

- **A real window** (Debian's Blender 3.4 under Xvfb, the one Blender with a window here; the add-on
  installed as a legacy add-on from this checkout), driven by tests/blender/live_ui_session.py:
  a sheet of N x N vertices falling onto a sphere collider, each size cold then warm. A 10 ms
  timer records how late it runs: the longest main-thread block during the session's first bake
  and during each later one, and Blender idle in the same window before any bake and after them.
  Esc is pressed with xdotool (the X server's keyboard, as a user presses it; Blender runs
  without --enable-event-simulate) 3 s into the session's first bake (compiling on a cold cache)
  and in a later bake: the seconds from the key press to the bake operator's modal reading it
  (answered), to the bake ended in the UI, and to the worker idle. Every add-on callback on the
  main thread (the bake operator's modal and invoke, the add-on's timers, handlers and panel
  draws) and Python's garbage collections are timed: the longest of each, and the add-on's
  share of every block over 0.1 s. The warm session then bakes the same scene REPEATS times
  clicked with the live view, clicked without it and from a script, interleaved: the clicked
  bakes' times with and without the view are what showing the frames costs.
- **The bpy wheels** (4.2 LTS, 5.0, 5.2 LTS; no window): bench/live_probe.py runs a bake as
  the modal bake does (in the worker process) while the main thread takes its frames between
  10 ms sleeps; how late it wakes is how long the main thread was kept from Blender's events.

Xvfb draws with Mesa's software renderer on the CPU, which a GPU does on a workstation: the
blocks measured in the window include the viewport's drawing on two shared cores (an upper
bound); the screen's size, the machine's load as each size's sessions start and end, and
``--conditions`` (such as other work paused) are recorded with each size's figures.

Usage: ``python bench/live_bake.py [--sizes 12 40] [--frames 48] [--repeats 3]
[--skip-wheels] [--skip-window] [--screen 1280x720] [--conditions TEXT] [--keep DIR]
[--shots docs/ui]`` writes bench/results/live_bake.json (a window size's figures replace that
size's only; xdotool must be installed: ``apt-get install xdotool``)
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
                   repeats: int, shots: Path | None = None, screen: str = "1280x720",
                   xdotool: bool = True) -> dict:
    env = {**os.environ, "BLENDER_USER_SCRIPTS": str(user), "NUMBA_CACHE_DIR": str(cache),
           "CLOTH_SOLVER_WARMUP": "0", "CLOTH_SOLVER_BASELINE": "1",
           "CLOTH_SOLVER_ESC_FIRST": "1", "CLOTH_SOLVER_XDOTOOL": "1" if xdotool else "0"}
    cmd = ["xvfb-run", "-a", "-s", f"-screen 0 {screen}x24", shutil.which("blender"),
           "--factory-startup", *(() if xdotool else ("--enable-event-simulate",)),
           "--addons", "cloth_solver",
           "--python", str(SESSION), "--", str(out), str(n), str(frames), str(repeats),
           str(shots or "")]
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
    if not out.is_file():
        raise RuntimeError(run.stdout[-3000:] + run.stderr[-3000:])
    result = json.loads(out.read_text())
    if "error" in result:
        raise RuntimeError(result["error"] + run.stdout[-2000:] + run.stderr[-2000:])
    return result


def _round(x: float | None, digits: int) -> float | None:
    return None if x is None else round(x, digits)


def window_summary(result: dict) -> dict:
    timing = result["timing"]
    ours = {k: v for k, v in result["ours"].items() if not k.startswith("gc ")}
    longest = max(ours, key=lambda k: ours[k]["longest_s"])
    collections = [v["longest_s"] for k, v in result["ours"].items() if k.startswith("gc ")]
    out = {
        "runner": result["runner"],
        "window_size": result["window_size"],
        "load": result.get("load"),  # the 1-minute load average as it started and ended
        # None: the modal never saw the key; worker idle None: still busy after 10 s
        "esc_first_answered_s": _round(result["esc first"]["answered_s"], 3),
        "esc_first_ended_s": round(result["esc first"]["ended_s"], 3),
        "esc_first_worker_idle_s": _round(result["esc first"]["worker_idle_s"], 2),
        "first_bake_worst_block_s": round(result["first bake"]["worst_block_s"], 3),
        "esc_answered_s": _round(result["esc"]["answered_s"], 3),
        "esc_ended_s": round(result["esc"]["ended_s"], 3),
        "esc_worker_idle_s": _round(result["esc"]["worker_idle_s"], 2),
        "play_worst_block_s": round(result["play"]["worst_block_s"], 3),
        "idle_before_worst_block_s": round(result["idle before worst_block_s"], 3),
        "idle_worst_block_s": round(result["idle worst_block_s"], 3),
        # the add-on's own Python on the main thread: its longest single callback, and the
        # longest blocks with the add-on's share of each
        "ours_longest_s": round(ours[longest]["longest_s"], 3),
        "ours_longest": longest,
        # Python's longest garbage collection in Blender's process (any Python's, the UI's too)
        "gc_longest_s": round(max(collections, default=0.0), 3),
        # the most of the add-on's Python in any block over 0.1 s
        "ours_in_blocks_max_s": round(max((o for _, o in result["blocks"]), default=0.0), 3),
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
    parser.add_argument("--screen", default="1280x720",
                        help="Xvfb's screen, WIDTHxHEIGHT (Blender's window fills it)")
    parser.add_argument("--event-simulate", action="store_true",
                        help="press Esc through Blender's event simulation instead of xdotool")
    parser.add_argument("--conditions", default="",
                        help="recorded with the window's figures, e.g. 'other work paused'")
    parser.add_argument("--keep", type=Path, default=None,
                        help="keep each window session's full result (every callback timed) here")
    parser.add_argument("--summarize", type=Path, default=None,
                        help="take the window sessions kept (--keep) in this folder instead of "
                             "running them (with the --conditions they ran under)")
    parser.add_argument("--json", type=Path,
                        default=ROOT / "bench" / "results" / "live_bake.json")
    args = parser.parse_args()
    import dev_addon
    work = Path(tempfile.mkdtemp(prefix="cloth_solver_live_bench_"))
    out: dict = json.loads(args.json.read_text()) if args.json.is_file() else {}
    out.update({"frames": args.frames, "scene": "N x N sheet (2 m) onto a sphere collider"})
    if not args.skip_wheels:
        out["load_before"] = round(os.getloadavg()[0], 2)
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
        out["load_after"] = round(os.getloadavg()[0], 2)
    if not args.skip_window:
        user = work / "user"
        dev_addon._copy(user / "addons")
        out.setdefault("window", {})  # each size's figures stay until that size runs again
        for n in args.sizes:
            sizes = {"conditions": {
                "screen": args.screen,
                "esc_pressed_by": "Blender's event simulation" if args.event_simulate
                else "xdotool (the X server's keyboard)", "note": args.conditions}}
            cache = work / f"numba-{n}"  # each size's cold session compiles from nothing
            for name in ("cold", "warm"):
                repeats = 0 if name == "cold" else args.repeats
                shots = args.shots if name == "warm" and n == args.sizes[-1] else None
                if args.summarize is not None:  # sessions kept by an earlier run
                    result = json.loads((args.summarize / f"{n}-{name}.json").read_text())
                else:
                    result = window_session(work / f"{n}-{name}.json", user, cache, n,
                                            args.frames, repeats, shots, args.screen,
                                            not args.event_simulate)
                if args.keep is not None:
                    args.keep.mkdir(parents=True, exist_ok=True)
                    shutil.copy(work / f"{n}-{name}.json", args.keep / f"{n}-{name}.json")
                out["blender_window"] = result["blender"]
                sizes[name] = window_summary(result)
                print(n, name, json.dumps(sizes[name]), flush=True)
            # the 1-minute load average as the cold session started and the warm one ended
            sizes["conditions"]["load"] = [sizes["cold"]["load"][0], sizes["warm"]["load"][1]]
            out["window"][f"{n}x{n}"] = sizes
        costs = [s["warm"]["live_view_cost"] for s in out["window"].values()]
        out["live_view_cost_max"] = max(costs)
        out["window_worst_block_s"] = max(
            max(s.get("first_bake_worst_block_s", 0.0), s.get("worst_block_s", 0.0))
            for sizes in out["window"].values() for name, s in sizes.items()
            if name in ("cold", "warm"))
    from record import save_json
    save_json(args.json, out)
    print(json.dumps(out, indent=1))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
