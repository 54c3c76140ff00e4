"""The built extension zip installs into a clean Blender user directory and bakes, with the
numba and scipy wheels it carries (the test's own numba/scipy are hidden from Blender), and
numba's cache in the extension's user directory makes the next session's bake load, not
compile, its kernels."""

from __future__ import annotations

import json
import platform
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import bpy
import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    bool(bpy.app.binary_path) or bpy.app.version < (4, 2, 0),
    reason="needs the bpy wheel (Blender 4.2+ extensions) in a plain Python")

HIDDEN = ("numba", "llvmlite", "scipy")  # must come from the zip's wheels

SESSION = r"""
import json, os, sys
sys.path[:] = [p for p in sys.path if "site-packages" not in p] + [SITE]
os.environ["BLENDER_USER_RESOURCES"] = USER
os.environ.pop("NUMBA_CACHE_DIR", None)
import bpy, addon_utils
out = {}
if ZIP:
    assert bpy.ops.extensions.package_install_files(
        filepath=ZIP, repo="user_default", enable_on_install=True) == {"FINISHED"}
    bpy.ops.wm.save_userpref()
pkg = "bl_ext.user_default.cloth_solver"
if not addon_utils.check(pkg)[1]:  # the bpy module does not enable saved add-ons on import
    addon_utils.enable(pkg, default_set=True)
out["enabled"] = addon_utils.check(pkg)[1]
import numba, scipy
out["numba"], out["scipy"] = numba.__file__, scipy.__file__
out["numba_cache"] = os.environ.get("NUMBA_CACHE_DIR")
mesh = bpy.data.meshes.new("Cloth")
mesh.from_pydata([(x * 0.25, y * 0.25, 1.0) for y in range(5) for x in range(5)], [],
                 [(y * 5 + x, y * 5 + x + 1, y * 5 + x + 6, y * 5 + x + 5)
                  for y in range(4) for x in range(4)])
obj = bpy.data.objects.new("Cloth", mesh)
bpy.context.scene.collection.objects.link(obj)
obj.cloth_solver.role = "CLOTH"
bpy.context.scene.cloth_solver.frame_start, bpy.context.scene.cloth_solver.frame_end = 1, 3
out["bake"] = sorted(bpy.ops.cloth_solver.bake())
out["keys"] = [kb.name for kb in obj.data.shape_keys.key_blocks]
hits = misses = 0
for name, mod in list(sys.modules.items()):
    if name.startswith(pkg + ".solver"):
        for value in vars(mod).values():
            if isinstance(value, numba.core.registry.CPUDispatcher) and value.signatures:
                hits += sum(value.stats.cache_hits.values())
                misses += sum(value.stats.cache_misses.values())
out["cache_hits"], out["cache_misses"] = hits, misses
print("RESULT " + json.dumps(out))
"""


def _platform() -> str:
    machine = {"x86_64": "x64", "amd64": "x64", "arm64": "arm64", "aarch64": "arm64"}
    system = {"linux": "linux", "darwin": "macos", "windows": "windows"}
    return f"{system[sys.platform if sys.platform != 'win32' else 'windows']}-" \
           f"{machine[platform.machine().lower()]}"


def _session(tmp_path, site, user, zip_path):
    code = (f"SITE, USER, ZIP = {str(site)!r}, {str(user)!r}, "
            f"{str(zip_path) if zip_path else ''!r}\n" + SESSION)
    run = subprocess.run([sys.executable, "-s", "-c", code], capture_output=True, text=True,
                         timeout=900, cwd=tmp_path)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    line = next(l for l in run.stdout.splitlines() if l.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def test_built_zip_installs_in_a_clean_user_directory_and_bakes(tmp_path):
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, str(ROOT / "scripts" / "build_extension.py"),
                    "--out", str(dist)], check=True, timeout=900)
    manifest = tomllib.loads((ROOT / "blender_manifest.toml").read_text(encoding="utf-8"))
    zips = {p.name for p in dist.glob("*.zip")}
    assert zips == {f"cloth_solver-{manifest['version']}-{p.replace('-', '_')}.zip"
                    for p in [*manifest["platforms"], "legacy"]}
    zip_path = dist / f"cloth_solver-{manifest['version']}-{_platform().replace('-', '_')}.zip"

    # A Python that sees the bpy wheel and numpy but not this environment's numba/scipy.
    site = tmp_path / "site"
    site.mkdir()
    packages = Path(sysconfig.get_paths()["purelib"])  # where the bpy wheel is installed
    for entry in packages.iterdir():
        if not entry.name.lower().startswith(HIDDEN):
            (site / entry.name).symlink_to(entry)
    user = tmp_path / "user"

    first = _session(tmp_path, site, user, zip_path)
    extensions = str(user / "extensions")
    assert first["enabled"]
    assert first["numba"].startswith(extensions) and first["scipy"].startswith(extensions)
    assert first["numba_cache"].startswith(extensions)  # the extension's user directory
    assert first["bake"] == ["FINISHED"]
    assert first["keys"] == ["Basis", "cloth_0001", "cloth_0002", "cloth_0003"]
    assert first["cache_misses"] > 0  # a clean user directory: compiled ...
    assert any(Path(first["numba_cache"]).rglob("*.nbi"))  # ... and cached there

    second = _session(tmp_path, site, user, None)  # a new Blender session, same user
    assert second["enabled"] and second["bake"] == ["FINISHED"]
    assert second["cache_hits"] > 0 and second["cache_misses"] == 0  # loaded, not compiled
