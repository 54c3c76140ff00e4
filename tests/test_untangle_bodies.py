"""Cloth started through bodies as artists have them (solver/collision/untangle.py, inside.py):
a faceted body's corners through the cloth's faces, open bodies, parts that touch, a sheet
through the middle of an arm. Each ends with no cloth/collider triangle pair crossing and no
vertex inside from the first frame on, and the contact does not chatter afterwards."""

import numpy as np
import pytest

from bodies import cylinder, torso_with_arms, tube, uv_sphere, without_faces
from solver import (ClothSetup, Collider, PolyMesh, SimulationSpec, SolverSettings, grid_mesh,
                    load_preset)
from solver.collision.colliders import ColliderSet
from solver.collision.inside import INSIDE, InsideTest, clear_ray
from solver.collision.untangle import collider_crossing_pairs, untangle
from solver.simulation import Simulation, simulate


def _sheet(size, n, center, tilt_deg=0.0) -> PolyMesh:
    """An n x n sheet of side size [m] centred at center, tilted about y."""
    g = grid_mesh((size, size), (n, n), (0.0, 0.0, 0.0))
    p = g.positions.copy()
    a = np.radians(tilt_deg)
    p[:, 0], p[:, 2] = p[:, 0] * np.cos(a), p[:, 0] * np.sin(a)
    return PolyMesh(p + np.asarray(center), g.face_indices, g.face_offsets)


def _spec(cloth, body, frames=6, model="implicit"):
    return SimulationSpec(ClothSetup(cloth, load_preset("cotton")), SolverSettings(model=model),
                          frames=frames, colliders=(Collider(kind="mesh", mesh=body),))


def _clean_every_frame(result):
    assert result.error is None
    for f in result.frames:
        assert f.collider_crossings == 0, f
        assert f.deepest_penetration_m == 0.0, f
        assert f.impact_zones == 0, f  # no chattering: as quiet as a clean start
        assert f.max_strain < 1.1 * 0.05, f  # cotton's limit holds


def test_a_faceted_bodys_corners_through_the_cloth_are_cleared_before_the_first_frame():
    """The issue's case at Blender's default sizes: a 21 x 21 sheet (10 cm edges) 2 cm inside
    the top of a 32 x 16 UV sphere (1 m, 20 cm edges). Only the pole's fan is above the sheet's
    vertices: moving the 9 vertices inside out leaves the first ring's corners through the
    sheet's faces (37 crossing pairs, held in place by impact zones every frame before)."""
    spec = _spec(_sheet(2.0, 21, (0.0, 0.0, 0.98)), uv_sphere(1.0), frames=6)
    sim = Simulation(spec)
    s = sim.solver
    x = s.x.copy()
    state = s.collisions.colliders.state(0)
    moved = untangle(s.collisions, x, s.v.copy(), s.inv_mass, state)
    assert 0 < len(moved) < 20
    assert len(collider_crossing_pairs(s.collisions, x, state)) > 20  # vertices alone: crossed
    _clean_every_frame(sim.run())
    assert sim.result.frames[0].untangled > len(moved)
    assert all(f.untangled == 0 for f in sim.result.frames[1:])
    # resting on the sphere, not thrown off: outside its facets' planes' nearest approach to
    # the centre (a vertex over a facet sits inside the 1 m circumscribed sphere)
    body = uv_sphere(1.0)
    inner = min(float(np.linalg.norm(body.positions[f].mean(axis=0))) for f in body.faces())
    assert np.all(np.linalg.norm(sim.result.positions[-1], axis=1) > inner)
    assert sim.result.positions[-1][:, 2].max() < 1.03


@pytest.mark.parametrize("body", ["open_bottom", "holes"])
def test_an_open_body_has_an_inside_and_cloth_started_in_it_is_moved_out(body):
    """A sphere scanned without its bottom, or with holes in its side, still encloses an
    inside (its holes, closed by fans, cover less than SOLID_HOLES of it)."""
    sphere = uv_sphere(1.0)
    mesh = (without_faces(sphere, lambda c: c[2] < -0.6) if body == "open_bottom" else
            without_faces(sphere, lambda c: abs(c[2]) < 0.3 and (c[0] > 0.5 or c[1] > 0.5)))
    spec = _spec(_sheet(2.0, 21, (0.05, 0.035, 0.97)), mesh, frames=4)
    result = simulate(spec)
    assert result.frames[0].untangled > 10
    _clean_every_frame(result)


