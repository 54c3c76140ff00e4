"""Small yarn scenes for the yarn model's tests: a YarnSolver from plain arrays, through the
same doors a scene file or the add-on uses (YarnSetup, build_yarn_model, SolverSettings)."""

from __future__ import annotations

import dataclasses

import numpy as np

from solver.params import SolverSettings, YarnParams
from solver.spec import Collider, YarnSetup
from solver.yarn import (YarnColliders, YarnSolver, build_yarn_model, knit_swatch,
                         relax_setup, swatch_setup)
from solver.yarn.dynamics import Stepping

P = YarnParams()
D = 2 * P.radius
GAUGE = (5.6e-3, 4.2e-3)   # worsted: 18 stitches, 24 courses per 10 cm


def straight(n, length, start=(0.0, 0.0, 0.0), direction=(1.0, 0.0, 0.0)):
    """(n, 3) points of a straight yarn of ``length`` [m]."""
    d = np.asarray(direction, float)
    return np.asarray(start, float) + np.linspace(0, length, n)[:, None] * d / np.linalg.norm(d)


def solver(positions, offsets, yarn: YarnParams = P, *, pins=(), weights=None, ties=None,
           gravity=(0.0, 0.0, -9.81), colliders=(), floor=None, floor_friction=0.5,
           time_step=None, stepping=Stepping(), swatch=None, rest_positions=None,
           rest_curvature=None, fps=24.0, frames=1) -> YarnSolver:
    """A YarnSolver of yarns at ``positions`` (at rest there unless ``rest_positions`` or
    ``rest_curvature`` say otherwise); ``swatch`` (stitches.Swatch) adds its loops (the
    non-rigid filter) and ties; ``floor`` a horizontal plane at that height."""
    extra = {}
    if swatch is not None:
        courses, stitches = swatch.purl.shape
        extra = dict(ties=swatch.ties, loops=swatch.loops, stitches=stitches, courses=courses)
    if ties is not None:
        extra["ties"] = np.asarray(ties)
    setup = YarnSetup(positions=np.asarray(positions, float),
                      yarn_offsets=np.asarray(offsets, np.int64), yarn=yarn,
                      pin_indices=np.asarray(pins, np.int64), pin_weights=weights,
                      rest_positions=rest_positions, rest_curvature=rest_curvature, **extra)
    colliders = tuple(colliders)
    if floor is not None:
        colliders += (Collider("plane", point=np.array([0.0, 0.0, floor]),
                               normal=np.array([0.0, 0.0, 1.0]), thickness=0.0,
                               friction=floor_friction),)
    found = YarnColliders(colliders, yarn.radius, fps, frames) if colliders else None
    return YarnSolver(build_yarn_model(setup), SolverSettings(model="yarn", time_step=time_step),
                      gravity=gravity, colliders=found, stepping=stepping)


def relaxed_swatch(pattern, stitches, courses=None, yarn: YarnParams = P, **relax):
    """(Swatch, YarnSetup at rest, Relaxed) of a relaxed worsted swatch."""
    sw = knit_swatch(pattern, stitches, courses or stitches, *GAUGE, yarn.radius)
    setup, relaxed = relax_setup(swatch_setup(sw, yarn), **relax)
    return sw, setup, relaxed


def swatch_solver(sw, setup, gravity=(0.0, 0.0, 0.0), pins=(), **kw) -> YarnSolver:
    """A YarnSolver of a relaxed swatch's setup (``pins``: point indices held)."""
    setup = dataclasses.replace(setup, pin_indices=np.asarray(pins, np.int64))
    colliders = kw.pop("colliders", None)
    return YarnSolver(build_yarn_model(setup), SolverSettings(model="yarn", **kw),
                      gravity=gravity, colliders=colliders)
