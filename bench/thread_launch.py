"""Where the solver's parallel kernels are launched from: the process's main thread or another one.

The same simulation (a 65 × 65 cotton sheet hanging from two corners, implicit model, Final) is
stepped on the main thread and on a ``threading.Thread`` (the main thread waiting in ``join``),
alternating, in one process; ms per frame is the median over frames 2..N of the solver's own
frame times. With numba's OpenMP threading layer the kernels launched from another thread ran
markedly slower: why a script's or ``blender -b``'s bake steps on the calling thread
(cloth_addon/runner.py, ``InlineRunner``; docs/solver.md, "The bake beside Blender's UI").

    .venv/bin/python bench/thread_launch.py --rounds 3 --json bench/results/thread_launch.json
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

from record import save_json  # noqa: E402
from scenarios import hanging_cloth  # noqa: E402
from solver import SolverSettings, load_preset, simulate  # noqa: E402
from solver._jit import numba  # noqa: E402


def frame_ms(n: int, frames: int) -> float:
    """Median ms per frame (frames 2..N) of the hanging sheet, stepped on this thread."""
    spec = hanging_cloth(n, load_preset("cotton"), SolverSettings(model="implicit"),
                         frames=frames)
    result = simulate(spec)
    if result.error:
        raise RuntimeError(result.error)
    return 1e3 * float(np.median([f.wall_time_s for f in result.frames[1:]]))


def on_a_thread(n: int, frames: int) -> float:
    out = []
    t = threading.Thread(target=lambda: out.append(frame_ms(n, frames)))
    t.start()
    t.join()
    if not out:
        raise RuntimeError("the thread's simulation failed (see above)")
    return out[0]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=65)
    ap.add_argument("--frames", type=int, default=24)
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    frame_ms(9, 2)  # compile or load the kernels untimed
    main_ms, thread_ms = [], []
    for _ in range(args.rounds):
        main_ms.append(frame_ms(args.size, args.frames))
        thread_ms.append(on_a_thread(args.size, args.frames))
        print(f"main thread {main_ms[-1]:.1f} ms/frame, another thread {thread_ms[-1]:.1f}",
              flush=True)
    ratio = float(np.median(thread_ms) / np.median(main_ms))
    print(f"another thread / main thread: {ratio:.2f}x ({numba.threading_layer()} layer, "
          f"{numba.get_num_threads()} threads)")
    save_json(args.json, {"vertices": args.size ** 2, "frames": args.frames,
                          "threading_layer": numba.threading_layer(),
                          "threads": numba.get_num_threads(), "main_ms": main_ms,
                          "thread_ms": thread_ms, "thread_over_main": ratio})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
