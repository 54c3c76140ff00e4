"""Bake > Performance > Threads, as Blender's Render > Performance: Auto-Detect (as many threads
as the cores other programs leave free) or Fixed, a ceiling every model's kernels keep to
(solver/threads.py)."""

from __future__ import annotations

import bpy
import pytest

from scenes import addon, cloth


def test_a_fixed_thread_count_is_the_bakes_ceiling():
    numba = addon().solver._jit.numba
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba runs one thread here")
    threads = addon().solver.threads
    cloth(n=4, pins=[12, 15], frames=(1, 3))
    s = bpy.context.scene.cloth_solver
    assert s.threads_mode == "AUTO"
    try:
        s.threads_mode, s.threads = "FIXED", 1
        counts = []
        real = threads.ThreadGovernor.before_frame
        threads.ThreadGovernor.before_frame = lambda g: counts.append(real(g)) or counts[-1]
        try:
            assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
        finally:
            threads.ThreadGovernor.before_frame = real
        assert counts == [1, 1] and numba.get_num_threads() == 1
    finally:
        s.threads_mode = "AUTO"
        assert bpy.ops.cloth_solver.bake() == {"FINISHED"}
    assert threads.ceiling() is None and numba.get_num_threads() >= 2
