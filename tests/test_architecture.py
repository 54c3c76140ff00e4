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


def test_importing_the_solver_shortens_openmp_spinning_unless_the_user_chose():
    """solver/_jit.py sets libgomp's spin count before numba loads it (a bake beside other busy
    processes collapsed with the default; see the comment there), but never overrides a
    user's own GOMP_SPINCOUNT or OMP_WAIT_POLICY."""
    import os
    import subprocess
    import sys

    root = SOLVER.parent
    probe = "import os, solver.simulation; print(os.environ.get('GOMP_SPINCOUNT'))"
    base = {k: v for k, v in os.environ.items() if k not in ("GOMP_SPINCOUNT", "OMP_WAIT_POLICY")}
    cases = [({}, "3000"), ({"GOMP_SPINCOUNT": "7"}, "7"),
             ({"OMP_WAIT_POLICY": "passive"}, "None")]
    for extra, expect in cases:
        out = subprocess.run([sys.executable, "-c", probe], cwd=root, env={**base, **extra},
                             capture_output=True, text=True, check=True).stdout.split()[-1]
        assert out == expect, (extra, out)


def test_the_addon_imports_the_solver_only_through_its_public_interface():
    """cloth_addon/ reaches the solver through ``solver/__init__`` alone (``from ..solver import
    X``), so the solver's modules can move without breaking the add-on."""
    addon = SOLVER.parent / "cloth_addon"
    files = sorted(addon.rglob("*.py"))
    assert len(files) > 5
    for f in files:
        for level, name in _imports(f):
            if level == 2:
                assert name == "solver", f"{f.name}: from ..{name} (use from ..solver import)"
            assert level == 2 or name.split(".")[0] != "solver", f"{f.name} imports {name}"


def test_every_public_name_of_the_solver_resolves():
    import solver

    for name in solver.__all__:
        assert getattr(solver, name) is not None, name


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SOLVER.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_solver_modules_import_each_other_without_a_cycle():
    """Data flows one way: no chain of imports between the solver's modules (a lazy import
    inside a function counts) leads back to where it started. A cycle means two modules hold
    halves of one thing; move the shared part into one of them (hinge geometry lives in
    geometry.py, which the bending force imports, never the other way round)."""
    modules = {_module_name(f): f for f in SOLVER.rglob("*.py")}
    graph = {}
    for name, f in modules.items():
        package = name if f.name == "__init__.py" else name.rpartition(".")[0]
        deps = set()
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level > 0:
                base = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
                deps |= {t for t in [target, *(f"{target}.{a.name}" for a in node.names)]
                         if t in modules and t != name}
        graph[name] = deps
    done, on_path = set(), []

    def visit(name):
        if name in on_path:
            cycle = on_path[on_path.index(name):] + [name]
            raise AssertionError("import cycle: " + " -> ".join(cycle))
        if name in done:
            return
        on_path.append(name)
        for dep in sorted(graph[name]):
            visit(dep)
        on_path.pop()
        done.add(name)

    for name in sorted(graph):
        visit(name)


def test_the_frame_report_makes_no_matrix_products():
    """numpy sends matrix products to OpenBLAS, whose threads then spin after the call on the
    cores the solver's numba threads need (docs/solver.md, "No BLAS in a frame"): the modules
    that run after or before every frame (the report, the gusts) make none."""
    for name in ("diagnostics.py", "simulation.py", "forces/external.py"):
        tree = ast.parse((SOLVER / name).read_text())
        for node in ast.walk(tree):
            assert not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult)), \
                f"{name}:{node.lineno}: a matrix product"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                assert node.func.attr not in ("dot", "matmul", "inner", "tensordot", "vdot"), \
                    f"{name}:{node.lineno}: {node.func.attr}"