def test_winding_numbers_decide_inside_for_open_overlapping_and_shell_colliders():
    open_sphere = without_faces(uv_sphere(1.0), lambda c: c[2] < -0.6)
    overlapping = torso_with_arms(overlap=0.01)  # arms reach 1 cm into the torso
    floor = PolyMesh.from_faces([(-1, -1, 0), (1, -1, 0), (1, 1, 0), (-1, 1, 0)],
                                [(0, 1, 2, 3)])
    bowl = without_faces(uv_sphere(1.0), lambda c: c[2] > 0.0)
    cols = ColliderSet(tuple(Collider(kind="mesh", mesh=m) for m in
                             (open_sphere, overlapping, floor)), 0.001, 24.0, 1)
    # each collider apart, so that one's inside is not another's
    cases = {
        # its rim is at z = -0.556 m: below it is outside
        "open sphere": (open_sphere, [(0, 0, 0.5), (0, 0, -0.5), (0.5, 0.0, -0.45)],
                        [(0, 0, 1.05), (0, 0, -0.6), (0, 0, -0.97), (1.2, 0, 0)]),
        # a point of the arm inside the torso: 2 crossings of a ray, winding number 2
        "overlapping parts": (overlapping, [(0.0, 0.0, 1.1), (0.19, 0.0, 1.0), (0.145, 0, 1.0)],
                              [(0.3, 0.0, 1.0), (0.0, 0.3, 1.1), (0.0, 0.0, 1.45)]),
        "floor": (floor, [], [(0, 0, -0.01), (0, 0, 0.01), (0.5, 0.5, -0.5)]),
        "bowl": (bowl, [], [(0, 0, -0.5), (0, 0, -0.95)]),
    }
    for name, (mesh, inside, outside) in cases.items():
        c = ColliderSet((Collider(kind="mesh", mesh=mesh),), 0.001, 24.0, 1)
        test = InsideTest(c)
        X = c.state(0).mesh_positions
        pts = np.array(inside + outside, dtype=float).reshape(-1, 3)
        w = test.winding(pts, X)
        assert np.all(w[:len(inside)] > 0.9), (name, w)
        assert np.all(w[len(inside):] < 0.1), (name, w)
    assert list(cols.mesh_solid) == [True, True, False]
    assert ColliderSet((Collider(kind="mesh", mesh=bowl),), 0.001, 24.0, 1).mesh_solid[0] \
        == np.False_
    # a point in both parts counts twice (the arm's inner corner is at x = 0.14 m, the
    # torso's side at 0.15 m)
    c = ColliderSet((Collider(kind="mesh", mesh=overlapping),), 0.001, 24.0, 1)
    w = InsideTest(c).winding(np.array([[0.145, 0.0, 1.0]]), c.state(0).mesh_positions)
    assert abs(w[0] - 2.0) < 0.05


def _points_around(X, tris, rng):
    """Points near the surface on both sides (1 mm and 1 cm along each face normal from
    random points of random faces) and throughout the mesh's box and a margin around it."""
    t = tris[rng.integers(len(tris), size=400)]
    a, b, c = X[t[:, 0]], X[t[:, 1]], X[t[:, 2]]
    n = np.cross(b - a, c - a)
    n /= np.linalg.norm(n, axis=1)[:, None]
    u, v = rng.random((2, len(t), 1))
    flip = u + v > 1
    u, v = np.where(flip, 1 - u, u), np.where(flip, 1 - v, v)
    on = a + u * (b - a) + v * (c - a)
    near = np.concatenate([on + s * n for s in (-0.01, -0.001, 0.001, 0.01)])
    lo, hi = X.min(axis=0), X.max(axis=0)
    box = lo - 0.1 * (hi - lo) + 1.2 * (hi - lo) * rng.random((1000, 3))
    return np.concatenate([near, box])


def test_the_inside_points_are_those_whose_winding_number_says_so():
    """InsideTest.inside (the frame report's) proves most outside points outside by a ray that
    meets no triangle, where the triangles form closed surfaces (the caps of an open body's
    holes included), and decides the others by the winding number: the same points as
    winding >= INSIDE, near the surface on both sides and throughout, for a closed sphere,
    overlapping parts, an open body, a mesh turned inside out, and a sphere with one face
    turned the wrong way (not closed: the winding number decides every point)."""
    sphere = uv_sphere(0.5)
    faces = sphere.faces()
    one_flipped = PolyMesh.from_faces(sphere.positions, [faces[40][::-1]] + faces[:40]
                                      + faces[41:])
    meshes = {"sphere": (sphere, True),
              "inside out": (PolyMesh.from_faces(sphere.positions, [f[::-1] for f in faces]),
                             True),
              "overlapping parts": (torso_with_arms(overlap=0.01), True),
              "open bottom": (without_faces(uv_sphere(1.0), lambda c: c[2] < -0.6), True),
              "one face flipped": (one_flipped, False)}
    rng = np.random.default_rng(5)
    for name, (mesh, closed) in meshes.items():
        c = ColliderSet((Collider(kind="mesh", mesh=mesh),), 0.001, 24.0, 1)
        test = InsideTest(c)
        assert test.closed == closed, name
        X = c.state(0).mesh_positions
        pts = _points_around(X, c.mesh_tris, rng)
        inside = test.inside(pts, X)
        np.testing.assert_array_equal(inside, test.winding(pts, X) >= INSIDE, err_msg=name)
        assert 0.1 < inside.mean() < 0.9, name


