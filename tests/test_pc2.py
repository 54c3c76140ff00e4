"""PC2 point caches (solver/formats/pc2.py): the layout Blender's Mesh Cache modifier and 3ds Max
read, written a frame at a time so that a reader between two frames sees whole frames only."""

from __future__ import annotations

import struct

import numpy as np
import pytest

from solver.formats.pc2 import PC2Error, PC2Writer, read_header, read_pc2, write_pc2


def test_the_file_is_the_documented_layout(tmp_path):
    frames = np.arange(2 * 3 * 3, dtype=np.float32).reshape(2, 3, 3)
    path = tmp_path / "a.pc2"
    write_pc2(path, frames, start=5.0)
    raw = path.read_bytes()
    assert raw[:12] == b"POINTCACHE2\0"
    assert struct.unpack("<iiffi", raw[12:32]) == (1, 3, 5.0, 1.0, 2)
    assert np.array_equal(np.frombuffer(raw[32:], "<f4").reshape(2, 3, 3), frames)
    got, start = read_pc2(path)
    assert start == 5.0 and got.dtype == np.float32 and np.array_equal(got, frames)


def test_frames_appended_one_at_a_time_are_counted_only_once_written(tmp_path):
    path = tmp_path / "b.pc2"
    rng = np.random.default_rng(1)
    with PC2Writer(path, 4, start=1.0) as w:
        assert read_header(path) == (4, 1.0, 1.0, 0)
        first = rng.normal(size=(4, 3))
        w.append(first)
        assert read_header(path)[3] == 1
        np.testing.assert_array_equal(read_pc2(path)[0][0], first.astype(np.float32))
        for _ in range(3):
            w.append(rng.normal(size=(4, 3)))
        w.truncate(2)  # a stopped bake keeps the first frames
    frames, _ = read_pc2(path)
    assert frames.shape == (2, 4, 3)
    assert path.stat().st_size == 32 + 2 * 4 * 12


def test_bad_input_is_named(tmp_path):
    with PC2Writer(tmp_path / "c.pc2", 4) as w:
        with pytest.raises(PC2Error, match=r"a frame of \(3, 3\) positions in a cache of 4"):
            w.append(np.zeros((3, 3)))
        with pytest.raises(PC2Error, match="cannot keep 1 of 0 frames"):
            w.truncate(1)
    (tmp_path / "d.pc2").write_bytes(b"not a cache at all, longer than a header")
    with pytest.raises(PC2Error, match="is not a PC2 point cache"):
        read_pc2(tmp_path / "d.pc2")
    write_pc2(tmp_path / "e.pc2", np.zeros((2, 4, 3)))
    (tmp_path / "e.pc2").write_bytes((tmp_path / "e.pc2").read_bytes()[:-4])
    with pytest.raises(PC2Error, match="ends before its 2 frames of 4 vertices"):
        read_pc2(tmp_path / "e.pc2")
