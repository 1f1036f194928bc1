"""``gluonbench sweep --workers 0,2,4 -- python train.py ARGS``: the user's script once per worker count.

A first short start finds the training DataLoader (the N-th the script makes: the first whose batches are
followed by a Trainer update, or ``--loader N``) and is stopped. Then, for each worker count (and repeat), a
fresh process runs the script with that loader made with ``num_workers=W`` (as if the script said so), and
either

* its training steps after its warm-up are timed: samples/s over ``max_batches`` steps (evaluation passes and
  epoch ends left out), and the process is stopped as soon as they are timed; or
* with ``to_end``, the script runs to its own end, as the seed's table does: its train duration is from the
  training loader's first ``iter()`` (worker start-up included) to its last update, less the evaluation passes
  (the time from another loader's first batch to the next training batch), and samples/s is its training
  samples over that duration.

Each run is one ``runs.jsonl`` record of a sweep's kind (``run``), so the run folder has the sweep's exports
(``summary.json``/``.md``/``.csv``, ``sweep.png``, ``report.html``) and ``gluonbench report``/``compare`` read
it; its settings name the script's command (its identity) and the loader that was set.
"""

from __future__ import annotations

import logging
import math
import os
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from gluonbench.env import command_line, environment, utc_now
from gluonbench.errors import GluonbenchError
from gluonbench.monitor import SystemMonitor
from gluonbench.report.store import RunStore, new_run_dir
from gluonbench.rundir import load
from gluonbench.script.run import ScriptCommand, ScriptEndedError, ScriptProcess, check_inputs, until_training, wait_for

log = logging.getLogger(__name__)


@dataclass
class ScriptRun:
    """One run of the script at one worker count: its training steps as they ran."""

    workers: int
    steps: int
    samples: int
    seconds: float
    """the timed steps' time, or with ``to_end`` the run's train duration"""
    repeat: int = 0
    wait_s: float = 0.0
    """of ``seconds``, the time the steps waited for their batch"""
    blocks: list[list[float]] = field(default_factory=list)
    """``[seconds, samples]`` of each block of steps (the run's own spread)"""
    eval_s: float | None = None
    steady_samples_per_s: float | None = None
    """with ``to_end``: the rate of the steps themselves (epoch ends, worker start-up and evaluation left out)"""
    epochs: int | None = None
    wall_s: float = 0.0
    system: dict[str, Any] = field(default_factory=dict)
    """psutil's summary of the script's process tree over the run (peak memory, CPU use)"""
    error: str | None = None
    started_utc: str = ""
    finished_utc: str = ""

    @property
    def samples_per_s(self) -> float:
        return self.samples / self.seconds if self.seconds > 0 else 0.0

    @property
    def step_s(self) -> float:
        return self.seconds / self.steps if self.steps else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "samples_per_s": self.samples_per_s, "step_s": self.step_s}

    def record(self, command: str, env: dict[str, Any], loader: int) -> dict[str, Any]:
        """This run as a sweep's ``runs.jsonl`` record (``kind == "run"``), which the sweep's reports read."""
        rates = [n / s for s, n in self.blocks if s > 0]
        steady = {
            "samples_per_s": self.steady_samples_per_s or self.samples_per_s,
            "wait_frac": self.wait_s / self.seconds if self.seconds > 0 else math.nan,
            "block_samples_per_s": rates,
        }
        return {
            "kind": "run",
            "status": "failed" if self.error else "ok",
            "error": self.error,
            "spec": {"workers": self.workers, "repeat": self.repeat, "loader": loader},
            "train_s": self.seconds if not self.error else None,
            "eval_s": self.eval_s,
            "samples_per_s": self.samples_per_s if not self.error else None,
            "steady": steady if not self.error else {},
            "extra": {"steps": self.steps, **({"epochs": self.epochs} if self.epochs is not None else {})},
            "wall_s": self.wall_s,
            "system": self.system or None,
            "env": env,
            "command": command,
            "started_utc": self.started_utc,
            "finished_utc": self.finished_utc,
        }


@dataclass
class ScriptSweep:
    """Every run, which of the script's DataLoaders had its ``num_workers`` set, and the run folder."""

    command: list[str]
    loader: int
    loader_info: dict[str, Any] = field(default_factory=dict)
    runs: list[ScriptRun] = field(default_factory=list)
    run_dir: Path | None = None
    summary: Any = None
    """the :class:`~gluonbench.report.summary.SweepSummary` of the run folder (None without one)"""

    @property
    def best(self) -> ScriptRun | None:
        return max((r for r in self.runs if not r.error), key=lambda r: r.samples_per_s, default=None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "loader": self.loader,
            "loader_info": self.loader_info,
            "runs": [r.to_dict() for r in self.runs],
            "run_dir": str(self.run_dir) if self.run_dir else None,
        }


