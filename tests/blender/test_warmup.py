"""The background compilation of the solver's kernels (cloth_addon/warmup.py): off without a UI
unless asked for, one at a time, a bake started meanwhile stops it, and once one finished later
sessions start nothing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import bpy
import pytest
import scenes

MESSAGE = "Compiling solver kernels (first bake only)…"


@pytest.fixture
def warmup(addon_module, monkeypatch):
    module = sys.modules[addon_module + ".cloth_addon.warmup"]
    monkeypatch.setattr(module, "_warm", False)
    monkeypatch.setattr(module, "_process", None)
    return module


def test_not_started_when_switched_off_or_without_a_ui(warmup, monkeypatch):
    monkeypatch.setenv(warmup.ENV, "0")
    assert warmup.start() == "disabled"
    monkeypatch.delenv(warmup.ENV)
    assert bpy.app.background and warmup.start() == "no UI"
    assert warmup._process is None


def test_runs_blenders_own_python(warmup, monkeypatch):
    python = Path(warmup.python_executable())
    assert Path(sys.prefix) in python.parents and python.name.startswith("python")
    # Debian's Blender: sys.executable may be another Python found on PATH, or Blender itself
    for other in ("/usr/bin/blender", "/somewhere/else/python3"):
        monkeypatch.setattr(sys, "executable", other)
        found = Path(warmup.python_executable())
        assert Path(sys.prefix) in found.parents and found.name.startswith("python")


def test_warmup_runs_once_a_bake_stops_it_and_a_finished_one_is_not_run_again(warmup,
                                                                             monkeypatch):
    monkeypatch.setenv(warmup.ENV, "1")
    cache = Path(os.environ["NUMBA_CACHE_DIR"])
    marker = cache / warmup.solver_warmup.MARKER_NAME
    marker.unlink(missing_ok=True)  # as after installing a new version
    assert warmup.start() == "started"
    assert warmup.running()
    assert warmup.start() == "running"  # never two at once
    assert warmup.status_line() == warmup.MESSAGE or warmup._loaded

    scenes.cloth("Cloth", n=4, frames=(1, 2), location=(0, 0, 1))
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    # the bake stopped it (and compiled what it had not yet) rather than wait for all of it
    assert not warmup.running() and warmup._process.returncode != 0
    assert not marker.exists()

    monkeypatch.setattr(warmup, "_process", None)
    assert warmup.start() == "started"  # e.g. the next session
    assert warmup.wait(timeout=900)
    log = (cache / warmup.LOG_NAME).read_text()
    assert warmup._process.returncode == 0, log
    assert "warmup: done" in log
    assert warmup.is_warm() and marker.exists()
    assert warmup.status_line() is None

    monkeypatch.setattr(warmup, "_warm", False)
    monkeypatch.setattr(warmup, "_process", None)
    assert warmup.start() == "warm"  # a finished warm-up: nothing to do
    assert warmup._process is None


@pytest.mark.window
@pytest.mark.skipif(
    not bpy.app.binary_path or bpy.app.version >= (4, 2, 0) or not shutil.which("xvfb-run"),
    reason="runs Debian's blender with a window under Xvfb (xvfb-run) with the legacy add-on")
def test_first_bake_in_a_window_says_it_compiles_then_the_next_one_starts_at_once(
        tmp_path, scratch_root):
    out = tmp_path / "session.json"
    env = {k: v for k, v in os.environ.items() if k != "CLOTH_SOLVER_NO_EXIT"}
    env["BLENDER_USER_SCRIPTS"] = str(scratch_root)
    env["CLOTH_SOLVER_WARMUP"] = "0"
    cmd = ["xvfb-run", "-a", "-s", "-screen 0 1280x720x24", bpy.app.binary_path,
           "--factory-startup", "--addons", "cloth_solver", "--python",
           str(Path(__file__).resolve().parent / "warmup_ui_session.py"), "--", str(out)]
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    log = run.stdout[-4000:] + run.stderr[-4000:]
    assert out.is_file(), log
    result = json.loads(out.read_text())
    assert "error" not in result, result.get("error", "") + log
    assert result["first click"] == ["RUNNING_MODAL"]
    # the scene is read at the click; the bake's thread compiles while the message is drawn
    assert result["after the click"] == {"panel": MESSAGE, "jobs": 1}
    assert MESSAGE in result["while baking"]
    assert result["first bake"] == {"baked": True, "panel": None, "loaded": True}
    assert result["second click"] == ["RUNNING_MODAL"]
    assert result["second bake"] == {"panel": None, "jobs": 1}
