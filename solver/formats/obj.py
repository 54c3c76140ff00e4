"""Wavefront OBJ reading and writing for polygon meshes.

Only geometry is read: ``v`` positions [m] and ``f`` polygons (any size). Texture coordinates,
normals, groups, materials and lines are skipped. Vertex order and count are kept exactly,
including vertices no face uses, so vertex indices in scene files match the OBJ file.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..mesh import MeshError, PolyMesh

# Statements that carry no cloth geometry; skipped silently.
_IGNORED = frozenset({
    "vt", "vn", "vp", "o", "g", "s", "mg", "usemtl", "mtllib", "l", "p", "lod", "bevel",
    "c_interp", "d_interp", "shadow_obj", "trace_obj", "maplib", "usemap", "ctech", "stech",
})
# Free-form geometry would silently vanish if skipped, so it is an error instead.
_FREEFORM = frozenset({
    "cstype", "deg", "bmat", "step", "curv", "curv2", "surf", "parm", "trim", "hole", "scrv",
    "sp", "end", "con",
})


def _logical_lines(text: str):
    """Yield (line number, content without comment), joining ``\\``-continued lines."""
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].rstrip()
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        yield start, pending + line
        pending = ""
    if pending:
        yield start, pending


def read_obj(path) -> PolyMesh:
    """Read the polygons of an OBJ file.

    Args:
        path: file to read; coordinates are taken as metres.

    Returns:
        The mesh, with faces in file order.

    Raises:
        MeshError: "NAME:LINE: problem" for malformed content, "NAME: problem" otherwise.
    """
    path = Path(path)
    name = path.name
    try:
        # Group and material names may be in any 8-bit encoding; numbers are plain ASCII.
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as err:
        raise MeshError(f"{name}: cannot read file: {err.strerror or err}") from None

    positions: list[tuple[float, float, float]] = []
    indices: list[int] = []
    sizes: list[int] = []
    face_lines: list[int] = []  # line of each face, for errors found after the whole file
    for number, line in _logical_lines(text):
        tokens = line.split()
        if not tokens:
            continue
        keyword, args = tokens[0], tokens[1:]
        where = f"{name}:{number}"
        if keyword == "v":
            positions.append(_vertex(where, args))
        elif keyword == "f":
            face = [_face_index(where, tok, len(positions)) for tok in args]
            if len(face) < 3:
                raise MeshError(f"{where}: face has {len(face)} vertices; a face needs at least 3")
            if len(set(face)) != len(face):
                raise MeshError(f"{where}: face uses the same vertex more than once")
            indices.extend(face)
            sizes.append(len(face))
            face_lines.append(number)
        elif keyword in _FREEFORM:
            raise MeshError(f"{where}: free-form geometry ('{keyword}') is not supported; "
                            "export the surface as polygons")
        # Anything else (_IGNORED, or exporter-specific extensions) carries no polygon data.

    if not positions:
        raise MeshError(f"{name}: file has no vertices ('v' lines)")
    flat = np.asarray(indices, dtype=np.int64)
    offsets = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=offsets[1:])
    # Positive indices may point forward in the file, so they are range-checked only now.
    bad = np.flatnonzero(flat >= len(positions))
    if bad.size:
        face = int(np.searchsorted(offsets, bad[0], side="right")) - 1
        raise MeshError(f"{name}:{face_lines[face]}: face index {int(flat[bad[0]]) + 1} out of "
                        f"range (file has {len(positions)} vertices)")
    mesh = PolyMesh(np.array(positions, dtype=np.float64).reshape(-1, 3), flat, offsets)
    try:
        mesh.validate()
    except MeshError as err:
        raise MeshError(f"{name}: {err}") from None
    return mesh


def _vertex(where: str, args: list[str]) -> tuple[float, float, float]:
    # "v x y z", optionally followed by w or by r g b vertex colours, which are dropped.
    if len(args) < 3:
        raise MeshError(f"{where}: vertex needs 3 coordinates, got {len(args)}")
    try:
        xyz = tuple(float(a) for a in args[:3])
    except ValueError:
        raise MeshError(f"{where}: invalid vertex coordinate in {' '.join(args[:3])!r}") from None
    if not all(math.isfinite(c) for c in xyz):
        raise MeshError(f"{where}: vertex coordinates must be finite, got {' '.join(args[:3])}")
    return xyz


def _face_index(where: str, token: str, defined: int) -> int:
    """0-based vertex index of one face token ``v``, ``v/vt``, ``v//vn`` or ``v/vt/vn``."""
    parts = token.split("/")
    if len(parts) > 3:
        raise MeshError(f"{where}: invalid face vertex {token!r}")
    try:
        k = int(parts[0])
    except ValueError:
        raise MeshError(f"{where}: invalid face vertex {token!r}") from None
    if k == 0:
        raise MeshError(f"{where}: face index 0 is invalid (OBJ indices start at 1)")
    if k < 0:  # relative: -1 is the last vertex defined so far
        if -k > defined:
            raise MeshError(f"{where}: face index {k} out of range ({defined} vertices "
                            "defined before this line)")
        return defined + k
    return k - 1


def write_obj(path, mesh: PolyMesh, comment: str = "written by the cloth solver") -> None:
    """Write ``mesh`` as OBJ (positions [m] with round-trip precision, 1-based faces)."""
    lines = [f"# {line}" for line in comment.splitlines()]
    lines += [f"v {x!r} {y!r} {z!r}" for x, y, z in mesh.positions.astype(float).tolist()]
    lines += ["f " + " ".join(str(i + 1) for i in face.tolist()) for face in mesh.faces()]
    Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")
