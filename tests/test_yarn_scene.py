"""Knit scene files ([knit] tables, read by solver/formats/scene.py) run by the yarn model
through the command line, as cloth scenes are."""

import json

import numpy as np
import pytest

from solver.cli import main

SCENE = """
frames = 2
fps = 200.0
gravity = [0.0, 0.0, -9.81]
[knit]
pattern = "garter"
stitches = [3, 3]
yarn = "wool_worsted"
center = [0.0, 0.0, 0.5]
pin = "top"
relax = 0.005
[solver]
model = "yarn"
"""


def _write(tmp_path, text):
    path = tmp_path / "knit.toml"
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_knit_scene_writes_every_yarn_point_per_frame(tmp_path, capsys):
    out, report = tmp_path / "r.npz", tmp_path / "r.json"
    status = main(["run", _write(tmp_path, SCENE), "--out", str(out), "--report", str(report),
                   "--quiet"])
    assert status == 0, capsys.readouterr().err
    with np.load(out) as r:
        x, offsets, radius = r["positions"], r["yarn_offsets"], float(r["radius"])
    assert x.shape[0] == 3 and x.shape[2] == 3
    # the knit's yarn, then the cast-on's and the bind-off's (finished edges)
    assert len(offsets) == 4 and offsets[0] == 0 and offsets[-1] == x.shape[1]
    assert radius == pytest.approx(1.25e-3)
    assert np.isfinite(x).all()
    # the swatch hangs in the x–z plane around its centre, courses along x, wales up z
    middle = 0.5 * (x[0].min(axis=0) + x[0].max(axis=0))
    assert np.allclose(middle, [0.0, 0.0, 0.5], atol=1e-9)
    span = x[0].max(axis=0) - x[0].min(axis=0)
    assert span[0] > span[2] / 2 > span[1] / 2
    rep = json.loads(report.read_text())
    assert rep["model"] == "yarn" and len(rep["frames"]) == 2 and rep["error"] is None
    assert rep["frames"][-1]["closest_yarns_m"] >= 0.1 * 2 * 1.25e-3


@pytest.mark.parametrize("change, key", [
    (('pattern = "garter"', 'pattern = "cable"'), "knit.pattern"),
    (('pattern = "garter"', 'pattern = "k2p0"'), "knit.pattern"),
    (('pattern = "garter"', "pattern = 3"), "knit.pattern"),
    (("stitches = [3, 3]", "stitches = [3, 0]"), "knit.stitches[1]"),
    (("stitches = [3, 3]", "stitches = [3]"), "knit.stitches"),
    (('yarn = "wool_worsted"', 'yarn = "mohair"'), "knit.yarn"),
    (('yarn = "wool_worsted"', "yarn = { radius = 1e-3 }"), "knit.yarn"),
    (('yarn = "wool_worsted"', "yarn = { radius = -1e-3, linear_density = 4e-4 }"),
     "knit.yarn.radius"),
    (('pin = "top"', 'pin = "bottom"'), "knit.pin"),
    (("relax = 0.005", "relax = -1"), "knit.relax"),
    (("relax = 0.005", "rows = 4"), "knit.rows"),
    (('pin = "top"', 'pin = [0, 0]'), "knit.pin[1]"),
    (('pin = "top"', 'pin = "top"\nedges = "yes"'), "knit.edges"),
    (('pin = "top"', 'pin = [0]\npin_weights = [1.5]'), "knit.pin_weights[0]"),
    (('pin = "top"', 'pin = [0, 1]\npin_weights = [1.0]'), "knit.pin_weights"),
    (('pin = "top"', 'pin = [0]\npin_motion = "none.npz"'), "knit.pin_motion"),
    (('model = "yarn"', 'model = "implicit"'), "solver.model"),
    (('model = "yarn"', 'model = "yarn"\nsubsteps = 3'), "solver.substeps"),
    (("fps = 200.0", "fps = 0"), "fps"),
])
def test_malformed_knit_tables_exit_2_naming_the_key(tmp_path, capsys, change, key):
    text = SCENE.replace(*change)
    assert text != SCENE
    status = main(["run", _write(tmp_path, text), "--out", str(tmp_path / "r.npz"), "--quiet"])
    err = capsys.readouterr().err
    assert status == 2
    assert err.startswith(f"error: {key}:"), err
    assert not (tmp_path / "r.npz").exists()


def test_a_knit_scene_takes_a_repeat_as_its_pattern(tmp_path, capsys):
    out = tmp_path / "r.npz"
    text = SCENE.replace('pattern = "garter"', 'pattern = "k1p1/p1k1"')
    assert text != SCENE
    assert main(["run", _write(tmp_path, text), "--out", str(out), "--quiet"]) == 0, \
        capsys.readouterr().err
    seed = tmp_path / "seed.npz"
    assert main(["run", _write(tmp_path, SCENE.replace('pattern = "garter"', 'pattern = "seed"')),
                 "--out", str(seed), "--quiet"]) == 0
    with np.load(out) as a, np.load(seed) as b:     # the same stitches as the named pattern
        assert np.array_equal(a["positions"], b["positions"])


def test_a_knit_scene_may_leave_its_edges_raw(tmp_path, capsys):
    out = tmp_path / "r.npz"
    text = SCENE.replace('pin = "top"', 'pin = "top"\nedges = false')
    assert main(["run", _write(tmp_path, text), "--out", str(out), "--quiet"]) == 0, \
        capsys.readouterr().err
    with np.load(out) as r:
        assert list(r["yarn_offsets"]) == [0, r["positions"].shape[1]]
