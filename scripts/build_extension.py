"""Build the installable extension zips (one per platform) with Blender's own extension tool.

Downloads exactly the wheels that ``blender_manifest.toml`` lists (unmodified, from PyPI) into
``wheels/``, then runs ``blender_ext.py build --split-platforms`` (shipped inside the ``bpy``
wheel) and validates every zip. Also writes ``<id>-<version>-legacy.zip`` for Blender before 4.2
(*Install...* of an add-on zip): the same files without wheels, inside a ``cloth_solver/``
folder, since Blender 3.4 unpacks an extension zip's loose files straight into ``addons/``.
Usage: ``python scripts/build_extension.py [--out dist]``.
"""

from __future__ import annotations

import argparse
import glob
import importlib.util
import subprocess
import sys
import tempfile
import tomllib
import zipfile
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


def write_legacy_zip(extension_zip: Path, legacy_zip: Path, package: str) -> None:
    """``extension_zip``'s files minus its wheels, under ``package/``: what Blender 3.4 installs
    as an add-on. Built from an extension zip so both hold exactly the files Blender's tool
    selected."""
    with zipfile.ZipFile(extension_zip) as src, \
            zipfile.ZipFile(legacy_zip, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            if info.is_dir() or info.filename.startswith("wheels/"):
                continue
            info_out = zipfile.ZipInfo(f"{package}/{info.filename}", info.date_time)
            info_out.compress_type = zipfile.ZIP_DEFLATED
            info_out.external_attr = info.external_attr
            dst.writestr(info_out, src.read(info))


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
    stem = f"{manifest['id']}-{manifest['version']}"
    zips = [out / f"{stem}-{platform.replace('-', '_')}.zip" for platform in manifest["platforms"]]
    for zip_path in zips:
        subprocess.run([sys.executable, str(tool), "validate", str(zip_path)], check=True)
    write_legacy_zip(zips[0], out / f"{stem}-legacy.zip", manifest["id"])
    for zip_path in [*zips, out / f"{stem}-legacy.zip"]:
        print(f"{zip_path}: {zip_path.stat().st_size / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
