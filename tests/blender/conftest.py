"""Run inside real Blender: the bpy wheel (``pytest tests/blender``) or Debian's ``blender -b``
through pytest-blender. The add-on is loaded from this checkout (see scripts/dev_addon.py) into
a scratch user directory, so the user's own Blender settings are never touched."""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(ROOT / "scripts")]

# pytest-blender's launcher runs in a Python without bpy and re-runs the session inside
# `blender -b`; only there are the tests collected.
IN_BLENDER = "bpy" in sys.modules or importlib.util.find_spec("bpy") is not None
if not IN_BLENDER:
    collect_ignore_glob = ["*"]
else:
    import dev_addon

    # The add-on's copy stays in one place between runs (numba's cache stays valid); Blender's
    # user directory is new for every session. One copy per Python: scripts/test.sh runs the
    # Python 3.13 suite beside the Python 3.11 ones, which share theirs (and numba's cache).
    python = f"py{sys.version_info.major}{sys.version_info.minor}"
    SCRATCH = ROOT / ".cache" / ("blender-tests-binary" if "bpy" in sys.modules
                                 else f"blender-tests-wheel-{python}")
    if "bpy" not in sys.modules:  # the bpy wheel: a scratch user directory before import
        dev_addon.scratch_user_resources(Path(tempfile.mkdtemp(prefix="cloth_solver_user_")))
    # Failed bakes raise (instead of ending Blender) while tests run inside `blender -b`.
    os.environ["CLOTH_SOLVER_NO_EXIT"] = "1"
    # No background compilation of the kernels (cloth_addon/warmup.py) unless a test asks for
    # it: the Blender sessions the tests start with a window would otherwise start one each.
    os.environ.setdefault("CLOTH_SOLVER_WARMUP", "0")
    import bpy

    MODULE = dev_addon.enable(SCRATCH)

    def pytest_report_header(config):
        kind = "blender -b" if bpy.app.binary_path else "bpy wheel"
        return (f"Blender {bpy.app.version_string} ({kind}), add-on {MODULE}, "
                f"numba cache {os.environ.get('NUMBA_CACHE_DIR')}")

    def pytest_collection_modifyitems(config, items):
        """CLOTH_SOLVER_TESTS_PHYSICS=0 skips the tests marked ``physics``: their cost is
        simulation, the same solver in every Blender, so scripts/test.sh runs them in two
        Blenders (5.0 and 4.2 LTS, which share numba's cache: their kernels compile once) and
        the API tests in all four."""
        if os.environ.get("CLOTH_SOLVER_TESTS_PHYSICS", "1") != "0":
            return
        skip = pytest.mark.skip(reason="simulation-heavy (marked physics): scripts/test.sh "
                                       "runs it in Blender 5.0 and 4.2 LTS")
        for item in items:
            if item.get_closest_marker("physics"):
                item.add_marker(skip)

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
        """The folder the add-on was enabled from (enable again from the same one); for the
        legacy add-on it is also a user scripts folder (``addons/cloth_solver``)."""
        return SCRATCH
