"""The documented headless recipe with a real ``blender`` binary: bake with
``--python-expr "import bpy; bpy.ops.cloth_solver.bake()"``, then render; progress lines and a
summary on stdout; a failed bake ends Blender with a non-zero exit status; a bake from a
``--python`` script file exits 0 (Blender 3.4 used to segfault on exit); with
``--python-exit-code 1`` a bake whose add-on is not enabled exits 1; Blender killed in the
middle of a bake-and-save leaves the saved file and its previous bake as they were."""

from __future__ import annotations

import os
import signal
import subprocess
import bpy
import numpy as np
import pytest

from scenes import cloth, evaluated_world, key_state, same_key_state

pytestmark = pytest.mark.skipif(
    not bpy.app.binary_path or bpy.app.version >= (4, 2, 0),
    reason="runs the blender binary with the legacy add-on (Debian's blender -b session)")


def _command(scripts, blend, *args, addon=True):
    """``blender -b blend`` with the add-on this session enabled (a copy of the checkout in
    ``scripts/addons/cloth_solver``) as a user add-on: the command and its environment."""
    assert (scripts / "addons" / "cloth_solver" / "__init__.py").is_file()
    env = {k: v for k, v in os.environ.items() if k != "CLOTH_SOLVER_NO_EXIT"}
    env["BLENDER_USER_SCRIPTS"] = str(scripts)
    cmd = [bpy.app.binary_path, "-b", "--factory-startup", str(blend),
           *(["--addons", "cloth_solver"] if addon else []), *args]
    return cmd, env


def _blender(scripts, blend, *args, addon=True):
    cmd, env = _command(scripts, blend, *args, addon=addon)
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)


def _scene(tmp_path, pin_group="pins"):
    obj = cloth(n=5, pins=[20, 24], frames=(1, 4))
    obj.cloth_solver.pin_group = pin_group
    scene = bpy.context.scene
    cam = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    scene.collection.objects.link(cam)
    cam.location, cam.rotation_euler = (0, -3, 1), (1.4, 0, 0)
    scene.camera = cam
    scene.render.engine = "CYCLES"
    scene.cycles.device, scene.cycles.samples, scene.cycles.use_denoising = "CPU", 1, False
    scene.render.resolution_x = scene.render.resolution_y = 32
    scene.render.image_settings.file_format = "PNG"
    scene.render.filepath = str(tmp_path / "render_")
    blend = tmp_path / "scene.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    return blend


def test_headless_bake_then_render(tmp_path, scratch_root):
    blend = _scene(tmp_path)
    run = _blender(scratch_root, blend, "--python-expr", "import bpy; bpy.ops.cloth_solver.bake()",
                   "-f", "3")
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "cloth_solver: baking 3 frames (1-4" in run.stdout
    for frame in (2, 3, 4):
        assert f"cloth_solver: frame {frame} of 1-4 Cloth:" in run.stdout
    assert "cloth_solver: Baked 1 cloth object (Cloth), frames 1-4" in run.stdout
    image = tmp_path / "render_0003.png"
    assert image.is_file() and image.stat().st_size > 0


def test_headless_failure_exits_non_zero(tmp_path, scratch_root):
    blend = _scene(tmp_path, pin_group="no such group")
    run = _blender(scratch_root, blend, "--python-expr", "import bpy; bpy.ops.cloth_solver.bake()",
                   "-f", "3")
    assert run.returncode == 1
    assert "bake failed: 'Cloth': pin group 'no such group' does not exist" in run.stderr
    assert not (tmp_path / "render_0003.png").exists()  # Blender stopped at the failure


BAKE_SCRIPT = """
import multiprocessing  # as farm scripts often do; Blender 3.4 crashed on exit after it
import bpy
bpy.ops.cloth_solver.bake()
bpy.ops.wm.save_mainfile()
"""


def test_headless_bake_from_a_script_file_exits_zero(tmp_path, scratch_root):
    blend = _scene(tmp_path)
    script = tmp_path / "bake.py"
    script.write_text(BAKE_SCRIPT)
    run = _blender(scratch_root, blend, "--python-exit-code", "1", "--python", str(script))
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "cloth_solver: Baked 1 cloth object (Cloth), frames 1-4" in run.stdout
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    assert bpy.data.objects["Cloth"].cloth_solver.is_baked


def test_headless_bake_without_the_addon_exits_non_zero(tmp_path, scratch_root):
    """What a farm sees when the add-on is not enabled: the README recipe's
    ``--python-exit-code 1`` turns the missing operator into exit status 1 (Blender's default
    would exit 0)."""
    blend = _scene(tmp_path)
    run = _blender(scratch_root, blend, "--python-exit-code", "1", "--python-expr",
                   "import bpy; bpy.ops.cloth_solver.bake()", addon=False)
    assert run.returncode == 1
    assert "cloth_solver.bake" in run.stdout + run.stderr


@pytest.mark.parametrize("signame", ["SIGKILL", "SIGTERM"])
def test_blender_killed_mid_bake_leaves_the_saved_file_and_its_bake(tmp_path, scratch_root,
                                                                    signame):
    blend = _scene(tmp_path)
    assert bpy.ops.cloth_solver.bake() == {"FINISHED"}  # the previous bake, frames 1-4
    obj = bpy.data.objects["Cloth"]
    bpy.context.scene.frame_set(2)
    before = key_state(obj)
    worlds = [evaluated_world(obj, f) for f in range(1, 5)]
    bpy.context.scene.cloth_solver.frame_end = 2000  # the bake that gets killed: a long one
    bpy.ops.wm.save_mainfile()
    saved = blend.read_bytes()

    cmd, env = _command(scratch_root, blend, "--python-expr",
                        "import bpy; bpy.ops.cloth_solver.bake(); bpy.ops.wm.save_mainfile()")
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env)
    try:
        seen = []
        for line in proc.stdout:  # progress lines are flushed one by one
            seen.append(line)
            if line.startswith("cloth_solver: frame 6 of 1-2000"):
                break
        assert proc.poll() is None, "".join(seen[-30:])  # still baking
        proc.send_signal(getattr(signal, signame))
        proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == -getattr(signal, signame)  # it died of the signal, mid-bake

    assert blend.read_bytes() == saved  # the file on disk is the one saved before
    assert not list(tmp_path.glob("*.blend@"))  # no half-written temporary file left behind
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    obj = bpy.data.objects["Cloth"]
    s = obj.cloth_solver
    assert (s.is_baked, s.bake_frame_start, s.bake_frame_end) == (True, 1, 4)
    bpy.context.scene.frame_set(2)
    assert same_key_state(before, key_state(obj))  # no cloth_0005..., no key changed
    for f, world in zip(range(1, 5), worlds):
        np.testing.assert_array_equal(evaluated_world(obj, f), world)
