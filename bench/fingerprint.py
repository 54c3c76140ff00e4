"""SHA-256 of baked positions on a fixed set of scenes: proof that a refactor changed no bits.

Covers both cloth models and every integrator, settle, analytic and mesh
colliders, self-collision, several pieces of different materials, the demo scene and the
benchmark scenes (shortened), and the yarn model: a small swatch of each knit pattern read from
a [knit] scene table as the CLI reads it, relaxed, then hung with yarn friction against a
collider. Run it before and after a change and compare:

    python bench/fingerprint.py --out /tmp/before.json
    python bench/fingerprint.py --compare /tmp/before.json
    python bench/fingerprint.py --only 'knit_*' --compare /tmp/before.json   # the knits only

Bit-identity holds on one machine and thread count; the JIT and BLAS must be the same build.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

from bench_collision import sphere_spec  # noqa: E402
from solver import (ClothSetup, Collider, PolyMesh, SimulationSpec, SolverSettings,  # noqa: E402
                    grid_mesh, load_preset, load_scene, simulate)
from solver.formats.scene import parse_scene  # noqa: E402
from scenarios import hanging_cloth  # noqa: E402


def uv_sphere(radius: float, segments: int = 32, rings: int = 16,
              centre=(0.0, 0.0, 0.0)) -> PolyMesh:
    """A closed UV sphere of quads and pole triangles around ``centre`` [m]."""
    verts = [[0.0, 0.0, radius]]
    for r in range(1, rings):
        th = np.pi * r / rings
        for s in range(segments):
            ph = 2 * np.pi * s / segments
            verts.append([radius * np.sin(th) * np.cos(ph), radius * np.sin(th) * np.sin(ph),
                          radius * np.cos(th)])
    verts.append([0.0, 0.0, -radius])
    faces = []
    ring = lambda r, s: 1 + (r - 1) * segments + s % segments  # noqa: E731
    for s in range(segments):
        faces.append([0, ring(1, s), ring(1, s + 1)])
    for r in range(1, rings - 1):
        for s in range(segments):
            faces.append([ring(r, s), ring(r + 1, s), ring(r + 1, s + 1), ring(r, s + 1)])
    last = len(verts) - 1
    for s in range(segments):
        faces.append([ring(rings - 1, s), last, ring(rings - 1, s + 1)])
    offsets = np.cumsum([0] + [len(f) for f in faces])
    return PolyMesh(np.array(verts) + np.asarray(centre), np.concatenate(faces).astype(np.int64),
                    offsets.astype(np.int64))


def _two_pieces(model: str, **settings) -> SimulationSpec:
    a = ClothSetup(grid_mesh((0.6, 0.6), (13, 13), (0.0, 0.0, 0.6)), load_preset("cotton"),
                   np.array([156, 168]))
    b = ClothSetup(grid_mesh((0.5, 0.5), (11, 11), (0.05, 0.0, 0.5)), load_preset("silk"))
    floor = Collider("plane", point=np.zeros(3), normal=np.array([0.0, 0.0, 1.0]))
    return SimulationSpec((a, b), SolverSettings(model=model, self_collision=True, **settings),
                          frames=12, colliders=(floor,))


def _mesh_sphere(frames: int) -> SimulationSpec:
    spec = sphere_spec(25, frames, False, None)
    sphere = Collider("mesh", mesh=uv_sphere(0.5), thickness=0.005, friction=0.3)
    return replace(spec, colliders=(sphere,))


def _knit(pattern: str, collider: dict | None, *, stitches: int = 8, frames: int = 12,
          **knit) -> SimulationSpec:
    """A knit scene as a scene file's tables give it (the CLI's door): a ``stitches`` square
    swatch of wool worsted with yarn friction 0.3, relaxed 0.02 s, then hung by its top course
    for ``frames`` frames under gravity tilted towards +y, so that it swings onto ``collider``
    (a [[collider]] table, or None) placed just outside its reach behind it."""
    table = {"pattern": pattern, "stitches": [stitches, stitches], "center": [0.0, 0.0, 0.5],
             "yarn": {"preset": "wool_worsted", "friction": 0.3}, "pin": "top", "relax": 0.02}
    scene = {"frames": frames, "fps": 24.0, "gravity": [0.0, 3.0, -9.81],
             "knit": {**table, **knit}, "solver": {"model": "yarn"}}
    if collider is not None:
        scene["collider"] = [{"thickness": 0.001, "friction": 0.3, **collider}]
    return parse_scene(scene)


def _ball(y: float) -> dict:
    """A 5 cm ball's [[collider]] table, centred ``y`` [m] behind the swatch's middle."""
    return {"sphere": {"center": [0.0, y, 0.49], "radius": 0.05}}


def knit_scenes() -> dict:
    """The yarn model's scenes: every pattern, friction on, each against a different collider."""
    wall = {"plane": {"point": [0.0, 0.0075, 0.0], "normal": [0.0, -1.0, 0.0]}}
    # a mesh collider as the add-on passes one (a scene file would read it from an .obj)
    ball = Collider("mesh", mesh=uv_sphere(0.05, centre=(0.0, 0.0585, 0.49)), thickness=0.001,
                    friction=0.3)
    return {
        "knit_stockinette_ball": _knit("stockinette", _ball(0.0555)),
        "knit_garter_wall": _knit("garter", wall),
        "knit_rib2x2_ball": _knit("rib2x2", _ball(0.059)),
        "knit_seed_raw_mesh_ball": replace(_knit("seed", None, edges=False),
                                           colliders=(ball,)),
    }


