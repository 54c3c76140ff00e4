"""Relaxation of a generated knit into a rest state ([Kaldor2011] §7.1, Table 4.1).

Kaldor simulates the generated geometry with three changes: the yarns are linearly elastic and
stiff instead of inextensible, heavy viscous damping bleeds off the energy of the (feasible but
high-energy) start, and every segment's rest length is shrunk to c·ℓ⁰ with c = 0.935 for his
stitch models, so the fabric compresses and settles. His relaxation bending stiffness is a
thousandth of the simulation's (0.005 vs 5 g·cm²/s²). The rest lengths of the simulation that
follows are the segment lengths at the end of the relaxation.

Conversions of his "Relaxation" column: k_len = 10000 g·cm²/s² = 1e-3 J in
E = k_len·∫(1 − |y′|/ℓ)² ds over one segment, i.e. an axial stiffness EA = 2·k_len/ℓ, about 1 N
for his segments of roughly 2 mm (a loop of about 1.5 cm in 8 segments; ℓ is not tabulated);
k_global = 1.5 g/s = 1.5e-3 kg/s per segment of mass ρ·ℓ ≈ 6e-4 kg/m × 2 mm gives a damping
rate of about 1300 /s. Both are the defaults here.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..params import YarnParams
from .damping import loop_regions
from .dynamics import DEFAULT_TIME_STEP, StepStats, YarnSimulation
from .rods import Segments
from .stitches import Swatch

KALDOR_SHRINK = 0.935


@dataclasses.dataclass(frozen=True)
class Relaxed:
    """A relaxed knit: positions (P, 3) [m], rest segment lengths (S,) [m], and the step
    counters of the relaxation."""

    positions: np.ndarray
    rest: np.ndarray
    stats: StepStats


def relax(positions, yarn_offsets, params: YarnParams, ties=None, regions=None, shrink: float = KALDOR_SHRINK,
          duration: float = 0.02, ramp: float = 0.5, axial_stiffness: float = 1.0,
          damping_rate: float = 1300.0, bend_scale: float = 1e-3,
          time_step: float = DEFAULT_TIME_STEP) -> Relaxed:
    """Relax a generated knit (no gravity, nothing pinned).

    Args:
        positions, yarn_offsets, ties: the layout (stitches.knit_swatch, Swatch.ties).
        regions: regions of the non-rigid damping (damping.loop_regions: 2 × 2 loops one loop
            apart), proportional with α = 0.3 as in
            Kaldor's relaxation column; None = no filter.
        params: the yarn; its bend stiffness is scaled by ``bend_scale`` during relaxation.
        shrink: c, target rest length c·ℓ⁰ of every segment.
        duration: simulated time [s].
        ramp: fraction of ``duration`` over which the rest lengths go from ℓ⁰ to c·ℓ⁰ (a
            sudden shrink pulls loops through each other faster than contact can push back).
        axial_stiffness: EA [N] of the linear yarns.
        damping_rate: viscous damping [1/s].
        time_step: h [s].

    Returns:
        Relaxed, whose ``rest`` are the final segment lengths.
    """
    soft = dataclasses.replace(params, bend_stiffness=params.bend_stiffness * bend_scale)
    sim = YarnSimulation(positions, yarn_offsets, soft, ties=ties, regions=regions,
                         nonrigid_alpha=0.3, gravity=(0.0, 0.0, 0.0),
                         time_step=time_step, axial_stiffness=axial_stiffness,
                         damping_rate=damping_rate)
    start = sim.segments
    n = max(1, round(duration / time_step))
    n_ramp = max(1, round(ramp * n))
    for i in range(n):
        c = 1.0 - (1.0 - shrink) * min(1.0, (i + 1) / n_ramp)
        sim.segments = Segments(start.seg, start.rest * c, start.yarn, start.arc)
        sim.step()
    return Relaxed(sim.x.copy(), start.lengths(sim.x), sim.stats)


def relax_swatch(swatch: Swatch, params: YarnParams, **options) -> Relaxed:
    """``relax`` a generated swatch with its glue ties and its 2 × 2-loop damping regions."""
    courses, stitches = swatch.purl.shape
    return relax(swatch.positions, swatch.yarn_offsets, params, ties=swatch.ties,
                 regions=loop_regions(swatch.loops, stitches, courses, size=2, stride=1),
                 **options)
