"""docs/bodies.png: cloth posed through a body as it starts, and after its first frame.

Top: a 21 x 21 sheet laid 2 cm into the top of a 1 m 32 x 16 UV sphere (the first ring's corners
through its faces), as posed and after frame 1. Bottom: a nearly upright sheet through the
middle of an arm that hangs against a torso (one mesh, the arm 5 mm into it), as posed and after
frame 1. The scenes are bench/bodies.py's ``through_1m`` and ``arm_through``.

    .venv/bin/python scripts/render_bodies.py [--out docs/bodies.png] [--samples 24]
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "scripts"), str(ROOT / "tests"), str(ROOT / "bench")]


def _bench():
    spec = importlib.util.spec_from_file_location("bench_bodies", ROOT / "bench" / "bodies.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "bodies.png")
    ap.add_argument("--samples", type=int, default=24)
    args = ap.parse_args(argv)

    import bpy
    import render_scene as rs
    from solver.simulation import simulate

    bench = _bench()
    scenes = bench.scenes(24)  # the bodies' motion spans 24 frames; two are simulated
    shots = [  # scene, camera eye, target
        ("through_1m", (0.0, -4.6, 2.9), (0.0, 0.0, 0.55)),
        ("arm_through", (1.55, -1.85, 1.3), (0.12, 0.0, 0.97)),
    ]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, eye, target in shots:
            spec = scenes[name]
            spec = dataclasses.replace(spec, frames=1, colliders=tuple(
                c if c.positions is None else dataclasses.replace(c, positions=c.positions[:2])
                for c in spec.colliders))
            result = simulate(spec)
            frames = []
            for f in (0, 1):
                bpy.ops.wm.read_factory_settings(use_empty=True)
                scene = bpy.context.scene
                cloth_mat = rs.material(bpy, "cloth", (0.8, 0.25, 0.12))
                body_mat = rs.material(bpy, "body", (0.75, 0.75, 0.72), roughness=0.4)
                rs.mesh_object(bpy, "cloth", result.positions[f], result.triangles, cloth_mat,
                               smooth=False)
                for i, col in enumerate(spec.colliders):
                    at = col.mesh.positions if col.positions is None else col.positions[f]
                    rs.mesh_object(bpy, f"body{i}", at, col.mesh.faces(), body_mat,
                                   smooth=False)
                rs.sun_and_sky(bpy, scene, (40, 10, 30), 3.0, (0.8, 0.85, 0.9), 0.6)
                rs.camera(bpy, scene, eye, target, lens=50)
                rs.cycles(scene, (420, 320), args.samples, denoise=None)
                frames.append(rs.render_still(bpy, scene, Path(tmp) / f"{name}_{f}.png"))
            rows.append(rs.side_by_side(frames, Path(tmp) / f"{name}.png"))
        rs.stacked(rows, args.out)
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
