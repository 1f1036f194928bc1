"""A hard deadline for a budgeted measurement: it ends within its budget plus a bounded grace.

The schedules stop at their budget only between steps; a stage that blocks (a ``__getitem__`` that
waits on a dead network share, ``--read-ms 100000``) holds one step for as long as it blocks. The
:class:`Deadline` arms a real ``SIGALRM`` for ``budget + grace``: the signal interrupts even a
blocking ``sleep``/``read``/queue wait of the main thread, and its handler raises
:class:`BudgetExceededError` naming the pipeline stage the main thread was in (found on its
stack: ``dataset[i]`` is *read*, a transform is *transform*, the loader's queue is *loader*, the
model is *step*). The measurement's own ``finally`` blocks then close the loaders and workers.

A signal can only be handled on the main thread: called from another thread, the deadline is not
armed (logged once), and the schedule's own budget check is what remains.

A signal's Python handler also runs only when the main thread gets back to Python: a step stuck in native
code (an MXNet engine operation that never finishes, such as a custom operator that blocks, waited on by
``nd.waitall()``) holds it there for good. In the CLI (:func:`exit_hard_when_stuck`) a backstop timer thread
then ends the process ``HARD_EXIT_S`` after budget + grace (or ``CLEANUP_S`` after the deadline's own error, when the
clean-up that follows it, closing loaders and saving what was measured, is what gets stuck), with one line naming the
stage, exit 2; its
loader workers are killed with it, and its scratch folders go as after a ``kill -9``
(:mod:`gluonbench.scratch`). From Python nothing ends the caller's process: the backstop is off.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import logging
import os
import re
import signal
import sys
import threading
from collections.abc import Callable
from time import perf_counter
from types import FrameType, TracebackType
from typing import Any, TypeVar

from gluonbench.errors import GluonbenchError

log = logging.getLogger(__name__)

F = TypeVar("F", bound=Callable[..., Any])

GRACE_MIN_S = 10.0
GRACE_MAX_S = 60.0
HARD_EXIT_S = 5.0
"""CLI only: seconds past budget + grace after which a command whose main thread never came back to Python (stuck in
native code, where no signal handler runs) ends the process (:func:`exit_hard_when_stuck`)"""
CLEANUP_S = 30.0
"""CLI only: once the deadline's error is raised, the seconds its clean-up may take (loaders closed, each within
2 x 5 s; what was measured saved) before the backstop ends the process"""

_hard_exit = False


def exit_hard_when_stuck(on: bool = True) -> None:
    """Turn the backstop of every :class:`Deadline` on (the CLI) or off (the default, for library use): past budget +
    grace + :data:`HARD_EXIT_S`, a command still running prints one line naming the stage and exits with 2."""
    global _hard_exit
    _hard_exit = on


def grace_s(budget_s: float) -> float:
    """The bounded grace past a budget: a quarter of it, within 10 .. 60 s (loaders shut down, reports)."""
    return min(GRACE_MAX_S, max(GRACE_MIN_S, 0.25 * budget_s))


class BudgetExceededError(GluonbenchError):
    """A budgeted command ran past its budget plus grace; ``stage`` names where it was stuck.

    What was measured before the stall travels with the error, so nothing already measured is lost:
    ``measurement`` is the :class:`~gluonbench.engine.measure.Measurement` of the rounds that finished before
    it (set by :class:`~gluonbench.engine.measure.Rounds`; None when the stall came before the first round),
    and ``partial`` the command's own result built from them (``diagnose``: a
    :class:`~gluonbench.diagnosis.run.Diagnosis` whose ``stop_reason`` names the stall, None when no round
    paired every probe; ``tune``: a :class:`~gluonbench.tune.result.StalledTune` with every measurement made before
    the stall, None when the stall came before the search started).
    """

    def __init__(self, message: str, stage: str) -> None:
        super().__init__(message)
        self.stage = stage
        self.measurement: Any = None
        self.partial: Any = None


# innermost-first: the first frame that matches names the stage
_STAGE_BY_NAME = (
    (("__getitem__", "read_raw", "_read", "read_file", "get_object"), "read (dataset[i])"),
    (("decode", "imdecode", "_decode"), "decode"),
    (("transform", "_transform", "transform_first", "preprocess"), "transform (preprocess)"),
    (("default_batchify_fn", "default_mp_batchify_fn", "batchify", "_batchify"), "loader (batchify)"),
    (("forward", "hybrid_forward", "backward", "step", "waitall", "update"), "step (forward/backward/update)"),
    (("as_in_context", "copyto"), "copy (host to device)"),
    (("__next__", "get", "recv", "_recv", "poll", "wait"), "loader (waiting for a batch from the workers)"),
)


def stalled_stage(frame: FrameType | None) -> str:
    """The pipeline stage the innermost recognisable frame of ``frame``'s stack belongs to."""
    names = []
    while frame is not None and len(names) < 200:
        names.append(frame.f_code.co_name)
        frame = frame.f_back
    return _stage_of(names)


