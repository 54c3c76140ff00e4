"""Install-to-first-frame: how long a new user waits, from installing the extension zip to the
first baked frame, with numba's cache cold and warm.

Every case is a new Python process with the bpy wheel (Blender as a module, headless) that sees
numpy but not this environment's numba and scipy (they must come from the zip's wheels), with
its own Blender user directory:

- ``cold``: install + enable, bake at once, no background warm-up: the bake compiles.
- ``cold-warmup-0s``, ``cold-warmup-20s``: the warm-up starts at enable and the bake starts at
  once, or 20 s later (the user sets up the scene meanwhile): the bake stops the warm-up, loads
  what it cached and compiles the rest.
- ``cold-warmup-done``: the warm-up has finished before the bake; the warm-up's own time is
  reported separately.
- ``warm``: a second session in the user directory of ``cold-warmup-done`` (enable, bake).
- ``reinstall``: a third one that installs the same zip again first.

The scene: a 24 x 24 cloth (2 m, implicit model, the default material) falling onto a UV
sphere collider (32 x 16, r = 0.5 m); the bake is frames 1-2, i.e. one simulated frame.

Usage: ``.venv/bin/python bench/first_bake.py [--zip dist/cloth_solver-...-linux_x64.zip]
[--repeat N] [--json bench/results/first_bake.json]`` (without ``--zip`` it builds one from this checkout).
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import figures  # noqa: E402
from record import save_json  # noqa: E402

HIDDEN = ("numba", "llvmlite", "scipy")  # must come from the zip's wheels

SESSION = r"""
import json, os, sys, time
T0 = time.perf_counter()
sys.path[:] = [p for p in sys.path if "site-packages" not in p] + [SITE]
os.environ["BLENDER_USER_RESOURCES"] = USER
os.environ.pop("NUMBA_CACHE_DIR", None)
os.environ["CLOTH_SOLVER_WARMUP"] = WARMUP
import bpy, addon_utils
out = {"import_bpy_s": time.perf_counter() - T0}
pkg = "bl_ext.user_default.cloth_solver"
t = time.perf_counter()
if ZIP:
    assert bpy.ops.extensions.package_install_files(
        filepath=ZIP, repo="user_default", enable_on_install=True) == {"FINISHED"}
    bpy.ops.wm.save_userpref()
if not addon_utils.check(pkg)[1]:
    addon_utils.enable(pkg, default_set=True)
out["install_enable_s"] = time.perf_counter() - t
t_enabled = time.perf_counter()
warmup = sys.modules[pkg + ".cloth_addon.warmup"]
out["warmup_started"] = warmup._process is not None
if WAIT:
    warmup.wait()
    out["warmup_s"] = time.perf_counter() - t_enabled
time.sleep(DELAY)
bpy.ops.mesh.primitive_uv_sphere_add(segments=32, ring_count=16, radius=0.5)
bpy.context.object.cloth_solver.role = "COLLIDER"
n = 24
mesh = bpy.data.meshes.new("Cloth")
mesh.from_pydata([(2 * x / (n - 1) - 1, 2 * y / (n - 1) - 1, 1.0) for y in range(n)
                  for x in range(n)], [],
                 [(y * n + x, y * n + x + 1, (y + 1) * n + x + 1, (y + 1) * n + x)
                  for y in range(n - 1) for x in range(n - 1)])
