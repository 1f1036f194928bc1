"""Framework hooks for the training script: step, data wait, epoch and phase marks.

A script opts in with a couple of lines::

    from gluonbench import profiler

    for epoch in range(epochs):
        with profiler.epoch(epoch):
            for data, label in profiler.wrap(train_loader):   # times the wait for each batch
                with profiler.step():                           # one training step
                    ...
        with profiler.phase("eval"):
            ...

The hooks find the profile to write to from ``$GLUONBENCH_PROFILE`` (a ``profiler-output``
folder), which ``gluonbench profile`` and ``gluonbench.profile()`` set. Without it every hook is
a no-op that costs one global look-up (``wrap`` returns the loader itself). With it, a step
appends one tuple to a list; the list is written as Chrome trace ``X`` events every
``FLUSH_S`` seconds or ``FLUSH_EVENTS`` events, and at exit. Nothing here imports MXNet;
``GLUONBENCH_MXNET_PROFILER=1`` starts MXNet's own profiler (when the script has imported
MXNet) and dumps it beside the trace at exit.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

PROFILE_ENV = "GLUONBENCH_PROFILE"
NODE_ENV = "GLUONBENCH_PROFILE_NODE"
MXNET_ENV = "GLUONBENCH_MXNET_PROFILER"
SYNC_ENV = "GLUONBENCH_PROFILE_SYNC"
"""``0`` turns off :func:`step`'s sync point (``mx.nd.waitall()`` before the step's end timestamp)."""
FLUSH_S = 5.0
FLUSH_EVENTS = 2048

_perf = time.perf_counter


def _text(s: str) -> str:
    return f'"{s}"' if s.isprintable() and '"' not in s and "\\" not in s else json.dumps(s)


def _value(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    return json.dumps(v)


class _Recorder:
    """The events of this process, buffered; written by :meth:`flush`."""

    def __init__(self, root: Path, node_id: str) -> None:
        self.root = root
        self.node_id = node_id
        self.pid = os.getpid()
        # perf_counter -> epoch microseconds, so events line up with the system rows
        self.offset_us = time.time() * 1e6 - _perf() * 1e6
        self.events: list[tuple] = []
        self.phase = "TRAIN"
        self.step_num = 0
        self.epoch: int | None = None
        self.pending_wait = 0.0
        self.next_flush = _perf() + FLUSH_S
        self.lock = threading.Lock()
        self.writer = None
        self.mxnet_state = 0 if os.environ.get(MXNET_ENV) == "1" else -1
        self._open()
        atexit.register(self.close)
        # a stalled script adds no events: a daemon thread still writes what is buffered
        self._stop = threading.Event()
        threading.Thread(target=self._flusher, name="gluonbench-profiler-flush", daemon=True).start()

    def _flusher(self) -> None:
        while not self._stop.wait(FLUSH_S):
            if self.events and os.getpid() == self.pid:
                self.flush()

    def _open(self) -> None:
        from datetime import UTC, datetime

        from gluonbench.profiler.formats import FRAMEWORK_DIR, TraceWriter

        now = time.time()
        hour = datetime.fromtimestamp(now, UTC).strftime("%Y%m%d%H")
        name = f"{int(now * 1e6)}_{self.pid}-{self.node_id}_gluonbench_timeline.json"
        self.writer = TraceWriter(self.root / FRAMEWORK_DIR / hour / name)
        meta = {"name": "process_name", "ph": "M", "pid": self.pid, "tid": 0, "args": {"name": "gluonbench hooks"}}
        self.writer.write([meta])

    def add(self, name: str, cat: str, t0: float, t1: float, args: dict | None) -> None:
        self.events.append((name, cat, t0, t1, args))
        if t1 >= self.next_flush or len(self.events) >= FLUSH_EVENTS:
            self.flush()

    def flush(self) -> None:
        if os.getpid() != self.pid:  # a forked DataLoader worker holds a copy: never write it
            return
        with self.lock:
            events, self.events = self.events, []
            self.next_flush = _perf() + FLUSH_S
            off, pid = self.offset_us, self.pid
            # one f-string per event, no json.dumps: names are plain, args are small numbers
            lines = [
                f'{{"name":{_text(name)},"cat":"{cat}","ph":"X","ts":{t0 * 1e6 + off:.1f},'
                f'"dur":{(t1 - t0) * 1e6:.1f},"pid":{pid},"tid":0'
                + (',"args":{' + ",".join(f'"{k}":{_value(v)}' for k, v in args.items()) + "}}" if args else "}")
                for name, cat, t0, t1, args in events
            ]
            try:
                self.writer.write_lines(lines)
            except OSError as exc:
                print(f"gluonbench.profiler: cannot write the trace ({exc}); events dropped", file=sys.stderr)

    def start_mxnet(self) -> None:
        """Start MXNet's profiler once the script has imported MXNet (never imported from here)."""
        self.mxnet_state = -1
        mx = sys.modules.get("mxnet")
        if mx is None:
            return
        from gluonbench.profiler.formats import MXNET_DIR

        folder = self.root / MXNET_DIR
        folder.mkdir(parents=True, exist_ok=True)
        mx.profiler.set_config(
            profile_all=True, aggregate_stats=False, filename=str(folder / f"profile-{self.pid}.json")
        )
        mx.profiler.set_state("run")
        self.mxnet_state = 1

    def close(self) -> None:
        if os.getpid() != self.pid:
            return
        self._stop.set()
        if self.mxnet_state == 1:
            mx = sys.modules.get("mxnet")
            try:
                mx.profiler.set_state("stop")
                mx.profiler.dump()
            except Exception as exc:  # the script may have torn MXNet down already
                print(f"gluonbench.profiler: MXNet profiler dump failed ({exc})", file=sys.stderr)
            self.mxnet_state = -1
        self.flush()


