"""How the add-on writes a figure in its panels, reports and console lines: one form for each
kind, so that the same number reads the same wherever an artist meets it."""

from __future__ import annotations


def frame_range(start: int, end: int) -> str:
    """'1-48': a hyphen-minus, as Blender writes ranges in its own reports."""
    return f"{start}-{end}"


def count(n: int, thing: str, things: str | None = None) -> str:
    """'1 cloth object', '2 cloth objects': a count with its noun in the number it needs."""
    return f"{n} {thing if n == 1 else things or thing + 's'}"


def duration(seconds: float) -> str:
    """A wall time in two or three significant figures, never an exponent: '4.2 ms', '33 ms',
    '0.39 s', '12.4 s', '154 s', '12 min 05 s'."""
    t = max(0.0, float(seconds))
    if t < 0.00995:  # (the limits are where the shorter form would round up to the next)
        return f"{1e3 * t:.1f} ms"
    if t < 0.0995:
        return f"{1e3 * t:.0f} ms"
    if t < 9.995:
        return f"{t:.2f} s"
    if t < 99.95:
        return f"{t:.1f} s"
    if t < 599.5:
        return f"{t:.0f} s"
    minutes, rest = divmod(round(t), 60)
    return f"{minutes} min {rest:02d} s"


def per_frame(seconds: float, frames: int) -> str:
    """The wall time of one of ``frames`` frames that took ``seconds``: '33 ms/frame'."""
    return f"{duration(max(0.0, float(seconds)) / max(1, frames))}/frame"


def strain(value: float) -> str:
    """A strain as a percentage: '0.42%'."""
    return f"{100.0 * value:.2f}%"


def millimetres(metres: float) -> str:
    """A penetration depth or a thickness in millimetres: '1.20 mm'."""
    return f"{1e3 * metres:.2f} mm"
