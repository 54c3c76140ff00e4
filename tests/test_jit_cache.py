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


SPIN = '''
import math
from ._jit import njit


@njit
def spin(n):
    s = 0.0
    for i in range(n):
        s += math.sqrt(i + s % 3.0)
    return s
'''

GIL_RUN = r"""
import json, threading, time, solver._spin as spin
spin.spin(10)  # compiled (or loaded) before the measurement
n = 1
while True:  # a call that takes about 0.3 s
    t = time.perf_counter()
    spin.spin(n)
    if time.perf_counter() - t > 0.3:
        break
    n *= 2
ticks, end = 0, time.perf_counter() + 0.1
while time.perf_counter() < end:  # the loop's rate alone
    ticks += 1
rate = ticks / 0.1
thread = threading.Thread(target=spin.spin, args=(n,))
ticks = 0
t = time.perf_counter()
thread.start()
while thread.is_alive():
    ticks += 1  # runs only while the kernel on the thread has given the GIL back
elapsed = time.perf_counter() - t
thread.join()
print("RESULT " + json.dumps({"share": ticks / (rate * elapsed)}))
"""


def test_kernels_give_the_gil_back_while_they_run(tmp_path):
    """The add-on simulates on a background thread and Blender's UI needs the GIL meanwhile
    (cloth_addon/runner.py): a kernel holding it for its whole call would freeze the UI."""
    root = tmp_path / "addon"
    package = root / "solver"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    shutil.copy(SOLVER / "_jit.py", package / "_jit.py")
    (package / "_spin.py").write_text(SPIN)
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, "-c", GIL_RUN], cwd=root, env=env,
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    line = next(l for l in out.stdout.splitlines() if l.startswith("RESULT "))
    # the share of the call's time the main thread ran Python: held for the whole call, the
    # GIL would let it run only until the kernel started (Python's 5 ms switch interval: 2 %);
    # given back, the share is what the machine leaves the main thread, 0.12 seen with both
    # cores of a 2-core machine busy with another test lane
    assert json.loads(line[len("RESULT "):])["share"] > 0.05


def test_a_kernel_cached_without_giving_the_gil_back_is_not_loaded(tmp_path):
    """numba's cache index does not record nogil: the stamp does (solver/_jit.py CACHE_SALT),
    so a cache written before kernels gave the GIL back compiles again."""
    root, cache = tmp_path / "addon", tmp_path / "cache"
    package = root / "solver"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    jit = (SOLVER / "_jit.py").read_text()
    assert "\nNOGIL = True\n" in jit
    (package / "_jit.py").write_text(jit.replace("\nNOGIL = True\n", "\nNOGIL = False\n"))
    (package / "_probe.py").write_text(PROBE)
    assert _run(sys.executable, root, cache)["misses"] == 1
    (package / "_jit.py").write_text(jit)
    again = _run(sys.executable, root, cache)
    assert again["misses"] == 1 and again["hits"] == 0
