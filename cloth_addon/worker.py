"""Bakes beside Blender's UI in a separate Python process: Blender never waits for the solver.

A thread of Blender's own Python (runner.Runner) shares the GIL with Blender's main thread,
which needs it for every Python draw callback, timer and Esc: measured in Debian's Blender 3.4
with a window, a bake on a thread blocked the UI up to 0.85 s at a time and took twice as long
as the same bake from a script (the solver's Python between kernels and Blender's UI callbacks
waiting for each other), and a first bake's compilation and its garbage collections held the
GIL for up to a second. In a process of its own the solver runs no Python on Blender's side at
all; the main thread only unpickles the frames it receives.

The worker is Blender's own Python (warmup.python_executable), started at the first bake beside
the UI with Blender's sys.path and numba cache, importing the solver under the very module names
Blender gives it (numba's cached kernels record them: child_python.py), without bpy. It stays
for the next bake (kernels stay loaded) and ends with Blender: its stdin closes. Tasks
(runner.Task) and messages (runner.Built, Frame, Failed, Ended) travel pickled: commands on its
stdin, messages on a copy of its stdout (anything the solver prints goes to stderr). Stop is a
command (the worker ends after its frame); a worker still busy when the next bake starts is
ended and another started.
"""

from __future__ import annotations

import atexit
import os
import pickle
import queue
import subprocess
import sys
import threading
import time
import traceback
from typing import Any

from . import child_python, runner

# The worker's exit status when its Python, numba or numpy is not Blender's (it would compile
# into Blender's numba cache what Blender cannot load).
OTHER_PYTHON = 3

_worker: "Worker | None" = None
_refused = ""  # why the worker cannot be used in this session ('' : it can)
_stamp = ""


class Worker:
    """The worker process and the thread that reads its messages into the current runner."""

    def __init__(self, python: str):
        global _stamp
        if not _stamp:
            from ..solver import warmup as solver_warmup
            _stamp = solver_warmup.stamp()
        self.process = child_python.start(python, "cloth_addon.worker:serve", _stamp,
                                          stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.current: ProcessRunner | None = None
        self._exit: int | None = None  # the process's exit status once its reader saw it end
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, name="cloth_solver worker reader",
                                        daemon=True)
        self._reader.start()
        # Commands are written from a thread: a scene's specification (every frame of an
        # animated collider: 100 MB for 20k vertices over 250 frames) would hold the main
        # thread until the worker has read it through the pipe.
        self._outbox: queue.Queue = queue.Queue()
        self._writer = threading.Thread(target=self._write, name="cloth_solver worker writer",
                                        daemon=True)
        self._writer.start()

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    @property
    def busy(self) -> bool:
        return self.current is not None

    def send(self, command: tuple) -> None:
        """Queue ``command`` for the worker, in order (never waits for the pipe)."""
        self._outbox.put(command)

    def _write(self) -> None:
        while True:
            command = self._outbox.get()
            if command is None:
                return
            try:
                pickle.dump(command, self.process.stdin, protocol=pickle.HIGHEST_PROTOCOL)
                self.process.stdin.flush()
            except (OSError, ValueError):  # the process has gone: its reader says so
                return

    def attach(self, runner_: "ProcessRunner") -> None:
        with self._lock:
            if self._exit is None:
                self.current = runner_
                return
        self._tell_ended(runner_, self._exit)  # it ended before the bake came (a refused Python)

    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            try:
                msg = pickle.load(stream)
            except EOFError:
                break
            except Exception as err:  # a message that does not unpickle: the bake fails
                msg = runner.Failed(0, f"the simulation process sent what could not be read "
                                       f"({type(err).__name__}: {err})")
            with self._lock:
                target = self.current
                if isinstance(msg, runner.Ended):
                    self.current = None
            if target is not None:
                target._queue.put(msg)
        code = self.process.wait()
        if code == OTHER_PYTHON:
            global _refused
            _refused = (f"{self.process.args[0]} is not Blender's own Python, numba and numpy; "
                        "bakes run inside Blender from now on")
        with self._lock:  # a bake attached later hears of it from attach()
            self._exit = code
            target, self.current = self.current, None
        if target is not None:  # it ended in the middle of a bake
            self._tell_ended(target, code)

    @staticmethod
    def _tell_ended(target: "ProcessRunner", code: int) -> None:
        why = (f"the simulation process could not run: {_refused}; bake again"
               if code == OTHER_PYTHON else
               f"the simulation process ended unexpectedly (exit status {code}); see the "
               "console")
        target._queue.put(runner.Failed(0, why))
        target._queue.put(runner.Ended(True))

    def end(self) -> None:
        self._outbox.put(None)
        self._writer.join(timeout=1.0)
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            self.kill()

    def kill(self) -> None:
        self._outbox.put(None)
        self.process.kill()


def _get_worker(python: str) -> Worker:
    global _worker
    w = _worker
    if w is not None and (not w.alive or w.busy):  # busy: still finishing a stopped bake
        w.kill()
        w = None
    if w is None:
        w = _worker = Worker(python)
    return w


