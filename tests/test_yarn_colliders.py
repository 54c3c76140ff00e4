"""Yarn against colliders (solver/yarn/colliders.py: tables, spheres, tilted planes, meshes,
moving ones) and the force on pinned points (pin_reaction), the pieces the validation bench
(bench/yarn_validation.py) and the add-on's yarn bake stand on."""

import dataclasses
import tomllib

import numpy as np
import pytest

from solver.formats.scene import parse_scene
from solver.mesh import PolyMesh
from solver.simulation import simulate
from solver.spec import Collider
from solver.params import SolverSettings
from solver.yarn import YarnColliders, YarnSolver, build_yarn_model
from solver.yarn.dynamics import GUARD, Stepping, YarnCrushedError
from solver.yarn.relax import build_solver
from test_yarn_scene import SCENE  # a 3 x 3 garter pinned by its top course
from yarns import P, relaxed_swatch, solver, swatch_solver
from yarns import straight as _straight


def test_yarn_dropped_on_a_table_lies_on_it_and_keeps_its_length():
    x = _straight(31, 0.03, start=(0.0, 0.0, 0.004))
    x[:, 2] += 0.002 * np.sin(np.linspace(0, 3, 31))       # not flat: it lands unevenly
    # (straight at rest, so that it lies flat; otherwise it keeps its waves)
    sim = solver(x, [0, 31], P, gravity=(0, 0, -9.81), floor=0.0,
                 rest_curvature=np.zeros((31, 3)))
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
        sim = solver(x, [0, 11], P, gravity=(0, 0, -9.81), floor=0.0, floor_friction=mu)
        sim.v[:, 0] = 0.1
        sim.advance(0.05)
        out.append(sim.v[:, 0].mean())
    assert out[0] == pytest.approx(0.1, rel=1e-3)
    # μ·g = 4.9 m/s² takes 0.1 m/s away in 20 ms
    assert abs(out[1]) < 0.01


def test_pin_reaction_of_a_hanging_yarn_is_its_weight():
    x = _straight(21, 0.04, direction=(0, 0, -1))
    sim = solver(x, [0, 21], P, pins=[0], gravity=(0, 0, -9.81),
                 stepping=Stepping(damping_rate=300.0))
    sim.advance(0.02)
    weight = P.linear_density * 0.04 * 9.81
    f = sim.pin_reaction([0])
    # the yarn pulls its pin down with its whole weight (minus the pinned point's own share)
    assert f[2] == pytest.approx(-(weight - sim.model.mass[0] * 9.81), rel=0.02)
    assert abs(f[0]) < 0.02 * weight


def _icosphere(radius, center, subdivisions=2):
    """A closed triangle mesh of a sphere (outward faces), the way an artist models one."""
    t = (1 + 5 ** 0.5) / 2
    v = [(-1, t, 0), (1, t, 0), (-1, -t, 0), (1, -t, 0), (0, -1, t), (0, 1, t), (0, -1, -t),
         (0, 1, -t), (t, 0, -1), (t, 0, 1), (-t, 0, -1), (-t, 0, 1)]
    f = [(0, 11, 5), (0, 5, 1), (0, 1, 7), (0, 7, 10), (0, 10, 11), (1, 5, 9), (5, 11, 4),
         (11, 10, 2), (10, 7, 6), (7, 1, 8), (3, 9, 4), (3, 4, 2), (3, 2, 6), (3, 6, 8),
         (3, 8, 9), (4, 9, 5), (2, 4, 11), (6, 2, 10), (8, 6, 7), (9, 8, 1)]
    v = [np.array(p, float) / np.linalg.norm(p) for p in v]
    for _ in range(subdivisions):
        mid, out = {}, []

        def m(a, b):
            key = (min(a, b), max(a, b))
            if key not in mid:
                p = v[a] + v[b]
                v.append(p / np.linalg.norm(p))
                mid[key] = len(v) - 1
            return mid[key]
        for a, b, c in f:
            ab, bc, ca = m(a, b), m(b, c), m(c, a)
            out += [(a, ab, ca), (b, bc, ab), (c, ca, bc), (ab, bc, ca)]
        f = out
    pos = np.asarray(center) + radius * np.array(v)
    return PolyMesh(pos, np.array(f).reshape(-1), np.arange(0, 3 * len(f) + 1, 3))


