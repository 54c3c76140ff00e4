"""Drives Blender with a real window (run under Xvfb by test_warmup.py): a first Bake Cloth, as
a click starts it, says that it compiles the kernels before it reads the scene, and a second
one starts at once.

Usage: ``blender --factory-startup --addons cloth_solver --python warmup_ui_session.py --
OUT.json``. The steps run from a timer and record what the panel shows in OUT.json.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import bpy

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
from timer_steps import run_steps  # noqa: E402
from window_areas import window_context  # noqa: E402

OUT = Path(sys.argv[sys.argv.index("--") + 1])
RESULT: dict = {}


def _module(suffix):
    return next(m for name, m in sys.modules.items() if name.endswith(suffix))


def jobs() -> int:
    return len(_module("cloth_solver.cloth_addon.bake")._running)


def steps():
    warmup = _module("cloth_solver.cloth_addon.warmup")
    warmup.is_warm = lambda: False  # as before any warm-up finished (the test's cache is warm)
    mesh = bpy.data.meshes.new("Cloth")
    mesh.from_pydata([(x * 0.2, y * 0.2, 1.0) for y in range(5) for x in range(5)], [],
                     [(y * 5 + x, y * 5 + x + 1, y * 5 + x + 6, y * 5 + x + 5)
                      for y in range(4) for x in range(4)])
    obj = bpy.data.objects.new("Cloth", mesh)
    bpy.context.scene.collection.objects.link(obj)
    obj.cloth_solver.role = "CLOTH"
    bpy.context.scene.cloth_solver.frame_start, bpy.context.scene.cloth_solver.frame_end = 1, 4
    yield 0.2

    with window_context():
        RESULT["first click"] = sorted(bpy.ops.cloth_solver.bake("INVOKE_DEFAULT"))
    # Nothing read yet: the message is up before anything compiles.
    RESULT["after the click"] = dict(panel=warmup.status_line(), jobs=jobs())
    seen = set()
    for _ in range(3000):
        if obj.cloth_solver.is_baked and not jobs():
            break
        seen.add(warmup.status_line())
        yield 0.01
    RESULT["while baking"] = sorted(str(s) for s in seen)
    RESULT["first bake"] = dict(baked=obj.cloth_solver.is_baked, panel=warmup.status_line(),
                                loaded=warmup._loaded)

    with window_context():
        RESULT["second click"] = sorted(bpy.ops.cloth_solver.bake("INVOKE_DEFAULT"))
    RESULT["second bake"] = dict(panel=warmup.status_line(), jobs=jobs())  # started at once
    for _ in range(3000):
        if not jobs():
            break
        yield 0.01


def _write(error):
    if error:
        RESULT["error"] = error
    OUT.write_text(json.dumps(RESULT, indent=1))


run_steps(steps(), _write)
