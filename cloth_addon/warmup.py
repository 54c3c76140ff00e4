"""The first bake without the wait: numba's kernels compiled ahead, in a background process.

When the add-on is enabled in a session with a UI, ``start()`` runs ``solver.warmup`` (what
``python -m solver warmup`` runs) in a separate process, with Blender's own Python, numba and
numpy, writing into the same numba cache directory: Blender's UI and Python stay responsive,
and the first *Bake Cloth* loads the kernels instead of compiling them (tens of seconds, more on a busy
machine: docs/benchmarks.md, "Install to first frame"). A finished warm-up leaves a marker there, so later sessions start nothing.

A bake started while the warm-up still runs stops it, loads what it has cached so far (the
warm-up compiles what most bakes need first) and compiles the rest itself: waiting for the
whole warm-up would take longer than compiling (it also compiles what other bakes need), and two
processes compiling at once are not safe: numba picks a new entry's data file name from the
index it read, so two processes saving two signatures of one kernel at the same moment can
leave one signature's index entry naming the other's code. A warm-up of another Blender (one
this session did not start) is waited for instead. A bake that compiles says so in the status
bar and the panel; the next session's warm-up compiles what is still missing.

``CLOTH_SOLVER_WARMUP``: ``0`` never starts it; ``1`` starts it also without a UI
(``blender -b``, the bpy module: there a script bakes at once, and the warm-up would only
compete with it, so by default it does not run).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import bpy

from ..solver import warmup as solver_warmup
from . import child_python

MESSAGE = "Compiling solver kernels (first bake only)…"

ENV = "CLOTH_SOLVER_WARMUP"
LOG_NAME = "cloth_solver_warmup.log"
POLL_S = 0.5

_process: subprocess.Popen | None = None  # the warm-up this session started
_warm = False  # the marker matched once (sources do not change while Blender runs)
_loaded = False  # a bake of this session ran a frame: every kernel it needs is loaded
_bake_compiling = False  # a bake of this session is compiling kernels right now


def cache_dir() -> str:
    return os.environ.get("NUMBA_CACHE_DIR", "")


def python_executable() -> str | None:
    """The Python that Blender runs, as a program.

    Blender 4.2+ ships its own (``sys.executable``), and the bpy module runs in one; a Blender
    built against the system's Python (Debian's 3.4) sets ``sys.executable`` to the first
    ``python3.x`` on PATH, which can be another Python (a pyenv shim), or to its own binary.
    The interpreter under ``sys.prefix`` is the one; the warm-up checks that it got the same
    Python, numba and numpy (``--expect``) and compiles nothing otherwise.
    """
    v = sys.version_info
    prefix = Path(sys.prefix)
    exe = Path(sys.executable) if sys.executable else None
    candidates = []
    if exe is not None and exe.name.lower().startswith("python") and prefix in exe.parents:
        candidates.append(exe)
    for folder in (prefix / "bin", prefix):
        for name in (f"python{v.major}.{v.minor}", f"python{v.major}", "python", "python.exe"):
            candidates.append(folder / name)
    if exe is not None and exe.name.lower().startswith("python"):
        candidates.append(exe)
    return next((str(c) for c in candidates if c.is_file() and os.access(c, os.X_OK)), None)


def start() -> str:
    """Start the warm-up unless it is not needed or wanted; never waits. Returns what it did:
    "started", "warm", "running", "disabled", "no UI", "no cache directory" or "no Python"."""
    global _process
    mode = os.environ.get(ENV, "")
    if mode == "0":
        return "disabled"
    if bpy.app.background and mode != "1":
        return "no UI"
    cache = cache_dir()
    if not cache:
        return "no cache directory"
    if running():
        _watch()
        return "running"
    if is_warm():
        return "warm"
    python = python_executable()
    if python is None:
        return "no Python"
    Path(cache).mkdir(parents=True, exist_ok=True)
    # The working folder is the cache's: an upgrade of the add-on replaces its folder.
    with open(Path(cache) / LOG_NAME, "w", encoding="utf-8") as log:
        _process = child_python.start(
            python, "solver.warmup:run", solver_warmup.stamp(), {"NUMBA_CACHE_DIR": cache},
            cwd=cache, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
    _watch()
    return "started"


def running() -> bool:
    """True while a warm-up compiles into this cache (this session's or another Blender's)."""
    if _process is not None and _process.poll() is None:
        return True
    cache = cache_dir()
    return bool(cache) and solver_warmup.is_running(cache)


def is_warm() -> bool:
    """True once a warm-up of these sources finished into this cache."""
    global _warm
    if not _warm and cache_dir():
        _warm = solver_warmup.is_warm(cache_dir())
    return _warm


def kernels_ready() -> bool:
    """True if a bake would load (not compile) its kernels."""
    return _loaded or is_warm()


def stop() -> bool:
    """Stop this session's warm-up if it runs (what it cached so far stays: numba writes each
    file whole, through a temporary file); True if it stopped one."""
    if _process is None or _process.poll() is not None:
        return False
    _process.terminate()
    try:
        _process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        _process.kill()
        _process.wait()
    return True


def make_way(timeout: float | None = None) -> bool:
    """Before a bake: stop this session's warm-up, wait for another Blender's. False if that
    one still runs after ``timeout`` seconds."""
    stop()
    return wait(timeout)


def wait(timeout: float | None = None) -> bool:
    """Wait for a running warm-up to end; False if it still runs after ``timeout`` seconds."""
    end = None if timeout is None else time.monotonic() + timeout
    while running():
        if end is not None and time.monotonic() > end:
            return False
        time.sleep(0.1)
    return True


def set_bake_compiling(compiling: bool) -> None:
    """A bake starts or stops compiling kernels (shown in the panel)."""
    global _bake_compiling
    if compiling != _bake_compiling:
        _bake_compiling = compiling
        _redraw()


def mark_loaded() -> None:
    """A bake ran a frame: this session has its kernels."""
    global _loaded
    _loaded = True


def status_line() -> str | None:
    """The panel's line while kernels compile, here or in the background; else None."""
    if _bake_compiling or (not _loaded and running()):
        return MESSAGE
    return None


def _redraw() -> None:
    wm = getattr(bpy.context, "window_manager", None)
    for window in getattr(wm, "windows", ()):
        for area in window.screen.areas:
            if area.type == "PROPERTIES":
                area.tag_redraw()


def _poll():
    """Timer: redraw the panel once the warm-up has ended."""
    if running():
        return POLL_S
    _redraw()
    return None


def _watch() -> None:
    if not bpy.app.timers.is_registered(_poll):
        bpy.app.timers.register(_poll, first_interval=POLL_S, persistent=True)


def unregister() -> None:
    """Stop watching; a running warm-up finishes on its own (its cache serves the next
    session)."""
    if bpy.app.timers.is_registered(_poll):
        bpy.app.timers.unregister(_poll)