def test_a_ray_proves_the_points_outside_a_sphere_outside():
    """Points 1 mm to 10 cm outside a UV sphere (the frame report's cloth on a collider) are
    all proved outside by their ray, those inside by none."""
    c = ColliderSet((Collider(kind="mesh", mesh=uv_sphere(0.5, segments=48, rings=24)),),
                    0.001, 24.0, 1)
    test = InsideTest(c)
    X = c.state(0).mesh_positions
    P = test.fit(X)
    t = test.tree
    rng = np.random.default_rng(6)
    d = rng.normal(size=(500, 3))
    d /= np.linalg.norm(d, axis=1)[:, None]
    inner = 0.5 * np.cos(np.pi / 24)  # no face comes closer to the centre than about this
    stack = np.empty(128, np.int64)
    for r, outside in ((0.501, True), (0.6, True), (inner - 0.001, False), (0.2, False)):
        proved = [clear_ray(tuple(p), test.tris, P, t.left, t.right, t.first, t.order, t.lo,
                            t.hi, 1e-9, stack) for p in r * d]
        assert all(proved) if outside else not any(proved), r


def test_a_mesh_turned_inside_out_has_the_same_inside():
    sphere = uv_sphere(0.5)
    flipped = PolyMesh.from_faces(sphere.positions, [f[::-1] for f in sphere.faces()])
    for mesh in (sphere, flipped):
        c = ColliderSet((Collider(kind="mesh", mesh=mesh),), 0.001, 24.0, 1)
        w = InsideTest(c).winding(np.array([[0, 0, 0.3], [0, 0, 0.45], [0, 0, 0.7]]),
                                  c.state(0).mesh_positions)
        # the far subtrees' dipoles are good to 3 % (FAR_FIELD), far from the ½ that decides
        assert np.allclose(w, [1.0, 1.0, 0.0], atol=0.05)


@pytest.mark.parametrize("open_bottom", [False, True])
def test_a_sheet_through_the_middle_of_an_arm_goes_to_one_side_of_it(open_bottom):
    """A nearly upright sheet through an arm that hangs against the torso (one mesh, the arm
    5 mm into the torso, the torso open at the bottom or not). The nearest way out would send
    the two halves of the sheet inside the arm to opposite sides (torn apart by 9 cm, 390 %
    strain after the untangling rounds); the patch goes out one way."""
    body = torso_with_arms(open_bottom=open_bottom)
    spec = _spec(_sheet(0.8, 21, (0.2, 0.01, 1.0), tilt_deg=80.0), body, frames=3)
    result = simulate(spec)
    _clean_every_frame(result)
    # where the sheet's plane passes through the arm's axis (x = 0.19 m, y = 0), the sheet is
    # all on one side of the arm
    x = result.positions[1]
    strip = (np.abs(x[:, 1]) < 0.04) & (np.abs(x[:, 2] - 0.955) < 0.1)
    assert strip.sum() > 5
    side = x[strip, 0] - 0.19
    assert np.all(side > 0.0) or np.all(side < 0.0), side


def test_a_sleeve_posed_partly_inside_an_arm_and_a_shirt_through_the_arms_come_out():
    arm = cylinder(0.07, 0.5, segments=16)
    sleeve = simulate(_spec(tube(0.09, 0.4, (0.03, 0.0, 0.0), 24, 21), arm, frames=3))
    assert sleeve.frames[0].untangled > 50
    _clean_every_frame(sleeve)
    shirt = simulate(_spec(tube(0.23, 0.3, (0.0, 0.0, 1.15), 48, 10), torso_with_arms(),
                           frames=3))
    assert shirt.frames[0].untangled > 10
    _clean_every_frame(shirt)


def test_the_explicit_model_clears_a_faceted_body_too():
    spec = _spec(_sheet(2.0, 21, (0.05, 0.035, 0.97)), uv_sphere(1.0), frames=2,
                 model="mass_spring")
    result = simulate(spec)
    assert result.error is None
    assert all(f.collider_crossings == 0 and f.impact_zones == 0 for f in result.frames)


