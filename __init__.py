"""Blender entry point: everything Blender-facing lives in ``cloth_addon``.

Blender 4.2+ installs this folder as an extension (``blender_manifest.toml``); older Blender
(e.g. Debian's 3.4) loads the same code as a legacy add-on through ``bl_info``.
"""

bl_info = {
    "name": "Cloth Solver",
    "author": "Cloth Solver developers",
    "version": (0, 1, 0),
    "blender": (3, 4, 0),
    "location": "Properties > Physics > Cloth Solver",
    "description": "Mass-spring and implicit cloth in SI units, baked to shape keys",
    "category": "Physics",
}


def register():
    from . import cloth_addon
    cloth_addon.register()


def unregister():
    from . import cloth_addon
    cloth_addon.unregister()
