"""The report's independent checks: triangle–triangle intersection, depth inside colliders."""

import numpy as np
import pytest

from solver import Collider, PolyMesh, grid_mesh
from solver.collision.bvh import TriangleTree
from solver.collision.intersections import RAY, analytic_depth, mesh_depth, triangles_intersect
from solver.collision.pipeline import CollisionHandler
from solver.model import build_model
from solver.spec import ClothSetup


def T(*p):
    return tuple(float(v) for v in p)


A = (T(0, 0, 0), T(1, 0, 0), T(0, 1, 0))


@pytest.mark.parametrize("other, expect", [
    ((T(0.2, 0.2, -1), T(0.2, 0.2, 1), T(0.3, 0.4, 1)), True),     # pierces the face
    ((T(0.2, 0.2, 0.1), T(0.8, 0.1, 0.1), T(0.2, 0.7, 0.1)), False),  # parallel, above
    ((T(2, 2, -1), T(2, 2, 1), T(3, 2, 0)), False),                 # beside it
    ((T(0.5, -1, 0.5), T(0.5, 1, 0.5), T(0.5, 0, -0.5)), True),      # cuts through an edge
    ((T(0.1, 0.1, 0), T(0.6, 0.1, 0), T(0.1, 0.6, 0)), True),       # coplanar, overlapping
    ((T(1, 1, 0), T(2, 1, 0), T(1, 2, 0)), False),                  # coplanar, apart
    ((T(0.5, 0.5, 0), T(0.5, 0.5, 1), T(1.5, 0.5, 1)), True),        # touches the edge
])
def test_triangle_pairs(other, expect):
    assert triangles_intersect(*A, *other) == expect
    assert triangles_intersect(*other, *A) == expect


def test_nearly_coplanar_neighbours_of_a_flat_sheet_do_not_count():
    # rounding noise of a sheet that fell some distance must not look like crossings
    g = grid_mesh((1.0, 1.0), (9, 9), (0.0, 0.0, 0.0))
    x = g.positions.copy()
    x[:, 2] = 0.99148 + 1e-16 * np.random.default_rng(0).standard_normal(len(x))
    model = build_model(ClothSetup(PolyMesh(x, g.face_indices, g.face_offsets)))
    handler = CollisionHandler(model, (), True, 24.0, 1)
    assert handler.report(x, handler.colliders.state(0)).self_intersections == 0


def test_a_fold_through_itself_is_counted():
    # two strips crossing each other like an X seen from the side
    g = grid_mesh((1.0, 0.2), (5, 2), (0.0, 0.0, 0.0))
    a = g.positions.copy()
    b = g.positions.copy()
    a[:, 2] = 0.2 * a[:, 0]
    b[:, 2] = -0.2 * b[:, 0]
    pos = np.concatenate([a, b])
    faces = [f for f in g.faces()] + [f + len(a) for f in g.faces()]
    model = build_model(ClothSetup(PolyMesh.from_faces(pos, faces)))
    handler = CollisionHandler(model, (), True, 24.0, 1)
    assert handler.report(pos, handler.colliders.state(0)).self_intersections > 0


def test_depth_inside_spheres_planes_and_closed_meshes():
    x = np.array([[0.0, 0.0, 0.9], [0.0, 0.0, 2.0], [5.0, 0.0, -0.3]])
    depth = analytic_depth(x, np.array([[0.0, 0.0, 1.0]]), np.array([0.5]),
                           np.array([[0.0, 0.0, 0.0]]), np.array([[0.0, 0.0, 1.0]]))
    assert depth == pytest.approx(0.4)  # the first point is 0.4 inside the sphere
    cube = PolyMesh.from_faces(
        [(0, 0, 0), (1, 0, 0), (1, 1, 0), (0, 1, 0), (0, 0, 1), (1, 0, 1), (1, 1, 1), (0, 1, 1)],
        [(0, 3, 2, 1), (4, 5, 6, 7), (0, 1, 5, 4), (1, 2, 6, 5), (2, 3, 7, 6), (3, 0, 4, 7)])
    c = Collider("mesh", mesh=cube)
    g = grid_mesh((0.1, 0.1), (2, 2), (0.5, 0.5, 2.0))
    handler = CollisionHandler(build_model(ClothSetup(g)), (c,), False, 24.0, 1)
    X = handler.colliders.state(0).mesh_positions
    tree = TriangleTree(handler.colliders.mesh_tris, X)
    tree.refit(X, X, np.zeros(len(tree)))

    def depth(points):
        return mesh_depth(np.asarray(points, dtype=float), X, handler.colliders.mesh_tris,
                          np.zeros(12, np.int64), np.array([True]), RAY, tree.left, tree.right,
                          tree.first, tree.order, tree.lo, tree.hi)

    assert depth([[0.5, 0.5, 0.8]]) == pytest.approx(0.2)   # 0.2 below the top face
    assert depth([[0.1, 0.5, 0.5]]) == pytest.approx(0.1)   # nearest: the x = 0 face
    assert depth([[1.5, 0.5, 0.5], [0.5, 0.5, 1.01]]) == 0.0  # outside


