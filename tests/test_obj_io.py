"""OBJ reading: face token forms, relative indices, n-gons, errors with file:line, round trips."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from solver.mesh import MeshError, PolyMesh, grid_mesh
from solver.formats.obj import read_obj, write_obj


def write(tmp_path, text, name="cloth.obj"):
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def faces(mesh):
    return [f.tolist() for f in mesh.faces()]


def test_reads_all_face_token_forms_and_ngons(tmp_path):
    path = write(tmp_path, """\
# exported by something
mtllib cloth.mtl
o Cloth
v 0 0 0
v 1 0 0
v 1 1 0
v 0 1 0
v 0.5 2 0.25
v 9 9 9
vt 0 0
vt 1 0
vt 1 1
vt 0 1
vn 0 0 1
g panel
usemtl fabric
s off
f 1 2 3
f 1/1 2/2 3/3 4/4
f 1//1 2//1 3//1
f 1/1/1 2/2/1 3/3/1 5/4/1 4/1/1
l 1 2
""")
    mesh = read_obj(path)
    assert mesh.vertex_count == 6  # vertex 6 is unused but kept
    np.testing.assert_array_equal(mesh.positions[4], [0.5, 2.0, 0.25])
    np.testing.assert_array_equal(mesh.positions[5], [9.0, 9.0, 9.0])
    assert faces(mesh) == [[0, 1, 2], [0, 1, 2, 3], [0, 1, 2], [0, 1, 2, 4, 3]]
    assert mesh.face_offsets.tolist() == [0, 3, 7, 10, 15]
    assert mesh.positions.dtype == np.float64 and mesh.face_indices.dtype == np.int64


def test_negative_indices_are_relative_to_vertices_defined_so_far(tmp_path):
    path = write(tmp_path, """\
v 0 0 0
v 1 0 0
v 1 1 0
f -3 -2 -1
v 0 1 0
f -4/1 -2/1 -1/1
f 1 -3 4
""")
    assert faces(read_obj(path)) == [[0, 1, 2], [0, 2, 3], [0, 1, 3]]


def test_forward_references_comments_crlf_continuations_and_extra_vertex_values(tmp_path):
    text = ("f 1 2 \\\r\n 3 # a triangle\r\n"
            "v 0 0 0 1.0\r\n"           # with w
            "v 1 0 0 0.5 0.5 0.5\r\n"   # with vertex colour
            "v 0 1 0\r\n")
    mesh = read_obj(write(tmp_path, text))
    assert faces(mesh) == [[0, 1, 2]]
    np.testing.assert_array_equal(mesh.positions, [[0, 0, 0], [1, 0, 0], [0, 1, 0]])


def test_non_utf8_names_do_not_matter(tmp_path):
    data = b"g \xe9toffe\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"
    assert read_obj(write(tmp_path, data)).face_count == 1


@pytest.mark.parametrize("body, line, problem", [
    ("f 1 2 40", 4, "face index 40 out of range (file has 3 vertices)"),
    ("f 1 2 0", 4, "face index 0 is invalid"),
    ("f 1 2 -4", 4, "face index -4 out of range (3 vertices defined before this line)"),
    ("f 1 2", 4, "face has 2 vertices; a face needs at least 3"),
    ("f", 4, "face has 0 vertices"),
    ("f 1 2 2", 4, "face uses the same vertex more than once"),
    ("f 1 2 x", 4, "invalid face vertex 'x'"),
    ("f 1 2 3/1/1/1", 4, "invalid face vertex '3/1/1/1'"),
    ("f 1 2 1.5", 4, "invalid face vertex '1.5'"),
    ("v 1 2", 4, "vertex needs 3 coordinates, got 2"),
    ("v 1 2 abc", 4, "invalid vertex coordinate"),
    ("v 1 2 nan", 4, "vertex coordinates must be finite"),
    ("v inf 2 3", 4, "vertex coordinates must be finite"),
    ("curv 0 1 1 2", 4, "free-form geometry ('curv') is not supported"),
])
def test_errors_name_file_and_line(tmp_path, body, line, problem):
    path = write(tmp_path, "v 0 0 0\nv 1 0 0\nv 0 1 0\n" + body + "\n")
    with pytest.raises(MeshError) as info:
        read_obj(path)
    message = str(info.value)
    assert message.startswith(f"cloth.obj:{line}: ")
    assert problem in message


def test_out_of_range_error_points_at_the_faulty_face_line(tmp_path):
    path = write(tmp_path, "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n\n# x\nf 3 2 1\nf 1 2 7\nf 1 2 3\n")
    with pytest.raises(MeshError, match=r"^cloth\.obj:8: face index 7 out of range"):
        read_obj(path)


def test_file_without_vertices_and_missing_file(tmp_path):
    with pytest.raises(MeshError, match=r"^empty\.obj: file has no vertices"):
        read_obj(write(tmp_path, "# nothing\n", name="empty.obj"))
    with pytest.raises(MeshError, match=r"^missing\.obj: cannot read file"):
        read_obj(tmp_path / "missing.obj")


def test_vertices_without_faces_are_a_valid_mesh(tmp_path):
    mesh = read_obj(write(tmp_path, "v 0 0 0\nv 1 2 3\n"))
    assert mesh.vertex_count == 2 and mesh.face_count == 0


def test_grid_round_trip_is_exact(tmp_path):
    mesh = grid_mesh((1.3, 0.7), (5, 4), (0.1, -0.2, 1.0))
    write_obj(tmp_path / "grid.obj", mesh)
    back = read_obj(tmp_path / "grid.obj")
    np.testing.assert_array_equal(back.positions, mesh.positions)
    np.testing.assert_array_equal(back.face_indices, mesh.face_indices)
    np.testing.assert_array_equal(back.face_offsets, mesh.face_offsets)


coordinate = st.floats(allow_nan=False, allow_infinity=False, width=64)


@st.composite
def meshes(draw):
    count = draw(st.integers(3, 12))
    positions = draw(st.lists(st.tuples(coordinate, coordinate, coordinate),
                              min_size=count, max_size=count))
    face_list = draw(st.lists(
        st.lists(st.integers(0, count - 1), min_size=3, max_size=count, unique=True),
        max_size=6))
    return PolyMesh.from_faces(positions, face_list)


@settings(max_examples=60, deadline=None)
@given(mesh=meshes())
def test_write_read_round_trip(tmp_path_factory, mesh):
    path = tmp_path_factory.mktemp("obj") / "m.obj"
    write_obj(path, mesh)
    back = read_obj(path)
    np.testing.assert_array_equal(back.positions, mesh.positions)
    np.testing.assert_array_equal(back.face_indices, mesh.face_indices)
    np.testing.assert_array_equal(back.face_offsets, mesh.face_offsets)


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.sampled_from(list("vf/0123456789-. \n#eE+xs\\")), max_size=200))
def test_fuzz_reader_raises_only_mesh_error(tmp_path_factory, text):
    path = tmp_path_factory.mktemp("fuzz") / "f.obj"
    path.write_text(text)
    try:
        mesh = read_obj(path)
    except MeshError as err:
        assert "\n" not in str(err)
    else:
        mesh.validate()
