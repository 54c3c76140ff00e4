"""Relaxation of a generated knit into a rest state ([Kaldor2011] §7.1, Table 4.1; docs/yarn.md,
"What is built": rest state).

Two phases. First Kaldor's: the generated geometry is simulated with the yarns linearly elastic
and stiff instead of inextensible, heavy viscous damping, bending at a thousandth of the yarn's
and a straight rest shape, and every segment's rest length shrunk to c·ℓ⁰ (c = 0.935, his stitch
models'), so the loops tighten around each other. Its end gives the knit its shape, the rest
lengths (the segments' lengths there) and the rest curvature (the curvature there, rods.py).

Then the settle: the simulated model itself (inextensible yarns, the full bending about that
rest curvature, the yarn's friction and filter) with Kaldor's viscous damping, until the points
move slower than ``SETTLE_SPEED`` (or ``settle`` seconds have passed). With the rest contacts
(YarnParams.contact_rest, contact.RestContacts: the first phase's end is where touching yarns
rest) and the edge yarns limp, the first phase's end is already at rest in the model and the
settle stops within its first window; with Kaldor's contact (contact_rest 0) it lets the
pressed contacts give way (docs/yarn.md, "Rest state").

Conversions of Kaldor's "Relaxation" column: k_len = 10000 g·cm²/s² = 1e-3 J in
E = k_len·∫(1 − |y′|/ℓ)² ds over one segment, i.e. an axial stiffness EA = 2·k_len/ℓ, about 1 N
for his segments of roughly 2 mm; k_global = 1.5 g/s per segment of mass ρ·ℓ ≈ 6e-4 kg/m × 2 mm
gives a damping rate of about 1300 /s.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from .. import threads
from ..params import SolverSettings
from ..spec import YarnSetup
from .colliders import YarnColliders
from .dynamics import StepStats, Stepping, YarnSolver
from .model import build_yarn_model
from .rods import rest_curvature
from .stitches import Swatch

KALDOR_SHRINK = 0.935
# The longest step of both phases [s], whatever the simulation's: the rest state is the same
# at every Time Step (Kaldor's relaxation with its stiff linear yarns was measured at it).
RELAX_STEP = 1.0 / 9600.0
# Kaldor's relaxation: linear yarns of EA [N], viscous damping [1/s], his proportional filter's
# α per 1/11800 s, bending at this share of the yarn's.
RELAX_AXIAL_STIFFNESS = 1.0
RELAX_DAMPING = 1300.0
RELAX_FILTER_ALPHA = 0.3
RELAX_BEND_SCALE = 1e-3
# The settle stops once the points' rms speed, measured over SETTLE_WINDOW, is below this
# [m/s]: under the relaxation's damping that is an unbalanced force of about a tenth of the
# yarn's weight.
SETTLE_SPEED = 1e-3
SETTLE_WINDOW = 0.005
SETTLE_DAMPING = RELAX_DAMPING
# A setup's relaxation (YarnSetup.relax seconds of Kaldor's phase) settles for at most this many
# times as long
SETTLE_PER_RELAX = 5.0


@dataclasses.dataclass(frozen=True)
class Relaxed:
    """A relaxed knit: positions (P, 3) [m], rest segment lengths (S,) [m], rest curvature
    (P, 3) (rods.rest_curvature), the step counters of both phases and how long the settle
    ran [s]."""

    positions: np.ndarray
    rest: np.ndarray
    rest_curvature: np.ndarray
    stats: StepStats
    settled: float = 0.0


def relax_setup(setup: YarnSetup, duration: float = 0.02, shrink: float = KALDOR_SHRINK,
                ramp: float = 0.5, settle: float = 0.1, settle_damping: float = SETTLE_DAMPING,
                time_step: float = RELAX_STEP) -> tuple[YarnSetup, Relaxed]:
    """Relax ``setup`` (no gravity; pins and colliders left out) and return it at rest, the
    middle of its bounding box where the setup's was.

    Args:
        duration: simulated time [s] of Kaldor's phase.
        shrink: c, target rest length c·ℓ⁰ of every segment.
        ramp: fraction of ``duration`` over which the rest lengths go from ℓ⁰ to c·ℓ⁰ (a
            sudden shrink pulls loops through each other faster than contact can push back).
        settle: most simulated time [s] of the settle (0: none).
        time_step: the longest step [s].

    Returns:
        (the setup starting at its rest state, Relaxed).

    It runs with as many threads as the cores other programs leave free, and at most the
    user's Threads setting (threads.py), judged every ``SETTLE_WINDOW`` of simulated time as
    the frame loop does at every frame.
    """
    governor = threads.governor()
    governor.observe()
    try:
        return _relax(setup, duration, shrink, ramp, settle, settle_damping, time_step, governor)
    finally:
        governor.release()


def _relax(setup, duration, shrink, ramp, settle, settle_damping, time_step, governor):
    yarn = setup.yarn
    P = len(setup.positions)
    soft = dataclasses.replace(
        setup, yarn=dataclasses.replace(yarn, bend_stiffness=yarn.bend_stiffness
                                        * RELAX_BEND_SCALE, contact_rest=0.0),
        rest_curvature=np.zeros((P, 3)), limp=np.zeros(0, np.int64),
        pin_indices=np.zeros(0, np.int64), pin_weights=None,
        pin_targets=None, relax=0.0)
    settings = SolverSettings(model="yarn", time_step=time_step)
    first = YarnSolver(build_yarn_model(soft), settings, gravity=(0.0, 0.0, 0.0),
                       stepping=Stepping(axial_stiffness=RELAX_AXIAL_STIFFNESS,
                                         damping_rate=RELAX_DAMPING,
                                         filter_alpha=RELAX_FILTER_ALPHA))
    start = first.model.segments.rest.copy()
    n = max(1, round(duration / time_step))
    n_ramp = max(1, round(ramp * n))
    window = max(1, round(SETTLE_WINDOW / time_step))
    for i in range(n):
        if i % window == 0:
            governor.before_frame()
        first.rest = start * (1.0 - (1.0 - shrink) * min(1.0, (i + 1) / n_ramp))
        first.step()
    x = first.x.copy()
    s = first.model.segments
    rest = s.lengths(x)
    shape = dataclasses.replace(soft, positions=x, rest_positions=None, yarn=yarn,
                                rest_curvature=None, limp=setup.limp)
    curvature = rest_curvature(x, s.seg, first.model.seg_in, first.model.seg_out, rest)
    curvature[np.asarray(setup.limp, dtype=np.int64)] = 0.0
    relaxed = dataclasses.replace(shape, rest_curvature=curvature)
    settled = 0.0
    if settle > 0.0:
        second = YarnSolver(build_yarn_model(relaxed), settings, gravity=(0.0, 0.0, 0.0),
                            stepping=Stepping(damping_rate=settle_damping))
        while second.time < settle - 1e-12:
            governor.before_frame()
            before = second.x.copy()
            second.advance(min(SETTLE_WINDOW, settle - second.time))
            speed = np.sqrt(((second.x - before) ** 2).sum(axis=1).mean()) / SETTLE_WINDOW
            if speed < SETTLE_SPEED:
                break
            if _LOG:
                print(f"settle t={second.time:.3f} speed {speed * 1e3:.2f} mm/s", flush=True)
        settled = second.time
        x = second.x.copy()
        _add(first.stats, second.stats)
    # the relaxed knit where the layout was (the middle of its bounding box): nothing held it
    x = x + _middle(setup.positions) - _middle(x)
    out = Relaxed(x, rest, curvature, first.stats, settled)
    return dataclasses.replace(setup, positions=x, rest_positions=x, rest_curvature=curvature,
                               relax=0.0), out


_LOG = False


def _middle(x: np.ndarray) -> np.ndarray:
    return 0.5 * (x.min(axis=0) + x.max(axis=0))


def _add(total: StepStats, more: StepStats) -> None:
    total.steps += more.steps
    total.refinements += more.refinements
    total.stability_refinements += more.stability_refinements
    total.projection_iterations += more.projection_iterations
    total.worst_violation = max(total.worst_violation, more.worst_violation)
    total.min_clearance = min(total.min_clearance, more.min_clearance)


def build_solver(spec) -> YarnSolver:
    """The yarn model's door to the frame loop (solvers.builder, simulation.Simulation): the
    solver of a SimulationSpec whose ``cloth`` is a YarnSetup, relaxed first if the setup asks,
    its model built and its colliders read for the spec's frames. ValueError
    (model.YarnSetupError) naming what cannot be simulated."""
    setup = spec.cloth
    step = min(spec.settings.time_step or RELAX_STEP, RELAX_STEP)
    if setup.relax > 0.0:
        setup = relax_setup(setup, duration=setup.relax, settle=SETTLE_PER_RELAX * setup.relax,
                            time_step=step)[0]
    model = build_yarn_model(setup)
    colliders = YarnColliders(spec.colliders, model.radius, spec.fps, spec.frames) \
        if spec.colliders else None
    return YarnSolver(model, spec.settings, spec.gravity, colliders)


def swatch_setup(swatch: Swatch, yarn, **fields) -> YarnSetup:
    """The YarnSetup of a generated swatch (its yarn, ties and loops); ``fields`` as YarnSetup's
    (pins, relax, ...; ``positions``: the swatch's points moved, as a mesh holds them)."""
    courses, stitches = swatch.purl.shape
    values = dict(positions=swatch.positions, yarn_offsets=swatch.yarn_offsets, yarn=yarn,
                  ties=swatch.ties, loops=swatch.loops, stitches=stitches, courses=courses,
                  limp=np.concatenate([swatch.cast_on, swatch.bind_off]))
    return YarnSetup(**{**values, **fields})


def relax_swatch(swatch: Swatch, yarn, **options) -> Relaxed:
    """``relax_setup`` of a generated swatch; ``options`` as relax_setup's."""
    return relax_setup(swatch_setup(swatch, yarn), **options)[1]
