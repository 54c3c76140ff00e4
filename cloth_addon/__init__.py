"""Blender side of the extension (UI, bake to shape keys): the next milestone (issue 4)."""


def register():
    pass


def unregister():
    pass
