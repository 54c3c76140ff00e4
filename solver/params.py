"""Material and solver parameters: the one source of truth for names, units, defaults and bounds.

Every material quantity is in SI units and means the same at every mesh resolution; each model
maps these numbers to its own discrete parameters (see ``model.py``). The add-on, the scene-file
loader and the presets all validate against the ``FieldSpec`` tables below; a ``Display`` beside
a field says in which unit and at which magnitude a user interface shows it (e.g. µN·m).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any


class ParameterError(ValueError):
    """A parameter is unknown, of the wrong type or out of bounds; ``key`` names it."""

    def __init__(self, key: str, problem: str):
        super().__init__(f"{key}: {problem}")
        self.key = key
        self.problem = problem


@dataclass(frozen=True)
class FieldSpec:
    """Description of one numeric parameter.

    Attributes:
        unit: SI unit shown to users, e.g. ``"N/m"``.
        doc: one-line meaning.
        minimum: smallest allowed value (inclusive unless ``exclusive_min``).
        maximum: largest allowed value (inclusive).
        exclusive_min: the minimum itself is not allowed (e.g. density > 0).
        integer: the value must be an integer.
        optional: ``None`` is an allowed value (meaning "off" or "same as another field").
    """

    unit: str
    doc: str
    minimum: float
    maximum: float
    exclusive_min: bool = False
    integer: bool = False
    optional: bool = False


@dataclass(frozen=True)
class Display:
    """How a user interface shows one parameter: in ``unit`` at a readable magnitude.

    The value stays SI everywhere else (solver, presets, scene files, the add-on's stored
    properties); only what is drawn is ``SI value × scale``.

    Attributes:
        unit: unit shown to users, e.g. ``"µN·m"`` (``""`` for a pure number).
        scale: shown value = SI value × scale (``1e6`` for N·m -> µN·m).
        label: short name that fits a narrow panel beside its group heading, e.g. ``"Bending"``
            under "Stiffness".
        precision: decimals shown.
        soft_max: upper end of the usual range in the shown unit (dragging stops there; typing
            may go up to the hard bound); None = the hard bound.
    """

    unit: str
    scale: float = 1.0
    label: str = ""
    precision: int = 3
    soft_max: float | None = None


def _spec(default, unit, doc, minimum, maximum, display: Display | None = None, **kw):
    """A dataclass field whose metadata carries its FieldSpec (and how a UI shows it)."""
    meta = {"spec": FieldSpec(unit, doc, minimum, maximum, **kw)}
    if display is not None:
        meta["display"] = display
    return field(default=default, metadata=meta)


def field_specs(cls) -> dict[str, FieldSpec]:
    """Map field name -> FieldSpec for a parameter dataclass."""
    return {f.name: f.metadata["spec"] for f in dataclasses.fields(cls)}


def field_displays(cls) -> dict[str, Display]:
    """Map numeric field name -> Display; a field without one is shown in its SI unit."""
    out = {}
    for f in dataclasses.fields(cls):
        if "spec" not in f.metadata:
            continue
        out[f.name] = f.metadata.get("display") or Display(
            "" if f.metadata["spec"].unit == "1" else f.metadata["spec"].unit,
            label=f.name.replace("_", " ").title())
    return out


def field_defaults(cls) -> dict[str, Any]:
    """Map field name -> default value for a parameter dataclass."""
    return {f.name: f.default for f in dataclasses.fields(cls)}


def check_value(key: str, value: Any, spec: FieldSpec) -> float | int | None:
    """Validate one value against its spec and return it as float/int (or None)."""
    if value is None:
        if spec.optional:
            return None
        raise ParameterError(key, "a value is required")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParameterError(key, f"expected a number, got {type(value).__name__} {value!r}")
    unit = f" {spec.unit}" if spec.unit else ""
    try:
        v = float(value)
    except OverflowError:  # an int beyond the float range (TOML integers are unbounded)
        bound = f"<= {spec.maximum:g}" if value > 0 else f">= {spec.minimum:g}"
        raise ParameterError(key, f"must be {bound}{unit}, got a "
                                  f"{value.bit_length()}-bit integer") from None
    if not math.isfinite(v):  # before the integer check: "nan is not an integer" misleads
        raise ParameterError(key, f"must be finite, got {value!r}")
    if spec.integer and not isinstance(value, int) and not v.is_integer():
        raise ParameterError(key, f"expected an integer, got {value!r}")
    lo_ok = v > spec.minimum if spec.exclusive_min else v >= spec.minimum
    if not lo_ok:
        rel = ">" if spec.exclusive_min else ">="
        raise ParameterError(key, f"must be {rel} {spec.minimum:g}{unit}, got {value!r}")
    if v > spec.maximum:
        raise ParameterError(key, f"must be <= {spec.maximum:g}{unit}, got {value!r}")
    return int(v) if spec.integer else v


@dataclass(frozen=True)
class MaterialParams:
    """Physical fabric description in SI units, independent of the mesh.

    Stiffness is a membrane (per-width) quantity: a strip of width W under tension T strains by
    T / (stretch_stiffness * W). Bending: moment per unit width = bend_stiffness * curvature.
    """

    area_density: float = _spec(
        0.15, "kg/m²", "mass per unit area", 0.0, 1.0e3, exclusive_min=True,
        display=Display("g/m²", 1e3, "Density", 1, soft_max=2000.0))
    stretch_stiffness: float = _spec(
        5000.0, "N/m", "tensile stiffness along the warp (u) direction", 0.0, 1.0e8,
        exclusive_min=True, display=Display("N/m", 1.0, "Warp", 0, soft_max=1.0e5))
    stretch_stiffness_weft: float | None = _spec(
        None, "N/m", "tensile stiffness along the weft (v) direction; None = same as warp",
        0.0, 1.0e8, exclusive_min=True, optional=True,
        display=Display("N/m", 1.0, "Weft", 0, soft_max=1.0e5))
    shear_stiffness: float = _spec(
        50.0, "N/m", "in-plane shear stiffness (shear stress per radian)", 0.0, 1.0e8,
        display=Display("N/m", 1.0, "Shear", 1, soft_max=1.0e4))
    bend_stiffness: float = _spec(
        5.0e-6, "N·m", "bending rigidity: moment per unit width per unit curvature", 0.0, 10.0,
        display=Display("µN·m", 1e6, "Bending", 2, soft_max=1000.0))
    stretch_damping: float = _spec(
        0.5, "N·s/m", "viscous tension per unit strain rate", 0.0, 1.0e6,
        display=Display("mN·s/m", 1e3, "Stretch", 1, soft_max=1.0e4))
    shear_damping: float = _spec(
        0.005, "N·s/m", "viscous shear stress per unit shear rate", 0.0, 1.0e6,
        display=Display("mN·s/m", 1e3, "Shear", 2, soft_max=1000.0))
    bend_damping: float = _spec(
        1.0e-7, "N·m·s", "viscous moment per unit width per unit curvature rate", 0.0, 10.0,
        display=Display("nN·m·s", 1e9, "Bending", 1, soft_max=1.0e4))
    air_drag: float = _spec(
        0.1, "kg/(m²·s)", "pressure drag per area per relative air speed across the cloth (f = -air_drag·area·u·n "
        "along the normal n, u = v - wind; 3% of it along the faces)",
        0.0, 1.0e4, display=Display("kg/m²/s", 1.0, "Air Drag", 2, soft_max=10.0))
    max_strain: float | None = _spec(
        None, "1", "largest allowed edge strain (e.g. 0.05 = 5%); None = no limit",
        0.0, 10.0, exclusive_min=True, optional=True,
        display=Display("%", 100.0, "Strain Limit", 1, soft_max=100.0))
    thickness: float = _spec(
        0.002, "m", "cloth thickness: layers are kept this far apart, and the cloth's "
        "mid-surface half of it (plus the collider's thickness) from colliders", 0.0, 1.0,
        display=Display("mm", 1e3, "Thickness", 2, soft_max=20.0))
    friction: float = _spec(
        0.3, "1", "Coulomb friction coefficient between touching cloth layers (self-collision)",
        0.0, 100.0, display=Display("", 1.0, "Friction", 2, soft_max=2.0))
    pin_stiffness: float = _spec(
        1.0e4, "N/m³", "goal-spring stiffness per unit vertex area for pin weights below 1",
        0.0, 1.0e12, display=Display("kN/m³", 1e-3, "Pin Stiffness", 1, soft_max=1.0e4))
    seam_force: float = _spec(
        10.0, "N/m", "force per metre of seam with which sewn vertices (Blender: loose edges) "
        "are pulled together; once they meet, within the cloth thickness, it holds them",
        0.0, 1.0e6, exclusive_min=True,
        display=Display("N/m", 1.0, "Seam Force", 1, soft_max=1000.0))

    @property
    def weft_stiffness(self) -> float:
        """Tensile stiffness along v [N/m] (falls back to the warp value)."""
        return self.stretch_stiffness if self.stretch_stiffness_weft is None \
            else self.stretch_stiffness_weft

    @classmethod
    def from_mapping(cls, values: dict[str, Any], base: "MaterialParams | None" = None,
                     prefix: str = "material") -> "MaterialParams":
        """Build from a dict, validating every key; unknown keys raise ParameterError."""
        return _from_mapping(cls, values, base, prefix)


MODEL_NAMES = ("mass_spring", "implicit", "yarn")
INTEGRATOR_NAMES = ("symplectic_euler", "velocity_verlet", "rk4")
BENDING_NAMES = ("angular", "flexion")
PRECONDITIONER_NAMES = ("factor", "incomplete_cholesky", "jacobi")
QUALITY_NAMES = ("final", "preview")

# A quality is a named bundle of the implicit model's settings below. Each bundled field
# defaults to None, "the quality's value"; a value set explicitly (a keyword, a scene-file key)
# wins over the bundle. SolverSettings.resolved() fills them in. Final is the accuracy the
# other defaults were measured for; Preview's values and their measurements:
# docs/solver.md, "Preview quality".
QUALITIES: dict[str, dict[str, Any]] = {
    "final": {"newton_residual": 0.0, "substeps": 2, "newton_iterations": 2,
              "self_contact_motion": 0.5},
    "preview": {"newton_residual": 0.1, "substeps": 1, "newton_iterations": 3,
                "self_contact_motion": 1.0},
}


def _per_quality(key: str) -> str:
    """A bundled field's value at each quality, for its doc ("2 at final, 1 at preview")."""
    return ", ".join(f"{bundle[key]:g} at {name}" for name, bundle in QUALITIES.items())