_recorder: _Recorder | bool | None = None
_script_marks = False
"""set once the script calls :func:`step` or :func:`wrap` itself: the script mode's hooks (:func:`mark_step`,
:func:`mark_wait`) then add nothing, so no step is recorded twice"""
"""None: not looked up yet; False: no profile (hooks are no-ops); else the active recorder."""


def _active() -> _Recorder | None:
    global _recorder
    r = _recorder
    if r is None:
        root = os.environ.get(PROFILE_ENV)
        try:
            r = _Recorder(Path(root), os.environ.get(NODE_ENV, "algo-1")) if root else False
        except OSError as exc:  # never break the training script over its profile
            print(f"gluonbench.profiler: cannot write to {root} ({exc.strerror}); hooks disabled", file=sys.stderr)
            r = False
        _recorder = r
    return r or None


def reset() -> None:
    """Forget the active profile (flushing it); the next hook looks ``$GLUONBENCH_PROFILE`` up again."""
    global _recorder
    if isinstance(_recorder, _Recorder):
        _recorder.close()
        atexit.unregister(_recorder.close)
    _recorder = None


def enabled() -> bool:
    """True when a profile is recording this process's hooks."""
    return _active() is not None


class _Null:
    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


_NULL = _Null()


def _sync() -> bool:
    """Wait for MXNet's queued work (when the script has imported MXNet); True if it did."""
    mx = sys.modules.get("mxnet")
    if mx is None:
        return False
    mx.nd.waitall()
    return True


class _Step:
    __slots__ = ("r", "sync", "t0")

    def __init__(self, r: _Recorder, sync: bool) -> None:
        self.r = r
        self.sync = sync

    def __enter__(self) -> None:
        if self.r.mxnet_state == 0:
            self.r.start_mxnet()
        self.t0 = _perf()

    def __exit__(self, *exc: Any) -> None:
        synced = self.sync and _sync()
        t1 = _perf()
        r = self.r
        wait, r.pending_wait = r.pending_wait, 0.0
        r.add(
            "Step:ModeKeys." + r.phase,
            "step",
            self.t0,
            t1,
            {"step_num": r.step_num, "data_wait_us": round(wait * 1e6, 1), "epoch": r.epoch, "synced": synced},
        )
        r.step_num += 1