def check_sweep(
    workers: list[int], max_batches: int, repeat: int = 1, timeout_s: float = 3600.0, to_end: bool = False
) -> None:
    """The sweep's own settings, before anything runs: one clear error naming the flag."""
    if not workers or any(isinstance(w, bool) or not isinstance(w, int) or w < 0 for w in workers):
        raise GluonbenchError(f"--workers {workers!r}: give worker counts >= 0, e.g. --workers 0,2,4")
    if isinstance(max_batches, bool) or not isinstance(max_batches, int) or max_batches < 1:
        raise GluonbenchError(f"--max-batches {max_batches!r}: give the training steps to time per run, e.g. 100")
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise GluonbenchError(f"--repeat {repeat!r}: give the runs per worker count, 1 or more")
    if not (isinstance(timeout_s, int | float) and math.isfinite(timeout_s) and timeout_s > 0):
        raise GluonbenchError(f"--timeout {timeout_s!r}: give seconds > 0 a run may take, e.g. 3600")
    if not isinstance(to_end, bool):
        raise GluonbenchError(f"--to-end {to_end!r}: a flag (True or False)")


def sweep_script(
    cmd: list[str] | ScriptCommand,
    workers: list[int],
    max_batches: int = 100,
    *,
    repeat: int = 1,
    to_end: bool = False,
    timeout_s: float = 3600.0,
    loader: int | None = None,
    start_timeout_s: float = 120.0,
    out: str | Path | None = None,
    name: str | None = None,
    on_run: Callable[[ScriptRun], None] | None = None,
) -> ScriptSweep:
    """Run ``cmd`` once per worker count (``repeat`` times each) with its training loader's ``num_workers`` set.

    Each run times ``max_batches`` training steps after the warm-up, or with ``to_end`` the script's whole
    training run to its end (each run is stopped after ``timeout_s``). With ``out``, the runs go into a sweep run
    folder ``OUT/<UTC>-sweep-script-<name>/`` (one record per run, written as it finishes) with the sweep's exports.
    A run that fails is recorded as failed; a script that shows no training loader is one error before any run.
    ``cmd``: the command as given, or the :class:`~gluonbench.script.run.ScriptCommand` that
    :func:`~gluonbench.script.run.check_inputs` made of it.
    """
    check_sweep(workers, max_batches, repeat, timeout_s, to_end)
    command = check_inputs(cmd, 60.0, loader, start_timeout_s, "sweep")
    found = _find_loader(command, loader, start_timeout_s)
    index = int(found["loader"].get("index") or 1)
    out_sweep = ScriptSweep(list(command.argv), index, found["loader"])
    store = _start_folder(out, name, command, found, workers, max_batches, repeat, to_end, loader) if out else None
    env = environment()
    words = " ".join(command.words())
    for rep in range(repeat):
        for w in workers:
            run = _one_run(command, index, w, max_batches, to_end, timeout_s, start_timeout_s)
            run.repeat = rep
            log.info("%d worker(s): %.1f samples/s%s", w, run.samples_per_s, f" ({run.error})" if run.error else "")
            out_sweep.runs.append(run)
            if store is not None:
                store.append(run.record(words, env, index))
            if on_run is not None:
                on_run(run)
    if store is not None:
        report = load(store.path)
        report.write(store.path)
        out_sweep.run_dir, out_sweep.summary = store.path, report.summary  # type: ignore[attr-defined]
    return out_sweep


def _start_folder(
    out: str | Path,
    name: str | None,
    command: ScriptCommand,
    found: dict[str, Any],
    workers: list[int],
    max_batches: int,
    repeat: int,
    to_end: bool,
    loader: int | None,
) -> RunStore:
    """The sweep's run folder, its settings naming the script's command (its identity), before the first run."""
    info = found.get("loader") or {}
    base = command.name if command.module else Path(command.name).stem  # a module's dots are not a suffix
    label = "".join(c if c.isalnum() or c in "-_" else "-" for c in base)[:48] or "script"
    store = RunStore(new_run_dir(out, name or f"sweep-script-{label}"))
    contexts = found.get("contexts") or []
    settings = {
        "workload": f"script {command.name}",
        "pipeline": " ".join(command.words()),
        "script": str(Path(command.target).resolve()) if not command.module else command.target,
        "command": " ".join(command.words()),
        "loader": info.get("index"),
        "loader_info": info,
        "loader_choice": loader,
        "ctx": ", ".join(contexts) or "?",
        "batch_size": info.get("batch_size"),
        "epochs": "the script's",
        "max_batches": None if to_end else max_batches,
        "to_end": to_end,
        "repeat": repeat,
        "workers": list(workers),
        "thread_pool": info.get("thread_pool"),
        "cwd": os.getcwd(),
    }
    store.write_settings({"settings": settings, "command": command_line(), "env": environment()})
    return store