QUALITY_DOCS = {
    "final": "Full accuracy (the default): every step runs its Newton iterations until the "
             "update is small or their cap is reached",
    "preview": "Faster: one step per frame (more where layers of cloth move fast against "
               "each other), a step's second Newton iteration only where the first leaves a "
               "large residual; the same strain limit and collisions",
}


@dataclass(frozen=True)
class SolverSettings:
    """How to step the cloth: model choice and its numerical options (not material)."""

    model: str = field(default="implicit", metadata={
        "choices": MODEL_NAMES, "doc": "the model: a cloth model (mass_spring, implicit) for "
        "cloth, yarn for knitted yarns (solver/yarn/)"})
    quality: str = field(default="final", metadata={
        "choices": QUALITY_NAMES,
        "doc": "implicit: a bundle of the settings marked 'from the quality' (final: full "
        "accuracy; preview: cheaper, same strain limit and contacts); an explicit value of "
        "one of them wins; no effect on mass_spring"})
    substeps: int | None = _spec(
        None, "", "steps per frame; None = model default (implicit: from the quality, "
        f"{_per_quality('substeps')}; explicit: automatic stable step)",
        1, 100000, integer=True, optional=True)
    integrator: str = field(default="symplectic_euler", metadata={
        "choices": INTEGRATOR_NAMES, "doc": "explicit integrator of the mass_spring model"})
    bending: str = field(default="angular", metadata={
        "choices": BENDING_NAMES, "doc": "mass_spring bending: angular springs or flexion springs"})
    stability_safety: float = _spec(
        0.8, "", "fraction of the explicit stability limit used for the automatic step",
        0.0, 1.0, exclusive_min=True)
    max_substeps: int = _spec(
        20000, "", "explicit: most substeps per frame the automatic step may take; a stiffer or "
        "finer cloth stops with a message instead of running for hours", 1, 10_000_000,
        integer=True)
    settle: bool = field(default=False, metadata={
        "doc": "implicit: relax quasi-statically to equilibrium instead of simulating dynamics"})
    self_collision: bool = field(default=False, metadata={
        "doc": "keep the cloth from passing through itself"})
    contact_energy: bool = field(default=True, metadata={
        "doc": "implicit: contacts between layers of cloth and against collider meshes act "
        "inside the solve, as energies on both sides of each pair, on a set of pairs kept "
        "from step to step; the collision pipeline after the step stays as the fail-safe "
        "(off: the pipeline alone keeps them apart; docs/solver.md, \"Contact inside the "
        "solve\")"})
    preconditioner: str = field(default="incomplete_cholesky", metadata={
        "choices": PRECONDITIONER_NAMES,
        "doc": "implicit: PCG preconditioner: block Jacobi, incomplete Cholesky IC(0) "
        "(10x fewer iterations, see linalg/incomplete_cholesky.py), or a sparse factor reused while it "
        "stays accurate (fast for slow motion, draping and settle; see linalg/preconditioner.py)"})
    # 1e-3: a looser tolerance saves PCG iterations and stays as close to a converged run, but
    # lets a stiff swinging sheet gain energy (docs/solver.md, "CG tolerance")
    cg_tolerance: float = _spec(
        1.0e-3, "", "implicit: relative residual at which the conjugate gradient stops",
        0.0, 1.0, exclusive_min=True)
    cg_max_iterations: int = _spec(
        500, "", "implicit: iteration cap of the conjugate gradient", 1, 100000, integer=True)
    recycled_corrections: int = _spec(
        4, "", "implicit: the last Newton corrections that deflate the next conjugate gradient "
        "solves (0 = none; see linalg/deflation.py)", 0, 64, integer=True)
    newton_iterations: int | None = _spec(
        None, "", "implicit: most Newton iterations per step (1 = Baraff & Witkin's single "
        f"linearisation); None = from the quality ({_per_quality('newton_iterations')})", 1, 100,
        integer=True, optional=True)
    newton_residual: float | None = _spec(
        None, "", "implicit: after the first Newton iteration of a step, the next run only "
        "while the residual is above this fraction of the step's starting residual (0 = "
        "always, up to newton_iterations); None = from the quality", 0.0, 1.0, optional=True)
    self_contact_motion: float | None = _spec(
        None, "", "implicit, with self-collision: more steps per frame while an edge with an end "
        "in cloth-cloth contact moves its ends against each other by more than this fraction of "
        "its rest length per step; None = from the quality "
        f"({_per_quality('self_contact_motion')})",
        0.0, 100.0, exclusive_min=True, optional=True)
    newton_tolerance: float = _spec(
        1.0e-3, "", "implicit: Newton stops when its last position update is below this "
        "fraction of the shortest rest edge", 0.0, 1.0, exclusive_min=True)
    strain_limit_iterations: int = _spec(
        1000, "", "most passes of the strain limiter per step (it stops once converged)", 1,
        100000, integer=True)
    max_speed: float = _spec(
        1.0e3, "m/s", "a vertex faster than this means the simulation blew up", 0.0, 1.0e8,
        exclusive_min=True)
    time_step: float | None = _spec(
        None, "s", "yarn: the longest step; shorter where the yarn contact needs it (None = "
        "1/4800 s, a whole number of steps per frame at 24, 25 and 30 fps)", 0.0, 1.0e-2,
        exclusive_min=True, optional=True)

    @classmethod
    def from_mapping(cls, values: dict[str, Any], base: "SolverSettings | None" = None,
                     prefix: str = "solver") -> "SolverSettings":
        """Build from a dict, validating every key; unknown keys raise ParameterError."""
        return _from_mapping(cls, values, base, prefix)

    def resolved(self) -> "SolverSettings":
        """These settings with every field left to the quality (None) set to its value."""
        if self.quality not in QUALITIES:  # built directly, without from_mapping's check
            raise ParameterError("solver.quality", f"expected one of {', '.join(QUALITIES)}, "
                                                   f"got {self.quality!r}")
        bundle = QUALITIES[self.quality]
        return dataclasses.replace(self, **{k: v for k, v in bundle.items()
                                            if getattr(self, k) is None})


