"""The editors of Blender's first window, for the scripts that drive a real window
(tests/blender/*_ui_session.py, scripts/screenshot_panels.py)."""

from __future__ import annotations

import bpy


def window_context(area=None):
    """A context override for the first window (and ``area`` of it)."""
    win = bpy.context.window_manager.windows[0]
    if area is None:
        return bpy.context.temp_override(window=win, screen=win.screen)
    return bpy.context.temp_override(window=win, screen=win.screen, area=area)


def properties_area(width: int = 320):
    """A full-height Properties editor ``width`` px wide (320: Blender's default Properties
    editor at resolution scale 1), split off the left of the 3D view: the splash screen in the
    middle of the window stays clear of it."""
    win = bpy.context.window_manager.windows[0]
    view3d = next(a for a in win.screen.areas if a.type == "VIEW_3D")
    before = set(win.screen.areas[:])
    with window_context(view3d):
        bpy.ops.screen.area_split(direction="VERTICAL", factor=width / view3d.width)
    new = [a for a in win.screen.areas if a not in before] or [view3d]
    area = min([*new, view3d], key=lambda a: abs(a.width - width))
    area.type = "PROPERTIES"
    return area