def _one_run(
    command: ScriptCommand,
    index: int,
    w: int,
    max_batches: int,
    to_end: bool,
    timeout_s: float,
    start_timeout_s: float,
) -> ScriptRun:
    """One fresh process of the script at ``w`` workers; a failed run carries its one-line ``error``."""
    started, t0 = utc_now(), time.monotonic()
    proc = ScriptProcess(command, loader=index, workers=(index, w), to_end=to_end)
    proc.start()
    assert proc.proc is not None
    # the script's process tree (its loader workers included) over the whole run: peak memory and CPU use
    monitor = SystemMonitor(pid=proc.proc.pid, interval=1.0).start()
    system: dict[str, Any] = {}
    try:
        if to_end:
            message = _until_end(proc, timeout_s, w)
        else:
            until_training(proc, start_timeout_s)
            proc.channel.send({"op": "count", "steps": max_batches})  # type: ignore[union-attr]
            message = wait_for(proc, "count", min(timeout_s, start_timeout_s + 60.0 * max_batches))
    except TimeoutError:
        limit = "--timeout" if to_end else "--max-batches (or raise --timeout)"
        message = {"error": f"did not finish its training in time at {w} worker(s); lower {limit}"}
    except ScriptEndedError as exc:
        message = {"error": str(exc)}
    finally:
        try:
            system = monitor.stop().to_dict()
        except Exception as exc:  # the process may be gone: the figures are extras, never the run's failure
            log.info("no system figures for the run at %d worker(s): %r", w, exc)
        proc.stop()
    run = ScriptRun(
        workers=w,
        steps=int(message.get("updates") or message.get("steps") or 0),
        samples=int(message.get("train_samples") or message.get("samples") or 0),
        seconds=float(message.get("train_s") or message.get("seconds") or 0.0),
        wait_s=float(message.get("wait") or 0.0),
        blocks=[list(b) for b in message.get("blocks") or []],
        eval_s=float(message["eval_s"]) if message.get("eval_s") is not None else None,
        epochs=int(message["epochs"]) if message.get("epochs") is not None else None,
        wall_s=time.monotonic() - t0,
        error=message.get("error"),
        system=system,
        started_utc=started,
        finished_utc=utc_now(),
    )
    if to_end and message.get("seconds"):
        counted = float(message["seconds"])
        run.steady_samples_per_s = float(message.get("samples") or 0) / counted
        run.wait_s *= run.seconds / counted  # the steps' share of waiting, applied to the train duration
    return run


def _until_end(proc: ScriptProcess, timeout_s: float, w: int) -> dict[str, Any]:
    """Wait for the script to end by itself (``end``: its figures), then for its exit code: a failure is an error."""
    end = time.monotonic() + timeout_s
    message: dict[str, Any] | None = None
    while True:
        got = proc.recv(max(end - time.monotonic(), 0.0))
        if got is None:
            break
        if got.get("ev") == "end":
            message = got
    assert proc.proc is not None
    try:
        rc = proc.proc.wait(timeout=max(end - time.monotonic(), 1.0))
    except subprocess.TimeoutExpired:  # still running after its channel closed: the timeout's error
        raise TimeoutError from None
    if rc != 0 or message is None:
        raise proc.ended(
            "before it trained (no Gluon DataLoader batch followed by a gluon.Trainer update)"
            if message is None
            else f"with a failure after {message.get('updates', 0)} training steps at {w} worker(s)"
        )
    return message


def _find_loader(command: ScriptCommand, loader: int | None, start_timeout_s: float) -> dict[str, Any]:
    """Start the script once, unchanged, until its training loader is known: the ``training`` message."""
    proc = ScriptProcess(command, loader=loader)
    proc.start()
    try:
        found, _ = until_training(proc, start_timeout_s, ready=False)
    finally:
        proc.stop()
    found["loader"] = found.get("loader") or {}
    return found
