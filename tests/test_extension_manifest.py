"""The extension's metadata agrees with itself: manifest, legacy bl_info and pyproject versions;
one wheel of each runtime package per platform and Blender Python (3.11 for Blender 4.2-5.0,
3.13 for 5.1+); files written are declared; no untested maximum Blender version."""

import ast
import re
import tomllib
from collections import defaultdict
from pathlib import Path

import solver

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
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "solver.__version__"}
    assert solver.__version__ == version
    assert MANIFEST["id"] == "cloth_solver"


# Blender's Python for each platform: Blender 5.x does not run on Intel Macs, so macos-x64 only
# needs Python 3.11 (Blender 4.2-4.5).
PYTHONS = {"linux-x64": {"cp311", "cp313"}, "windows-x64": {"cp311", "cp313"},
           "macos-arm64": {"cp311", "cp313"}, "macos-x64": {"cp311"}}


def test_one_wheel_per_package_platform_and_python():
    packages = defaultdict(dict)
    for rel in MANIFEST["wheels"]:
        assert rel.startswith("./wheels/") and rel.endswith(".whl"), rel
        name, version, python, abi, tags = Path(rel).name[:-4].split("-")
        assert python == abi and python in {"cp311", "cp313"}, rel
        platforms = {p for tag in tags.split(".") for pattern, p in PLATFORM_OF_TAG
                     if re.fullmatch(pattern, tag)}
        assert len(platforms) == 1, rel
        key = (platforms.pop(), python)
        assert key not in packages[name], f"two {name} wheels for {key}"
        packages[name][key] = version
    assert set(packages) == {"numba", "llvmlite", "scipy"}
    expected = {(platform, python) for platform in MANIFEST["platforms"]
                for python in PYTHONS[platform]}
    for name, by_key in packages.items():
        assert set(by_key) == expected, name
        for platform in MANIFEST["platforms"]:  # both Pythons of a platform get the same build
            assert len({v for (p, _), v in by_key.items() if p == platform}) == 1, (name, platform)
    # numba pins its llvmlite: each platform's pair must be one that numba released together.
    pairs = {(packages["numba"][k], packages["llvmlite"][k]) for k in expected}
    assert pairs <= {("0.68.1", "0.50.0"), ("0.62.1", "0.45.1")}, pairs


def test_permissions_declared_and_no_untested_maximum():
    assert "files" in MANIFEST["permissions"]  # kernel cache and user presets
    assert "blender_version_max" not in MANIFEST
    assert MANIFEST["blender_version_min"] == "4.2.0"


def test_build_leaves_development_files_out():
    excluded = MANIFEST["build"]["paths_exclude_pattern"]
    for path in ("/tests/", "/bench/", "/scripts/", "/wheels/", "/dist/", "/out/", "__pycache__/"):
        assert path in excluded
    for kept in ("cloth_addon", "solver", "presets"):
        assert not any(p.strip("/") == kept for p in excluded)
