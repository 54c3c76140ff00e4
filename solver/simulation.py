"""Run a simulation frame by frame and report what happened.

``simulate`` builds the model, steps the chosen cloth model, records positions after every frame
and a per-frame report (wall time, strain, energies, iterations), and stops cleanly at a blow-up
keeping the frames before it.

A frame that blows up (BlowUpError: non-finite state, or a vertex over ``max_speed``) is first
simulated again from its start with steps half as long, up to MAX_RETRIES times, as Baraff &
Witkin's adaptive step halves a step that went wrong ([Baraff1998], docs/references.md);
the frame after a rescued one starts with steps twice as long as those that worked, back to the
solver's own. The state at the start of the frame is restored exactly (positions, velocities
and what the solver's steps hand on: ClothSolver.carried), so a bake stays deterministic, and a
bake that never blows up runs as before. The reports count the retries.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Callable

import numpy as np

from . import threads
from .collision.pipeline import CollisionHandler, CollisionStats
from .collision.self_untangle import tangled_vertices, untangle_self
from .collision.untangle import uncross, untangle
from .diagnostics import edge_strain, kinetic_energy, potential_energy
from .forces.external import wind_field
from .forces.seams import seam_gaps
from .model import ClothModel, build_model
from .solvers.base import BlowUpError, ClothSolver, FrameTargets, StepLimitError
from .solvers import make_solver
from .spec import SimulationSpec

# Retries of a frame that blew up, each with steps half as long as the last: the last try takes
# 2**MAX_RETRIES times the steps, so a frame that cannot be rescued costs 2 + 4 + 8 = 14 times
# a normal one before the error.
MAX_RETRIES = 3
# Rounds of moving vertices out of colliders and holding the strain limit by positions, before
# the first frame of a cloth that starts inside a collider (collision/untangle.py)
UNTANGLE_ROUNDS = 20


@dataclass
class FrameReport:
    """Measurements after one frame (units in the names)."""

    frame: int
    wall_time_s: float
    substeps: int
    iterations: int
    max_strain: float
    mean_strain: float
    kinetic_energy_j: float
    elastic_energy_j: float
    potential_energy_j: float
    collision_pairs: int = 0            # proximity contacts + continuous collisions handled
    impact_zones: int = 0               # rigid impact zones formed (the last-resort fail-safe)
    deepest_penetration_m: float = 0.0  # deepest vertex inside a sphere/plane/solid mesh
    self_intersections: int = 0         # intersecting cloth triangle pairs (no shared vertex)
    collider_crossings: int = 0         # intersecting cloth/collider-mesh triangle pairs
    newton_iterations: int = 0          # implicit model: Newton iterations (0 for the others)
    retries: int = 0                    # tries of this frame that blew up (then finer steps)
    untangled: int = 0                  # vertices moved out and clear of colliders before it
    tangled_pairs: int = 0              # intersecting cloth triangle pairs at the frame's start
    step_refinement: int = 1            # the solver's steps divided this many times finer
    seam_gap_m: float = 0.0             # widest gap of a seam pair at the frame's end


@dataclass
class SimulationResult:
    """Positions per frame and the report.

    Attributes:
        positions: (k + 1, V, 3) [m]; frame 0 is the initial state, k the frames completed.
        triangles: (T, 3) the triangulation used.
        frames: one FrameReport per completed frame.
        error: None, or the message of a blow-up naming its frame.
        model_name: the cloth model used.
    """

    positions: np.ndarray
    triangles: np.ndarray
    frames: list[FrameReport] = field(default_factory=list)
    error: str | None = None
    model_name: str = ""

    def report(self) -> dict:
        """JSON-serialisable report: per-frame rows and totals."""
        rows = [asdict(f) for f in self.frames]
        wall = [f.wall_time_s for f in self.frames]
        return {
            "model": self.model_name,
            "vertices": int(self.positions.shape[1]),
            "triangles": int(len(self.triangles)),
            "frames_completed": len(self.frames),
            "error": self.error,
            "frames": rows,
            "totals": {
                "wall_time_s": float(sum(wall)),
                "median_frame_s": float(np.median(wall)) if wall else 0.0,
                "worst_frame_s": float(max(wall)) if wall else 0.0,
                "max_strain": max((f.max_strain for f in self.frames), default=0.0),
                "collision_pairs": int(sum(f.collision_pairs for f in self.frames)),
                "deepest_penetration_m": max((f.deepest_penetration_m for f in self.frames),
                                             default=0.0),
                "max_self_intersections": max((f.self_intersections for f in self.frames),
                                              default=0),
                "max_collider_crossings": max((f.collider_crossings for f in self.frames),
                                              default=0),
                "substeps": int(sum(f.substeps for f in self.frames)),
                "iterations": int(sum(f.iterations for f in self.frames)),
                "newton_iterations": int(sum(f.newton_iterations for f in self.frames)),
                "retries": int(sum(f.retries for f in self.frames)),
                "final_seam_gap_m": self.frames[-1].seam_gap_m if self.frames else 0.0,
            },
        }


def pin_targets(spec: SimulationSpec, model: ClothModel) -> np.ndarray:
    """Pin goal positions for every frame [m], (frames + 1, P, 3), pieces in order."""
    out = np.empty((spec.frames + 1, len(model.pin_indices), 3))
    out[:] = model.rest_positions[model.pin_indices]
    start = 0
    for c in spec.pieces():
        n = len(c.pin_indices)
        if c.pin_targets is not None:
            out[:, start:start + n] = np.asarray(c.pin_targets, dtype=np.float64)
        start += n
    return out


def frame_report(frame: int, wall: float, solver: ClothSolver, info, gravity,
                 collider_state=None) -> FrameReport:
    """Measure the solver's state after a frame (collider_state: the colliders at its end)."""
    m = solver.model
    strain = edge_strain(solver.x, m.edges, m.edge_rest_length)
    extra = {}
    if solver.collisions is not None and collider_state is not None:
        checks = solver.collisions.report(solver.x, collider_state)
        stats = solver.collision_stats
        extra = dict(collision_pairs=stats.contacts + stats.collisions,
                     impact_zones=stats.impact_zones,
                     deepest_penetration_m=checks.deepest_penetration_m,
                     self_intersections=checks.self_intersections,
                     collider_crossings=checks.collider_crossings)
    return FrameReport(
        frame=frame, wall_time_s=wall, substeps=info.substeps, iterations=info.iterations,
        newton_iterations=info.newton_iterations,
        seam_gap_m=float(seam_gaps(solver.x, m.seams).max()) if len(m.seams) else 0.0,
        max_strain=float(strain.max()) if len(strain) else 0.0,
        mean_strain=float(np.mean(np.abs(strain))) if len(strain) else 0.0,
        kinetic_energy_j=kinetic_energy(m.mass, solver.v),
        elastic_energy_j=solver.elastic_energy(),
        potential_energy_j=potential_energy(m.mass, solver.x, gravity), **extra)


