"""numba's cache of the solver's kernels is found again after a reinstall (same files, new
modification times) and not after a change of the source (solver/_jit.py stamps it by content).

Checked with this environment's numba and, where installed, Debian's python3-numba (0.56, whose
own stamp is the file's modification time and size)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

SOLVER = Path(__file__).resolve().parent.parent / "solver"
DEBIAN_PYTHON = "/usr/bin/python3"

PROBE = '''
from ._jit import njit


@njit
def axpy(a, x, y):
    return a * x + y
'''

RUN = r"""
import json, solver._probe as probe, solver._jit as jit
probe.axpy(2.0, 3.0, 4.0)
stats = probe.axpy.stats
print("RESULT " + json.dumps({"stamps": jit.CACHE_STAMPS,
                              "hits": sum(stats.cache_hits.values()),
                              "misses": sum(stats.cache_misses.values())}))
"""


def _pythons():
    found = [pytest.param(sys.executable, id="this-python")]
    if os.path.exists(DEBIAN_PYTHON) and subprocess.run(
            [DEBIAN_PYTHON, "-c", "import numba"], capture_output=True).returncode == 0:
        found.append(pytest.param(DEBIAN_PYTHON, id="debian-python3"))
    return found


def _run(python, root, cache):
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache), "PYTHONPATH": str(root)}
    out = subprocess.run([python, "-c", RUN], cwd=root, env=env, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    line = next(l for l in out.stdout.splitlines() if l.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


@pytest.mark.parametrize("python", _pythons())
def test_cache_survives_new_mtimes_but_not_a_changed_source(tmp_path, python):
    root, cache = tmp_path / "addon", tmp_path / "cache"
    package = root / "solver"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    shutil.copy(SOLVER / "_jit.py", package / "_jit.py")
    probe = package / "_probe.py"
    probe.write_text(PROBE)

    first = _run(python, root, cache)
    assert first["stamps"] == "installed"
    assert first["misses"] == 1 and first["hits"] == 0  # compiled and saved

    # A reinstall: the same files extracted again, with new modification times.
    for path in package.iterdir():
        if path.is_file():
            data = path.read_bytes()
            path.unlink()
            path.write_bytes(data)
            stat = path.stat()
            os.utime(path, (stat.st_atime + 100, stat.st_mtime + 100))
    again = _run(python, root, cache)
    assert again["hits"] == 1 and again["misses"] == 0  # loaded, not compiled

    probe.write_text(PROBE.replace("a * x + y", "a * x - y"))  # same size, new content
    changed = _run(python, root, cache)
    assert changed["misses"] == 1 and changed["hits"] == 0


def test_cache_stats_count_this_solvers_kernels():
    from solver import _jit
    from solver.linalg.cg import dot3  # any parallel kernel of the solver
    before = sum(_jit.cache_stats())
    dot3(np.ones((4, 3)), np.ones((4, 3)))
    hits, misses = _jit.cache_stats()
    assert hits + misses >= max(before, 1)  # its signature was loaded or compiled, and counted
