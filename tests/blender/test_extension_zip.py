"""The built extension zip installs into a clean Blender user directory and bakes, with the
numba and scipy wheels it carries (the test's own numba/scipy are hidden from Blender). The
background warm-up compiles every kernel the bake uses into numba's cache in the extension's
user directory (a folder named for the Python, numba and numpy versions), so the bake loads,
not compiles, them; installing the same zip again keeps that cache.

The warm-up into an empty cache compiles every kernel (minutes on CI), the same work in every
Blender of one Python, numba and numpy. So the user directory is in one place per Python, and a
Blender whose Python another Blender of scripts/test.sh tests before it (4.2 after 5.0, both
Python 3.11) starts from a user directory that is empty but for the kernels a passed run of
this test compiled there (its warm-up marker removed: the warm-up still runs, loading them)."""

from __future__ import annotations

import json
import platform
import shutil
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

# numba's cache is per source folder, so the user directory (the extension's folder in it) is
# the same for every Blender of one Python.
USERS = ROOT / ".cache" / f"zip-test-user-py{sys.version_info.major}{sys.version_info.minor}"
SEEDED = bpy.app.version < (5, 0, 0)  # 4.2: the kernels of 5.0's run, if it passed
PASSED = USERS / "passed.json"  # the cache folder a passed run left, complete


def _user_directory() -> Path:
    """An empty user directory, in SEEDED Blenders but for the kernels a passed run left."""
    user, seed = USERS / "user", USERS / "seed"
    cache = Path(json.loads(PASSED.read_text())["cache"]) if PASSED.is_file() else None
    shutil.rmtree(seed, ignore_errors=True)
    if SEEDED and cache is not None and cache.is_dir():
        cache.rename(seed)
    PASSED.unlink(missing_ok=True)
    shutil.rmtree(user, ignore_errors=True)
    if seed.is_dir():
        cache.parent.mkdir(parents=True)
        seed.rename(cache)
        for name in ("cloth_solver_warmup.json", "cloth_solver_warmup.log"):
            (cache / name).unlink(missing_ok=True)
    return user


SESSION = r"""
import json, os, sys
sys.path[:] = [p for p in sys.path if "site-packages" not in p] + [SITE]
os.environ["BLENDER_USER_RESOURCES"] = USER
os.environ.pop("NUMBA_CACHE_DIR", None)
os.environ["CLOTH_SOLVER_WARMUP"] = "1"  # as with a UI
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
warmup = sys.modules[pkg + ".cloth_addon.warmup"]
out["warmup_started"] = warmup._process is not None
out["warmup_finished"] = warmup.wait(timeout=900)
out["warmup_status"] = None if warmup._process is None else warmup._process.returncode
out["warm"] = warmup.is_warm()
import numba, numpy, scipy
out["numba"], out["scipy"] = numba.__file__, scipy.__file__
out["numba_cache"] = os.environ.get("NUMBA_CACHE_DIR")
out["key"] = (f"py{sys.version_info.major}.{sys.version_info.minor}-numba{numba.__version__}"
              f"-numpy{'.'.join(numpy.__version__.split('.')[:2])}")
out["jit_mtime"] = os.stat(sys.modules[pkg + ".solver._jit"].__file__).st_mtime
mesh = bpy.data.meshes.new("Cloth")
mesh.from_pydata([(x * 0.25, y * 0.25, 1.0) for y in range(5) for x in range(5)], [],
                 [(y * 5 + x, y * 5 + x + 1, y * 5 + x + 6, y * 5 + x + 5)
                  for y in range(4) for x in range(4)])
obj = bpy.data.objects.new("Cloth", mesh)
bpy.context.scene.collection.objects.link(obj)
obj.cloth_solver.role = "CLOTH"
obj.cloth_solver.self_collision = True
floor = bpy.data.meshes.new("Floor")
floor.from_pydata([(-1, -1, 0.95), (2, -1, 0.95), (2, 2, 0.95), (-1, 2, 0.95)], [], [(0, 1, 2, 3)])
floor = bpy.data.objects.new("Floor", floor)
bpy.context.scene.collection.objects.link(floor)
floor.cloth_solver.role = "COLLIDER"
bpy.context.scene.cloth_solver.frame_start, bpy.context.scene.cloth_solver.frame_end = 1, 3
out["bake"] = sorted(bpy.ops.cloth_solver.bake())
out["keys"] = [kb.name for kb in obj.data.shape_keys.key_blocks]
out["cache_hits"], out["cache_misses"] = sys.modules[pkg + ".solver._jit"].cache_stats()
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
    user = _user_directory()

    first = _session(tmp_path, site, user, zip_path)
    extensions = str(user / "extensions")
    assert first["enabled"]
    assert first["numba"].startswith(extensions) and first["scipy"].startswith(extensions)
    cache = Path(first["numba_cache"])
    assert str(cache).startswith(extensions)  # the extension's user directory
    assert cache.parent.name == "numba_cache" and cache.name == first["key"]
    assert first["bake"] == ["FINISHED"]
    assert first["keys"] == ["Basis", "cloth_0001", "cloth_0002", "cloth_0003"]
    # A clean user directory: the warm-up compiled every kernel into the cache, and the bake
    # loaded them all.
    assert first["warmup_started"] and first["warmup_finished"]
    assert first["warmup_status"] == 0, (cache / "cloth_solver_warmup.log").read_text()[-3000:]
    assert first["warm"] and any(cache.rglob("*.nbi"))
    assert first["cache_hits"] > 0 and first["cache_misses"] == 0

    # A new Blender session that installs the same zip again: new files (new modification
    # times), the same cache, no warm-up needed, nothing compiled.
    second = _session(tmp_path, site, user, zip_path)
    assert second["enabled"] and second["bake"] == ["FINISHED"]
    assert second["numba_cache"] == first["numba_cache"]
    assert second["jit_mtime"] > first["jit_mtime"]
    assert second["warm"] and not second["warmup_started"]
    assert second["cache_hits"] > 0 and second["cache_misses"] == 0  # loaded, not compiled
    if not SEEDED:  # the warm-up's kernels, and none a bake compiled: 4.2's may load them
        PASSED.write_text(json.dumps({"cache": str(cache)}), encoding="utf-8")
