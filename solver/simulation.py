"""Run a simulation frame by frame and report what happened.

``simulate`` builds the model, steps the chosen model (a cloth model, or the yarn model of a
knit: solver/yarn/), records positions after every frame and a per-frame report (wall time,
strain, energies, iterations), and stops cleanly at a blow-up keeping the frames before it.
Every model goes through this one loop: its pins' targets, its colliders, the thread count
(threads.py), the retries and the report.

A frame that blows up (BlowUpError: non-finite state, or a vertex over ``max_speed``) is first
simulated again from its start with steps half as long, up to MAX_RETRIES times, as Baraff &
Witkin's adaptive step halves a step that went wrong ([Baraff1998], docs/references.md);
the frame after a rescued one starts with steps twice as long as those that worked, back to the
solver's own. The state at the start of the frame is restored exactly (positions, velocities
and what the solver's steps hand on: ClothSolver.carried), so a bake stays deterministic, and a
bake that never blows up runs as before. The reports count the retries. A CrushedError (the
model squeezed between a collider and its pins or another collider, which no shorter step
resolves) is not retried. A frame whose cloth tears apart (an edge stretched past
``torn_strain``: a blow-up that stayed below max_speed, such as a degenerate element's) counts
as a blow-up too, so a result that exploded is never reported as a success.

Degenerate elements of the user's meshes (collapsed faces, zero-length edges, zero-area faces)
are simulated around (degenerate.py): the solver steps the reduced meshes, and the results are
expanded back onto every vertex of the user's meshes; ``SimulationResult.notes`` says what was
done.
"""

from __future__ import annotations

import time
from dataclasses import asdict
from typing import Callable

import numpy as np

from . import degenerate, threads
from .collision.pipeline import CollisionHandler, CollisionStats
from .collision.self_untangle import intersecting_cloth_pairs, tangled_vertices, untangle_self
from .collision.untangle import any_inside, collider_crossing_pairs, uncross, untangle
from .degenerate import reduce_spec
from .diagnostics import edge_strain, kinetic_energy, potential_energy
from .forces.external import wind_field
from .forces.seams import seam_gaps
from .model import ClothModel, build_model
from .topology import triangulate
from .results import FrameReport, SimulationResult
from .solvers.base import BlowUpError, ClothSolver, CrushedError, FrameTargets, StepLimitError
from .solvers import builder, make_solver
from .spec import SimulationSpec, YarnSetup

# Retries of a frame that blew up, each with steps half as long as the last: the last try takes
# 2**MAX_RETRIES times the steps, so a frame that cannot be rescued costs 2 + 4 + 8 = 14 times
# a normal one before the error.
MAX_RETRIES = 3
# Rounds of moving vertices out of colliders and holding the strain limit by positions, before
# the first frame of a cloth that starts inside a collider (collision/untangle.py)
UNTANGLE_ROUNDS = 20
# Frames before which cloth still through a collider is moved (the first frame's rounds clear a
# posed garment; what is left after this many, a sheet through a post, is left to the pipeline
# rather than moved again every frame)
UNTANGLE_FRAMES = 3
# Paths along which a cloth clear of itself is moved out of colliders before a frame: where its
# own other layer stops a path, the next one goes round it
CLEAR_PATHS = 4
# A frame ends torn (a blow-up) when an edge is stretched past this strain (twice its rest
# length), or past twice the piece's strain limit where that is larger: no fabric stretches so
# far, and the strain limiter and the stiffness keep a sound simulation far below it.
TORN_STRAIN = 1.0


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


class _NoColliders:
    """The colliders of a simulation that has none: no states."""

    start = end = None


_NO_COLLIDERS = _NoColliders()


class TornError(BlowUpError):
    """An edge was stretched past its torn strain (``torn_strain``) by the end of a frame."""


