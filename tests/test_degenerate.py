"""Degenerate elements (solver/degenerate.py) and torn cloth (simulation.py, ``torn_strain``).

A sheet with one collapsed quad, one zero-length edge or one zero-area face used to end tens of
metres away while the result reported success. Each must now simulate like the sound sheet, in
both models, and a result that tears apart must carry an error.
"""

from __future__ import annotations

import numpy as np
import pytest

from solver import (ClothSetup, MeshError, PolyMesh, SimulationSpec, SolverSettings, grid_mesh,
                    load_preset, simulate)
from solver.degenerate import DEGENERATE, reduce_piece, reduce_spec, thin_triangles
from solver.simulation import Simulation

N = 7  # vertices per side: small, yet every defect has sound neighbours all round
FRAMES = 8
PINS = np.array([N * (N - 1), N * N - 1])  # the two corners of the far row


def _sheet(defect: str) -> tuple[PolyMesh, dict]:
    """A 1 m sheet of N x N vertices with one defect in the middle, and what to check."""
    g = grid_mesh((1.0, 1.0), (N, N), (0.0, 0.0, 1.0))
    pos, faces = g.positions.copy(), [list(f) for f in g.faces()]
    mid = (N - 1) * (N // 2 - 1) + (N // 2 - 1)  # a quad near the centre
    f = faces[mid]
    info = {"face": mid, "quad": f}
    if defect == "collapsed_quad":  # its four corners scaled to one point
        pos[f] = pos[f].mean(axis=0)
    elif defect == "zero_edge":  # one side's ends moved onto each other
        pos[f[1]] = pos[f[0]]
    elif defect == "zero_area_triangle":  # a quad split, one half with corners in a line
        faces[mid:mid + 1] = [[f[0], f[1], f[2]], [f[0], f[2], f[3]]]
        pos[f[1]] = 0.5 * (pos[f[0]] + pos[f[2]])
    elif defect == "boundary_sliver":  # a zero-area triangle on the border, its own vertex
        pos = np.vstack([pos, 0.5 * (pos[0] + pos[1])])
        faces.append([0, len(pos) - 1, 1])
        info["carried"] = (len(pos) - 1, 0, 1)
    elif defect == "repeated_corner":  # a quad that names one vertex twice: (a, b, b, c)
        faces[mid] = [f[0], f[1], f[1], f[2]]
        faces.insert(mid + 1, [f[0], f[2], f[3]])
    return PolyMesh.from_faces(pos, faces), info


def _run(mesh, model):
    spec = SimulationSpec(ClothSetup(mesh, load_preset("cotton"), PINS),
                          SolverSettings(model=model), frames=FRAMES)
    return simulate(spec)


@pytest.fixture(scope="module")
def sound():
    """The sheet without a defect, per model: what every defective sheet is compared to."""
    return {m: _run(_sheet("none")[0], m) for m in ("implicit", "mass_spring")}


@pytest.mark.parametrize("model", ["implicit", "mass_spring"])
@pytest.mark.parametrize("defect", ["collapsed_quad", "zero_edge", "zero_area_triangle",
                                    "boundary_sliver", "repeated_corner"])
def test_a_degenerate_element_simulates_like_the_sound_sheet(defect, model, sound):
    mesh, info = _sheet(defect)
    result = _run(mesh, model)
    assert result.error is None
    assert len(result.frames) == FRAMES
    x = result.positions
    np.testing.assert_array_equal(x[0], mesh.positions)  # frame 0 is the input exactly
    assert result.report()["totals"]["max_strain"] < 0.06  # cotton's 5 % limit, not 300 %
    ref = sound[model].positions[-1]
    # the sheet swings as the sound one does: its far edge (unpinned) within 5 cm of it
    far = np.arange(N)
    assert np.max(np.linalg.norm(x[-1, far] - ref[far], axis=1)) < 0.05
    assert np.all(np.abs(x[-1]) < 2.0)
    assert len(result.notes) == 1 and "Merge by Distance" in result.notes[0]
    if defect == "collapsed_quad":  # its corners simulated as one vertex: they stay together
        np.testing.assert_allclose(x[-1, info["quad"]], x[-1, info["quad"][:1]].repeat(4, 0),
                                   atol=1e-12)
    if "carried" in info:  # on the border segment it lies on, through every frame
        v, a, b = info["carried"]
        np.testing.assert_allclose(x[:, v], 0.5 * (x[:, a] + x[:, b]), atol=1e-12)


def test_a_sound_mesh_is_simulated_as_it_is():
    mesh, _ = _sheet("none")
    assert reduce_piece(ClothSetup(mesh)) is None
    spec = SimulationSpec(ClothSetup(mesh), frames=1)
    assert reduce_spec(spec) == (spec, None)


def test_the_note_names_the_vertices_and_faces():
    mesh, info = _sheet("collapsed_quad")
    r = reduce_piece(ClothSetup(mesh))
    assert r.welded == [sorted(int(v) for v in info["quad"])]
    assert info["face"] in r.collapsed
    note = r.note("'Cloth'")
    assert note.startswith("'Cloth': vertices " + ", ".join(str(v) for v in sorted(info["quad"])))
    assert f"face {info['face']} without area" in note


def test_pins_uvs_and_seams_follow_the_merged_vertices():
    mesh, info = _sheet("zero_edge")
    a, b = info["quad"][0], info["quad"][1]  # b was moved onto a
    corners = len(mesh.face_indices)
    uv = np.arange(2 * corners, dtype=np.float64).reshape(-1, 2)
    setup = ClothSetup(mesh, pin_indices=np.array([b, a, 3]), pin_weights=np.array([0.5, 1.0, 1.0]),
                       uv=uv, seams=np.array([[a, b], [b, 2 * N]]))
    r = reduce_piece(setup)
    s = r.setup
    assert s.mesh.vertex_count == mesh.vertex_count - 1
    # a and b are one vertex held by the stronger pin (a's, weight 1)
    assert list(s.pin_indices) == [r.vertex_map[a], r.vertex_map[3]]
    assert list(s.pin_weights) == [1.0, 1.0]
    # the seam a-b joins the vertex to itself and goes; b's other seam starts at a
    np.testing.assert_array_equal(s.seams, [[r.vertex_map[a], r.vertex_map[2 * N]]])
    # every corner kept has its own UV: (2k, 2k + 1) of corner k of the user's mesh
    corner = (s.uv[:, 0] / 2).astype(int)
    np.testing.assert_array_equal(r.vertex_map[mesh.face_indices[corner]], s.mesh.face_indices)


def test_degenerate_faces_cut_off_from_the_cloth_are_refused_by_number():
    g = grid_mesh((1.0, 1.0), (3, 3), (0.0, 0.0, 1.0))
    pos = np.vstack([g.positions, [[5.0, 0.0, 1.0], [5.0, 0.0, 1.0], [5.0, 0.0, 1.0]]])
    faces = [list(f) for f in g.faces()] + [[9, 10, 11]]
    with pytest.raises(MeshError, match=r"faces 4 have no area .* share no vertex"):
        reduce_piece(ClothSetup(PolyMesh.from_faces(pos, faces)))


def test_thin_triangles_are_those_flatter_than_the_threshold():
    pos = np.array([[0.0, 0, 0], [1, 0, 0], [0.5, 0.1 * DEGENERATE, 0], [0.5, 10 * DEGENERATE, 0],
                    [0, 0, 0]])
    tris = np.array([[0, 1, 2], [0, 1, 3], [0, 4, 1]])
    np.testing.assert_array_equal(thin_triangles(pos, tris), [True, False, True])


def test_several_pieces_expand_onto_their_own_vertices():
    broken, _ = _sheet("collapsed_quad")
    clean, _ = _sheet("none")
    spec = SimulationSpec((ClothSetup(clean, pin_indices=PINS), ClothSetup(broken, pin_indices=PINS)),
                          frames=2, seams=np.array([[0, N * N]]))
    sim = Simulation(spec)
    np.testing.assert_array_equal(sim.piece_offsets, [0, N * N, 2 * N * N])
    result = sim.run()
    assert result.error is None and result.positions.shape == (3, 2 * N * N, 3)
    assert len(result.notes) == 1 and result.notes[0].startswith("piece 1: vertices")
    assert len(result.triangles) == 2 * 2 * (N - 1) ** 2


@pytest.mark.parametrize("model", ["implicit", "mass_spring"])
def test_a_cloth_torn_apart_is_an_error_not_a_result(model):
    """Pins pulled 3 m apart tear a 1 m cotton sheet: the result says so and keeps the frames
    before; whatever the front end (CLI, add-on), that is a failed simulation."""
    g = grid_mesh((1.0, 1.0), (6, 6), (0.0, 0.0, 1.0))
    pins, frames = np.array([0, 5]), 6
    targets = np.repeat(g.positions[pins][None], frames + 1, axis=0)
    targets[:, 1, 0] += np.linspace(0.0, 3.0, frames + 1)
    spec = SimulationSpec(ClothSetup(g, load_preset("cotton"), pins, pin_targets=targets),
                          SolverSettings(model=model, max_substeps=10_000_000), frames=frames)
    result = simulate(spec)
    assert result.error is not None and len(result.frames) < frames
    if model == "implicit":  # the explicit model's vertices outrun max_speed first
        assert "tore apart" in result.error and "pins pulled apart" in result.error
    assert all(f.max_strain <= 1.0 for f in result.frames)


def test_vertices_lying_on_others_without_an_edge_are_named_and_simulated_as_they_are():
    """Two sheets that meet along a line of coincident vertices (never joined, as an STL
    import): not degenerate, the cloth is split there, which the notes say; sewn, it is not."""
    g = grid_mesh((1.0, 0.5), (5, 3), (0.0, -0.25, 1.0))
    h = grid_mesh((1.0, 0.5), (5, 3), (0.0, 0.25, 1.0))  # its first row lies on g's last
    mesh = PolyMesh.from_faces(np.concatenate([g.positions, h.positions]),
                               list(g.faces()) + [f + 15 for f in h.faces()])
    spec = SimulationSpec(ClothSetup(mesh, load_preset("cotton"), np.array([0, 4])), frames=1)
    sim = Simulation(spec)
    assert sim.expansion is None  # nothing degenerate: simulated as it is
    assert sim.result.notes == ["the mesh: vertices 10, 11, 12, 13, 14, … lie on other vertices "
                                "without an edge between them: the cloth is split there (Mesh > "
                                "Clean Up > Merge by Distance joins them, loose edges with Sewing "
                                "on sew them)"]
    sewn = np.stack([np.arange(10, 15), np.arange(15, 20)], 1)
    spec = SimulationSpec(ClothSetup(mesh, load_preset("cotton"), np.array([0, 4]), seams=sewn),
                          frames=1)
    assert Simulation(spec).result.notes == []
