"""Yarn on a table (solver/yarn/plane.py) and the force on pinned points (pin_reaction), the
two pieces the validation bench (bench/yarn_validation.py) stands on."""

import numpy as np
import pytest

from solver.params import YarnParams
from solver.yarn.dynamics import YarnSimulation

P = YarnParams()


def _straight(n, length, start=(0.0, 0.0, 0.0), direction=(1.0, 0.0, 0.0)):
    return np.asarray(start) + np.linspace(0, length, n)[:, None] * np.asarray(direction)


def test_yarn_dropped_on_a_table_lies_on_it_and_keeps_its_length():
    x = _straight(31, 0.03, start=(0.0, 0.0, 0.004))
    x[:, 2] += 0.002 * np.sin(np.linspace(0, 3, 31))       # not flat: it lands unevenly
    sim = YarnSimulation(x, [0, 31], P, gravity=(0, 0, -9.81), floor=0.0)
    length = sim.yarn_lengths()[0]
    lowest = np.inf
    for _ in range(100):
        sim.advance(1e-3)
        lowest = min(lowest, sim.x[:, 2].min())
    before = sim.x.copy()
    sim.advance(0.01)
    # never below the table by more than the projection's length error, and at rest on it
    assert lowest > P.radius - 1e-6
    assert np.abs(sim.x[:, 2] - P.radius).max() < 0.05 * P.radius
    assert np.abs(sim.x - before).max() < 0.03 * P.radius     # settled
    assert sim.yarn_lengths()[0] == pytest.approx(length, rel=1e-4)


def test_friction_stops_a_sliding_yarn_and_no_friction_does_not():
    x = _straight(11, 0.01, start=(0.0, 0.0, P.radius))
    out = []
    for mu in (0.0, 0.5):
        sim = YarnSimulation(x, [0, 11], P, gravity=(0, 0, -9.81), floor=0.0, friction=mu)
        sim.v[:, 0] = 0.1
        sim.advance(0.05)
        out.append(sim.v[:, 0].mean())
    assert out[0] == pytest.approx(0.1, rel=1e-3)
    # μ·g = 4.9 m/s² takes 0.1 m/s away in 20 ms
    assert abs(out[1]) < 0.01


def test_pin_reaction_of_a_hanging_yarn_is_its_weight():
    x = _straight(21, 0.04, direction=(0, 0, -1))
    sim = YarnSimulation(x, [0, 21], P, pins=[0], gravity=(0, 0, -9.81), damping_rate=300.0)
    sim.advance(0.02)
    weight = P.linear_density * 0.04 * 9.81
    f = sim.pin_reaction([0])
    # the yarn pulls its pin down with its whole weight (minus the pinned point's own share)
    assert f[2] == pytest.approx(-(weight - sim.mass[0] * 9.81), rel=0.02)
    assert abs(f[0]) < 0.02 * weight
