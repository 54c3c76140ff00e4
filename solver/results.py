"""What a simulation reports, whichever model ran it (cloth or yarn): one FrameReport per
frame and the SimulationResult holding the positions and the frames (simulation.py fills
them; the command line writes them)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np


@dataclass
class FrameReport:
    """Measurements after one frame (units in the names)."""

    frame: int
    wall_time_s: float
    substeps: int
    iterations: int
    max_strain: float
    mean_strain: float
    kinetic_energy_j: float
    elastic_energy_j: float
    potential_energy_j: float
    collision_pairs: int = 0            # proximity contacts + continuous collisions handled
    impact_zones: int = 0               # rigid impact zones formed (the last-resort fail-safe)
    # how often the fail-safes after each step fired, and the contact the implicit solve held
    # itself (collision/pipeline.py, CollisionStats)
    proximity_pushes: int = 0           # cloth vertices the proximity pass moved after the steps
    continuous_collisions: int = 0      # continuous collisions stopped after the steps
    strain_rounds: int = 0              # strain-limit passes repeated after those pushes
    solve_contacts: int = 0             # contact pairs pressing at the steps' solved ends
    contact_sets: int = 0               # contact sets searched (else the last one reused)
    deepest_penetration_m: float = 0.0  # deepest vertex inside a sphere/plane/solid mesh
    self_intersections: int = 0         # intersecting cloth triangle pairs (no shared vertex)
    collider_crossings: int = 0         # intersecting cloth/collider-mesh triangle pairs
    newton_iterations: int = 0          # implicit model: Newton iterations (0 for the others)
    retries: int = 0                    # tries of this frame that blew up (then finer steps)
    untangled: int = 0                  # vertices moved out and clear of colliders before it
    tangled_pairs: int = 0              # intersecting cloth triangle pairs at the frame's start
                                        # or left by moving it out of colliders
    step_refinement: int = 1            # the solver's steps divided this many times finer
    seam_gap_m: float = 0.0             # widest gap of a seam pair at the frame's end
    halved_steps: int = 0               # yarn: steps halved so that no yarn passes another
    threads: int = 0                    # numba threads the frame's parallel kernels had
    closest_yarns_m: float | None = None  # yarn: closest non-neighbouring segments so far


@dataclass
class SimulationResult:
    """Positions per frame and the report.

    Attributes:
        positions: (k + 1, V, 3) [m]; frame 0 is the initial state, k the frames completed.
        triangles: (T, 3) the triangulation used ((0, 3) for yarns).
        frames: one FrameReport per completed frame.
        error: None, or the message of a blow-up naming its frame (non-finite state, a
            vertex past max_speed, or the cloth torn apart: ``torn_strain``).
        model_name: the cloth model used.
        notes: what the user should know about the meshes (degenerate elements simulated
            around, vertices where the cloth is split: degenerate.py).
    """

    positions: np.ndarray
    triangles: np.ndarray
    frames: list[FrameReport] = field(default_factory=list)
    error: str | None = None
    model_name: str = ""
    notes: list[str] = field(default_factory=list)
    yarn_offsets: np.ndarray | None = None  # yarns: (Y + 1,) where each yarn's points start
    radius: float | None = None             # yarns: the yarn radius [m]

    def arrays(self) -> dict[str, np.ndarray]:
        """What a result file holds: positions [m] and triangles, or for yarns positions,
        yarn_offsets and radius [m]."""
        if self.yarn_offsets is not None:
            return {"positions": np.asarray(self.positions, dtype=np.float64),
                    "yarn_offsets": self.yarn_offsets, "radius": np.array(self.radius)}
        return {"positions": np.asarray(self.positions, dtype=np.float64),
                "triangles": np.asarray(self.triangles)}

    def report(self) -> dict:
        """JSON-serialisable report: per-frame rows and totals."""
        rows = [asdict(f) for f in self.frames]
        wall = [f.wall_time_s for f in self.frames]
        return {
            "model": self.model_name,
            "vertices": int(self.positions.shape[1]),
            "triangles": int(len(self.triangles)),
            "frames_completed": len(self.frames),
            "error": self.error,
            "notes": list(self.notes),
            "frames": rows,
            "totals": {
                "wall_time_s": float(sum(wall)),
                "median_frame_s": float(np.median(wall)) if wall else 0.0,
                "worst_frame_s": float(max(wall)) if wall else 0.0,
                "max_strain": max((f.max_strain for f in self.frames), default=0.0),
                "collision_pairs": int(sum(f.collision_pairs for f in self.frames)),
                **{k: int(sum(getattr(f, k) for f in self.frames)) for k in (
                    "impact_zones", "proximity_pushes", "continuous_collisions",
                    "strain_rounds", "solve_contacts", "contact_sets")},
                "deepest_penetration_m": max((f.deepest_penetration_m for f in self.frames),
                                             default=0.0),
                "max_self_intersections": max((f.self_intersections for f in self.frames),
                                              default=0),
                "max_collider_crossings": max((f.collider_crossings for f in self.frames),
                                              default=0),
                "substeps": int(sum(f.substeps for f in self.frames)),
                "iterations": int(sum(f.iterations for f in self.frames)),
                "newton_iterations": int(sum(f.newton_iterations for f in self.frames)),
                "retries": int(sum(f.retries for f in self.frames)),
                "final_seam_gap_m": self.frames[-1].seam_gap_m if self.frames else 0.0,
            },
        }