def _from_mapping(cls, values, base, prefix):
    fields = {f.name: f for f in dataclasses.fields(cls)}
    out = {} if base is None else dataclasses.asdict(base)
    for key, value in values.items():
        full = f"{prefix}.{key}"
        if key not in fields:
            raise ParameterError(full, f"unknown key (allowed: {', '.join(fields)})")
        meta = fields[key].metadata
        if "spec" in meta:
            out[key] = check_value(full, value, meta["spec"])
        elif "choices" in meta:
            if not isinstance(value, str) or value not in meta["choices"]:
                raise ParameterError(full, f"expected one of {', '.join(meta['choices'])}, "
                                           f"got {value!r}")
            out[key] = value
        else:  # boolean switch
            if not isinstance(value, bool):
                raise ParameterError(full, f"expected true or false, got {value!r}")
            out[key] = value
    return cls(**out)


@dataclass(frozen=True)
class YarnParams:
    """A yarn for the yarn-level knit model (solver/yarn/, docs/yarn.md), in SI units.

    Kaldor's Table 4.1 ([Kaldor2011] p.34, "Simulation" column, wool worsted) is in g, cm, s;
    the defaults are its values converted: r = 0.125 cm; m = 0.006 g/cm = 6e-4 kg/m;
    k_contact = 3250 g/s² = 3.25 N/m; k_dn = 0.01–0.05 g/(cm²·s) = 0.1–0.5 kg/(m²·s);
    k_dt = 0.001–0.005 g/(cm²·s) = 0.01–0.05 kg/(m²·s) (1 g/(cm²·s) = 10 kg/(m²·s)).
    The bending too: his E = k_bend·∫κ² ds (eq. 4.4, ℓ_i·∫κ_i² ds over the segment parameter is an
    integral over arc length) needs k_bend in g·cm³/s² (energy over 1/length), so his
    k_bend = 5 (the table prints g·cm²/s²) is 5 g·cm³/s² = 5e-9 N·m², and E = ½·B·∫κ² ds gives
    B = 2·k_bend = 1e-8 N·m². (Read as g·cm²/s² = 1e-7 J it would be 1e-6 N·m², 100× stiffer,
    and relaxed swatches spring open against his contact stiffness: docs/yarn.md.) 1e-8 N·m² is
    0.29 of the free-fibre bound of this yarn, N·E_f·π·d_f⁴/64 = 3.5e-8 N·m² (1460 wool fibres
    of 20 µm, E_f = 3 GPa).
    """

    radius: float = _spec(
        1.25e-3, "m", "yarn radius r (contact begins at a centreline distance of 2r)",
        0.0, 0.05, exclusive_min=True, display=Display("mm", 1e3, "Radius", 2, soft_max=5.0))
    linear_density: float = _spec(
        6.0e-4, "kg/m", "mass per unit length of yarn", 0.0, 1.0, exclusive_min=True,
        display=Display("g/m", 1e3, "Linear Density", 3, soft_max=5.0))
    bend_stiffness: float = _spec(
        1.0e-8, "N·m²", "flexural rigidity B: bending energy ½·B·∫κ² ds (Kaldor's k_bend = B/2)",
        0.0, 1.0, display=Display("µN·m²", 1e6, "Bending", 3, soft_max=100.0))
    contact_stiffness: float = _spec(
        3.25, "N/m", "k_contact of the yarn–yarn penalty E = k·ℓi·ℓj·∬f(dist/2r) (Kaldor "
        "eq. 4.7)", 0.0, 1.0e6, exclusive_min=True,
        display=Display("N/m", 1.0, "Contact", 2, soft_max=100.0))
    contact_damping_normal: float = _spec(
        0.3, "kg/(m²·s)", "k_dn: damping of the normal relative velocity of touching yarn "
        "(Kaldor eq. 4.10)", 0.0, 1.0e4,
        display=Display("kg/m²/s", 1.0, "Normal Damping", 3, soft_max=10.0))
    contact_damping_tangential: float = _spec(
        0.03, "kg/(m²·s)", "k_dt: damping of the tangential relative velocity of touching "
        "yarn, a stand-in for sliding friction (Kaldor eq. 4.10)", 0.0, 1.0e4,
        display=Display("kg/m²/s", 1.0, "Tangential Damping", 3, soft_max=1.0))
    contact_rest: float = _spec(
        1.0, "", "share of how far the rest state presses touching yarns into each other that "
        "is their rest: a pair of segments closer than a diameter there pushes only when pressed "
        "closer than 2r − share·(2r − its distance there) (the yarns flattened against each "
        "other, docs/yarn.md); 1 makes the relaxed knit a rest state, 0 is Kaldor's contact, "
        "where every overlap pushes", 0.0, 1.0,
        display=Display("", 1.0, "Rest Contacts", 2, soft_max=1.0))
    friction: float = _spec(
        0.0, "", "μ: Coulomb friction between touching yarns, in the relaxation and the "
        "simulation (0: Kaldor's model, as validated; wool on wool is about 0.3, "
        "docs/yarn.md)", 0.0, 2.0,
        display=Display("", 1.0, "Yarn Friction", 2, soft_max=1.0))
    nonrigid_damping: float = _spec(
        25300.0, "1/s", "μ_prop: rate at which the motion of each 2 × 2-loop region relative to "
        "its rigid motion is removed (by backward Euler, h·μ/(1 + h·μ) of it per step h, so "
        "that a loaded region creeps at the same speed at every step); 25300 /s removes "
        "Kaldor's α_small = 0.6 per 1/11800 s step with the second pass (Table 4.1)", 0.0, 1.0e6,
        display=Display("1/s", 1.0, "Non-rigid Damping", 0, soft_max=50000.0))
    nonrigid_friction: float = _spec(
        5.0, "m/s²", "μ_const: the least deceleration of a region's rms relative speed, so a "
        "knit comes to rest instead of creeping (Kaldor §4.5.2, Table 4.3: 500 cm/s²)",
        0.0, 1.0e4, display=Display("m/s²", 1.0, "Non-rigid Friction", 2, soft_max=50.0))
    nonrigid_damping_large: float = _spec(
        5060.0, "1/s", "the second pass of the filter: rate at which the motion of 4 × 4-loop "
        "regions two loops apart relative to their rigid motion is removed (Kaldor §4.2.3, "
        "Table 4.1: α_large = 0.3 per 1/11800 s step)", 0.0, 1.0e6,
        display=Display("1/s", 1.0, "Large-region Damping", 0, soft_max=20000.0))
    pin_stiffness: float = _spec(
        1.0e3, "N/m²", "goal-spring stiffness per metre of yarn of a pin of weight 1 (soft pins "
        "pull with weight × this; weight 1 holds exactly)", 0.0, 1.0e9,
        display=Display("N/m²", 1.0, "Pin Stiffness", 0, soft_max=1.0e5))

    @classmethod
    def from_mapping(cls, values: dict[str, Any], base: "YarnParams | None" = None,
                     prefix: str = "yarn") -> "YarnParams":
        """Build from a dict, validating every key; unknown keys raise ParameterError."""
        return _from_mapping(cls, values, base, prefix)
