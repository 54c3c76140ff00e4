"""Garment scenes shared by the tests, the garment benchmark (bench/garments.py) and the demo:
the tee and mannequin of examples/garments/ (made by scripts/make_garments.py), the body's
motion, and the scenes an artist makes with them: a tee hung by its shoulders, dropped into a
pile on the floor, worn on a body that turns and lifts its arms, and posed slightly through
its body.

The mannequin stands at the origin facing −Y, Z up, in an A-pose (arms 45° down); its parts
(torso, head, both arms) are closed convex meshes that overlap at the joints.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from solver import ClothSetup, Collider, PolyMesh, SimulationSpec, SolverSettings, load_preset
from solver.formats.obj import read_obj

GARMENTS = Path(__file__).resolve().parent.parent / "examples" / "garments"
BODY_PARTS = ("torso", "head", "arm_r", "arm_l")
SHOULDER = np.array([0.19, 0.0, 1.40])  # right shoulder joint (the left one mirrored in X)
ARM_DOWN = math.radians(45.0)           # the arms' angle below horizontal in the A-pose
BODY_THICKNESS = 0.005                  # the body's collision thickness [m]
FLOOR_DROP = 0.05                       # the pile's tee starts this far above the floor [m]
# the worn scene's motion: the body turns by TURN and lifts its arms by LIFT (level at 45°)
TURN = math.radians(60.0)
LIFT = math.radians(50.0)
POSED_LIFT = math.radians(8.0)          # the posed scene's arms, through the sleeves' tops


def garment(name: str = "tee") -> PolyMesh:
    """A garment mesh of examples/garments/ by file stem ("tee": 1.4k vertices, "tee_6k")."""
    return read_obj(GARMENTS / f"{name}.obj")


def panels() -> tuple[PolyMesh, np.ndarray]:
    """The tee's flat front and back panels and their seams (S, 2) (the OBJ's lines)."""
    path = GARMENTS / "tee_panels.obj"
    pairs = [line.split()[1:3] for line in path.read_text().splitlines()
             if line.startswith("l ")]
    return read_obj(path), np.array(pairs, np.int64).reshape(-1, 2) - 1


def body_parts() -> dict[str, PolyMesh]:
    """The mannequin's parts in the A-pose."""
    return {name: read_obj(GARMENTS / f"body_{name}.obj") for name in BODY_PARTS}


def _rotation(axis: str, angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    if axis == "z":
        return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])  # about y


def body_pose(name: str, turn: float, lift: float) -> tuple[np.ndarray, np.ndarray]:
    """The rigid transform (R (3, 3), t (3,)), x ↦ R·x + t, taking part ``name`` from the
    A-pose to a body turned by ``turn`` [rad] about the vertical through the origin (positive:
    its front turns towards +X) with its arms lifted by ``lift`` [rad] about their shoulder
    joints (45°: level)."""
    R, t = np.eye(3), np.zeros(3)
    if name.startswith("arm_"):
        sign = 1.0 if name.endswith("_r") else -1.0
        joint = SHOULDER * [sign, 1.0, 1.0]
        R = _rotation("y", -sign * lift)  # the right arm (+X) rises turning about −Y
        t = joint - R @ joint
    Z = _rotation("z", turn)
    return Z @ R, Z @ t


def _smoothstep(s):
    s = np.clip(s, 0.0, 1.0)
    return s * s * (3.0 - 2.0 * s)


def body_motion(frames: int, turn: float = TURN, lift: float = LIFT,
                lift0: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(turn, lift) angles [rad] per frame (frames + 1,): the body turns over the first two
    thirds of the frames while its arms rise from ``lift0`` by ``lift`` over the last two
    thirds, both eased in and out."""
    f = np.arange(frames + 1) / max(frames, 1)
    return turn * _smoothstep(1.5 * f), lift0 + lift * _smoothstep(1.5 * f - 0.5)


def body_colliders(turns, lifts, friction: float = 0.3) -> tuple[Collider, ...]:
    """The body's parts as mesh colliders posed at every frame by ``turns``, ``lifts`` (F,)
    [rad] (one frame: a body that stays put)."""
    out = []
    for name, mesh in body_parts().items():
        frames = []
        for turn, lift in zip(turns, lifts):
            R, t = body_pose(name, float(turn), float(lift))
            frames.append(mesh.positions @ R.T + t)
        first = PolyMesh(frames[0], mesh.face_indices, mesh.face_offsets)
        out.append(Collider(kind="mesh", mesh=first, thickness=BODY_THICKNESS,
                            friction=friction,
                            positions=np.array(frames) if len(frames) > 1 else None))
    return tuple(out)


def shoulder_pins(mesh: PolyMesh, radius: float = 0.03) -> np.ndarray:
    """The garment's vertices within ``radius`` [m] of the tops of its two shoulders (the
    highest points beside the neckline, where a hanger holds a tee)."""
    x = mesh.positions
    pins = []
    for sign in (1.0, -1.0):
        side = x[:, 0] * sign > 0.12
        top = np.flatnonzero(side)[np.argmax(x[side, 2])]
        pins.append(np.flatnonzero(np.linalg.norm(x - x[top], axis=1) < radius))
    return np.unique(np.concatenate(pins))


def scene(kind: str, name: str = "tee", frames: int = 48, material: str = "cotton",
          **settings) -> SimulationSpec:
    """One garment scene, self-collision on (``settings`` add to the solver's):

    * ``hung``: the tee held at its shoulders (``shoulder_pins``), no body;
    * ``pile``: the tee without its body, FLOOR_DROP above a floor (a plane), falls into a pile;
    * ``worn``: the tee on the body, which turns and lifts its arms (``body_motion``);
    * ``posed``: the tee on the body posed with its arms POSED_LIFT higher than the tee was
      made on, so the arms start through the sleeves; then the same motion as ``worn``;
    * ``raised``: the posed scene's clean start: the tee on the body as made (as ``worn``), the
      arms rising by LIFT + POSED_LIFT to the posed scene's last pose, so that the two differ
      only in how they start.
    """
    mesh = garment(name)
    cloth = ClothSetup(mesh, load_preset(material))
    colliders: tuple[Collider, ...] = ()
    if kind == "hung":
        cloth = ClothSetup(mesh, load_preset(material), pin_indices=shoulder_pins(mesh))
    elif kind == "pile":
        floor = float(mesh.positions[:, 2].min()) - FLOOR_DROP
        colliders = (Collider(kind="plane", point=np.array([0.0, 0.0, floor]),
                              normal=np.array([0.0, 0.0, 1.0]), thickness=0.001,
                              friction=0.3),)
    elif kind in ("worn", "posed"):
        colliders = body_colliders(*body_motion(
            frames, lift0=POSED_LIFT if kind == "posed" else 0.0))
    elif kind == "raised":
        colliders = body_colliders(*body_motion(frames, lift=LIFT + POSED_LIFT))
    else:
        raise ValueError(f"unknown garment scene {kind!r}: hung, pile, worn, posed or raised")
    return SimulationSpec(cloth, SolverSettings(model="implicit", self_collision=True,
                                                **settings),
                          frames=frames, colliders=colliders)
