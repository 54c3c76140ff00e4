"""Yarn against a horizontal plane (a table or floor at z = height), by projection.

Kaldor handles colliders with a distance field as a velocity filter that brings the yarn to the
surface and applies an approximate friction response ([Kaldor2011] §4.2.4, with [Bridson2002]).
Here the same at the position level, inside the step: a point whose centre is below
height + r (the yarn's surface would be inside the plane) is lifted onto it, and its tangential
motion over the step is reduced by μ times the lift (Coulomb friction as a position
correction: a point pressed harder sticks, one grazing the plane slides). The step's velocity
is then (x⁺ − x)/h, so the lift also removes the velocity into the plane.
"""

from __future__ import annotations

from .._jit import njit


@njit
def project_plane(x_start, x, inv_mass, height, radius, friction):
    """Lift points of x (P, 3) [m] in place onto z ≥ height + radius, with friction.

    Args:
        x_start: (P, 3) positions at the start of the step [m] (the tangential motion that
            friction reduces is x − x_start).
        inv_mass: (P,) [1/kg]; pinned points (0) are left alone.
        height: the plane's z [m]; radius: yarn radius r [m]; friction: μ (dimensionless).

    Returns:
        number of points in contact.
    """
    floor = height + radius
    n = 0
    for i in range(x.shape[0]):
        if inv_mass[i] == 0.0 or x[i, 2] >= floor:
            continue
        lift = floor - x[i, 2]
        x[i, 2] = floor
        n += 1
        tx = x[i, 0] - x_start[i, 0]
        ty = x[i, 1] - x_start[i, 1]
        t = (tx * tx + ty * ty) ** 0.5
        if t <= 0.0:
            continue
        keep = max(0.0, 1.0 - friction * lift / t)
        x[i, 0] = x_start[i, 0] + keep * tx
        x[i, 1] = x_start[i, 1] + keep * ty
    return n
