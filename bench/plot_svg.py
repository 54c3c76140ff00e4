"""A log-log line plot as a standalone SVG file (no plotting dependency for one benchmark figure).

    write_loglog("docs/benchmark_time.svg", {"ours": [(1089, 180.0), (4225, 810.0)]},
                 "vertices", "ms per frame", "Hanging cloth")
"""

from __future__ import annotations

import math
from pathlib import Path

_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
            "#7f7f7f", "#bcbd22", "#17becf")
_W, _H, _L, _R, _T, _B = 720, 440, 70, 230, 40, 50  # size and margins [px]


def _ticks(lo: float, hi: float) -> list[float]:
    """Powers of ten and their 2x/5x steps covering [lo, hi]."""
    out = []
    for e in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        out += [m * 10.0 ** e for m in (1, 2, 5) if lo <= m * 10.0 ** e <= hi]
    return out


def write_loglog(path, series: dict[str, list[tuple[float, float]]], xlabel: str,
                 ylabel: str, title: str) -> None:
    """Write one polyline (with markers) per named series of (x, y) points, both axes log."""
    pts = [p for s in series.values() for p in s if p[0] > 0 and p[1] > 0]
    if not pts:
        raise ValueError("nothing to plot")
    x0, x1 = min(p[0] for p in pts) / 1.3, max(p[0] for p in pts) * 1.3
    y0, y1 = min(p[1] for p in pts) / 1.5, max(p[1] for p in pts) * 1.5

    def sx(x):
        return _L + (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0)) * (_W - _L - _R)

    def sy(y):
        return _H - _B - (math.log(y) - math.log(y0)) / (math.log(y1) - math.log(y0)) * (_H - _T - _B)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{_W}" height="{_H}" fill="white"/>',
           f'<text x="{_L}" y="22" font-size="15">{title}</text>']
    for t in _ticks(x0, x1):
        out.append(f'<line x1="{sx(t):.1f}" y1="{_T}" x2="{sx(t):.1f}" y2="{_H - _B}" stroke="#ddd"/>')
        out.append(f'<text x="{sx(t):.1f}" y="{_H - _B + 16}" text-anchor="middle">{t:g}</text>')
    for t in _ticks(y0, y1):
        out.append(f'<line x1="{_L}" y1="{sy(t):.1f}" x2="{_W - _R}" y2="{sy(t):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{_L - 6}" y="{sy(t) + 4:.1f}" text-anchor="end">{t:g}</text>')
    out.append(f'<rect x="{_L}" y="{_T}" width="{_W - _L - _R}" height="{_H - _T - _B}" '
               f'fill="none" stroke="black"/>')
    out.append(f'<text x="{(_L + _W - _R) / 2}" y="{_H - 12}" text-anchor="middle">{xlabel}</text>')
    out.append(f'<text transform="translate(18 {(_T + _H - _B) / 2}) rotate(-90)" '
               f'text-anchor="middle">{ylabel}</text>')
    for k, (name, s) in enumerate(series.items()):
        c = _COLOURS[k % len(_COLOURS)]
        s = sorted(p for p in s if p[0] > 0 and p[1] > 0)
        if not s:
            continue
        dash = ' stroke-dasharray="5 3"' if name.startswith("Blender") else ""
        line = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in s)
        out.append(f'<polyline points="{line}" fill="none" stroke="{c}" stroke-width="2"{dash}/>')
        out += [f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3.5" fill="{c}"/>' for x, y in s]
        ly = _T + 14 + 18 * k
        out.append(f'<line x1="{_W - _R + 12}" y1="{ly - 4}" x2="{_W - _R + 36}" y2="{ly - 4}" '
                   f'stroke="{c}" stroke-width="2"{dash}/>')
        out.append(f'<text x="{_W - _R + 42}" y="{ly}">{name}</text>')
    out.append("</svg>")
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text("\n".join(out) + "\n")
