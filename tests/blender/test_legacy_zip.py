"""Blender before 4.2 (Debian's 3.4): *Install...* with the built legacy zip puts the add-on in
its own ``addons/cloth_solver`` folder, and it enables and registers its operators there (the
extension zips would spread their files loose in ``addons/``)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import bpy
import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD_PYTHON = ROOT / ".venv" / "bin" / "python"  # has the bpy wheel, whose tool builds the zips

pytestmark = pytest.mark.skipif(
    not bpy.app.binary_path or bpy.app.version >= (4, 2, 0),
    reason="installs the legacy zip into a Blender before 4.2 (Debian's blender -b session)")

SESSION = r"""
import json, addon_utils, bpy
bpy.ops.preferences.addon_install(filepath=ZIP)
mod = addon_utils.enable("cloth_solver", default_set=True)
out = {"enabled": mod is not None and addon_utils.check("cloth_solver")[1],
       "file": getattr(mod, "__file__", None),
       "bake_operator": hasattr(bpy.types, "CLOTH_SOLVER_OT_bake"),
       "role": bpy.types.Object.bl_rna.properties.get("cloth_solver") is not None}
print("RESULT " + json.dumps(out))
"""


def test_legacy_zip_installs_as_one_addon_folder(tmp_path):
    assert BUILD_PYTHON.is_file(), "needs .venv (bash scripts/setup.sh) to build the zips"
    dist = tmp_path / "dist"
    subprocess.run([str(BUILD_PYTHON), str(ROOT / "scripts" / "build_extension.py"),
                    "--out", str(dist)], check=True, timeout=900)
    legacy = next(dist.glob("cloth_solver-*-legacy.zip"))
    scripts = tmp_path / "scripts"
    env = {**os.environ, "BLENDER_USER_SCRIPTS": str(scripts)}
    run = subprocess.run([bpy.app.binary_path, "-b", "--factory-startup", "--python-exit-code",
                          "1", "--python-expr", f"ZIP = {str(legacy)!r}\n" + SESSION],
                         capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    line = next(l for l in run.stdout.splitlines() if l.startswith("RESULT "))
    out = json.loads(line[len("RESULT "):])
    assert out["enabled"] and out["bake_operator"] and out["role"], out
    assert out["file"] == str(scripts / "addons" / "cloth_solver" / "__init__.py")
    assert sorted(p.name for p in (scripts / "addons").iterdir()) == ["cloth_solver"]