def test_box_pairs_are_the_overlapping_query_boxes_and_faces():
    """TriangleTree.box_pairs (the yarn's points against a mesh collider, without a tree over
    the points) finds exactly the overlapping (box, face) pairs, in order of the box."""
    rng = np.random.default_rng(3)
    n = 12
    u, v = np.meshgrid(np.linspace(-0.5, 0.5, n), np.linspace(-0.5, 0.5, n), indexing="xy")
    X = np.stack([u.ravel(), v.ravel(), np.zeros(n * n)], axis=1)
    X += rng.normal(scale=0.01, size=X.shape)
    quads = [(j * n + i, j * n + i + 1, (j + 1) * n + i + 1, (j + 1) * n + i)
             for j in range(n - 1) for i in range(n - 1)]
    tris = np.array([t for a, b, c, d in quads for t in ((a, b, c), (a, c, d))], np.int64)
    tree = TriangleTree(tris, X)
    pad = np.full(len(tris), 0.02)
    tree.refit(X, X, pad)
    centres = rng.uniform(-0.6, 0.6, size=(300, 3)) * np.array([1.0, 1.0, 0.1])
    lo, hi = centres - 0.03, centres + 0.03
    got = tree.box_pairs(lo, hi)
    f_lo = X[tris].min(axis=1) - 0.02
    f_hi = X[tris].max(axis=1) + 0.02
    overlap = ((lo[:, None, :] <= f_hi[None]) & (f_lo[None] <= hi[:, None, :])).all(axis=2)
    expect = np.argwhere(overlap)
    assert len(expect) > 50
    assert np.all(np.diff(got[:, 0]) >= 0)
    assert sorted(map(tuple, got)) == sorted(map(tuple, expect))


@pytest.mark.parametrize("jitter", [0.0, 0.004, 0.02])
def test_the_report_counts_the_intersecting_pairs_of_the_listed_candidate_pairs(jitter):
    """The frame report counts intersecting triangles in one descent of the trees
    (intersections.count_intersections), without listing the candidate pairs: the same counts as
    intersecting_pair_mask over self_pairs() and pairs_with(), on crumpled sheets through
    themselves and through a sphere (touching boxes included: a flat sheet's neighbours)."""
    from bodies import uv_sphere
    from solver.collision.intersections import count_intersecting_pairs, count_intersections
    from solver.topology import canonical_triangles, triangulate

    rng = np.random.default_rng(3)
    mesh = grid_mesh((0.5, 0.5), (33, 33), (0.0, 0.0, 0.0))
    tris = canonical_triangles(mesh)
    x = mesh.positions + rng.normal(scale=jitter, size=mesh.positions.shape)
    cloth = TriangleTree(tris, mesh.positions)
    cloth.refit(x, x, np.zeros(len(tris)))
    weld = np.arange(len(x))
    sphere = uv_sphere(0.2, (0.05, 0.0, 0.0))
    st = triangulate(sphere)[0]
    X = sphere.positions
    body = TriangleTree(st, X)
    body.refit(X, X, np.zeros(len(st)))
    none = np.zeros(0, np.int64)
    own = count_intersections(cloth, cloth, tris, tris, x, x, weld)
    assert own == count_intersecting_pairs(cloth.self_pairs(), tris, tris, x, x, weld)
    crossing = count_intersections(cloth, body, tris, st, x, X, none)
    assert crossing == count_intersecting_pairs(cloth.pairs_with(body), tris, st, x, X, none)
    assert crossing > 100 and (own > 0) == (jitter > 0.0)
    # without the shared-vertex rule every neighbour of the sheet counts (their boxes touch)
    assert count_intersections(cloth, cloth, tris, tris, x, x, none) == count_intersecting_pairs(
        cloth.self_pairs(), tris, tris, x, x, none) > own
