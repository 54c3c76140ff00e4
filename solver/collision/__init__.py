"""Collisions: colliders (spheres, planes, triangle meshes), self-collision, continuous
collision detection and the response pipeline run after every step.

Modules: ``vector`` (tuple 3-vectors), ``closest`` (closest points), ``ccd`` (continuous
tests), ``bvh`` (refitted box trees), ``features`` (feature ownership), ``narrow_phase``
(exact pair tests), ``analytic`` (spheres and planes), ``response`` (impulses with friction),
``impact_zones`` (rigid fail-safe), ``colliders`` (collider arrays and motion),
``intersections`` (independent checks for the report), ``pipeline`` (the whole step),
``constraints`` (collider contacts as constraints of the implicit solve).
"""

from .colliders import ColliderFrame, ColliderSet, ColliderState
from .pipeline import CollisionHandler, CollisionStats, IntersectionReport

__all__ = ["ColliderFrame", "ColliderSet", "ColliderState", "CollisionHandler", "CollisionStats",
           "IntersectionReport"]
