"""Rest-state data of yarns: ``build_yarn_model`` freezes everything fixed while a knit is
simulated, as ``solver.model.build_model`` does for cloth (docs/yarn.md)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..params import YarnParams
from ..spec import YarnSetup
from .contact import RestContacts
from .damping import loop_regions
from .rods import Segments, bending_matrix, lumped_masses, point_segments, rest_curvature


class YarnSetupError(ValueError):
    """A YarnSetup that cannot be simulated; the message names the field."""


@dataclass(frozen=True)
class YarnModel:
    """Everything fixed while yarns are simulated.

    Geometry:
        rest_positions: (P, 3) where the yarns start [m] (the pins' targets when they do not
            move).
        yarn_offsets: (Y + 1,) yarn k is points yarn_offsets[k]:yarn_offsets[k + 1].
        segments: the segments, their rest lengths and arc lengths (rods.Segments).
        seg_in, seg_out: (P,) the segment ending and the one starting at each point (−1: none).
        ties: (T, 2) glued point pairs and tie_rest (T,) their distances [m].
    Dynamics:
        mass: (P,) lumped point masses [kg].
        bend_matrix: (P, P) [N/m] the bending energy's quadratic part (rods.bending_matrix).
        rest_curvature: (P, 3) every point's rest curvature in its own frame (rods).
        limp: (L,) points that do not bend (YarnSetup.limp).
        rest_contacts: the segment pairs touching at rest (contact.RestContacts), taken at
            rest_positions.
        regions, large_regions: the non-rigid filter's two passes, (ptr, points) each
            (damping.loop_regions: 2 × 2 loops one loop apart, 4 × 4 loops two apart), or
            None without loops.
        params: the yarn.
    Pins:
        pin_indices (N,), pin_weights (N,) in (0, 1]; hard_pins: held exactly (weight 1);
        soft_pins: pulled by goal springs of soft_pin_stiffness (Ns,) [N/m].
    """

    rest_positions: np.ndarray
    yarn_offsets: np.ndarray
    segments: Segments
    seg_in: np.ndarray
    seg_out: np.ndarray
    ties: np.ndarray
    tie_rest: np.ndarray
    mass: np.ndarray
    bend_matrix: sp.csc_matrix
    rest_curvature: np.ndarray
    limp: np.ndarray
    rest_contacts: RestContacts
    regions: tuple | None
    large_regions: tuple | None
    params: YarnParams
    pin_indices: np.ndarray
    pin_weights: np.ndarray
    hard_pins: np.ndarray
    soft_pins: np.ndarray
    soft_pin_stiffness: np.ndarray

    @property
    def vertex_count(self) -> int:
        return int(self.rest_positions.shape[0])

    @property
    def piece_offsets(self) -> np.ndarray:
        """(2,): the knit is one piece (as a ClothModel's pieces)."""
        return np.array([0, self.vertex_count], np.int64)

    @property
    def free_mask(self) -> np.ndarray:
        """True where a point moves under forces (not a hard pin), (P,)."""
        free = np.ones(self.vertex_count, bool)
        free[self.hard_pins] = False
        return free

    @property
    def radius(self) -> float:
        return self.params.radius


def _indices(name: str, value, count: int) -> np.ndarray:
    a = np.asarray(value if value is not None else np.zeros(0), dtype=np.int64).reshape(-1)
    if len(a) and (a.min() < 0 or a.max() >= count):
        bad = int(a[(a < 0) | (a >= count)][0])
        raise YarnSetupError(f"{name}: point index {bad} out of range 0..{count - 1}")
    return a


def build_yarn_model(setup: YarnSetup) -> YarnModel:
    """The frozen YarnModel of ``setup`` (its relaxation, if any, already run: relax.py)."""
    x = np.ascontiguousarray(setup.positions, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != 3 or not np.isfinite(x).all():
        raise YarnSetupError("positions: expected finite (P, 3) yarn points")
    P = len(x)
    offsets = np.asarray(setup.yarn_offsets, dtype=np.int64)
    if offsets[0] != 0 or offsets[-1] != P or (np.diff(offsets) < 2).any():
        raise YarnSetupError(f"yarn_offsets: expected 0 … {P} with at least two points per "
                             f"yarn, got {offsets.tolist()}")
    rest_x = x if setup.rest_positions is None else \
        np.ascontiguousarray(setup.rest_positions, dtype=np.float64)
    if rest_x.shape != x.shape:
        raise YarnSetupError(f"rest_positions: shape {rest_x.shape}, the yarn has {x.shape}")
    segments = Segments.of(offsets, rest_x)
    if (segments.rest <= 0).any():
        raise YarnSetupError(f"rest_positions: segment {int(np.argmin(segments.rest))} has "
                             "no length (two yarn points in one place)")
    seg_in, seg_out = point_segments(segments.seg, P)
    if setup.rest_curvature is None:
        curvature = rest_curvature(rest_x, segments.seg, seg_in, seg_out, segments.rest)
    else:
        curvature = np.ascontiguousarray(setup.rest_curvature, dtype=np.float64)
        if curvature.shape != (P, 3):
            raise YarnSetupError(f"rest_curvature: shape {curvature.shape}, expected ({P}, 3)")
    limp = _indices("limp", setup.limp, P)
    if len(limp):
        curvature = curvature.copy()
        curvature[limp] = 0.0
    ties = _indices("ties", setup.ties, P).reshape(-1, 2)
    tie_rest = np.linalg.norm(rest_x[ties[:, 1]] - rest_x[ties[:, 0]], axis=1)
    params = setup.yarn
    mass = lumped_masses(segments, P, params.linear_density)
    regions = large = None
    if setup.loops is not None:
        loops = np.asarray(setup.loops, dtype=np.int64)
        if loops.shape != (P,) or loops.min() < 0 \
                or loops.max() >= setup.stitches * setup.courses:
            raise YarnSetupError(f"loops: expected (P,) loop indices below stitches × "
                                 f"courses = {setup.stitches * setup.courses}")
        regions = loop_regions(loops, setup.stitches, setup.courses, size=2, stride=1)
        large = loop_regions(loops, setup.stitches, setup.courses, size=4, stride=2)
    pins = _indices("pin_indices", setup.pin_indices, P)
    if len(np.unique(pins)) != len(pins):
        raise YarnSetupError("pin_indices: a point is pinned twice")
    weights = setup.weights()
    if weights.shape != pins.shape or not ((weights > 0) & (weights <= 1)).all():
        raise YarnSetupError(f"pin_weights: expected {len(pins)} weights in (0, 1]")
    hard = weights >= 1.0
    # a soft pin's spring: weight × stiffness per metre × the point's share of yarn
    share = np.zeros(P)
    np.add.at(share, segments.seg[:, 0], 0.5 * segments.rest)
    np.add.at(share, segments.seg[:, 1], 0.5 * segments.rest)
    soft = pins[~hard]
    return YarnModel(
        rest_positions=x, yarn_offsets=offsets, segments=segments, seg_in=seg_in,
        seg_out=seg_out, ties=ties, tie_rest=tie_rest, mass=mass,
        bend_matrix=bending_matrix(segments, P, params.bend_stiffness, limp).tocsc(),
        rest_curvature=curvature, limp=limp,
        rest_contacts=RestContacts.of(rest_x, segments.seg, segments.rest, segments.yarn,
                                      segments.arc, params.radius),
        regions=regions, large_regions=large, params=params,
        pin_indices=pins, pin_weights=weights, hard_pins=pins[hard], soft_pins=soft,
        soft_pin_stiffness=weights[~hard] * params.pin_stiffness * share[soft])
