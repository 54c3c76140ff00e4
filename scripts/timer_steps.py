"""Run a generator of steps inside Blender with a window, one step per timer call.

The scripts that drive a real Blender window (tests/blender/ui_session.py,
tests/blender/warmup_ui_session.py, scripts/screenshot_panels.py) yield the delay [s] before
their next step, so Blender redraws and handles events in between. Blender quits when the
steps end or one fails.
"""

from __future__ import annotations

import traceback
from typing import Callable, Iterator

import bpy


def run_steps(steps: Iterator[float], on_end: Callable[[str | None], None] | None = None,
              first_interval: float = 0.5) -> None:
    """Register a timer that advances ``steps``; when they end (or raise), call
    ``on_end(traceback text or None)`` and quit Blender."""

    def tick():
        try:
            return next(steps)
        except StopIteration:
            error = None
        except Exception:  # noqa: BLE001 - reported through on_end, then Blender quits
            error = traceback.format_exc()
        if on_end is not None:
            on_end(error)
        elif error:
            print(error, flush=True)
        bpy.ops.wm.quit_blender()
        return None

    bpy.app.timers.register(tick, first_interval=first_interval)
