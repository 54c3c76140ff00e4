"""A knitted swatch end to end: generated, relaxed (Kaldor §7.1 and the settle), then hanging
from its top course under gravity (solver/yarn/)."""

import numpy as np
import pytest

from solver.yarn.relax import KALDOR_SHRINK
from solver.yarn.stitches import PATTERNS
from yarns import D, P, relaxed_swatch, swatch_solver

# Stated guarantee of the knit tests: no two non-neighbouring yarn segments closer than this
# fraction of the yarn diameter, during relaxation and simulation (the step's own guard is 0.1).
CLEARANCE = 0.25


def _course_gap(x, sw, j):
    """Smallest point distance [m] between courses j and j + 1."""
    a = x[sw.course_points[j]:sw.course_points[j + 1]]
    b = x[sw.course_points[j + 1]:sw.course_points[j + 2]]
    return np.sqrt(((a[:, None, :] - b[None, :, :]) ** 2).sum(-1)).min()


@pytest.mark.parametrize("pattern", PATTERNS)
def test_relaxed_swatch_hangs_from_its_top_without_stretching_or_passing_through(pattern):
    S = C = 5
    sw, setup, relaxed = relaxed_swatch(pattern, S, duration=0.015, settle=0.01)
    seg = sw.segments
    start = np.linalg.norm(sw.positions[seg[:, 1]] - sw.positions[seg[:, 0]], axis=1).sum()
    x = setup.positions
    assert np.isfinite(x).all()
    # Kaldor's shrink: the linear yarns end close to c·ℓ⁰ (contact holds them a little longer)
    assert KALDOR_SHRINK - 0.01 < relaxed.rest.sum() / start < 1.0
    assert relaxed.stats.min_clearance >= CLEARANCE * D

    top = sw.top_course
    sim = swatch_solver(sw, setup, gravity=(0.0, -9.81, 0.0), pins=top)
    length = sim.yarn_lengths()[0]
    sim.advance(0.015)
    assert np.isfinite(sim.x).all()
    assert abs(sim.yarn_lengths()[0] / length - 1) < 0.01
    assert sim.stats.worst_violation < 1e-5
    assert sim.stats.min_clearance >= CLEARANCE * D
    assert (sim.x[top] == x[top]).all()
    # still one knit: every course touches the next (none slid off or unravelled)
    for j in range(C - 1):
        assert _course_gap(sim.x, sw, j) < D