def test_the_explicit_model_resolves_collisions_once_per_collision_step(monkeypatch):
    """The explicit model's stable step is 1/25,000 s here (2 cm cotton edges); the collision
    pipeline runs once per collision step (at most COLLISION_STEP) instead, while the vertices
    touching the body are held on it in between: no crossing, and a sheet dropped 2 mm onto the
    sphere comes to rest on it at its contact distance."""
    from solver.collision.pipeline import CollisionHandler
    from solver.solvers.mass_spring import COLLISION_STEP

    calls = []
    resolve = CollisionHandler.resolve

    def counted(self, *args, **kwargs):
        calls.append(args[4])  # the step's length h
        return resolve(self, *args, **kwargs)

    monkeypatch.setattr(CollisionHandler, "resolve", counted)
    gap = 0.005 + 0.5 * load_preset("cotton").thickness
    spec = _spec(_sheet(0.4, 21, (0.0, 0.0, 0.3 + gap + 0.002)), uv_sphere(0.3), frames=3,
                 model="mass_spring")
    result = simulate(spec)
    assert result.error is None
    substeps = sum(f.substeps for f in result.frames)
    assert substeps > 2000
    # a step and the strain rounds' repeats: far fewer than the substeps
    assert len(calls) < substeps / 5
    assert max(calls) <= COLLISION_STEP * (1 + 1e-9)
    assert all(f.collider_crossings == 0 and f.impact_zones == 0 and
               f.deepest_penetration_m == 0.0 for f in result.frames)
    for x in result.positions[2:]:  # the centre vertex, over the pole, stays put
        assert abs(np.linalg.norm(x[220]) - 0.3 - gap) < 0.1e-3


def test_a_post_through_a_sheet_is_not_lifted_over_and_the_bake_goes_on():
    """A 2 cm rod through the middle of a sheet, 5 cm below and 10 cm above it: lifting the
    crossed triangles over its far end would tear the sheet (the bake blew up at frame 5 when
    that was tried), so they are not lifted (LIFT_REACH); only the few vertices inside the rod
    are moved and the rest is left to the collision pipeline."""
    post = cylinder(0.01, 0.3, (0.003, 0.002, 0.45), segments=8)
    result = simulate(_spec(grid_mesh((0.4, 0.4), (21, 21), (0.0, 0.0, 0.5)), post, frames=6))
    assert result.error is None
    assert result.frames[0].untangled < 10
    assert np.all(np.isfinite(result.positions))


def test_cloth_draped_into_the_crease_between_arm_and_torso_stays_clean():
    """Contact on a self-touching body: a sheet dropped onto the shoulders of a torso whose arms
    reach 5 mm into it (one mesh) falls around the arms and into the creases between them and
    the torso, with no crossing, no vertex inside, no impact zone and cotton's strain limit."""
    cloth = grid_mesh((0.8, 0.8), (31, 31), (0.0, 0.0, 1.45))
    spec = SimulationSpec(ClothSetup(cloth, load_preset("cotton")),
                          SolverSettings(model="implicit", self_collision=True), frames=12,
                          colliders=(Collider(kind="mesh", mesh=torso_with_arms()),))
    result = simulate(spec)
    _clean_every_frame(result)
    assert all(f.self_intersections == 0 for f in result.frames)
    x = result.positions[-1]
    assert x[:, 2].min() < 1.1  # it hangs down past the arms' tops (1.35 m)


def test_a_tee_posed_through_its_body_is_clear_before_the_first_frame():
    """The tee of examples/garments/ on its mannequin with the arms 8° higher than it was made
    on (through the sleeves; four closed parts that overlap at the joints), self-collision on:
    before the first frame nothing is inside, no pair crosses and the contact is quiet."""
    import garments

    spec = garments.scene("posed", frames=24)
    sim = Simulation(spec)
    for _ in range(2):
        report = sim.step()
        assert report.collider_crossings == 0 and report.deepest_penetration_m == 0.0
        assert report.self_intersections == 0 and report.impact_zones == 0
    assert sim.result.frames[0].untangled > 10


def test_a_flat_sleeve_moved_off_an_arm_does_not_pass_through_its_own_other_layer():
    """A sleeve lying flat (two layers 4 cm apart) with an arm through its upper layer and
    self-collision on: moved out of the arm by positions alone, the upper layer goes through
    the lower one (which the self-untangling then has to undo); moved along a path that the
    cloth–cloth collision tests keep clear, it never crosses itself."""
    sleeve = tube(0.06, 0.4, (0.0, 0.0, 0.0), 32, 21)
    flat = sleeve.positions * [1.0, 0.35, 1.0]
    sleeve = PolyMesh(flat, sleeve.face_indices, sleeve.face_offsets)
    arm = cylinder(0.03, 0.6, (0.0, 0.02, 0.0), segments=12)
    spec = SimulationSpec(ClothSetup(sleeve, load_preset("cotton")),
                          SolverSettings(model="implicit", self_collision=True), frames=3,
                          colliders=(Collider(kind="mesh", mesh=arm),))
    result = simulate(spec)
    _clean_every_frame(result)
    assert result.frames[0].untangled > 50
    assert result.frames[0].tangled_pairs == 0  # the moves out of the arm crossed nothing
    assert all(f.self_intersections == 0 for f in result.frames)