class Simulation:
    """A simulation advanced one frame at a time (the add-on's modal bake steps it between UI
    events); ``simulate`` runs one to the end.

    Attributes:
        spec: what is simulated.
        model, solver: the built model and the cloth solver stepping it.
        result: positions and reports of the frames completed so far.
    """

    def __init__(self, spec: SimulationSpec):
        threads.governor().observe()  # the setup's time serves to judge the first frame
        self.spec = spec
        self.model = build_model(spec.cloth, spec.seams)
        self.solver = make_solver(self.model, spec.settings, spec.gravity)
        self.solver.collisions = CollisionHandler(self.model, spec.colliders,
                                                  spec.settings.self_collision, spec.fps,
                                                  spec.frames)
        self._targets = pin_targets(spec, self.model)
        self._hard = self.model.pin_weights >= 1.0
        self._positions = np.empty((spec.frames + 1, self.model.vertex_count, 3))
        self._positions[0] = self.solver.x
        self.result = SimulationResult(self._positions[:1], self.model.triangles,
                                       model_name=self.solver.name)
        self._refinement = 1  # the step refinement the next frame starts with
        # Vertices inside a collider are moved out before each frame from the first on, until
        # a frame starts with none inside (collision/untangle.py)
        self._untangling = True

    @property
    def piece_offsets(self) -> np.ndarray:
        """(n + 1,): the vertices of piece i are positions[:, off[i]:off[i + 1]]."""
        return self.model.piece_offsets

    @property
    def frame(self) -> int:
        """Frames completed so far (0 before the first step)."""
        return len(self.result.frames)

    @property
    def done(self) -> bool:
        """True when every frame is simulated or the simulation stopped at a blow-up."""
        return self.frame >= self.spec.frames or self.result.error is not None

    def step(self) -> FrameReport | None:
        """Simulate the next frame; returns its report, or None if it blew up (the message is in
        ``result.error`` and the frames before it are kept)."""
        if self.done:
            raise RuntimeError("the simulation is finished")
        f = self.frame + 1
        dt = 1.0 / self.spec.fps
        t = (f - 1) * dt
        tg, hard = self._targets, self._hard
        if not np.all(np.isfinite(tg[f])):
            pin = int(self.model.pin_indices[np.nonzero(~np.isfinite(tg[f]).all(axis=1))[0][0]])
            self.result.error = (f"frame {f}: the pin target of vertex {pin} is NaN or infinite; "
                                 f"frames 0-{f - 1} are kept. Check the pinned vertices' "
                                 "motion (pin_motion / the pin group's animation).")
            return None
        colliders = self.solver.collisions.colliders.frame(f)
        untangled = tangled = 0
        # the frame's time includes its untangling, which can cost a frame's worth
        start = time.perf_counter()
        if self._untangling:
            untangled, tangled = self._untangle(colliders.start, dt)
            self._untangling = untangled > 0 or tangled > 0
        ft = FrameTargets(tg[f - 1][hard], tg[f][hard], tg[f - 1][~hard], tg[f][~hard],
                          colliders)
        # the air at the cloth's vertices, sampled once per frame at its middle (the gusts
        # travel with the wind: forces/external.py, wind_field)
        wind = wind_field(self.spec.wind_at(f - 1), self.solver.x, t + 0.5 * dt)
        # as many threads as the cores other programs leave free (results do not depend on it)
        threads.governor().before_frame()
        try:
            info, retries = self._step_with_retries(t, dt, ft, wind)
        except BlowUpError as exc:
            self.result.error = (f"frame {f}: simulation blew up ({exc}); frames 0-{f - 1} are "
                                 "kept. Try more substeps, the implicit model, or a lower "
                                 "stiffness.")
            threads.governor().release()
            return None
        except StepLimitError as exc:
            self.result.error = f"frame {f}: {exc}; frames 0-{f - 1} are kept."
            threads.governor().release()
            return None
        wall = time.perf_counter() - start
        self._positions[f] = self.solver.x
        rep = frame_report(f, wall, self.solver, info, self.spec.gravity, colliders.end)
        rep.retries, rep.step_refinement = retries, self.solver.step_refinement
        rep.untangled, rep.tangled_pairs = untangled, tangled
        self.result.frames.append(rep)
        self.result.positions = self._positions[:f + 1]
        if self.done:
            threads.governor().release()
        return rep

    def _untangle(self, state, dt: float) -> tuple[int, int]:
        """Move the vertices inside colliders out and the cloth's triangles clear of collider
        triangles that cross them (collision/untangle.py) and, with self-collision, the regions
        of the cloth passed through itself back (collision/self_untangle.py), then hold the
        material's strain limit by positions alone, alternately, at most UNTANGLE_ROUNDS
        times. Returns (how many vertices the first collider moves moved, intersecting cloth
        pairs at the start); the vertices of pairs still intersecting are left out of this
        frame's self-contacts."""
        s = self.solver
        h = s.collisions
        moved = untangle(h, s.x, s.v, s.inv_mass, state)
        pierced, lifted = uncross(h, s.x, s.inv_mass, state)
        crossed = tangled = untangle_self(h, s.x, s.inv_mass) if h.self_collision else 0
        for _ in range(UNTANGLE_ROUNDS if len(moved) or pierced or crossed else 0):
            v = s.v.copy()
            limited = s._limit_strain(dt, only_if_over=True)
            s.v = v  # the limiter's correction must not become velocity
            again = len(untangle(h, s.x, s.v, s.inv_mass, state)) if limited or pierced else 0
            pierced = uncross(h, s.x, s.inv_mass, state)[0] if pierced or again or limited \
                else 0
            crossed = untangle_self(h, s.x, s.inv_mass) if crossed else 0
            if not again and not pierced and not crossed:
                break
        h.excluded = None
        if tangled:
            left = tangled_vertices(h, s.x)
            h.excluded = left if left.any() else None
        return len(np.union1d(moved, lifted)), tangled

    def _step_with_retries(self, t, dt, ft, wind):
        """The solver's step_frame, retried from the frame's start with steps half as long
        while it blows up (see the module docstring); returns (StepInfo, retries). Raises the
        last BlowUpError when MAX_RETRIES did not rescue the frame (its message says so), and
        StepLimitError as the solver does."""
        solver = self.solver
        saved = solver.save_frame_state()
        refinement = self._refinement
        retries = 0
        while True:
            solver.step_refinement = refinement
            solver.collision_stats = CollisionStats()
            try:
                info = solver.step_frame(t, dt, ft, wind)
                break
            except BlowUpError as exc:
                if retries == MAX_RETRIES:
                    raise BlowUpError(f"{exc}, after {retries} retries with steps down to "
                                      f"1/{refinement} of the first") from None
                solver.restore_frame_state(saved)
                last = exc
                refinement *= 2
                retries += 1
            except StepLimitError:
                if retries == 0:
                    raise
                # finer steps would exceed max_substeps: the blow-up stands
                raise BlowUpError(f"{last}; a retry with steps of 1/{refinement} would need "
                                  "more than max_substeps") from None
        # the next frame tries steps twice as long as those that worked (Baraff & Witkin)
        self._refinement = max(1, refinement // 2)
        return info, retries

    def run(self, progress: Callable[[dict], None] | None = None) -> SimulationResult:
        """Step to the end (or a blow-up); ``progress`` as in ``simulate``."""
        while not self.done:
            rep = self.step()
            if rep is not None and progress is not None:
                progress({**asdict(rep), "frames": self.spec.frames})
        return self.result


def simulate(spec: SimulationSpec,
             progress: Callable[[dict], None] | None = None) -> SimulationResult:
    """Simulate ``spec.frames`` frames; see SimulationResult.

    Args:
        spec: what to simulate.
        progress: called after every frame with the frame's report as a dict (plus "frames").
    """
    return Simulation(spec).run(progress)