def _swatch(n=5):
    sw, setup, _ = relaxed_swatch("stockinette", n, duration=0.01, settle=0.0)
    return sw, setup


def _moved(setup, x):
    """The relaxed swatch's setup moved rigidly to start at x (its rest state moved with it)."""
    return dataclasses.replace(setup, positions=x, rest_positions=x)


@pytest.mark.parametrize("kind", ["sphere", "mesh"])
def test_swatch_dropped_on_a_sphere_stays_outside_it(kind):
    """A knit let go above a ball (analytic, or a triangle mesh as artists model it) lands on
    it: no yarn point ever comes closer to the surface than the yarn's radius (less the
    length projection's error), and the swatch rests on the ball rather than falling past."""
    sw, setup = _swatch()
    x = setup.positions - setup.positions.mean(axis=0)       # lying flat, face up
    R = 0.02
    centre = np.array([0.0, 0.0, x[:, 2].min() - P.radius - 1e-3 - R])  # 1 mm below it
    if kind == "sphere":
        col = Collider(kind="sphere", center=centre, radius=R, thickness=0.0, friction=0.5)
        surface = lambda p: np.linalg.norm(p - centre, axis=1) - R  # noqa: E731
    else:
        mesh = _icosphere(R, centre, subdivisions=3)
        col = Collider(kind="mesh", mesh=mesh, thickness=0.0, friction=0.5)
        # the mesh's faces lie inside the sphere through its vertices by at most this
        tri = mesh.positions[mesh.face_indices.reshape(-1, 3)]
        inset = R - np.linalg.norm(tri.mean(axis=1) - centre, axis=1).min()
        surface = lambda p: np.linalg.norm(p - centre, axis=1) - (R - inset)  # noqa: E731
    colliders = YarnColliders([col], P.radius, fps=24.0, frames=2)
    sim = swatch_solver(sw, _moved(setup, x), gravity=(0, 0, -9.81), colliders=colliders)
    length = sim.yarn_lengths()[0]
    closest = np.inf
    for _ in range(12):
        sim.advance(0.005)
        closest = min(closest, surface(sim.x).min())
    assert closest > P.radius - 2e-5 - (0.0 if kind == "sphere" else 1e-4)
    assert colliders.depth(sim.x, sim.time) == 0.0
    inside = sim.x.copy()
    inside[0] = centre + [0.0, 0.0, 0.5 * R]           # the report sees a point put inside
    assert colliders.depth(inside, sim.time) == pytest.approx(0.5 * R, rel=0.05)
    assert sim.x[:, 2].max() > centre[2] + R           # still on top of the ball
    assert sim.yarn_lengths()[0] == pytest.approx(length, rel=1e-3)


def test_a_tilted_plane_holds_a_yarn_and_a_moving_one_carries_it():
    """A plane of any orientation keeps points r in front of it; one moving up lifts a yarn
    lying on it with it."""
    x = _straight(11, 0.01, start=(0.0, 0.0, 0.003))
    n = np.array([0.0, 0.3, 1.0]) / np.linalg.norm([0.0, 0.3, 1.0])
    tilted = Collider(kind="plane", point=np.zeros(3), normal=n, thickness=0.0, friction=2.0)
    sim = solver(x, [0, 11], P, gravity=(0, 0, -9.81), colliders=[tilted])
    for _ in range(20):
        sim.advance(2e-3)
        assert (sim.x @ n).min() > P.radius - 1e-6
    # μ = 2 > tan(16.7°): it sticks on the slope instead of sliding down it
    assert np.abs(sim.v).max() < 0.02
    lift = Collider(kind="plane", point=np.zeros(3), normal=np.array([0.0, 0.0, 1.0]),
                    thickness=0.001, friction=0.5, velocity=np.array([0.0, 0.0, 0.2]))
    x = _straight(11, 0.01, start=(0.0, 0.0, P.radius + 0.001))
    sim = solver(x, [0, 11], P, gravity=(0, 0, -9.81), colliders=[lift], frames=2)
    sim.advance(0.05)
    assert sim.x[:, 2].min() == pytest.approx(0.2 * 0.05 + 0.001 + P.radius, abs=1e-4)


