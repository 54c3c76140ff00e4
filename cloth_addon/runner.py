"""Simulations stepped on Blender's main thread or beside it, their frames handed to it as messages.

The runner is model-agnostic: a task (``Task``) is a factory returning a *stepper* with
``step()`` (a report per finished frame, ``UNFINISHED`` while a frame goes on, None on failure
with the message in ``result.error``), ``done``, ``result.positions`` (frames so far + 1, P, 3)
and ``result.model_name``, and optionally ``piece_offsets``, ``notes(names)`` and
``closing_notes(names)``; cloth (solver.Simulation) and yarn (yarn_run.YarnRun) both are.
``step_tasks`` builds and steps them and yields ``Built``, ``Frame`` and ``Failed`` (``run_tasks``
posts them, then ``Ended``); Blender's main thread takes the messages with ``poll()`` and never
touches a stepper itself.

Three runners share it (docs/solver.md, "The bake beside Blender's UI"): ``InlineRunner``, on
the thread that polls (a script's or ``blender -b``'s bake, which waits for the bake anyway:
Blender's main thread, where numba's parallel kernels run fastest); ``Runner``, a thread of this
process (Simulate on Play without a UI, and beside the UI where no worker process can start);
and ``worker.ProcessRunner``, a separate Python process (a bake or Simulate on Play beside the
UI: Blender's main thread then never waits for the solver's Python, its compiler or its garbage
collector). Nothing here imports bpy: the thread must never touch Blender data, and the worker
process imports this module without Blender.
"""

from __future__ import annotations

import atexit
import gc
import queue
import sys
import threading
import traceback
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

UNFINISHED = object()  # a stepper's step(): the frame goes on at the next call


@dataclass
class Task:
    """A simulation to step: ``factory()`` builds its stepper (on the runner's side: building
    may compile kernels; picklable for the worker process, worker.py); ``names`` name its pieces
    in notes ("'Sheet'")."""

    factory: Callable[[], Any]
    names: list


@dataclass
class Built:
    """Task ``task``'s model is built: its first frame's positions (P, 3) world [m], model
    name, the pieces' offsets into the positions (None: one piece), what the user should know
    about its meshes, and (in-process runners only) the stepper itself."""

    task: int
    first: np.ndarray
    model_name: str
    piece_offsets: Any = None
    notes: list = field(default_factory=list)
    stepper: Any = None


@dataclass
class Frame:
    """Task ``task`` finished frame ``index`` (1 = the first simulated frame): ``positions``
    (P, 3) world [m], a copy owned by the receiver, the stepper's ``report``, and notes once
    its last frame is done (a yarn's closest approach)."""

    task: int
    index: int
    positions: np.ndarray
    report: Any
    notes: list = field(default_factory=list)


@dataclass
class Failed:
    """Task ``task`` stopped: ``message`` from the stepper (``result.error``) or, with
    ``error`` set, an exception raised while building or stepping (``trace``: its traceback)."""

    task: int
    message: str
    error: BaseException | None = None
    trace: str = ""


@dataclass
class Waiting:
    """step_tasks: frame ``index`` may not be simulated yet (Gate.allow); nothing to post."""

    index: int


@dataclass
class Ended:
    """The runner has ended: every task done (``stopped`` False) or it was stopped."""

    stopped: bool


class Gate:
    """Stop, and how many frames may be simulated (Simulate on Play allows a frame per frame
    played), shared by the side that steps and the side that asks."""

    def __init__(self):
        self._stop = threading.Event()
        self._limit: int | None = None
        self._wake = threading.Condition()

    def stop(self) -> None:
        self._stop.set()
        with self._wake:
            self._wake.notify_all()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def allow(self, frames: int | None) -> None:
        with self._wake:
            self._limit = frames
            self._wake.notify_all()

    @property
    def allowed(self) -> int | None:
        return self._limit

    def may_simulate(self, index: int) -> bool:
        """Frame ``index`` is allowed (whether or not stopped)."""
        limit = self._limit
        return limit is None or index <= limit

    def wait_for(self, index: int) -> bool:
        """Wait until frame ``index`` may be simulated; False once stopped."""
        with self._wake:
            while not self._stop.is_set() and not self.may_simulate(index):
                self._wake.wait()
        return not self._stop.is_set()


def _notes(stepper, name: str, names) -> list:
    fn = getattr(stepper, name, None)
    return list(fn(names)) if callable(fn) else []


def step_tasks(tasks: list[Task], gate: Gate, keep_steppers: bool = True):
    """Build every stepper, then step them in turn a frame each (every model shows the same
    frame, and a stopped bake keeps one range for all), on the thread that iterates: yields
    Built, Frame and Failed as they happen, and ``Waiting(index)`` while frame ``index`` is not
    allowed yet (``Gate.allow``); ends when every task is done, one failed or the gate
    stopped."""
    steppers = []
    for i, task in enumerate(tasks):
        if gate.stopped:
            return
        try:
            stepper = task.factory()
            built = Built(i, np.array(stepper.result.positions[0]),
                          stepper.result.model_name, getattr(stepper, "piece_offsets", None),
                          _notes(stepper, "notes", task.names),
                          stepper if keep_steppers else None)
        except Exception as err:
            yield Failed(i, str(err), err, traceback.format_exc())
            return
        steppers.append(stepper)
        yield built
    index = 0
    while not gate.stopped and not all(s.done for s in steppers):
        index += 1
        while not gate.may_simulate(index):
            if gate.stopped:
                return
            yield Waiting(index)
        for i, stepper in enumerate(steppers):
            if stepper.done:
                continue
            rep = UNFINISHED
            try:
                while rep is UNFINISHED:
                    if gate.stopped:
                        return
                    rep = stepper.step()
                if rep is not None:
                    done = _notes(stepper, "closing_notes", tasks[i].names) \
                        if stepper.done else []
            except Exception as err:
                yield Failed(i, str(err), err, traceback.format_exc())
                return
            if rep is None:
                yield Failed(i, str(stepper.result.error))
                return
            yield Frame(i, index, np.array(stepper.result.positions[-1]), rep, done)


