"""Yarn-level knits: Kaldor's model ([Kaldor2011]; docs/yarn.md).

Stitch generator (``knit_swatch``), relaxation into a rest state (``relax_swatch``), and the
yarn dynamics (``YarnSimulation``): inextensible polyline rods, bending, Kaldor's yarn–yarn
contact, colliders, non-rigid damping, a step refined so that no yarn passes through another.
"""

from .colliders import YarnColliders
from .damping import loop_regions
from .dynamics import YarnSimulation, YarnStepError
from .presets import list_yarn_presets, load_yarn_preset
from .relax import relax, relax_swatch
from .stitches import PATTERNS, Swatch, knit_swatch

__all__ = ["PATTERNS", "Swatch", "YarnColliders", "YarnSimulation", "YarnStepError", "knit_swatch",
           "list_yarn_presets", "load_yarn_preset", "loop_regions", "relax", "relax_swatch"]