def test_a_point_beside_a_box_edge_is_pushed_sideways_not_onto_the_top():
    """Near a mesh's convex edge the push follows the direction from the edge: a yarn point
    just beside a cube's side, below its top face's plane, is not lifted onto the top."""
    v = np.array([[x, y, z] for z in (0, 1) for y in (0, 1) for x in (0, 1)], float) * 0.02
    quads = [(0, 2, 3, 1), (4, 5, 7, 6), (0, 1, 5, 4), (2, 6, 7, 3), (0, 4, 6, 2), (1, 3, 7, 5)]
    cube = PolyMesh(v, np.array(quads).reshape(-1), np.arange(0, 25, 4))
    cols = YarnColliders([Collider(kind="mesh", mesh=cube, thickness=0.0, friction=0.0)],
                         P.radius, 24.0, 1)
    start = np.array([[0.0205 + P.radius, 0.01, 0.0195]])   # beside the +x side, under the top
    end = start - [[0.001, 0.0, 0.0]]                        # moved 1 mm into the side's reach
    pushes = cols.project(start, end, np.ones(1), 0.0, 1e-4)
    assert pushes >= 1
    assert end[0, 0] == pytest.approx(0.02 + P.radius, abs=1e-9)
    assert end[0, 2] == pytest.approx(0.0195)


def test_a_yarn_starting_inside_a_colliders_reach_is_refused_with_the_reason():
    x = _straight(11, 0.01, start=(0.0, 0.0, 0.001))       # 1 mm above a 5 mm thick table
    table = Collider(kind="plane", point=np.zeros(3), normal=np.array([0.0, 0.0, 1.0]),
                     thickness=0.005, friction=0.5)
    with pytest.raises(ValueError, match="starts 5.25 mm inside a collider's reach"):
        solver(x, [0, 11], P, colliders=[table])
    x[:, 2] += 0.005 + P.radius                              # outside it: accepted
    solver(x, [0, 11], P, colliders=[table])


def test_a_swatch_landing_fast_on_a_table_keeps_its_yarn_length():
    """Dropped 0.3 m (2.4 m/s at impact), the points the table stops must not be pulled back
    in by the length projection and pushed out again after it, stretching their segments
    (1.8 % before the pushed points were made heavy for the projection; 1.0 % at 1/12000 s
    with one round of push and projection per step; 0.05 % with two)."""
    sw, setup = _swatch()
    # It starts 5 mm above the table at the speed of a 0.3 m drop (the free fall before is
    # not what is checked), and is watched for as long after the impact as the drop would be.
    x = setup.positions - setup.positions.mean(axis=0)
    x[:, 2] += 0.005 + P.radius - x[:, 2].min()
    table = Collider(kind="plane", point=np.zeros(3), normal=np.array([0.0, 0.0, 1.0]),
                     thickness=0.0, friction=0.5)
    sim = swatch_solver(sw, _moved(setup, x), gravity=(0, 0, -9.81),
                        colliders=YarnColliders([table], P.radius, 24.0, 1))
    sim.v[:, 2] = -(2 * 9.81 * 0.3) ** 0.5
    s = sim.model.segments
    worst = 0.0
    for _ in range(42):
        sim.advance(1 / 240)
        strain = np.abs(s.lengths(sim.x) / s.rest - 1.0).max()
        worst = max(worst, strain)
    assert sim.x[:, 2].min() < 0.01                       # it landed
    assert sim.x[:, 2].min() > P.radius - 1e-6            # on the table, not through it
    assert worst < 0.002


