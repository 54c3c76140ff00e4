"""Command-line interface: ``python -m solver run SCENE.toml --out RESULT.npz``.

Exit status: 0 success, 1 the simulation failed (blow-up; completed frames are still written)
or an output file could not be written, 2 the scene or the command line is invalid,
130 interrupted.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tomllib
from pathlib import Path
from typing import Any

import numpy as np

from . import __version__
from .formats.presets import list_presets, preset_info
from .formats.scene import SceneError, load_scene
from .params import ParameterError


def main(argv: list[str] | None = None, prog: str = "python -m solver") -> int:
    """Run the command line; returns the exit status."""
    args = _parser(prog).parse_args(argv)
    return args.command(args)


def entry_point() -> None:
    """The ``cloth-solver`` command that ``pip install .`` puts on PATH."""
    raise SystemExit(main(prog="cloth-solver"))


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog,
                                     description="Cloth solver (SI units) without Blender.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="simulate a scene file")
    run.add_argument("scene", type=Path, help="scene file (.toml)")
    run.add_argument("--out", type=Path, required=True,
                     help="result file (.npz with 'positions' [m] and 'triangles'; for a knit "
                     "'positions', 'yarn_offsets' and 'radius' [m])")
    run.add_argument("--report", type=Path, help="also write a JSON report (per frame and totals)")
    run.add_argument("--quiet", action="store_true", help="no per-frame progress on stderr")
    run.add_argument("--threads", type=_thread_count, metavar="N",
                     help="use at most N threads (default: as many as the cores other programs "
                     "leave free)")
    run.set_defaults(command=_run)

    presets = commands.add_parser("presets", help="list the material presets")
    presets.set_defaults(command=_presets)

    warmup = commands.add_parser(
        "warmup", help="compile (or load) every kernel a bake uses into numba's cache")
    warmup.add_argument("--expect", metavar="STAMP",
                        help="stop (status 3) unless this Python and these sources have this "
                        "stamp (solver.warmup.stamp())")
    warmup.set_defaults(command=_warmup)
    return parser


def _thread_count(text: str) -> int:
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"expected a thread count of at least 1, got {text!r}")
    return count


def _run(args: argparse.Namespace) -> int:
    if args.threads is not None:
        from . import threads  # imported late: it loads numba

        threads.set_ceiling(args.threads)
    try:
        spec = load_scene(args.scene)
    except SceneError as err:
        return _fail(str(err), 2)
    # Check outputs before simulating, so a typo does not cost a whole simulation.
    missing = _missing_output_dir(args)
    if missing:
        return _fail(missing, 2)

    # imported late: loading numba kernels takes a while
    from .simulation import simulate

    try:
        result = simulate(spec, progress=None if args.quiet else _print_progress)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    return _write_result(args, result, **result.arrays())


def _missing_output_dir(args: argparse.Namespace) -> str | None:
    """What is wrong with --out or --report's folder, or None."""
    for option, path in (("--out", args.out), ("--report", args.report)):
        if path is not None and not path.resolve().parent.is_dir():
            return f"{option}: directory does not exist: {path.resolve().parent}"
    return None


def _write_result(args: argparse.Namespace, result, **arrays) -> int:
    """Write the NPZ (``arrays``) and the optional JSON report; the exit status."""
    try:
        _write_npz(args.out, **arrays)
        if args.report is not None:
            _write_text(args.report, json.dumps(_jsonable(result.report()), indent=2,
                                                allow_nan=False) + "\n")
    except OSError as err:
        return _fail(f"cannot write {err.filename}: {err.strerror or err}", 1)
    if result.error:
        return _fail(result.error, 1)
    return 0


def _warmup(args: argparse.Namespace) -> int:
    from .warmup import run  # imported late: it loads numba

    return run(expect=args.expect, log=lambda text: print(text, file=sys.stderr, flush=True))


def _presets(args: argparse.Namespace) -> int:
    names = list_presets()
    if not names:
        print("no presets installed")
        return 0
    status = 0
    width = max(len(n) for n in names)
    for name in names:
        try:
            info = preset_info(name)
        except ParameterError as err:
            print(f"{name:<{width}}  (broken: {err})")
            status = 1
            continue
        description = f": {info['description']}" if info["description"] else ""
        print(f"{name:<{width}}  {info['name']}{description}")
    return status


def _print_progress(report: dict[str, Any]) -> None:
    """One stderr line per frame: ``frame 12/48  3.1 ms  max strain 0.4%``."""
    parts = [f"frame {report.get('frame', '?')}/{report.get('frames', '?')}"]
    if isinstance(report.get("wall_time_s"), (int, float)):
        parts.append(f"{1e3 * report['wall_time_s']:.1f} ms")
    if isinstance(report.get("max_strain"), (int, float)):
        parts.append(f"max strain {100 * report['max_strain']:.1f}%")
    if report.get("retries"):  # the frame blew up and was simulated again with finer steps
        parts.append(f"blew up, retried {report['retries']}x (steps "
                     f"1/{report.get('step_refinement', '?')})")
    print("  ".join(parts), file=sys.stderr, flush=True)


def _fail(message: str, status: int) -> int:
    print(f"error: {' '.join(str(message).splitlines())}", file=sys.stderr)
    return status


def _write_npz(path: Path, **arrays: np.ndarray) -> None:
    # Through a file object so numpy does not append ".npz"; via a temporary file so an
    # interrupted write never leaves a truncated result under the requested name.
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as fp:
        np.savez_compressed(fp, **arrays)
    os.replace(tmp, path)


def _write_text(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _jsonable(value: Any) -> Any:
    """numpy scalars/arrays to Python; NaN/inf to null, so the report is strict JSON."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [_jsonable(v) for v in (value.tolist() if isinstance(value, np.ndarray) else value)]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value
