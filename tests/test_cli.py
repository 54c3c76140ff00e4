"""Command line: exit codes, one-line errors, result files.

Tests named ``test_real_simulate_*`` run the physics (``solver.simulation.simulate``); the others
replace it with a stand-in so that the CLI's own behaviour is tested exactly.
"""

import json
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import solver.formats.presets
from solver.cli import main
from scenarios import write_scene

REPO = Path(__file__).resolve().parent.parent
SCENE = """\
frames = 3
[cloth]
grid = { size = [0.5, 0.5], resolution = [4, 4] }
pin = [12, 15]
[solver]
model = "implicit"
"""


def run_module(*args, cwd=REPO):
    """``python -m solver ARGS`` in a fresh interpreter."""
    return subprocess.run([sys.executable, "-m", "solver", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=600)


class FakeResult:
    def __init__(self, spec, frames_done, error=None):
        vertices = spec.cloth.mesh.vertex_count
        self.positions = np.tile(spec.cloth.mesh.positions, (frames_done + 1, 1, 1))
        self.positions[:, :, 2] -= np.arange(frames_done + 1)[:, None] * 0.01
        self.triangles = np.array([[0, 1, 5], [0, 5, 4]], dtype=np.int64)
        self.error = error
        self.vertices = vertices
        self.frames_done = frames_done

    def arrays(self):
        return {"positions": self.positions, "triangles": self.triangles}

    def report(self):
        return {"frames": [{"frame": np.int64(i + 1), "max_strain": np.float64(0.01)}
                           for i in range(self.frames_done)],
                "totals": {"wall_time_s": 0.5, "max_strain": float("nan"),
                           "vertices": self.vertices, "shape": np.array([1, 2])}}


@pytest.fixture
def fake_simulate(monkeypatch):
    """Install a stand-in ``solver.simulation``; ``calls`` records (spec, progress) pairs."""
    calls = []
    module = types.ModuleType("solver.simulation")

    def simulate(spec, progress=None):
        calls.append((spec, progress))
        blow_up_at = module.blow_up_at
        done = spec.frames if blow_up_at is None else blow_up_at - 1
        for frame in range(1, done + 1):
            if progress is not None:
                progress({"frame": frame, "frames": spec.frames, "wall_time_s": 0.0031,
                          "max_strain": 0.004, "mean_strain": 0.001, "kinetic_energy_j": 0.1,
                          "iterations": 12, "substeps": 1})
        error = None if blow_up_at is None else f"simulation blew up at frame {blow_up_at}"
        return FakeResult(spec, done, error)

    module.simulate = simulate
    module.blow_up_at = None
    module.calls = calls
    monkeypatch.setitem(sys.modules, "solver.simulation", module)
    return module


# ---- scene and command-line errors: exit 2, one line on stderr ----

def test_malformed_scene_exits_2_with_one_line(tmp_path):
    path = write_scene(tmp_path, "frames = 0\n[cloth]\ngrid = {}\n")
    proc = run_module("run", path, "--out", tmp_path / "r.npz")
    assert proc.returncode == 2
    assert proc.stderr == "error: frames: must be >= 1, got 0\n"
    assert proc.stdout == ""
    assert not (tmp_path / "r.npz").exists()


@pytest.mark.parametrize("text, message", [
    ("frames = \n", "error: scene.toml: invalid TOML: "),
    ('[cloth]\nmesh = "cloth.obj"\n', "error: cloth.mesh: file not found: "),
    ('[cloth]\ngrid = {}\n[solver]\nmodel = "foo"\n',
     "error: solver.model: expected one of mass_spring, implicit, yarn, got 'foo'"),
    ("[cloth]\ngrid = { sise = [1.0, 1.0] }\n", "error: cloth.grid.sise: unknown key"),
])
def test_scene_errors_in_process(tmp_path, capsys, text, message):
    status = main(["run", str(write_scene(tmp_path, text)), "--out", str(tmp_path / "r.npz")])
    err = capsys.readouterr().err
    assert status == 2
    assert err.startswith(message) and err.count("\n") == 1


def test_missing_scene_file(tmp_path, capsys):
    assert main(["run", str(tmp_path / "nope.toml"), "--out", str(tmp_path / "r.npz")]) == 2
    expected = f"error: nope.toml: file not found: {tmp_path / 'nope.toml'}\n"
    assert capsys.readouterr().err == expected


def test_output_directory_is_checked_before_simulating(tmp_path, capsys, fake_simulate):
    scene = str(write_scene(tmp_path, SCENE))
    assert main(["run", scene, "--out", str(tmp_path / "no" / "r.npz")]) == 2
    assert capsys.readouterr().err == f"error: --out: directory does not exist: {tmp_path / 'no'}\n"
    assert main(["run", scene, "--out", str(tmp_path / "r.npz"),
                 "--report", str(tmp_path / "no" / "r.json")]) == 2
    assert capsys.readouterr().err.startswith("error: --report: directory does not exist")
    assert fake_simulate.calls == []


def test_usage_errors_exit_2(tmp_path, capsys):
    for argv in (["run", str(write_scene(tmp_path, SCENE))], [], ["frobnicate"]):
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 2
    capsys.readouterr()


# ---- the CLI around simulate(), with a stand-in simulation ----

def test_success_writes_result_and_report(tmp_path, capsys, fake_simulate):
    out, report = tmp_path / "result.npz", tmp_path / "report.json"
    status = main(["run", str(write_scene(tmp_path, SCENE)), "--out", str(out), "--report", str(report)])
    assert status == 0
    spec, progress = fake_simulate.calls[0]
    assert spec.frames == 3 and spec.cloth.pin_indices.tolist() == [12, 15]
    assert progress is not None
    with np.load(out) as data:
        assert sorted(data.files) == ["positions", "triangles"]
        assert data["positions"].shape == (4, 16, 3) and data["positions"].dtype == np.float64
        np.testing.assert_array_equal(data["triangles"], [[0, 1, 5], [0, 5, 4]])
    doc = json.loads(report.read_text())  # strict JSON: NaN became null, numpy became plain
    assert doc["totals"] == {"wall_time_s": 0.5, "max_strain": None, "vertices": 16,
                             "shape": [1, 2]}
    assert [f["frame"] for f in doc["frames"]] == [1, 2, 3]
    err = capsys.readouterr().err.splitlines()
    assert err == [f"frame {i}/3  3.1 ms  max strain 0.4%" for i in (1, 2, 3)]
    assert not list(tmp_path.glob("*.tmp"))


def test_quiet_suppresses_progress(tmp_path, capsys, fake_simulate):
    status = main(["run", str(write_scene(tmp_path, SCENE)), "--out", str(tmp_path / "r.npz"),
                   "--quiet"])
    assert status == 0
    assert fake_simulate.calls[0][1] is None
    assert capsys.readouterr().err == ""


def test_threads_sets_the_solver_threads_ceiling(tmp_path, capsys, fake_simulate, monkeypatch):
    from solver import threads

    seen = []
    monkeypatch.setattr(threads, "set_ceiling", seen.append)
    scene = str(write_scene(tmp_path, SCENE))
    assert main(["run", scene, "--out", str(tmp_path / "r.npz"), "--quiet", "--threads", "1"]) == 0
    assert seen == [1]
    for bad in ("0", "two"):
        with pytest.raises(SystemExit) as info:
            main(["run", scene, "--out", str(tmp_path / "r.npz"), "--threads", bad])
        assert info.value.code == 2
    assert "expected a thread count of at least 1, got '0'" in capsys.readouterr().err


def test_out_name_is_kept_exactly(tmp_path, fake_simulate):
    out = tmp_path / "result.data"
    assert main(["run", str(write_scene(tmp_path, SCENE)), "--out", str(out), "--quiet"]) == 0
    assert out.is_file() and not (tmp_path / "result.data.npz").exists()
    with np.load(out) as data:
        assert data["positions"].shape == (4, 16, 3)


def test_blow_up_writes_completed_frames_and_exits_1(tmp_path, capsys, fake_simulate):
    fake_simulate.blow_up_at = 3
    out, report = tmp_path / "r.npz", tmp_path / "r.json"
    status = main(["run", str(write_scene(tmp_path, SCENE)), "--out", str(out), "--report", str(report),
                   "--quiet"])
    assert status == 1
    assert capsys.readouterr().err == "error: simulation blew up at frame 3\n"
    with np.load(out) as data:
        assert data["positions"].shape == (3, 16, 3)  # frame 0 plus the 2 completed frames
    assert len(json.loads(report.read_text())["frames"]) == 2


def test_unwritable_output_exits_1(tmp_path, capsys, fake_simulate):
    (tmp_path / "r.npz").mkdir()  # a directory where the result should go
    status = main(["run", str(write_scene(tmp_path, SCENE)), "--out", str(tmp_path / "r.npz"), "--quiet"])
    assert status == 1
    assert capsys.readouterr().err.startswith("error: cannot write ")


def test_presets_command(tmp_path, capsys, monkeypatch):
    (tmp_path / "cotton.toml").write_text(
        '[preset]\nname = "Cotton"\ndescription = "Shirting"\n[material]\narea_density = 0.13\n')
    (tmp_path / "silk.toml").write_text('[preset]\nname = "Silk"\n')
    monkeypatch.setattr(solver.formats.presets, "preset_dir", lambda: tmp_path)
    assert main(["presets"]) == 0
    assert capsys.readouterr().out == "cotton  Cotton: Shirting\nsilk    Silk\n"
    (tmp_path / "broken.toml").write_text("[preset]\n")
    assert main(["presets"]) == 1
    assert "broken  (broken: preset broken.preset.name: missing)" in capsys.readouterr().out


# ---- end to end with the real physics (these depend on solver.simulation.simulate) ----

def test_real_simulate_success(tmp_path):
    out, report = tmp_path / "r.npz", tmp_path / "r.json"
    proc = run_module("run", write_scene(tmp_path, SCENE), "--out", out, "--report", report)
    assert proc.returncode == 0, proc.stderr
    assert "frame 3/3" in proc.stderr
    with np.load(out) as data:
        assert sorted(data.files) == ["positions", "triangles"]
        positions, triangles = data["positions"], data["triangles"]
    assert positions.shape == (4, 16, 3) and np.all(np.isfinite(positions))
    assert triangles.ndim == 2 and triangles.shape[1] == 3 and triangles.max() < 16
    np.testing.assert_allclose(positions[:, [12, 15]], positions[:1, [12, 15]].repeat(4, 0))
    assert positions[-1, 0, 2] < positions[0, 0, 2]  # the free corner falls
    assert isinstance(json.loads(report.read_text()), dict)


def test_real_simulate_blow_up(tmp_path):
    # A speed limit of 1 µm/s is exceeded during the first frame of free fall.
    scene = write_scene(tmp_path, SCENE + "max_speed = 1e-6\n")
    out = tmp_path / "r.npz"
    proc = run_module("run", scene, "--out", out, "--quiet")
    assert proc.returncode == 1
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    with np.load(out) as data:
        assert 1 <= data["positions"].shape[0] < 4