def test_a_ball_pushing_a_hung_knit_keeps_its_yarns_apart_until_it_reaches_the_pins():
    """A ball keyed at 1 m/s into a knit hung from its top course: the knit is carried with the
    yarns kept apart (closest pair no nearer than the step's guard) while there is room for
    yarn between the ball and the pins. Once the ball reaches the pinned points, which no push
    moves, the yarn it carries is squeezed against them at the ball's speed whatever the step:
    refused at once, naming that, not after halving the step to microseconds and retrying.
    Soft pins yield to the ball instead."""
    sw, setup = _swatch()
    x = setup.positions - setup.positions.mean(axis=0)        # courses along x, wales along y
    top = np.nonzero(x[:, 1] > x[:, 1].max() - 2e-3)[0]       # the top course's points
    R, v = 0.05, 1.0
    centre = np.array([0.0, 0.0, x[:, 2].min() - P.radius - 2e-3 - R])   # 1 mm below, +1 mm
    ball = Collider(kind="sphere", center=centre, radius=R, thickness=1e-3, friction=0.3,
                    velocity=np.array([0.0, 0.0, v]))
    sim = swatch_solver(sw, _moved(setup, x), gravity=(0, -9.81, 0), pins=top,
                        colliders=YarnColliders([ball], P.radius, fps=24.0, frames=2))

    def room(at=None):   # between the ball's reach and the nearest pinned point [m]
        c = centre + sim.time * ball.velocity
        at = sim.x[top] if at is None else at
        return (np.linalg.norm(at - c, axis=1) - R - 1e-3 - P.radius).min()

    while room() > 2 * P.radius + v * 1e-3:
        sim.advance(1e-3)
    assert sim.stats.min_clearance >= GUARD * 2 * P.radius
    assert np.abs(sim.x[:, 2] - x[:, 2]).max() > 2 * P.radius    # the ball carried the knit
    with pytest.raises(YarnCrushedError, match=r"crushed between a collider and pinned yarn: "
                                               r"\d+ pinned points lie inside"):
        while sim.time < 0.05:
            sim.advance(1e-3)
    assert room() > -4 * P.radius            # refused as the ball passes the pins, not later
    # soft pins (weight below 1) are pushed like free points: the ball carries the knit,
    # needle course and all, past where the hard pins stopped it
    soft = dataclasses.replace(_moved(setup, x), pin_indices=top,
                               pin_weights=np.full(len(top), 0.9))
    sim = YarnSolver(build_yarn_model(soft), SolverSettings(model="yarn"), gravity=(0, -9.81, 0),
                     colliders=YarnColliders([ball], P.radius, fps=24.0, frames=2))
    sim.advance(0.015)
    assert room(x[top]) < -4 * P.radius      # well past where the pins were
    assert room() > -1e-6                    # and they went with it
    assert sim.stats.min_clearance >= GUARD * 2 * P.radius
    assert sim.colliders.depth(sim.x, sim.time) == 0.0


def test_a_knit_scene_crushed_by_a_ball_stops_with_the_reason_and_keeps_its_frames():
    text = SCENE.replace("frames = 2", "frames = 6") + """
[[collider]]
sphere = { center = [0.0, -0.06, 0.5], radius = 0.05 }
thickness = 0.001
velocity = [0.0, 1.0, 0.0]
"""
    result = simulate(parse_scene(tomllib.loads(text)))
    assert result.error.startswith("frame 2: t = ")
    assert "crushed between a collider and pinned yarn" in result.error
    assert "retries" not in result.error and "substeps" not in result.error
    assert len(result.positions) == 2 and np.isfinite(result.positions).all()


def _on_table(n=6):
    """A relaxed n × n stockinette lying face up on a table (z = 0, 0.1 mm above its reach),
    the table and the thickness of the knit [m]."""
    sw, setup = _swatch(n)
    x = setup.positions - setup.positions.mean(axis=0)
    x[:, 2] -= x[:, 2].min() - P.radius - 1e-4
    table = Collider(kind="plane", point=np.zeros(3), normal=np.array([0.0, 0.0, 1.0]),
                     thickness=0.0, friction=0.5)
    return sw, _moved(setup, x), table, float(x[:, 2].max() + P.radius)


