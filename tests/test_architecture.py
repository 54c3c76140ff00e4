"""The solver package stays importable without Blender and inside the extension."""

import ast
from pathlib import Path

SOLVER = Path(__file__).resolve().parent.parent / "solver"
FORBIDDEN = {"bpy", "bmesh", "mathutils"}


def _imports(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield 0, alias.name
        elif isinstance(node, ast.ImportFrom):
            yield node.level, node.module or ""


def test_solver_never_imports_blender_or_itself_absolutely():
    files = sorted(SOLVER.rglob("*.py"))
    assert len(files) > 10
    for f in files:
        for level, name in _imports(f):
            root = name.split(".")[0]
            assert root not in FORBIDDEN, f"{f.name} imports {name}"
            if level == 0:
                assert root != "solver", f"{f.name}: absolute self-import {name} (use relative)"
