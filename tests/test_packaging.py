"""`pip install .` gives a working solver outside the repository: the wheel holds every solver
package and the shipped presets, and ``python -m solver`` / ``--version`` run from elsewhere."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

import solver

ROOT = Path(__file__).resolve().parent.parent


def test_declared_packages_are_the_solver_tree():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    declared = set(pyproject["tool"]["setuptools"]["packages"])
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "solver").rglob("__init__.py")
             if "__pycache__" not in p.parts}
    assert declared == found | {"solver.bundled_presets"}


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The wheel `pip install .` would install, unpacked into a folder outside the checkout."""
    out = tmp_path_factory.mktemp("wheel")
    leftovers = [ROOT / "build", ROOT / "cloth_solver.egg-info"]  # setuptools builds in the tree
    existed = [p.exists() for p in leftovers]
    try:
        subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w",
                        str(out), str(ROOT)], check=True, timeout=600)
    finally:
        for path, was_there in zip(leftovers, existed):
            if not was_there:
                shutil.rmtree(path, ignore_errors=True)
    wheel = next(out.glob("cloth_solver-*.whl"))
    assert wheel.name.startswith(f"cloth_solver-{solver.__version__}-py3-none-any")
    site = out / "site"
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        assert not any(n.startswith(("cloth_addon/", "tests/", "bench/")) for n in names)
        zf.extractall(site)
    return site


def _run(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "solver", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env={"PYTHONPATH": str(site), "PATH": ""})


def test_installed_solver_runs_outside_the_repository(installed, tmp_path):
    version = _run(installed, tmp_path, "--version")
    assert version.returncode == 0 and version.stdout.strip().endswith(solver.__version__)
    presets = _run(installed, tmp_path, "presets")
    assert presets.returncode == 0, presets.stderr
    shipped = sorted(p.stem for p in (ROOT / "presets").glob("*.toml"))
    assert [line.split()[0] for line in presets.stdout.splitlines()] == shipped
    assert (installed / "solver" / "bundled_presets" / "cotton.toml").is_file()
