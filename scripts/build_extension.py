"""Build the installable extension zips (one per platform) with Blender's own extension tool.

Downloads exactly the wheels that ``blender_manifest.toml`` lists (unmodified, from PyPI) into
``wheels/``, then runs ``blender_ext.py build --split-platforms`` (shipped inside the ``bpy``
wheel) and validates every zip. Usage: ``python scripts/build_extension.py [--out dist]``.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def blender_ext_tool() -> Path:
    """Path of Blender's extension command line tool inside the installed bpy wheel."""
    spec = importlib.util.find_spec("bpy")
    if spec is None or spec.origin is None:
        sys.exit("build_extension: the bpy wheel is not installed (bash scripts/setup.sh)")
    found = glob.glob(str(Path(spec.origin).parent / "*" / "scripts" / "addons_core" / "bl_pkg"
                          / "cli" / "blender_ext.py"))
    if not found:
        sys.exit("build_extension: blender_ext.py not found inside the bpy wheel")
    return Path(found[0])


def download_wheels(wheels: list[str]) -> None:
    """Fetch each listed wheel file that is missing, checking pip returns that exact file."""
    for rel in wheels:
        target = ROOT / rel
        if target.is_file():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        name, version, python, abi, platforms = target.name[:-len(".whl")].split("-")
        cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
               "--only-binary=:all:", "--python-version", python.removeprefix("cp")[0] + "."
               + python.removeprefix("cp")[1:], "--implementation", "cp", "--abi", abi]
        for tag in platforms.split("."):
            cmd += ["--platform", tag]
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run(cmd + ["--dest", tmp, f"{name}=={version}"], check=True)
            got = Path(tmp) / target.name
            if not got.is_file():
                have = ", ".join(p.name for p in Path(tmp).iterdir())
                sys.exit(f"build_extension: expected {target.name}, pip gave {have}")
            got.replace(target)
        print(f"downloaded {target.name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "dist"), help="output folder")
    args = parser.parse_args()
    manifest = tomllib.loads((ROOT / "blender_manifest.toml").read_text(encoding="utf-8"))
    download_wheels(manifest.get("wheels", []))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tool = blender_ext_tool()
    subprocess.run([sys.executable, str(tool), "build", "--source-dir", str(ROOT),
                    "--output-dir", str(out), "--split-platforms"], check=True)
    for platform in manifest["platforms"]:
        zip_path = out / f"{manifest['id']}-{manifest['version']}-{platform.replace('-', '_')}.zip"
        subprocess.run([sys.executable, str(tool), "validate", str(zip_path)], check=True)
        print(f"{zip_path.relative_to(out.parent) if out.parent in zip_path.parents else zip_path}"
              f": {zip_path.stat().st_size / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