def _stage_of(names: list[str]) -> str:
    """The stage of the innermost recognisable function of ``names`` (innermost first)."""
    for name in names:
        for known, stage in _STAGE_BY_NAME:
            if name in known or any(name.endswith(k) for k in known if k.startswith("_")):
                return stage
    return "an unknown stage"


_FIXES = {
    "read (dataset[i])": "fix the dataset's __getitem__ for that item",
    "decode": "fix the decode for that item",
    "transform (preprocess)": "fix the transform for that item",
    "loader (batchify)": "make every item the same shape (or give the spec a batchify_fn that pads)",
    "step (forward/backward/update)": "fix the net or the loss for that batch",
}

_REMOTE_FRAME = re.compile(r'File "([^"]+)", line \d+, in (\S+)')


def _frames(exc: BaseException) -> list[tuple[str, str]]:
    """``(file, function)`` of each frame ``exc`` passed through, innermost first; for an exception a loader worker
    raised (re-raised here by multiprocessing, the worker's traceback as text in its cause), the worker's frames
    first."""
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append((tb.tb_frame.f_code.co_filename, tb.tb_frame.f_code.co_name))
        tb = tb.tb_next
    frames.reverse()
    remote = getattr(exc.__cause__, "tb", None)  # multiprocessing.pool's RemoteTraceback
    if isinstance(remote, str):
        frames = [(f, n) for f, n in reversed(_REMOTE_FRAME.findall(remote))] + frames
    return frames


