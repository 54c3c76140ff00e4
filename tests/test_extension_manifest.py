"""The extension's metadata agrees with itself: manifest, legacy bl_info and pyproject versions;
one wheel of each runtime package per platform, all for Blender's Python (3.11)."""

import ast
import re
import tomllib
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MANIFEST = tomllib.loads((ROOT / "blender_manifest.toml").read_text(encoding="utf-8"))

# Wheel platform tags -> Blender platform names (as Blender's extension tool maps them).
PLATFORM_OF_TAG = [(r"manylinux.*_x86_64", "linux-x64"), (r"win_amd64", "windows-x64"),
                   (r"macosx_.*_arm64", "macos-arm64"), (r"macosx_.*_x86_64", "macos-x64")]


def _bl_info() -> dict:
    tree = ast.parse((ROOT / "__init__.py").read_text(encoding="utf-8"))
    node = next(n for n in tree.body if isinstance(n, ast.Assign)
                and n.targets[0].id == "bl_info")
    return ast.literal_eval(node.value)


def test_versions_agree():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    version = MANIFEST["version"]
    assert ".".join(map(str, _bl_info()["version"])) == version
    assert pyproject["project"]["version"] == version
    assert MANIFEST["id"] == "cloth_solver"


def test_one_wheel_per_package_and_platform_for_python_311():
    packages = defaultdict(dict)
    for rel in MANIFEST["wheels"]:
        assert rel.startswith("./wheels/") and rel.endswith(".whl"), rel
        name, version, python, abi, tags = Path(rel).name[:-4].split("-")
        assert (python, abi) == ("cp311", "cp311"), rel
        platforms = {p for tag in tags.split(".") for pattern, p in PLATFORM_OF_TAG
                     if re.fullmatch(pattern, tag)}
        assert len(platforms) == 1, rel
        platform = platforms.pop()
        assert platform not in packages[name], f"two {name} wheels for {platform}"
        packages[name][platform] = version
    assert set(packages) == {"numba", "llvmlite", "scipy"}
    for name, by_platform in packages.items():
        assert set(by_platform) == set(MANIFEST["platforms"]), name
        assert len(set(by_platform.values())) == 1, f"{name}: one version on every platform"


def test_build_leaves_development_files_out():
    excluded = MANIFEST["build"]["paths_exclude_pattern"]
    for path in ("/tests/", "/bench/", "/scripts/", "/wheels/", "/dist/", "/out/", "__pycache__/"):
        assert path in excluded
    for kept in ("cloth_addon", "solver", "presets"):
        assert not any(p.strip("/") == kept for p in excluded)
