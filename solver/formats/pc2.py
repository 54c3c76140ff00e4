"""Point caches in the PC2 format (3ds Max's Point Cache 2), which Blender's Mesh Cache modifier
reads natively: a 32-byte header, then every frame's vertex positions as little-endian float32
(x, y, z per vertex, frame after frame).

Header: ``b"POINTCACHE2\\0"``, version (int32, 1), vertex count (int32), first frame (float32),
frames per sample (float32, 1 here) and the number of samples (int32). ``PC2Writer`` appends
one frame at a time and updates the sample count after each frame's data is on disk, so a
reader that opens the file between two frames (Blender evaluating the modifier while a bake
runs) sees whole frames only.
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np

MAGIC = b"POINTCACHE2\0"
_HEADER = struct.Struct("<12siiffi")
_COUNT_OFFSET = _HEADER.size - 4  # where the sample count sits in the header


class PC2Error(ValueError):
    """A file that is not a PC2 cache, or frames that do not fit it."""


class PC2Writer:
    """Writes ``path`` frame by frame: ``append(positions)`` with (V, 3) positions; the first
    frame is the cache's sample 0, shown at scene frame ``start``."""

    def __init__(self, path, vertex_count: int, start: float = 0.0, sampling: float = 1.0):
        self.path = Path(path)
        self.vertex_count = int(vertex_count)
        self.frames = 0
        self._file = open(self.path, "w+b")
        self._file.write(_HEADER.pack(MAGIC, 1, self.vertex_count, float(start),
                                      float(sampling), 0))
        self._file.flush()

    def append(self, positions: np.ndarray) -> None:
        data = np.ascontiguousarray(positions, dtype="<f4")
        if data.shape != (self.vertex_count, 3):
            raise PC2Error(f"a frame of {data.shape} positions in a cache of "
                           f"{self.vertex_count} vertices")
        f = self._file
        f.seek(_HEADER.size + 12 * self.vertex_count * self.frames)
        f.write(data.tobytes())
        f.flush()
        self.frames += 1
        f.seek(_COUNT_OFFSET)
        f.write(struct.pack("<i", self.frames))
        f.flush()

    def truncate(self, frames: int) -> None:
        """Keep only the first ``frames`` frames (a bake stopped after fewer than were
        written)."""
        if not 0 <= frames <= self.frames:
            raise PC2Error(f"cannot keep {frames} of {self.frames} frames")
        f = self._file
        f.seek(_COUNT_OFFSET)
        f.write(struct.pack("<i", frames))
        f.flush()
        f.truncate(_HEADER.size + 12 * self.vertex_count * frames)
        self.frames = frames

    def close(self) -> None:
        if not self._file.closed:
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def write_pc2(path, frames: np.ndarray, start: float = 0.0) -> None:
    """Write a whole cache: ``frames`` (F, V, 3)."""
    frames = np.asarray(frames)
    with PC2Writer(path, frames.shape[1], start) as w:
        for positions in frames:
            w.append(positions)


def read_header(path) -> tuple[int, float, float, int]:
    """(vertex count, first frame, frames per sample, samples) of a PC2 file."""
    with open(path, "rb") as f:
        head = f.read(_HEADER.size)
    if len(head) < _HEADER.size or head[:12] != MAGIC:
        raise PC2Error(f"{path} is not a PC2 point cache")
    _, _version, verts, start, sampling, samples = _HEADER.unpack(head)
    return verts, start, sampling, samples


def read_pc2(path) -> tuple[np.ndarray, float]:
    """(frames (F, V, 3) float32, first frame) of a PC2 file."""
    verts, start, _sampling, samples = read_header(path)
    data = np.fromfile(path, dtype="<f4", offset=_HEADER.size, count=samples * verts * 3)
    if data.size != samples * verts * 3:
        raise PC2Error(f"{path} ends before its {samples} frames of {verts} vertices")
    return data.reshape(samples, verts, 3), start