def run_tasks(tasks: list[Task], post: Callable[[Any], None], gate: Gate,
              keep_steppers: bool = True) -> None:
    """``step_tasks`` on this thread, posting what happens and waiting at the gate; returns
    when every task is done, one failed or the gate stopped. Posts Ended last."""
    try:
        for msg in step_tasks(tasks, gate, keep_steppers):
            if isinstance(msg, Waiting):
                gate.wait_for(msg.index)
            else:
                post(msg)
    finally:
        post(Ended(gate.stopped))


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


class _Gated:
    """What a runner's owner controls, through its Gate: stop, and how many frames may run
    (a thread waits, a poll returns no more frames, until more are allowed)."""

    _gate: Gate

    def stop(self) -> None:
        """End after the step in progress (a cloth frame, or a yarn slice)."""
        self._gate.stop()

    def allow(self, frames: int | None) -> None:
        """Simulate at most ``frames`` frames (None: all)."""
        self._gate.allow(frames)

    @property
    def allowed(self) -> int | None:
        return self._gate.allowed


class Runner(_Gated):
    """Runs ``tasks`` on a daemon thread of this process (run_tasks)."""

    def __init__(self, tasks: list[Task], name: str = "cloth_solver bake",
                 spare_core: bool = False, prepare: Callable[[], None] | None = None):
        """``spare_core``: leave a core to Blender's UI (a bake beside the UI; a script waiting
        for the bake uses them all). ``prepare``: called first on the thread (numba's thread
        count is per thread: the user's Threads setting is applied there)."""
        self._tasks = list(tasks)
        self._spare_core = spare_core
        self._prepare = prepare
        self._queue: queue.Queue = queue.Queue()
        self._gate = Gate()
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

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread to end; True if it has."""
        if self._thread.ident is not None:
            self._thread.join(timeout)
        return not self._thread.is_alive()

    def poll(self, limit: int = 1 << 30) -> list:
        """The messages posted since the last call (at most ``limit``), in order."""
        return _take(self._queue, limit)

    def wait(self, timeout: float) -> list:
        """Like ``poll``, but waits up to ``timeout`` seconds for the first message."""
        return _wait(self._queue, timeout)

    def _run(self) -> None:
        try:
            if self._prepare is not None:
                self._prepare()
            if self._spare_core:
                _spare_a_core()
        except Exception:  # never stop a bake over its thread count
            traceback.print_exc()
        try:
            run_tasks(self._tasks, self._queue.put, self._gate)
        finally:
            _switch_fast(False)


class InlineRunner(_Gated):
    """Runner's interface, the tasks stepped on the thread that asks for their messages
    (``poll``, ``wait``): a script or ``blender -b``, which waits for the bake anyway, steps it
    on the process's main thread: numba's OpenMP kernels launched from any other thread run
    slower (bench/thread_launch.py; docs/solver.md, "The bake beside Blender's UI")."""

    def __init__(self, tasks: list[Task]):
        self._gate = Gate()
        self._steps = step_tasks(list(tasks), self._gate)
        self._ended = False

    def start(self) -> "InlineRunner":
        return self

    @property
    def alive(self) -> bool:
        return not self._ended and not self._gate.stopped

    def join(self, timeout: float | None = None) -> bool:
        """True once ended or stopped (nothing steps between calls)."""
        return not self.alive

    def poll(self, limit: int = 1 << 30) -> list:
        """Step until ``limit`` messages are posted, the runner ends or the next frame is not
        allowed; returns the messages, Ended last once every task is done, one failed or the
        runner was stopped."""
        out = []
        while len(out) < limit and not self._ended:
            try:
                msg = next(self._steps)
            except StopIteration:
                msg = Ended(self._gate.stopped)
            except BaseException:
                self._ended = True  # the steps have ended with it (a KeyboardInterrupt)
                raise
            if isinstance(msg, Waiting):
                break
            self._ended = isinstance(msg, Ended)
            out.append(msg)
        return out

    def wait(self, timeout: float) -> list:
        """The next message (stepping until it comes; ``timeout`` is not needed)."""
        return self.poll(limit=1)


def _take(q: queue.Queue, limit: int) -> list:
    out = []
    while len(out) < limit:
        try:
            out.append(q.get_nowait())
        except queue.Empty:
            break
    return out


def _wait(q: queue.Queue, timeout: float) -> list:
    try:
        first = q.get(timeout=timeout)
    except queue.Empty:
        return []
    return [first] + _take(q, 1 << 30)


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