def scenes() -> dict:
    cotton = load_preset("cotton")
    demo = load_scene(ROOT / "examples" / "demo.toml")
    return {
        "demo_24f": replace(demo, frames=24),
        "hanging33_implicit": hanging_cloth(33, cotton, SolverSettings(), frames=24),
        "hanging33_jacobi": hanging_cloth(33, cotton, SolverSettings(preconditioner="jacobi"),
                                          frames=6),
        "hanging33_factor": hanging_cloth(33, cotton, SolverSettings(preconditioner="factor"),
                                          frames=6),
        "hanging17_settle": hanging_cloth(17, cotton, SolverSettings(settle=True), frames=6),
        "hanging17_symplectic": hanging_cloth(17, cotton, SolverSettings(model="mass_spring"),
                                              frames=3),
        "hanging17_verlet_flexion": hanging_cloth(17, cotton, SolverSettings(
            model="mass_spring", integrator="velocity_verlet", bending="flexion"), frames=3),
        "hanging17_rk4": hanging_cloth(17, cotton, SolverSettings(
            model="mass_spring", integrator="rk4"), frames=3),
        "sphere33_implicit": sphere_spec(33, 24, False, None),
        "sphere33_self": sphere_spec(33, 24, True, None),
        "sphere17_mass_spring": sphere_spec(17, 6, False, None, model="mass_spring"),
        "mesh_sphere25": _mesh_sphere(24),
        "two_pieces_implicit": _two_pieces("implicit"),
        "two_pieces_mass_spring_flexion": _two_pieces("mass_spring", bending="flexion"),
        **knit_scenes(),
    }


def fingerprint(spec: SimulationSpec) -> dict:
    result = simulate(spec)
    pos = np.ascontiguousarray(result.positions)
    return {"sha256": hashlib.sha256(pos.tobytes()).hexdigest(), "frames": int(len(pos) - 1),
            "error": result.error}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="write the fingerprints here (JSON)")
    ap.add_argument("--compare", type=Path, help="compare with fingerprints written earlier")
    ap.add_argument("--only", nargs="*",
                    help="scene names or patterns ('knit_*') to run (default: all)")
    args = ap.parse_args(argv)
    found = {}
    for name, spec in scenes().items():
        if args.only and not any(fnmatch.fnmatchcase(name, p) for p in args.only):
            continue
        found[name] = fingerprint(spec)
        print(f"{name:34s} {found[name]['sha256'][:16]}  {found[name]['error'] or ''}",
              flush=True)
    if args.out:
        args.out.write_text(json.dumps(found, indent=1))
    if args.compare:
        before = json.loads(args.compare.read_text())
        changed = [k for k in found if k in before and before[k]["sha256"] != found[k]["sha256"]]
        print("identical" if not changed else f"CHANGED: {', '.join(changed)}")
        return 1 if changed else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
