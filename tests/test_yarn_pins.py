"""Pins of yarns: hard pins on moving targets (a needle carried), soft pins (goal springs of a
weight below 1), through the frame loop every model goes through (solver.Simulation), and the
thread count it sets honoured by the yarn model (threads.py)."""

import numpy as np
import pytest

from solver import SimulationSpec, SolverSettings, YarnSetup
from solver.simulation import Simulation
from yarns import P, straight

G = 9.81


def _hanging(weights=None, targets=None, frames=2, n=21, fps=24.0):
    """A straight 4 cm yarn hanging from its first point (or ``weights``/``targets`` for
    it), straight at rest, under gravity."""
    x = straight(n, 0.04, direction=(0, 0, -1))
    setup = YarnSetup(positions=x, yarn_offsets=np.array([0, n]), yarn=P,
                      rest_curvature=np.zeros((n, 3)), pin_indices=np.array([0]),
                      pin_weights=weights, pin_targets=targets)
    return Simulation(SimulationSpec(setup, SolverSettings(model="yarn"), frames=frames,
                                     fps=fps, gravity=np.array([0.0, 0.0, -G])))


def test_a_moving_needle_carries_its_pinned_point_exactly_and_the_yarn_follows():
    frames = 4
    lift = np.zeros((frames + 1, 1, 3))
    lift[:, 0, 0] = np.linspace(0.0, 0.02, frames + 1)      # 2 cm sideways over 4 frames
    sim = _hanging(targets=lift, frames=frames)
    res = sim.run()
    assert res.error is None
    np.testing.assert_allclose(res.positions[:, 0], lift[:, 0], atol=1e-12)
    # the yarn below is dragged along (it lags behind the needle, swinging)
    assert 0.0 < res.positions[-1, -1, 0] < 0.02
    assert res.frames[-1].max_strain < 1e-5


@pytest.mark.parametrize("weight", [0.5, 1.0])
def test_a_soft_pin_holds_a_hanging_yarn_with_a_spring_of_its_weight(weight):
    """Weight 1 holds the point on its target; below 1 a goal spring of weight ×
    pin_stiffness per metre of yarn pulls it there: the yarn bobs on it about the sag at which
    the spring carries its weight (the mean over four of its periods)."""
    n = 21
    sim = _hanging(weights=np.array([weight]), frames=60, n=n, fps=240.0)
    res = sim.run()
    assert res.error is None
    sag = -res.positions[-40:, 0, 2].mean()
    if weight == 1.0:
        assert sag == 0.0
    else:
        share = 0.5 * 0.04 / (n - 1)                  # the pinned point's metre of yarn
        k = weight * P.pin_stiffness * share          # N/m
        weight_n = P.linear_density * 0.04 * G        # the whole yarn's weight
        assert sag == pytest.approx(weight_n / k, rel=0.05)


def test_the_yarn_model_runs_with_the_threads_the_governor_sets():
    """The frame loop's thread governor (threads.py, issue 36) sets the yarn's thread count
    at every frame, at most the user's Threads setting."""
    from solver import threads

    class Counting(threads.ThreadGovernor):
        def __init__(self):
            super().__init__(reader=lambda: None, enabled=False)
            self.frames = 0

        def before_frame(self):
            self.frames += 1
            return super().before_frame()

    old = threads.set_governor(Counting())
    try:
        sim = _hanging(frames=3)
        sim.run()
        assert threads.governor().frames == 3
    finally:
        threads.set_governor(old)