def torn_strain(model: ClothModel) -> np.ndarray:
    """Strain past which each edge counts as torn apart (TORN_STRAIN, or twice its piece's
    strain limit where larger), (E,)."""
    limit = np.array([max(TORN_STRAIN, 2.0 * (m.max_strain or 0.0)) for m in model.materials])
    return limit[model.piece_of(model.edges[:, 0])] if len(model.edges) else np.zeros(0)


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
                     impact_zones=stats.impact_zones, proximity_pushes=stats.pushed,
                     continuous_collisions=stats.collisions, strain_rounds=stats.strain_rounds,
                     solve_contacts=stats.solve_contacts, contact_sets=stats.contact_sets,
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
        if isinstance(spec.cloth, YarnSetup) != (spec.settings.model == "yarn"):
            raise ValueError(f"the {spec.settings.model} model simulates "
                             f"{'yarns (a YarnSetup)' if spec.settings.model == 'yarn' else 'cloth'}"
                             f", not {type(spec.cloth).__name__}")
        build = builder(spec.settings.model)
        if build is not None:  # a model that builds its own (the yarns of a knit)
            simulated, self.expansion = spec, None
            self.solver = build(spec)
            self.model = self.solver.model
        else:
            # the meshes simulated: the user's, around their degenerate elements
            # (degenerate.py)
            simulated, self.expansion = reduce_spec(spec)
            self.model = build_model(simulated.cloth, simulated.seams)
            self.solver = make_solver(self.model, spec.settings, spec.gravity)
            self.solver.collisions = CollisionHandler(self.model, spec.colliders,
                                                      spec.settings.self_collision, spec.fps,
                                                      spec.frames)
        self._targets = pin_targets(simulated, self.model)
        self._hard = self.model.pin_weights >= 1.0
        self._torn = None if self.expansion is None and not hasattr(self.model, "edges") \
            else torn_strain(self.model)
        x0 = self._user_positions(self.solver.x)
        self._positions = np.empty((spec.frames + 1,) + x0.shape)
        self._positions[0] = x0
        if isinstance(spec.cloth, YarnSetup):
            self.result = SimulationResult(
                self._positions[:1], np.zeros((0, 3), np.int64), model_name=self.solver.name,
                yarn_offsets=self.model.yarn_offsets.copy(), radius=self.model.radius)
        else:
            triangles = self.model.triangles if self.expansion is None else np.concatenate(
                [triangulate(c.mesh)[0] + off
                 for c, off in zip(spec.pieces(), self.expansion.offsets[:-1])])
            self.result = SimulationResult(self._positions[:1], triangles,
                                           model_name=self.solver.name, notes=self.notes())
        self._refinement = 1  # the step refinement the next frame starts with
        # Vertices inside a collider are moved out before each frame from the first on, until
        # a frame starts with none inside (collision/untangle.py); a model that refuses to
        # start inside one instead (the yarns) says so
        self._untangling = getattr(self.solver, "untangles", True)

    @property
    def piece_offsets(self) -> np.ndarray:
        """(n + 1,): the vertices of piece i are positions[:, off[i]:off[i + 1]]."""
        return self.model.piece_offsets if self.expansion is None else self.expansion.offsets

    def notes(self, names=None) -> list[str]:
        """What the user should know about the meshes (degenerate elements simulated around,
        vertices where the cloth is split: degenerate.notes), naming the pieces ``names``;
        nothing for yarns."""
        if isinstance(self.spec.cloth, YarnSetup):
            return []
        return degenerate.notes(self.spec, self.expansion, names)

    def _user_positions(self, x: np.ndarray) -> np.ndarray:
        """The solver's positions (V_r, 3) on every vertex of the user's meshes [m]."""
        return x.copy() if self.expansion is None else self.expansion.expand(x)

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
        colliders = self._colliders(f)
        untangled = tangled = 0
        # the frame's time includes its untangling, which can cost a frame's worth
        start = time.perf_counter()
        if self._untangling:
            untangled, tangled = self._untangle(colliders.start, dt)
            self._untangling = untangled > 0 or tangled > 0
        ft = FrameTargets(tg[f - 1][hard], tg[f][hard], tg[f - 1][~hard], tg[f][~hard],
                          colliders if self.solver.collisions is not None else None)
        # the air at the cloth's vertices, sampled once per frame at its middle (the gusts
        # travel with the wind: forces/external.py, wind_field)
        wind = wind_field(self.spec.wind_at(f - 1), self.solver.x, t + 0.5 * dt)
        # as many threads as the cores other programs leave free (results do not depend on it)
        thread_count = threads.governor().before_frame()
        try:
            info, retries = self._step_with_retries(t, dt, ft, wind)
        except CrushedError as exc:   # no finer step helps (the frame was not retried)
            self.result.error = f"frame {f}: {exc}; frames 0-{f - 1} are kept."
            threads.governor().release()
            return None
        except BlowUpError as exc:
            advice = ("Check for pins pulled apart or cloth caught between colliders, or try "
                      "more substeps" if isinstance(exc, TornError) else
                      "Try more substeps, the implicit model, or a lower stiffness")
            self.result.error = (f"frame {f}: simulation blew up ({exc}); frames 0-{f - 1} are "
                                 f"kept. {advice}.")
            threads.governor().release()
            return None
        except StepLimitError as exc:
            self.result.error = f"frame {f}: {exc}; frames 0-{f - 1} are kept."
            threads.governor().release()
            return None
        wall = time.perf_counter() - start
        self._positions[f] = self._user_positions(self.solver.x)
        report = getattr(self.solver, "frame_report", None)  # a model's own (the yarns')
        rep = report(f, wall, info, self.spec.gravity) if report is not None else \
            frame_report(f, wall, self.solver, info, self.spec.gravity, colliders.end)
        rep.retries, rep.step_refinement = retries, self.solver.step_refinement
        rep.untangled, rep.tangled_pairs = untangled, tangled
        rep.threads = thread_count
        self.result.frames.append(rep)
        self.result.positions = self._positions[:f + 1]
        if self.done:
            threads.governor().release()
        return rep

    def _colliders(self, f: int):
        """The colliders over frame f (ColliderFrame: start and end states): the cloth's
        collision pipeline's, or those of a model that handles its own (the yarns')."""
        c = self.solver.collisions
        if c is not None:
            return c.colliders.frame(f)
        own = getattr(self.solver, "colliders", None)
        return own.set.frame(f) if own is not None else _NO_COLLIDERS

    def _untangle(self, state, dt: float) -> tuple[int, int]:
        """Move the vertices inside colliders out and the cloth's triangles clear of collider
        triangles that cross them (collision/untangle.py) and, with self-collision, the regions
        of the cloth passed through itself back (collision/self_untangle.py), then hold the
        material's strain limit by positions alone, alternately, at most UNTANGLE_ROUNDS
        times. A cloth that starts clear of itself is moved out of the colliders along a path
        that the cloth–cloth collision tests keep clear (CollisionHandler.resolve_self), at
        most CLEAR_PATHS times: moved by positions alone, the sleeves of a tee posed through
        its arms went through their own other layer at the armpits. Returns (how many
        vertices the first collider moves moved, intersecting cloth pairs at the start or
        left by the collider moves); the vertices of pairs still intersecting are left out of
        this frame's self-contacts."""
        s = self.solver
        h = s.collisions
        h.excluded = None
        through = self.frame < UNTANGLE_FRAMES and self._through_collider(state)
        tangled = len(intersecting_cloth_pairs(h, s.x)) if h.self_collision else 0
        moved = np.zeros(0, np.int64)
        if through and h.self_collision and not tangled:
            for _ in range(CLEAR_PATHS):
                start = s.x.copy()
                first = self._untangle_colliders(state, dt)
                moved = np.union1d(moved, first)
                if not len(first):
                    break
                h.resolve_self(start, s.x, s.inv_mass, state)
                if not self._through_collider(state):
                    break
            tangled = len(intersecting_cloth_pairs(h, s.x))
        elif through:
            moved = self._untangle_colliders(state, dt)
            tangled = max(tangled, len(intersecting_cloth_pairs(h, s.x))) \
                if h.self_collision else 0
        if tangled:
            self._untangle_self(dt)
            left = tangled_vertices(h, s.x)
            h.excluded = left if left.any() else None
        return len(moved), tangled

    def _through_collider(self, state) -> bool:
        """True when a cloth vertex is inside a collider or a collider triangle crosses a cloth
        triangle at collider ``state``."""
        h, s = self.solver.collisions, self.solver
        return any_inside(h, s.x, s.inv_mass, state) \
            or bool(len(collider_crossing_pairs(h, s.x, state)))

    def _untangle_colliders(self, state, dt: float) -> np.ndarray:
        """Move the cloth out of the colliders and clear of their triangles by positions,
        alternating with the strain limit, at most UNTANGLE_ROUNDS times; returns the vertices
        the first moves moved (indices)."""
        s = self.solver
        h = s.collisions
        moved = untangle(h, s.x, s.v, s.inv_mass, state)
        pierced, lifted = uncross(h, s.x, s.inv_mass, state)
        if not len(moved) and not pierced:
            return moved
        for _ in range(UNTANGLE_ROUNDS):
            limited = self._hold_strain(dt)
            again = len(untangle(h, s.x, s.v, s.inv_mass, state)) if limited or pierced else 0
            pierced = uncross(h, s.x, s.inv_mass, state)[0] if pierced or again or limited \
                else 0
            if not again and not pierced:
                break
        else:
            self._hold_strain(dt)  # the last round's moves are held too
        return np.union1d(moved, lifted)

    def _untangle_self(self, dt: float) -> None:
        """Move the regions of the cloth passed through itself back, alternating with the
        strain limit, at most UNTANGLE_ROUNDS times."""
        s = self.solver
        h = s.collisions
        for _ in range(UNTANGLE_ROUNDS):
            if not untangle_self(h, s.x, s.inv_mass):
                return
            self._hold_strain(dt)

    def _hold_strain(self, dt: float) -> int:
        """The material's strain limit by positions alone (the limiter's correction must not
        become velocity); returns its passes."""
        v = self.solver.v.copy()
        passes = self.solver._limit_strain(dt, only_if_over=True)
        self.solver.v = v
        return passes

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
            if solver.collisions is not None:
                solver.collision_stats = CollisionStats()
            try:
                info = solver.step_frame(t, dt, ft, wind)
                self._check_torn()
                break
            except BlowUpError as exc:
                if isinstance(exc, CrushedError):
                    raise
                if retries == MAX_RETRIES:
                    raise type(exc)(f"{exc}, after {retries} retries with steps down to "
                                    f"1/{refinement} of the first") from None
                solver.restore_frame_state(saved)
                last = exc
                refinement *= 2
                retries += 1
            except StepLimitError:
                if retries == 0:
                    raise
                # finer steps would exceed max_substeps: the blow-up stands
                raise type(last)(f"{last}; a retry with steps of 1/{refinement} would need "
                                "more than max_substeps") from None
        # the next frame tries steps twice as long as those that worked (Baraff & Witkin)
        self._refinement = max(1, refinement // 2)
        return info, retries

    def _check_torn(self) -> None:
        """Raise BlowUpError if an edge is stretched past its torn strain (``torn_strain``)."""
        m = self.model
        if self._torn is None or len(m.edges) == 0:  # yarns keep their lengths exactly
            return
        strain = edge_strain(self.solver.x, m.edges, m.edge_rest_length)
        over = strain - self._torn
        e = int(np.argmax(over))
        if over[e] > 0.0:
            a, b = (self._user_vertex(int(v)) for v in m.edges[e])
            raise TornError(f"the cloth tore apart: the edge between vertices {a} and {b} is "
                              f"stretched {100 * strain[e]:.0f} % (at most "
                              f"{100 * self._torn[e]:.0f} % counts as cloth)")

    def _user_vertex(self, i: int) -> int:
        """The user's index of simulated vertex i (pieces numbered one after another)."""
        return i if self.expansion is None else self.expansion.user_vertex(i)

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