@functools.lru_cache(maxsize=1)
def _library_roots() -> tuple[str, ...]:
    """Folders whose code is not the user's: gluonbench, Python's standard library, installed packages (MXNet)."""
    import sysconfig

    paths = sysconfig.get_paths()
    roots = {os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep}
    roots |= {os.path.abspath(paths[k]) + os.sep for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    return tuple(sorted(roots))


def _users(filename: str) -> bool:
    """True for a frame of the user's code: a file outside gluonbench, the standard library and installed packages."""
    if filename.startswith("<") or "site-packages" in filename or "dist-packages" in filename:
        return False
    return not os.path.abspath(filename).startswith(_library_roots())


class PipelineFaultError(BudgetExceededError):
    """The user's pipeline code raised mid-run (:func:`pipeline_fault`): one line naming the stage and the fix.

    Like a stall, it ends the measurement early, and what was measured before it travels with it
    (``measurement``: the complete rounds before the fault; ``partial``: the command's result built from them), so
    every path that keeps a stall's measurements keeps these too.
    """


def pipeline_fault(exc: BaseException, what: str = "the pipeline") -> PipelineFaultError | None:
    """``exc`` as the one line of :func:`midrun_error` when it is the user's pipeline code failing mid-run, else None
    (gluonbench's own errors, a loader whose workers died, memory, an interrupt: left as they are).

    The user's code is recognised by a frame of it on the traceback (a loader worker's included), or by MXNet's
    errors for what user code gave it: items of different shapes (its batchify's ``KeyError: numpy.object_``) and a
    loss not connected to the graph.
    """
    if isinstance(exc, GluonbenchError | MemoryError) or not isinstance(exc, Exception):
        return None
    from gluonbench.workloads.spec import loss_fault

    known = _ragged(exc) or loss_fault(exc) is not None
    if not known and not any(_users(f) for f, _ in _frames(exc)):
        return None
    line, stage = _midrun(exc, what)
    log.info("%s", line, exc_info=exc)  # -v: where exactly
    return PipelineFaultError(line, stage)


def _ragged(exc: BaseException) -> bool:
    """MXNet's default batchify of arrays of different shapes (it makes an object array it has no type for)."""
    return isinstance(exc, KeyError) and "numpy.object_" in str(exc)


def midrun_error(exc: BaseException, what: str) -> GluonbenchError:
    """The one line for user code that raised mid-run, after the first batch passed the check before measuring:
    the stage it raised in (found on its traceback, a loader worker's included, as :func:`stalled_stage` finds a
    stall's) and the fix."""
    return GluonbenchError(_midrun(exc, what)[0])


def _midrun(exc: BaseException, what: str) -> tuple[str, str]:
    """:func:`midrun_error`'s line and the stage it names."""
    from gluonbench.workloads.spec import loss_fault

    loss = loss_fault(exc)
    if loss is not None:
        return f"{what} failed mid-run in the loss ({loss[0]}): {loss[1]}", "loss"
    stage = _stage_of([name for _, name in _frames(exc)])
    if _ragged(exc):
        stage, detail = "loader (batchify)", "items of different shapes in one batch"
    else:
        detail = f"{type(exc).__name__}: {exc}"[:200]
    fix = _FIXES.get(stage, "run it with 0 workers and -v to see where")
    line = (
        f"{what} failed mid-run in {stage} ({detail}); the first batch passed the check, so a later item or step "
        f"fails: {fix}"
    )
    return line, stage


def frame_trail(frame: FrameType | None, depth: int = 8) -> str:
    """The innermost ``depth`` frames of ``frame``'s stack as ``file:function`` (innermost first)."""
    parts = []
    while frame is not None and len(parts) < depth:
        parts.append(f"{frame.f_code.co_filename.rsplit('/', 1)[-1]}:{frame.f_code.co_name}")
        frame = frame.f_back
    return " < ".join(parts) or "no Python frame"


class Deadline:
    """``with Deadline(budget_s, "diagnose"):`` raises :class:`BudgetExceededError` after budget + grace."""

    def __init__(self, budget_s: float, what: str, grace: float | None = None) -> None:
        self.budget_s = float(budget_s)
        self.what = what
        self.grace = grace_s(self.budget_s) if grace is None else float(grace)
        self._armed = False
        self._previous: object = None
        self._t0 = 0.0
        self._outer_left = 0.0
        self._outer_interval = 0.0
        self._backstop: threading.Timer | None = None

    @property
    def limit_s(self) -> float:
        return self.budget_s + self.grace

    def _stopped(self) -> str:
        """The start of a stall's line: what stopped, after how long, of which budget and grace."""
        elapsed = perf_counter() - self._t0
        return f"{self.what} stopped after {elapsed:.0f} s (budget {self.budget_s:g} s + {self.grace:g} s grace)"

    def _fire(self, signum: int, frame: FrameType | None) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        self._start_backstop(CLEANUP_S)  # the main thread answered: its clean-up gets its own bounded time
        stage = stalled_stage(frame)
        stopped = self._stopped()
        # where exactly (``-v``): "waiting for a batch" is any wait of the loader's, closing its pool included
        log.info("%s: the main thread was in %s", stopped, frame_trail(frame))
        if stage.startswith("loader"):  # workers that wait for /dev/shm space never hand on a batch
            from gluonbench.engine.watchdog import SHM, shm_full, shm_full_text

            full = shm_full()
            if full is not None:
                raise BudgetExceededError(f"{stopped}: the loader stalled: {shm_full_text(full, SHM)}", stage)
        if stage == "loader (waiting for a batch from the workers)":
            raise BudgetExceededError(
                f"{stopped}: the pipeline stalled in {stage}: no batch came from the loader's workers for the rest "
                "of the budget, so a worker is stuck or one batch takes longer than that; run it again with 0 workers "
                "to see the stage, or raise the budget",
                stage,
            )
        raise BudgetExceededError(
            f"{stopped}: the pipeline stalled in {stage}; one step of it takes longer than the "
            "budget, so fix that stage or raise the budget",
            stage,
        )

    def __enter__(self) -> Deadline:
        self._t0 = perf_counter()
        if threading.current_thread() is not threading.main_thread():
            log.info("%s runs outside the main thread: no hard deadline, only the schedule's budget", self.what)
            return self
        # a caller's own alarm (pytest-timeout, a scheduler's wrapper) is kept: when it is due first, it
        # stays as it is; otherwise ours runs first and theirs is re-armed, less the time spent, on exit
        self._outer_left, self._outer_interval = signal.getitimer(signal.ITIMER_REAL)
        if 0 < self._outer_left <= self.limit_s:
            log.info("%s: the caller's alarm is due before budget + grace; it stays the deadline", self.what)
            return self
        self._previous = signal.signal(signal.SIGALRM, self._fire)
        signal.setitimer(signal.ITIMER_REAL, self.limit_s)
        self._armed = True
        self._start_backstop(self.limit_s + HARD_EXIT_S)
        return self

    def _start_backstop(self, after_s: float) -> None:
        """(Re)start the backstop timer (CLI only, :func:`exit_hard_when_stuck`) to fire ``after_s`` from now."""
        if self._backstop is not None:
            self._backstop.cancel()
            self._backstop = None
        if _hard_exit:
            self._backstop = threading.Timer(after_s, self._stuck)
            self._backstop.daemon = True
            self._backstop.start()

    def _stuck(self) -> None:
        """The backstop (a timer thread): the main thread never came back to Python to act on the deadline, or its
        clean-up after it is stuck too; one line, the loader workers killed, exit 2."""
        frame = sys._current_frames().get(threading.main_thread().ident or 0)
        stage = stalled_stage(frame)
        line = (
            f"gluonbench: error: {self._stopped()}: the pipeline stalled in {stage} inside native code (an MXNet engine "
            "operation that never finishes, such as a custom operator that blocks), where nothing can interrupt it; "
            "the process exits now: fix that stage"
        )
        try:
            log.info("%s: the main thread was in %s", self.what, frame_trail(frame))
            sys.stdout.flush()
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
            import psutil

            for child in psutil.Process().children(recursive=True):  # loader workers, helpers
                with contextlib.suppress(psutil.Error):
                    child.kill()
        finally:
            os._exit(2)

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._backstop is not None:
            self._backstop.cancel()
            self._backstop = None
        if self._armed:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, self._previous)  # type: ignore[arg-type]
            self._armed = False
            if self._outer_left > 0:
                left = max(self._outer_left - (perf_counter() - self._t0), 0.001)
                signal.setitimer(signal.ITIMER_REAL, left, self._outer_interval)


def with_deadline(what: str, budget_arg: str = "budget_s") -> Callable[[F], F]:
    """Decorate a budgeted function so the whole call (first sample included) runs under a :class:`Deadline`.

    A budget that is not a finite number >= 0 is left to the function's own check (its one-line error).
    """

    def wrap(fn: F) -> F:
        sig = inspect.signature(fn)

        @functools.wraps(fn)
        def guarded(*args: Any, **kwargs: Any) -> Any:
            try:
                budget = sig.bind(*args, **kwargs).arguments.get(budget_arg, sig.parameters[budget_arg].default)
            except TypeError:
                return fn(*args, **kwargs)
            if isinstance(budget, bool) or not isinstance(budget, int | float) or not 0 <= budget <= 1e7:
                return fn(*args, **kwargs)
            with Deadline(budget, what):
                return fn(*args, **kwargs)

        return guarded  # type: ignore[return-value]

    return wrap