obj = bpy.data.objects.new("Cloth", mesh)
bpy.context.scene.collection.objects.link(obj)
obj.cloth_solver.role = "CLOTH"
bpy.context.scene.cloth_solver.frame_start, bpy.context.scene.cloth_solver.frame_end = 1, 2
t = time.perf_counter()
assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
end = time.perf_counter()
out["bake_s"] = end - t
out["enable_to_frame_s"] = end - t_enabled
out["install_to_frame_s"] = out["install_enable_s"] + out["enable_to_frame_s"]
out["cache_hits"], out["cache_misses"] = sys.modules[pkg + ".solver._jit"].cache_stats()
out["numba_cache"] = os.environ.get("NUMBA_CACHE_DIR")
print("RESULT " + json.dumps(out))
"""

CASES = {  # name: (install the zip, CLOTH_SOLVER_WARMUP, wait for it, then seconds to the bake)
    "cold": (True, "0", False, 0.0),
    "cold-warmup-0s": (True, "1", False, 0.0),
    "cold-warmup-20s": (True, "1", False, 20.0),
    "cold-warmup-done": (True, "1", True, 0.0),
    "warm": (False, "1", False, 0.0),
    "reinstall": (True, "1", False, 0.0),
}


def _platform_tag() -> str:
    machine = {"x86_64": "x64", "amd64": "x64", "arm64": "arm64", "aarch64": "arm64"}
    system = {"linux": "linux", "darwin": "macos", "win32": "windows"}
    return f"{system[sys.platform]}_{machine[platform.machine().lower()]}"


def build_zip(out: Path) -> Path:
    subprocess.run([sys.executable, str(ROOT / "scripts" / "build_extension.py"),
                    "--out", str(out)], check=True)
    return next(out.glob(f"*-{_platform_tag()}.zip"))


def hidden_site(folder: Path) -> Path:
    """A folder of links to this environment's packages, without numba, llvmlite and scipy."""
    folder.mkdir(parents=True, exist_ok=True)
    for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
        if not entry.name.lower().startswith(HIDDEN) and not (folder / entry.name).exists():
            (folder / entry.name).symlink_to(entry)
    return folder


def session(site: Path, user: Path, zip_path: Path | None, warmup: str, wait: bool,
            delay: float) -> dict:
    code = (f"SITE, USER, ZIP = {str(site)!r}, {str(user)!r}, "
            f"{str(zip_path) if zip_path else ''!r}\n"
            f"WARMUP, WAIT, DELAY = {warmup!r}, {wait!r}, {delay!r}\n" + SESSION)
    user.parent.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    run = subprocess.run([sys.executable, "-s", "-c", code], capture_output=True, text=True,
                         timeout=1800, cwd=user.parent)
    if run.returncode != 0:
        raise RuntimeError(run.stdout[-3000:] + run.stderr[-3000:])
    line = next(l for l in run.stdout.splitlines() if l.startswith("RESULT "))
    result = json.loads(line[len("RESULT "):])
    result["process_s"] = time.perf_counter() - start
    return result


def run_all(zip_path: Path, work: Path) -> dict:
    site = hidden_site(work / "site")
    results = {}
    for name in ("cold", "cold-warmup-0s", "cold-warmup-20s", "cold-warmup-done"):
        install, warmup, wait, delay = CASES[name]
        results[name] = session(site, work / name / "user", zip_path, warmup, wait, delay)
    shared = work / "cold-warmup-done" / "user"  # a finished warm-up, as the next sessions find
    for name in ("warm", "reinstall"):
        install, warmup, wait, delay = CASES[name]
        results[name] = session(site, shared, zip_path if install else None, warmup, wait,
                                delay)
    return results


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--zip", type=Path, help="extension zip (default: build one)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--json", type=Path, help="write every run's figures here")
    args = parser.parse_args(argv)
    runs = []
    with tempfile.TemporaryDirectory(prefix="first_bake_") as tmp:
        zip_path = args.zip or build_zip(Path(tmp) / "dist")
        for i in range(args.repeat):
            results = run_all(zip_path, Path(tmp) / f"run{i}")
            runs.append(results)
            for name, r in results.items():
                extra = f", warm-up {r['warmup_s']:.1f} s" if "warmup_s" in r else ""
                print(f"run {i} {name:17s} install+enable {r['install_enable_s']:5.1f} s{extra}, "
                      f"Bake click->frame {r['bake_s']:6.1f} s, install->frame "
                      f"{r['install_to_frame_s']:6.1f} s; kernels loaded {r['cache_hits']}, "
                      f"compiled {r['cache_misses']}", flush=True)
    if args.json:
        save_json(args.json, {"zip": str(zip_path), "runs": runs,
                              "figures": figures.first_bake(runs)})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
