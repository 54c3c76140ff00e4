"""What the renders share: materials, mesh objects, a sun and sky, a camera aimed at a point,
Cycles on the CPU, and frames put side by side.

Used by scripts/demo_blender.py (the demo) and scripts/render_*.py (the pictures in docs/), in
the bpy wheel (Blender as a module, no display). Every function takes ``bpy`` (and the scene)
as an argument, so importing this module does not import Blender.
"""

from __future__ import annotations

import math
from pathlib import Path


def material(bpy, name, rgb, roughness=0.6):
    """A Principled BSDF material of base colour ``rgb`` (linear, 0..1)."""
    mat = bpy.data.materials.new(name)
    if mat.node_tree is None:  # before Blender 5 a new material has no nodes yet
        mat.use_nodes = True
    bsdf = next(n for n in mat.node_tree.nodes if n.type == "BSDF_PRINCIPLED")
    bsdf.inputs["Base Color"].default_value = (*rgb, 1.0)
    bsdf.inputs["Roughness"].default_value = roughness
    return mat


def mesh_object(bpy, name, verts, faces, mat=None, smooth=True, edges=()):
    """A mesh object linked into the scene: ``verts`` (V, 3), ``faces`` lists of vertex indices,
    ``edges`` loose edges (pairs)."""
    me = bpy.data.meshes.new(name)
    me.from_pydata([tuple(map(float, v)) for v in verts], [tuple(map(int, e)) for e in edges],
                   [tuple(map(int, f)) for f in faces])
    me.update()
    for p in me.polygons:
        p.use_smooth = smooth
    if mat is not None:
        me.materials.append(mat)
    ob = bpy.data.objects.new(name, me)
    bpy.context.scene.collection.objects.link(ob)
    return ob


def sun_and_sky(bpy, scene, rotation_deg, energy, sky_rgb, strength):
    """A sun turned by ``rotation_deg`` (Euler XYZ, degrees) and a uniform sky of colour
    ``sky_rgb`` and ``strength``."""
    sun = bpy.data.objects.new("Sun", bpy.data.lights.new("Sun", "SUN"))
    scene.collection.objects.link(sun)
    sun.rotation_euler = tuple(math.radians(a) for a in rotation_deg)
    sun.data.energy = energy
    world = bpy.data.worlds.new("World")
    if world.node_tree is None:
        world.use_nodes = True
    background = world.node_tree.nodes["Background"]
    background.inputs["Color"].default_value = (*sky_rgb, 1.0)
    background.inputs["Strength"].default_value = strength
    scene.world = world
    return sun


def camera(bpy, scene, eye, target=None, rotation=None, lens=None, ortho_scale=None,
           clip_start=None, name="Camera"):
    """The scene's camera at ``eye``, looking at ``target`` (up is +Y of the view, no roll), or
    turned by ``rotation`` (Euler XYZ, radians); orthographic when ``ortho_scale`` is given."""
    import mathutils
    cam = bpy.data.objects.new(name, bpy.data.cameras.new(name))
    scene.collection.objects.link(cam)
    cam.location = eye
    if target is not None:
        look = mathutils.Vector(target) - cam.location
        cam.rotation_euler = look.to_track_quat("-Z", "Y").to_euler()
    else:
        cam.rotation_euler = rotation
    if ortho_scale is not None:
        cam.data.type = "ORTHO"
        cam.data.ortho_scale = ortho_scale
    if lens is not None:
        cam.data.lens = lens
    if clip_start is not None:
        cam.data.clip_start = clip_start
    scene.camera = cam
    return cam


def cycles(scene, resolution, samples, denoise=False, max_bounces=None):
    """Cycles on the CPU, ``samples`` per pixel, PNG at ``resolution`` (x, y) px; ``denoise``
    None keeps Blender's default."""
    r = scene.render
    r.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = samples
    if denoise is not None:
        scene.cycles.use_denoising = denoise
    if max_bounces is not None:
        scene.cycles.max_bounces = max_bounces
    r.resolution_x, r.resolution_y = resolution
    r.resolution_percentage = 100
    r.image_settings.file_format = "PNG"


def render_still(bpy, scene, path) -> Path:
    """Render the current frame into ``path`` (PNG)."""
    scene.render.filepath = str(path)
    bpy.ops.render.render(write_still=True)
    return Path(path)


def side_by_side(paths, out) -> Path:
    """The images at ``paths`` in one row (top-aligned), saved as ``out``."""
    from PIL import Image
    images = [Image.open(p).convert("RGB") for p in paths]
    row = Image.new("RGB", (sum(im.width for im in images), max(im.height for im in images)),
                    (255, 255, 255))
    x = 0
    for im in images:
        row.paste(im, (x, 0))
        x += im.width
    row.save(out)
    return Path(out)


def stacked(paths, out, head=0, texts=()) -> Path:
    """The images at ``paths`` one above the other under a white band ``head`` px high, with
    ``texts``: (x, y, text, font size, grey level 0..255, anchor) each; saved as ``out``."""
    from PIL import Image, ImageDraw, ImageFont
    images = [Image.open(p).convert("RGB") for p in paths]
    img = Image.new("RGB", (max(im.width for im in images), head + sum(im.height for im in images)),
                    (255, 255, 255))
    y = head
    for im in images:
        img.paste(im, (0, y))
        y += im.height
    draw = ImageDraw.Draw(img)
    for x, y, text, size, grey, anchor in texts:
        try:
            font = ImageFont.load_default(size=size)
        except TypeError:  # Pillow < 10.1 has one default size
            font = ImageFont.load_default()
        draw.text((x, y), text, fill=(grey, grey, grey), font=font, anchor=anchor)
    img.save(out)
    return Path(out)
