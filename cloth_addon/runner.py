"""Simulations stepped on a background thread, their frames handed to Blender's main thread.

Why a thread (docs/solver.md, "The bake beside Blender's UI"): the solver's time goes into numba
kernels, numpy and scipy, which give Python's GIL back often (numba's compiler too: its LLVM
calls go through ctypes, which releases the GIL), so Blender's main thread, which needs the GIL
only for the add-on's own Python (the modal operator's timer, panel drawing), gets it within tens
of milliseconds even while a first bake compiles its kernels. A worker process would free the
main thread entirely, but it would start a Python, import numba and load every kernel from the
cache for each bake (seconds), copy the scene across, and find a Python executable that Blender
3.4 does not reliably name; the thread shares the loaded kernels and the frames' arrays.

The runner is model-agnostic: a task is a zero-argument factory returning a *stepper* with
``step()`` (a report per finished frame, ``UNFINISHED`` while a frame goes on, None on failure
with the message in ``result.error``), ``done`` and ``result.positions`` (frames so far + 1,
P, 3); cloth (solver.Simulation) and yarn (yarn_bake.YarnRun) both are. Factories run on the
thread too: building a model may compile kernels. Only the thread touches a stepper; the main
thread reads ``Frame`` messages from ``poll()``. Nothing here imports bpy: the thread must never
touch Blender data.
"""

from __future__ import annotations

import atexit
import gc
import queue
import sys
import threading
import traceback
import weakref
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

UNFINISHED = object()  # a stepper's step(): the frame goes on at the next call


@dataclass
class Built:
    """Task ``task``'s stepper exists (its model is built)."""

    task: int
    stepper: Any


@dataclass
class Frame:
    """Task ``task`` finished frame ``index`` (1 = the first simulated frame): ``positions``
    (P, 3) world [m], a copy owned by the receiver, and the stepper's ``report``."""

    task: int
    index: int
    positions: np.ndarray
    report: Any


@dataclass
class Failed:
    """Task ``task`` stopped: ``message`` from the stepper (``result.error``) or, with
    ``error`` set, an exception raised on the thread (``trace`` is its traceback)."""

    task: int
    message: str
    error: BaseException | None = None
    trace: str = ""


@dataclass
class Ended:
    """The thread has ended: every task done (``stopped`` False) or it was stopped."""

    stopped: bool


_live: weakref.WeakSet = weakref.WeakSet()

# Python's switch interval while a bake's thread runs: how long a thread that wants the GIL
# waits before it asks the running thread to give it up. Blender's main thread enters Python
# for each of its UI's draw callbacks (a redraw is about a hundred), so while the bake's thread
# runs Python (numba compiling a kernel, the solver's glue between kernels) each callback
# waited out the default 5 ms: seen in Blender 3.4 with a window as redraws of 0.3-1 s during
# a first bake. The interval costs nothing while no other thread waits.
SWITCH_INTERVAL_S = 0.0005
_switch_lock = threading.Lock()
_switch_users = 0
_switch_before = 0.005


# Python's full (oldest-generation) garbage collections are deferred while a bake's thread
# runs. A full collection walks every tracked object holding the GIL; numba compiling a first
# bake's kernels leaves hundreds of thousands of objects, and its collections, run on the bake's
# thread, held the GIL 0.15-1.1 s each (seen in the bpy 5.0 wheel with gc.callbacks: Esc and
# every UI callback waited that long). Young collections still run (they free most of the
# compiler's cyclic garbage, and take milliseconds); the full one runs on its usual schedule
# once no bake runs.
DEFERRED_FULL_COLLECTIONS = 1 << 30
_gc_before: tuple = ()


def _switch_fast(on: bool) -> None:
    """A short switch interval and no full collections while any bake's thread runs."""
    global _switch_users, _switch_before, _gc_before
    with _switch_lock:
        if on:
            if _switch_users == 0:
                _switch_before = sys.getswitchinterval()
                sys.setswitchinterval(min(SWITCH_INTERVAL_S, _switch_before))
                _gc_before = gc.get_threshold()
                gc.set_threshold(*_gc_before[:2], DEFERRED_FULL_COLLECTIONS)
            _switch_users += 1
        else:
            _switch_users -= 1
            if _switch_users == 0:
                sys.setswitchinterval(_switch_before)
                if _gc_before:
                    gc.set_threshold(*_gc_before)


