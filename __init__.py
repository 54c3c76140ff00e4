"""Blender extension entry point: everything Blender-facing lives in ``cloth_addon``."""


def register():
    from . import cloth_addon
    cloth_addon.register()


def unregister():
    from . import cloth_addon
    cloth_addon.unregister()
