"""What to simulate: plain data produced by the scene loader (or the add-on) and read by ``simulate``."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .mesh import PolyMesh
from .params import MaterialParams, SolverSettings, YarnParams


@dataclass(frozen=True)
class Wind:
    """Air motion felt through the drag term (pressure drag across the cloth, a little skin
    friction along it: forces/external.py).

    The gusts are a seeded noise field (forces/external.py, ``wind_field``): random Fourier
    modes whose pattern travels with ``velocity`` (x − velocity·t), so gusts sweep across a
    cloth and ripple it instead of pushing all of it at once, and which also change slowly in
    place.

    Attributes:
        velocity: mean wind velocity [m/s], shape (3,); the gust pattern travels with it.
        turbulence: r.m.s. speed of the gusts [m/s]; 0 = steady wind.
        turbulence_scale: size of a gust [m]: the modes' wavelengths are 2–4 × this, so one
            gust (half a wavelength) is 1–2 × this across.
        turbulence_frequency: how fast the gust pattern changes as it travels [Hz] (each mode
            at 0.5–1.5 × this); 0 = a frozen pattern carried by the wind.
        seed: seed of the gust field, so bakes are reproducible (same seed, same field).
    """

    velocity: np.ndarray = field(default_factory=lambda: np.zeros(3))
    turbulence: float = 0.0
    turbulence_scale: float = 0.5
    turbulence_frequency: float = 1.0
    seed: int = 0


@dataclass(frozen=True)
class ClothSetup:
    """One piece of cloth.

    Attributes:
        mesh: rest and initial shape (world space) [m].
        material: SI material.
        pin_indices: indices of pinned vertices, shape (P,), int64.
        pin_weights: pin strength in (0, 1], shape (P,); 1 = held exactly, below 1 = goal spring
            of stiffness weight * material.pin_stiffness * vertex area.
        pin_targets: optional per-frame pin positions [m], shape (frames + 1, P, 3); None = pins
            stay at their initial positions.
        uv: optional texture coordinates of every polygon corner (in ``mesh.face_indices``
            order), shape (C, 2): the warp (stiffness along U, ``stretch_stiffness``) runs along
            U in each triangle, the weft along V, as a pattern's grain follows its UV layout.
        grain: warp direction [unit-free], shape (3,), projected into each triangle where there
            is no UV map (or its triangle is degenerate in UV); None = world X.
        seams: vertex pairs sewn together, shape (S, 2), in this piece's numbering (Blender:
            the mesh's loose edges): each pair is pulled together with the material's
            ``seam_force`` and then held (forces/seams.py).
    """

    mesh: PolyMesh
    material: MaterialParams = field(default_factory=MaterialParams)
    pin_indices: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    pin_weights: np.ndarray | None = None
    pin_targets: np.ndarray | None = None
    uv: np.ndarray | None = None
    grain: np.ndarray | None = None
    seams: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))

    def weights(self) -> np.ndarray:
        """Pin weights, shape (P,), defaulting to 1."""
        if self.pin_weights is None:
            return np.ones(len(self.pin_indices))
        return np.asarray(self.pin_weights, dtype=np.float64)


@dataclass(frozen=True)
class YarnSetup:
    """Yarns to simulate with the yarn model (solver/yarn/, docs/yarn.md): a knitted swatch
    (``solver.yarn.knit_setup``, a scene file's ``[knit]`` table, Blender's Knit Swatch).

    Attributes:
        positions: (P, 3) yarn points where the simulation starts [m].
        yarn_offsets: (Y + 1,) int: yarn k is points yarn_offsets[k]:yarn_offsets[k + 1].
        yarn: the yarn's material.
        ties: (T, 2) point pairs glued at their distance in ``rest_positions`` (Kaldor's glue
            on yarn ends and the edges' stitches: stitches.Swatch.ties).
        loops: (P,) the loop j·stitches + i each point belongs to (stitches.Swatch.loops), which
            places the regions of the non-rigid damping; None: no such damping (loose yarns).
        stitches, courses: the knit's loops per course and courses (for ``loops``).
        rest_positions: (P, 3) the rest shape [m]: every segment's rest length and, unless
            ``rest_curvature`` is given, the rest curvature; None = ``positions``.
        rest_curvature: (P, 3) every point's rest curvature in its own frame
            (rods.rest_curvature), as the relaxation leaves it; None = that of
            ``rest_positions``.
        limp: point indices that do not bend: a knit's cast-on and bind-off yarns
            (stitches.Swatch), which close its edges by running through the edge loops; bent by
            the relaxation, their bending about a straight rest shape pushed the knit open and
            about the bent one moved it still (docs/yarn.md, "Rest state").
        relax: seconds of Kaldor's relaxation run first (relax.py), after which the relaxed
            swatch is the start and the rest state; 0 = the yarns start at rest.
        pin_indices, pin_weights, pin_targets: pinned points, as ClothSetup's: weight 1 holds
            a point on its target, below 1 pulls it there with a goal spring of weight ×
            ``yarn.pin_stiffness`` per metre of yarn; targets (frames + 1, N, 3) [m] move
            them (a needle, a hand), None = they stay where they start.
    """

    positions: np.ndarray
    yarn_offsets: np.ndarray
    yarn: YarnParams = field(default_factory=YarnParams)
    ties: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))
    loops: np.ndarray | None = None
    stitches: int = 0
    courses: int = 0
    rest_positions: np.ndarray | None = None
    rest_curvature: np.ndarray | None = None
    limp: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    relax: float = 0.0
    pin_indices: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    pin_weights: np.ndarray | None = None
    pin_targets: np.ndarray | None = None

    def weights(self) -> np.ndarray:
        """Pin weights, shape (N,), defaulting to 1."""
        if self.pin_weights is None:
            return np.ones(len(self.pin_indices))
        return np.asarray(self.pin_weights, dtype=np.float64)


@dataclass(frozen=True)
class Collider:
    """A body the cloth must never pass through (see solver.collision).

    Exactly one shape is given: ``sphere`` (center [m] (3,), radius [m]), ``plane`` (point [m]
    (3,), unit normal (3,); the solid side is behind the normal) or ``mesh`` (a PolyMesh in
    world space [m]; any polygons, triangulated internally).

    Attributes:
        kind: "sphere", "plane" or "mesh".
        center, radius: sphere geometry.
        point, normal: plane geometry.
        mesh: mesh geometry at frame 0.
        thickness: collision margin around the surface [m].
        friction: Coulomb friction coefficient (static and kinetic), >= 0.
        velocity: rigid translation velocity [m/s], (3,), applied from frame 0.
        positions: optional per-frame vertex positions of a mesh collider [m],
            (frames + 1, V, 3) (animated or deforming bodies; overrides ``velocity``).
    """

    kind: str
    center: np.ndarray | None = None
    radius: float = 0.0
    point: np.ndarray | None = None
    normal: np.ndarray | None = None
    mesh: PolyMesh | None = None
    thickness: float = 0.005
    friction: float = 0.3
    velocity: np.ndarray = field(default_factory=lambda: np.zeros(3))
    positions: np.ndarray | None = None


@dataclass(frozen=True)
class SimulationSpec:
    """A whole simulation: cloth, numerical settings and environment.

    Attributes:
        cloth: the cloth to simulate, or a tuple of cloths simulated together (each with its own
            material and pins; results list their vertices in this order), or the yarns of a
            knit (YarnSetup, with ``settings.model == "yarn"``).
        settings: model choice and numerical options.
        frames: number of frames to simulate (frame 0 is the initial state).
        fps: frames per second [1/s].
        gravity: gravitational acceleration [m/s²], shape (3,).
        wind: air motion.
        colliders: bodies the cloth collides with.
        wind_frames: optional air motion per frame (an animated wind): ``frames + 1`` Winds,
            entry f acting from frame f to f + 1; None = ``wind`` throughout.
        seams: vertex pairs sewn across pieces (a sleeve to a bodice), shape (S, 2), in the
            combined numbering of the pieces (piece i's vertices after piece i − 1's, as in
            the results); each piece's own seams are in ``ClothSetup.seams``.
    """

    cloth: ClothSetup | tuple[ClothSetup, ...] | YarnSetup
    settings: SolverSettings = field(default_factory=SolverSettings)
    frames: int = 48
    fps: float = 24.0
    gravity: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, -9.81]))
    wind: Wind = field(default_factory=Wind)
    colliders: tuple[Collider, ...] = ()
    wind_frames: tuple[Wind, ...] | None = None
    seams: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))

    def __post_init__(self):
        if self.wind_frames is not None and len(self.wind_frames) < self.frames:
            raise ValueError(f"wind_frames: {len(self.wind_frames)} winds for {self.frames} "
                             "frames; give one per frame (frames + 1)")

    def wind_at(self, frame: int) -> Wind:
        """The wind acting from frame ``frame`` to ``frame + 1``."""
        return self.wind if self.wind_frames is None else self.wind_frames[frame]

    def pieces(self) -> tuple[ClothSetup | YarnSetup, ...]:
        """The cloths (or the knit) as a tuple (one element for a single one)."""
        return (self.cloth,) if isinstance(self.cloth, (ClothSetup, YarnSetup)) \
            else tuple(self.cloth)