class Runner:
    """Runs ``tasks`` (stepper factories) one after the other on a daemon thread."""

    def __init__(self, tasks: list[Callable[[], Any]], name: str = "cloth_solver bake",
                 spare_core: bool = False, prepare: Callable[[], None] | None = None):
        """``spare_core``: leave a core to Blender's UI (a modal bake; a script waiting for the
        bake uses them all). ``prepare``: called first on the thread (numba's thread count is
        per thread: the user's Threads setting is applied there)."""
        self._tasks = list(tasks)
        self._spare_core = spare_core
        self._prepare = prepare
        self._queue: queue.Queue = queue.Queue()
        self._stop = threading.Event()
        self._limit: int | None = None  # frames the thread may simulate (None: all)
        self._wake = threading.Condition()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        _live.add(self)

    def start(self) -> "Runner":
        _switch_fast(True)
        try:
            self._thread.start()
        except BaseException:
            _switch_fast(False)
            raise
        return self

    def stop(self) -> None:
        """Ask the thread to end after the step it is in (a cloth frame, or a yarn slice)."""
        self._stop.set()
        with self._wake:
            self._wake.notify_all()

    def allow(self, frames: int | None) -> None:
        """Simulate at most ``frames`` frames (None: all): the thread waits, after building the
        steppers, until more are allowed (Simulate on Play allows a frame per frame played)."""
        with self._wake:
            self._limit = frames
            self._wake.notify_all()

    @property
    def allowed(self) -> int | None:
        return self._limit

    def _may_step(self, index: int) -> bool:
        """Wait until frame ``index`` may be simulated; False once stopped."""
        with self._wake:
            while not self._stop.is_set() and self._limit is not None and index > self._limit:
                self._wake.wait()
        return not self._stop.is_set()

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread to end; True if it has."""
        if self._thread.ident is not None:
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def poll(self, limit: int = 1 << 30) -> list:
        """The messages the thread posted since the last call (at most ``limit``), in order."""
        out = []
        while len(out) < limit:
            try:
                out.append(self._queue.get_nowait())
            except queue.Empty:
                break
        return out

    def wait(self, timeout: float) -> list:
        """Like ``poll``, but waits up to ``timeout`` seconds for the first message."""
        try:
            first = self._queue.get(timeout=timeout)
        except queue.Empty:
            return []
        return [first] + self.poll()

    def _run(self) -> None:
        """Build every stepper, then step them in turn a frame each, so that every model shows
        the same frame and a stopped bake keeps one range for all."""
        post = self._queue.put
        steppers = []
        try:
            try:
                if self._prepare is not None:
                    self._prepare()
                if self._spare_core:
                    _spare_a_core()
            except Exception:  # never stop a bake over its thread count
                traceback.print_exc()
            for i, factory in enumerate(self._tasks):
                if self._stop.is_set():
                    return
                try:
                    stepper = factory()
                except Exception as err:
                    post(Failed(i, str(err), err, traceback.format_exc()))
                    return
                steppers.append(stepper)
                post(Built(i, stepper))
            index = 0
            while not self._stop.is_set() and not all(s.done for s in steppers):
                index += 1
                if not self._may_step(index):
                    return
                for i, stepper in enumerate(steppers):
                    if stepper.done:
                        continue
                    rep = UNFINISHED
                    while rep is UNFINISHED:
                        if self._stop.is_set():
                            return
                        try:
                            rep = stepper.step()
                        except Exception as err:
                            post(Failed(i, str(err), err, traceback.format_exc()))
                            return
                    if rep is None:
                        post(Failed(i, str(stepper.result.error)))
                        return
                    post(Frame(i, index, np.array(stepper.result.positions[-1]), rep))
        finally:
            _switch_fast(False)
            post(Ended(self._stop.is_set()))


def _spare_a_core() -> None:
    """Run the thread's parallel kernels on one thread fewer than numba would (this thread's
    count; solver/threads.py takes it as the most it may use). Blender's main thread wakes every
    few milliseconds while a modal bake runs: measured in Blender 3.4 with a window on two
    cores, a bake using both ran 3x slower than the same bake with Blender's main thread asleep
    (the kernels' second thread, spinning at OpenMP's barriers, and Blender's main thread took
    turns on the core the bake's own thread needed); with one, it ran as fast as a bake from a
    script, and the UI got its core."""
    try:
        import numba
        count = numba.get_num_threads()
        if count > 1:
            numba.set_num_threads(count - 1)
    except Exception:  # never stop a bake over its thread count
        traceback.print_exc()


@atexit.register
def _stop_all() -> None:
    """Blender quitting: ask every bake thread to end and give each a moment, so that none is
    inside a kernel while Python shuts down."""
    for runner in list(_live):
        runner.stop()
    for runner in list(_live):
        runner.join(timeout=2.0)