def test_a_ball_pressing_a_knit_on_a_table_holds_it_until_it_leaves_no_room_for_the_yarn():
    """A ball keyed down at 0.5 m/s onto a knit lying on a table presses it flat with its yarns
    kept apart while there is room between the ball's reach and the table's for a yarn
    diameter (yarn pushed by both, legitimately). Once the ball leaves less room than the
    crossing yarns need, the yarn between the two is squeezed at the ball's speed whatever
    the step: refused at once, naming the two colliders, as a ball against pins is."""
    sw, setup, table, top = _on_table()
    D = 2 * P.radius
    R, v = 0.02, 0.5
    centre = np.array([0.0, 0.0, top + 1e-3 + R + 0.5e-3])  # 0.5 mm above the knit
    ball = Collider(kind="sphere", center=centre, radius=R, thickness=1e-3, friction=0.3,
                    velocity=np.array([0.0, 0.0, -v]))
    sim = swatch_solver(sw, setup, gravity=(0, 0, -9.81),
                        colliders=YarnColliders([table, ball], P.radius, 24.0, 2))

    def room():   # between the table's reach and the ball's [m]
        return centre[2] - v * sim.time - R - 1e-3 - P.radius - P.radius

    under = np.linalg.norm(sim.x[:, :2], axis=1) < 5e-3      # the yarn under the ball
    while room() > D + v * 1e-3:
        sim.advance(1e-3)
    assert sim.stats.min_clearance >= GUARD * D
    assert setup.positions[under, 2].max() - sim.x[under, 2].max() > D   # pressed down
    assert sim.colliders.reached(sim.x, sim.time, GUARD * D).any(axis=0).all()   # by both
    with pytest.raises(YarnCrushedError, match=r"crushed between two colliders \(a plane and "
                                               r"a sphere, colliders 1 and 2 .* move the "
                                               r"colliders apart"):
        while sim.time < 0.05:
            sim.advance(1e-3)
    assert room() > 0.0          # refused while the two reaches still leave a gap, not later


def test_a_ball_resting_on_a_knit_on_a_table_is_no_crush():
    """A ball (a triangle mesh, keyed by its positions per frame) let down onto a knit on a
    table and held there a yarn diameter above the table's reach: the knit is pressed between
    the two and stays so, with its yarns apart, and nothing is refused."""
    sw, setup, table, top = _on_table()
    D = 2 * P.radius
    R, fps, frames = 0.02, 200.0, 7
    mesh = _icosphere(R, (0.0, 0.0, 0.0), subdivisions=2)
    low = mesh.positions[:, 2].min()
    # the ball's reach (1 mm thick) goes from 0.5 mm above the knit to a diameter above the
    # table's over frames 0 to 4 (about 0.45 m/s) and stays there
    start, end = top + 1e-3 + 0.5e-3 - low, P.radius + D + 1e-3 + P.radius - low
    z = np.interp(np.arange(frames + 1), [0, 4], [start, end])
    ball = Collider(kind="mesh", mesh=mesh, thickness=1e-3, friction=0.3,
                    positions=mesh.positions[None] + z[:, None, None] * [0.0, 0.0, 1.0])
    sim = swatch_solver(sw, setup, gravity=(0, 0, -9.81),
                        colliders=YarnColliders([table, ball], P.radius, fps, frames))
    under = np.linalg.norm(sim.x[:, :2], axis=1) < 5e-3      # the yarn under the ball
    sim.advance(frames / fps)
    assert sim.stats.min_clearance >= GUARD * D
    assert setup.positions[under, 2].max() - sim.x[under, 2].max() > D   # pressed down
    assert sim.colliders.reached(sim.x, sim.time, GUARD * D).any(axis=0).all()
    assert sim.colliders.depth(sim.x, sim.time) == 0.0


def test_a_knit_scene_crushed_between_a_table_and_a_ball_stops_with_the_reason():
    """The same in a scene file: the frames before it kept, the frame not retried."""
    text = SCENE.replace("frames = 2", "frames = 12").replace('pin = "top"', 'pin = "none"') \
        .replace("gravity = [0.0, 0.0, -9.81]", "gravity = [0.0, -9.81, 0.0]")
    low = build_solver(parse_scene(tomllib.loads(text))).x[:, 1].min()   # as relaxed
    # the knit hangs in the x–z plane; the table is behind it (y), the ball comes from the front
    text += f"""
[[collider]]
plane = {{ point = [0.0, {low - 1.5e-3:.6f}, 0.0], normal = [0.0, 1.0, 0.0] }}
thickness = 0.0
[[collider]]
sphere = {{ center = [0.0, 0.03, 0.5], radius = 0.02 }}
thickness = 0.001
velocity = [0.0, -0.25, 0.0]
"""
    result = simulate(parse_scene(tomllib.loads(text)))
    assert "crushed between two colliders (a plane and a sphere" in result.error
    assert "soft pins do not help" in result.error
    assert "retries" not in result.error and "substeps" not in result.error
    frame = int(result.error.split(":")[0].removeprefix("frame "))
    assert len(result.positions) == frame and np.isfinite(result.positions).all()
