"""Run inside real Blender: the bpy wheel (``pytest tests/blender``) or Debian's ``blender -b``
through pytest-blender. The add-on is loaded from this checkout (see scripts/dev_addon.py) into
a scratch user directory, so the user's own Blender settings are never touched."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(ROOT / "scripts")]

import dev_addon  # noqa: E402

SCRATCH = Path(tempfile.mkdtemp(prefix="cloth_solver_tests_"))
INSIDE_BLENDER_BINARY = "bpy" in sys.modules  # pytest-blender imported bpy before us
if not INSIDE_BLENDER_BINARY:
    dev_addon.scratch_user_resources(SCRATCH / "user")
# Failed bakes raise (instead of ending Blender) while tests run inside `blender -b`.
os.environ["CLOTH_SOLVER_NO_EXIT"] = "1"

import bpy  # noqa: E402

MODULE = dev_addon.enable(SCRATCH)


def pytest_report_header(config):
    return (f"Blender {bpy.app.version_string} ({'blender -b' if bpy.app.binary_path else 'bpy wheel'}), "
            f"add-on {MODULE}, numba cache {os.environ.get('NUMBA_CACHE_DIR')}")


@pytest.fixture(autouse=True)
def empty_file():
    """Every test starts from an empty file (the add-on stays enabled)."""
    bpy.ops.wm.read_homefile(use_empty=True)
    yield


@pytest.fixture
def addon_module():
    return MODULE


@pytest.fixture
def scratch_root():
    """The scratch folder the add-on was enabled from (enable again from the same one)."""
    return SCRATCH