class ProcessRunner:
    """runner.Runner's interface, the tasks stepped in the worker process."""

    def __init__(self, tasks: list, python: str, thread_ceiling: int | None = None):
        self._tasks = list(tasks)
        self._python = python
        self._ceiling = thread_ceiling
        self._queue: queue.Queue = queue.Queue()
        self._limit: int | None = None
        self._worker: Worker | None = None

    def start(self) -> "ProcessRunner":
        self._worker = _get_worker(self._python)
        self._worker.attach(self)
        self._worker.send(("run", self._tasks, self._limit, self._ceiling))
        return self

    def _send(self, command: tuple) -> None:
        w = self._worker
        if w is not None and w.current is self:
            w.send(command)

    def stop(self) -> None:
        """The worker ends after the step it is in (a cloth frame, or a yarn slice)."""
        self._send(("stop",))

    def allow(self, frames: int | None) -> None:
        self._limit = frames
        self._send(("allow", frames))

    @property
    def allowed(self) -> int | None:
        return self._limit

    @property
    def alive(self) -> bool:
        w = self._worker
        return w is not None and w.current is self and w.alive

    def join(self, timeout: float | None = None) -> bool:
        """Wait until the worker has ended this runner's tasks; True if it has."""
        w = self._worker
        if w is None:
            return True
        end = None if timeout is None else time.monotonic() + timeout
        while w.current is self and w.alive:
            if end is not None and time.monotonic() > end:
                return False
            time.sleep(0.01)
        return True

    def poll(self, limit: int = 1 << 30) -> list:
        return runner._take(self._queue, limit)

    def wait(self, timeout: float) -> list:
        return runner._wait(self._queue, timeout)


def available(python: str | None) -> bool:
    """Bakes beside the UI run in a worker (CLOTH_SOLVER_WORKER=0: on a thread instead)."""
    return (python is not None and not _refused
            and os.environ.get("CLOTH_SOLVER_WORKER", "1") != "0")


def start(tasks: list, python: str | None, thread_ceiling: int | None,
          limit: int | None) -> ProcessRunner | None:
    """A ProcessRunner started on ``tasks`` (``limit``: as runner.Runner.allow), or None where
    no worker can run: the bake then runs on a thread inside Blender."""
    global _refused
    if not available(python):
        return None
    job = ProcessRunner(tasks, python, thread_ceiling)
    job.allow(limit)
    try:
        return job.start()
    except OSError as err:  # the program could not be started
        _refused = f"{python} could not be started ({err})"
        print(f"cloth_solver: {_refused}; bakes run inside Blender", file=sys.stderr)
        return None


@atexit.register
def _end_worker() -> None:
    if _worker is not None and _worker.alive:
        _worker.end()


# ---- the worker's side ----

def _spare_a_core(ceiling: int | None, cores: int) -> int | None:
    """The kernels' thread count leaves a core to Blender's UI (its main thread, and the
    drawing a software OpenGL does on the CPU), as the bake's thread inside Blender does
    (runner._spare_a_core): on two cores, kernels on both and the UI took turns on the core a
    barrier waited for."""
    if cores < 2:
        return ceiling
    return min(cores - 1, cores if ceiling is None else ceiling)


def serve(expect: str) -> None:
    """The worker process's loop: commands from stdin, messages to stdout, until stdin closes.
    ``expect``: Blender's solver.warmup.stamp() (its Python, numba, numpy and sources)."""
    from ..solver import warmup as solver_warmup
    if solver_warmup.stamp() != expect:
        print(f"cloth_solver: {sys.executable} has another Python, numba or numpy than "
              "Blender", file=sys.stderr, flush=True)
        sys.exit(OTHER_PYTHON)
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # what the solver or numba prints goes to stderr
    sys.stdout = sys.stderr
    inbox: queue.Queue = queue.Queue()
    state: dict[str, Any] = {"gate": runner.Gate()}

    def post(msg) -> None:
        try:
            data = pickle.dumps(msg, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:  # an exception that does not pickle travels as its text
            if not isinstance(msg, runner.Failed):
                raise
            data = pickle.dumps(runner.Failed(msg.task, msg.message, RuntimeError(
                f"{type(msg.error).__name__}: {msg.error}"), msg.trace))
        out.write(data)
        out.flush()

    def read() -> None:
        stream = sys.stdin.buffer
        while True:
            try:
                command = pickle.load(stream)
            except (EOFError, OSError):
                state["gate"].stop()
                inbox.put(None)
                return
            if command[0] == "run":  # the commands after it are this run's
                _, tasks, limit, ceiling = command
                gate = state["gate"] = runner.Gate()
                gate.allow(limit)
                inbox.put((tasks, gate, ceiling))
            elif command[0] == "allow":
                state["gate"].allow(command[1])
            elif command[0] == "stop":
                state["gate"].stop()

    threading.Thread(target=read, daemon=True).start()
    while True:
        command = inbox.get()
        if command is None:
            return
        tasks, gate, ceiling = command
        try:
            from ..solver import set_thread_ceiling
            set_thread_ceiling(_spare_a_core(ceiling, os.cpu_count() or 1))
        except Exception:  # never stop a bake over its thread count
            traceback.print_exc()
        runner.run_tasks(tasks, post, gate, keep_steppers=False)