def step(sync: bool | None = None) -> Any:
    """Context manager around one training (or eval) step: its duration, the data wait since the
    previous step (from :func:`wrap`), the step number, epoch and phase.

    ``sync`` (default on; ``$GLUONBENCH_PROFILE_SYNC=0`` turns it off): end the step with
    ``mx.nd.waitall()``, so its duration is the work the step queued, not the Python dispatch of it.
    MXNet runs asynchronously: on a GPU an unsynchronised step is the few milliseconds of dispatch and
    the wait for the queued work lands in the next step or batch, so every step rule misfires (G8).
    The sync point is what the seed's loop does before each step anyway; it removes the overlap of one
    step's compute with the next batch's loading, so turn it off to profile a loop that relies on it.
    """
    global _script_marks
    _script_marks = True
    r = _recorder if _recorder is not None else _active()
    if not r:
        return _NULL
    if sync is None:
        sync = os.environ.get(SYNC_ENV, "1") != "0"
    return _Step(r, bool(sync))


class _Region:
    __slots__ = ("args", "cat", "name", "r", "t0")

    def __init__(self, r: _Recorder, name: str, cat: str, args: dict | None) -> None:
        self.r, self.name, self.cat, self.args = r, name, cat, args

    def __enter__(self) -> None:
        self.t0 = _perf()

    def __exit__(self, *exc: Any) -> None:
        self.r.add(self.name, self.cat, self.t0, _perf(), self.args)


def region(name: str) -> Any:
    """Time a named part of a step (``forward``, ``backward``, ``update``) as its own event."""
    r = _recorder if _recorder is not None else _active()
    return _Region(r, name, "step_phase", {"step_num": r.step_num}) if r else _NULL


@contextlib.contextmanager
def epoch(n: int) -> Iterator[None]:
    """Mark epoch ``n``: one ``Epoch n`` event spanning it; steps inside carry ``epoch: n``."""
    r = _active()
    if r is None:
        yield
        return
    r.epoch, t0 = n, _perf()
    try:
        yield
    finally:
        r.add(f"Epoch {n}", "epoch", t0, _perf(), {"epoch": n})


@contextlib.contextmanager
def phase(name: str) -> Iterator[None]:
    """Mark a phase (``train``, ``eval``): steps inside are ``Step:ModeKeys.<NAME>`` events."""
    r = _active()
    if r is None:
        yield
        return
    before, r.phase, t0 = r.phase, name.upper(), _perf()
    try:
        yield
    finally:
        r.add(f"Phase:{name}", "phase", t0, _perf(), None)
        r.phase = before


class _Wrapped:
    """An iterable that times each ``next()`` of the wrapped loader as data wait."""

    def __init__(self, loader: Iterable, r: _Recorder) -> None:
        self.loader = loader
        self.r = r

    def __len__(self) -> int:
        return len(self.loader)  # type: ignore[arg-type]

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)

    def __iter__(self) -> Iterator:
        r = self.r
        it = iter(self.loader)
        while True:
            t0 = _perf()
            try:
                item = next(it)
            except StopIteration:
                return
            t1 = _perf()
            r.pending_wait += t1 - t0
            r.add("DataLoader.next", "dataloader", t0, t1, {"step_num": r.step_num})
            yield item


def wrap(loader: Iterable) -> Iterable:
    """Time the wait for each batch of ``loader``; the loader itself when no profile is active."""
    global _script_marks
    _script_marks = True
    r = _active()
    return _Wrapped(loader, r) if r is not None else loader


def mark_step(t0: float, t1: float, wait_s: float, synced: bool = True) -> None:
    """One training step from ``t0`` to ``t1`` (``perf_counter`` times) with ``wait_s`` of it spent waiting for its
    batch, as :func:`step` records it: how ``gluonbench profile -- python train.py`` marks the steps of an
    unmodified script (its DataLoader and Trainer hooked, :mod:`gluonbench.script.hooks`). Nothing when no profile
    is active or the script marks its own steps."""
    r = _recorder if _recorder is not None else _active()
    if not r or _script_marks:
        return
    r.add(
        "Step:ModeKeys." + r.phase,
        "step",
        t0,
        t1,
        {"step_num": r.step_num, "data_wait_us": round(wait_s * 1e6, 1), "epoch": r.epoch, "synced": synced},
    )
    r.step_num += 1


def mark_wait(t0: float, t1: float) -> None:
    """One wait for a batch from ``t0`` to ``t1``, as :func:`wrap` records it (see :func:`mark_step`)."""
    r = _recorder if _recorder is not None else _active()
    if not r or _script_marks:
        return
    r.add("DataLoader.next", "dataloader", t0, t1, {"step_num": r.step_num})
