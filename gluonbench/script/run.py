"""The parent side of ``gluonbench diagnose -- python train.py ARGS``: start the script with the hooks, send it the
interleaved rounds, read the block timings back as :class:`~gluonbench.diagnosis.measure.ProbeResult` records,
and read those with the diagnosis's own verdict rule (:func:`gluonbench.diagnosis.run.read_probes`).

The script runs in its own session (process group) with a marker in its environment; it dies with gluonbench
(``PR_SET_PDEATHSIG``, set by the bootstrap for it and every process it forks), and a watchdog
(:data:`gluonbench.profiler.session.WATCHDOG`) kills its group and marked processes and removes the MXNet
shared-memory segments they made when gluonbench itself is killed. On a normal end gluonbench does the same.
"""

from __future__ import annotations

import json
import logging
import math
import os
import shutil
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from time import perf_counter
from typing import Any

from gluonbench.analysis.stats import median
from gluonbench.budgets import check_budget
from gluonbench.diagnosis.measure import ProbeSet, probe_results
from gluonbench.diagnosis.probes import PROBES
from gluonbench.diagnosis.recommend import Setting
from gluonbench.diagnosis.run import Diagnosis, read_probes, verdict_finished, verdict_settled
from gluonbench.diagnosis.verdict import Thresholds
from gluonbench.engine.isolation import kill_group
from gluonbench.engine.loop import StepTimes
from gluonbench.engine.measure import Record, Rounds
from gluonbench.errors import GluonbenchError
from gluonbench.monitor import SystemSummary
from gluonbench.profiler.session import start_watchdog
from gluonbench.scratch import (
    MARKER_ENV,
    clean_shm,
    kill_marked,
    marked_pids,
    owned_tempdir,
    shm_entries,
)
from gluonbench.script.channel import (
    DIR_ENV,
    FD_ENV,
    FLAGS,
    FORKED,
    KNOBS_ENV,
    LOADER_ENV,
    TO_END_ENV,
    WORKERS_ENV,
    Channel,
)
from gluonbench.script.hooks import SLOTS

log = logging.getLogger(__name__)


DONE = {"diagnose": "diagnosed", "sweep": "swept", "tune": "tuned", "check": "checked", "profile": "profiled"}
"""what each command does to a script, in the error lines"""


def example(command: str = "diagnose", script: str = "train.py") -> str:
    """A training command under ``gluonbench COMMAND`` (the example in this mode's error lines)."""
    return f"gluonbench {command} -- python {script} --epochs 5"


TAKES_VALUE = {"-W", "-X", "-Q"}
"""interpreter options whose value is the next word"""
STOP_GRACE_S = 1.0
"""seconds the script has to end by itself once told to stop (it does at once when it waits for a round)"""
LOADER_ONLY_BATCHES = 8
"""the most batches one ``loader_only`` slice pulls (at least the workers): a cheap loader's slice would otherwise
pull a block's worth (``block_s`` of batches) or more, and a script whose epoch is short would spend its rounds in
the evaluation pass that every epoch's end starts"""
FAST_BLOCKS = 2
"""the blocks a fast probe's slice runs in a round whose length one slow probe's single step sets (a storage-bound
script's full pipeline at 0.4 s a step): the round pairs them all the same, and its fast slices' full length only
made each round, and so each verdict, later"""
REMOVES = {
    "full": "nothing (the script as written)",
    "no_preprocess": "the transform of the loader's .transform()/.transform_first() dataset (its base dataset is "
    "still read; a transformed sample that passed earlier is handed on)",
    "no_read": "dataset[i] and its transform: each loader worker replays samples it cached as they passed "
    "(sampler, batchify, workers and queue kept)",
    "cached_batch": "the whole loader: one batch kept in host memory, handed to the script every step (its own "
    "copy to its contexts kept)",
    "loader_only": "the script's step: the loader's batches pulled back to back (the input pipeline alone)",
}
"""what each probe removes from a running script, in words (the probe table's last column)"""
NOT_SEPARABLE = {
    "device_batch": "nothing here: the script copies the replayed batch to its contexts itself (cached_batch "
    "keeps that copy)",
}


@dataclass(frozen=True)
class ScriptCommand:
    """``python [OPTIONS] SCRIPT ARGS`` or ``python [OPTIONS] -m MODULE ARGS``, as the user wrote it."""

    python: str
    options: tuple[str, ...]
    target: str
    """the script's path, or the module's name with ``module``"""
    module: bool
    args: tuple[str, ...]
    argv: tuple[str, ...] = ()
    """the command exactly as given (the interpreter as typed)"""

    @property
    def name(self) -> str:
        """The script's file name or the module's name (the diagnosis's label)."""
        return self.target if self.module else Path(self.target).name

    def words(self) -> list[str]:
        """The command as the user wrote it (the interpreter by its name)."""
        run = ["-m", self.target] if self.module else [self.target]
        return [Path(self.python).name, *self.options, *run, *self.args]

    def boot(self) -> list[str]:
        """The command that runs it through the bootstrap, in the same interpreter, with the same options."""
        run = ["-m", self.target] if self.module else [self.target]
        return [self.python, *self.options, "-m", "gluonbench.script.boot", *run, *self.args]


def parse_command(cmd: list[str], command: str = "diagnose") -> ScriptCommand:
    """The user's command read as a Python interpreter running a script or a module; one clear error if not, its
    example under ``gluonbench COMMAND``."""
    eg = example(command)
    if not cmd:
        raise GluonbenchError(f"no command after --; give the training command, e.g. {eg}")
    exe = cmd[0]
    if not Path(exe).name.startswith("python"):
        raise GluonbenchError(
            f"{exe} is not a Python interpreter: this mode runs a Python training script; give it as "
            f"python SCRIPT ARGS or python -m MODULE ARGS, e.g. {eg}"
        )
    python = shutil.which(exe)
    if python is None:
        raise GluonbenchError(f"command not found: {exe}; give a Python interpreter on PATH or its path")
    options: list[str] = []
    i = 1
    while i < len(cmd) and cmd[i].startswith("-") and cmd[i] != "-":
        word = cmd[i]
        if word == "-m":
            if i + 1 >= len(cmd):
                raise GluonbenchError(f"python -m needs a module name, e.g. {example(command, '-m pkg.train')}")
            return ScriptCommand(python, tuple(options), cmd[i + 1], True, tuple(cmd[i + 2 :]), tuple(cmd))
        if word == "-c" or word.startswith("-c"):
            raise GluonbenchError(
                f"python -c CODE cannot be {DONE.get(command, 'run')}: put the training code in a file, e.g. {eg}"
            )
        options.append(word)
        if word in TAKES_VALUE and i + 1 < len(cmd):
            options.append(cmd[i + 1])
            i += 1
        i += 1
    if i >= len(cmd) or cmd[i] == "-":
        raise GluonbenchError(f"no training script after {exe}; give one, e.g. {eg}")
    script = cmd[i]
    if not Path(script).is_file():
        raise GluonbenchError(f"script not found: {script}; check the path (relative to {os.getcwd()})")
    return ScriptCommand(python, tuple(options), script, False, tuple(cmd[i + 1 :]), tuple(cmd))


def check_interpreter(command: ScriptCommand, env: dict[str, str] | None = None) -> None:
    """One clear error when the script's interpreter cannot import gluonbench and mxnet (no MXNet is loaded)."""
    code = (
        "import importlib.util as u, sys\n"
        "missing = [m for m in ('gluonbench', 'mxnet') if u.find_spec(m) is None]\n"
        "print(' and '.join(missing)); sys.exit(3 if missing else 0)"
    )
    try:
        done = subprocess.run(
            [command.python, "-c", code], capture_output=True, text=True, timeout=60, env=env, stdin=subprocess.DEVNULL
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GluonbenchError(f"cannot run {command.python}: {exc}") from None
    if done.returncode != 0:
        missing = done.stdout.strip() or f"gluonbench (exit code {done.returncode})"
        raise GluonbenchError(
            f"{command.python} cannot import {missing}: the script's interpreter needs both; install gluonbench "
            "into the environment the script runs in, or name that environment's python in the command"
        )


def check_inputs(
    cmd: list[str] | ScriptCommand,
    budget_s: float,
    loader: int | None,
    start_timeout_s: float,
    command: str = "diagnose",
) -> ScriptCommand:
    """Every check that needs no run of the script: the command, its interpreter, the budget, ``--loader``.

    ``cmd`` as the user gave it (its errors name ``gluonbench COMMAND`` in their example), or the
    :class:`ScriptCommand` an earlier call returned: the command and its interpreter were checked there, and are
    not again (that check starts the interpreter)."""
    check_budget(budget_s, "diagnose")
    if loader is not None and (isinstance(loader, bool) or not isinstance(loader, int) or not 1 <= loader < SLOTS):
        raise GluonbenchError(f"--loader {loader!r}: give the DataLoader's number, 1 for the first the script makes")
    if not (isinstance(start_timeout_s, int | float) and math.isfinite(start_timeout_s) and start_timeout_s > 0):
        raise GluonbenchError(f"--start-timeout {start_timeout_s!r}: give seconds > 0, e.g. 120")
    if isinstance(cmd, ScriptCommand):
        return cmd
    parsed = parse_command(cmd, command)
    check_interpreter(parsed)
    return parsed


class ScriptEndedError(GluonbenchError):
    """The script ended, failed or never showed a Gluon DataLoader and a Trainer: one line says which."""


@dataclass
class ScriptProcess:
    """The user's script running through the bootstrap: its process group, channel, private folder and log."""

    command: ScriptCommand
    loader: int | None = None
    workers: tuple[int, int] | None = None
    """``(N, W)``: the N-th DataLoader the script makes gets ``num_workers=W``"""
    knobs: tuple[int, dict[str, Any]] | None = None
    """``(N, {knob: value})``: the N-th DataLoader the script makes gets these loader knobs (gluonbench tune)"""
    to_end: bool = False
    """count every training step and report the run's figures when the script ends by itself"""
    pythonpath: tuple[str, ...] = ()
    """folders put first on the script's ``PYTHONPATH`` (``check --against``: the baseline's tree)"""
    proc: subprocess.Popen | None = None
    channel: Channel | None = None
    folder: Path | None = None
    log_path: Path | None = None
    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    watchdog: subprocess.Popen | None = None
    shm_before: set[str] = field(default_factory=set)
    loaders_made: int = 0
    """DataLoaders the script made so far (``loader`` messages), for the message of a start that times out"""

    def start(self) -> None:
        self.folder = owned_tempdir("script")
        (self.folder / FLAGS).write_bytes(bytes(SLOTS))
        self.log_path = self.folder / "script.log"
        parent, child = socket.socketpair()
        env = dict(
            os.environ,
            **{
                FD_ENV: str(child.fileno()),
                DIR_ENV: str(self.folder),
                LOADER_ENV: "" if self.loader is None else str(self.loader),
                WORKERS_ENV: "" if self.workers is None else f"{self.workers[0]}:{self.workers[1]}",
                KNOBS_ENV: "" if self.knobs is None else f"{self.knobs[0]}:{json.dumps(self.knobs[1])}",
                TO_END_ENV: "1" if self.to_end else "",
                MARKER_ENV: self.token,
                "PYTHONUNBUFFERED": "1",
            },
        )
        if self.pythonpath:
            env["PYTHONPATH"] = os.pathsep.join([*self.pythonpath, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        self.shm_before = shm_entries()
        since = time.time() - 1.0
        try:
            with open(self.log_path, "wb") as logf:
                self.proc = subprocess.Popen(
                    self.command.boot(),
                    stdin=subprocess.DEVNULL,
                    stdout=logf,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                    env=env,
                    pass_fds=(child.fileno(),),
                )
        except OSError as exc:
            parent.close()
            raise GluonbenchError(f"cannot start {self.command.python}: {exc.strerror}") from None
        finally:
            child.close()
        self.channel = Channel(parent)
        self.watchdog = start_watchdog(self.proc.pid, self.token, since, self.folder / FORKED)

    def recv(self, timeout: float) -> dict[str, Any] | None:
        """The script's next message, or None when it ended (its channel closed); TimeoutError after ``timeout``."""
        assert self.channel is not None
        return self.channel.recv(timeout)

    def ended(self, what: str) -> ScriptEndedError:
        """The error for a script that ended: ``what`` it had done, its exit code, the last line of its output."""
        assert self.proc is not None
        try:
            rc = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            rc = None
        code = (
            "still running" if rc is None else f"killed by {signal.Signals(-rc).name}" if rc < 0 else f"exit code {rc}"
        )
        return ScriptEndedError(f"the script ended ({code}) {what}{self.last_line()}")

    def last_line(self) -> str:
        try:
            lines = [
                ln.strip() for ln in (self.log_path.read_text(errors="replace") if self.log_path else "").splitlines()
            ]
        except OSError:
            return ""
        lines = [ln for ln in lines if ln]
        if lines and lines[-1].startswith("EOFError"):
            return (
                f"; its output ended with: {lines[-1][:200]}: the script reads its standard input, which this mode "
                "does not give it; pass what it asks for as arguments"
            )
        return f"; its output ended with: {lines[-1][:300]}" if lines else "; it printed nothing"

    def forked(self) -> list[int]:
        """Every pid the script's processes forked so far (its loader workers, those that ended too)."""
        try:
            text = (self.folder / FORKED).read_text() if self.folder is not None else ""
        except OSError:
            return []
        return [int(line) for line in text.split() if line.isdigit()]

    def stop(self) -> None:
        """End the script and everything it started; remove its segments (a loader worker's that ended first
        too) and its folder."""
        if self.proc is None:
            return
        if self.channel is not None:
            try:
                self.channel.send({"op": "stop"})
            except OSError:
                pass
            self.channel.close()
        try:
            self.proc.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            pass
        tree = {self.proc.pid, *marked_pids(self.token)}
        kill_group(self.proc.pid)
        kill_marked(self.token)
        self.proc.wait()
        if self.watchdog is not None:
            try:
                self.watchdog.stdin.write(b"done")  # type: ignore[union-attr]
                self.watchdog.stdin.close()  # type: ignore[union-attr]
            except OSError:
                pass
            self.watchdog.wait()
        removed = clean_shm(self.shm_before, tree | set(self.forked()))  # every fork, read once all have ended
        if removed:
            log.info("removed %d shared-memory segment(s) the script left", len(removed))
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)


def _probe_names(transform: bool) -> tuple[list[str], dict[str, str]]:
    """The probes measured in the script and the ones that stand for another (name -> what they remove)."""
    skipped = dict(NOT_SEPARABLE)
    if not transform:
        skipped["no_preprocess"] = (
            "nothing here: the loader's dataset is not a .transform()/.transform_first() wrapper, so no transform "
            "can be removed alone"
        )
    return [p.name for p in PROBES if p.name not in skipped], skipped


def _probe_set(
    records: dict[str, Record], skipped: dict[str, str], batch_size: int, elapsed: float, rounds: int, startup: float
) -> ProbeSet:
    probes = probe_results(records, batch_size, skipped, final=True, removes=REMOVES)
    return ProbeSet(probes, elapsed, "", rounds, startup)


def take_blocks(rec: Record, blocks: list[list[list[float]]], number: int) -> None:
    """Add one round's blocks (each a list of ``[seconds, samples, wait]`` steps) to ``rec``."""
    total, samples = 0.0, 0
    for block in blocks:
        n = sum(int(s[1]) for s in block)
        secs = sum(float(s[0]) for s in block)
        if n <= 0:
            continue
        rec.blocks.append(secs / n)
        total, samples = total + secs, samples + n
        rec.times.extend(
            StepTimes(
                wait=[min(float(s[2]), float(s[0])) for s in block],
                copy=[0.0] * len(block),
                compute=[max(float(s[0]) - float(s[2]), 0.0) for s in block],
                samples=[int(s[1]) for s in block],
            )
        )
    if samples:
        rec.per_round[number] = total / samples
    rec.rounds += 1


def until_training(
    proc: ScriptProcess, start_timeout_s: float, ready: bool = True
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Wait for the started script's training loader (``training``) and, with ``ready``, its warm-up steps."""
    try:
        found = wait_for(proc, "training", start_timeout_s)
        return found, wait_for(proc, "ready", start_timeout_s) if ready else {}
    except TimeoutError:
        made = (
            f"made {proc.loaders_made} Gluon DataLoader(s) but no batch of one was followed by a gluon.Trainer update"
            if proc.loaders_made
            else "made no Gluon DataLoader (still importing, waiting, or feeding from something else)"
        )
        raise ScriptEndedError(
            f"the script {made} within {start_timeout_s:g} s: this mode needs a gluon.data.DataLoader feeding a "
            "gluon.Trainer (step, update or allreduce_grads); if the script takes longer to reach training, raise "
            "--start-timeout"
        ) from None


def wait_for(proc: ScriptProcess, kind: str, timeout: float) -> dict[str, Any]:
    """The script's next message of ``kind``; :class:`ScriptEndedError` when it ended or reported an ``error``,
    :class:`TimeoutError` after ``timeout`` seconds."""
    end = time.monotonic() + timeout
    while True:
        message = proc.recv(max(end - time.monotonic(), 0.0))
        if message is None:
            raise proc.ended(STAGE_WORDS.get(kind, "before a verdict"))
        if message.get("ev") == "error":
            raise ScriptEndedError(
                "the script steps a gluon.Trainer with no Gluon DataLoader batch before it (an mx.io iterator?): "
                "this mode needs a gluon.data.DataLoader feeding a gluon.Trainer; diagnose such a pipeline with "
                "--pipeline MODULE:FUNCTION"
            )
        if message.get("ev") == "loader":
            proc.loaders_made = max(proc.loaders_made, int(message.get("index") or 0))
        if message.get("ev") == kind:
            return message


STAGE_WORDS = {
    "training": "before a Gluon DataLoader's batch was followed by a gluon.Trainer update: this mode needs a "
    "gluon.data.DataLoader feeding a gluon.Trainer (step, update or allreduce_grads)",
    "ready": "during its first training steps, too few for a verdict: run it longer (more epochs or batches)",
    "round": "before a verdict: too few steps for one; run it longer (more epochs or batches)",
}


def diagnose_script(
    cmd: list[str] | ScriptCommand,
    budget_s: float = 60.0,
    *,
    thresholds: Thresholds | None = None,
    loader: int | None = None,
    start_timeout_s: float = 120.0,
    on_progress: Callable[[float, float], None] | None = None,
) -> Diagnosis:
    """Diagnose the user's own training command (``python train.py ARGS``, ``python -m pkg.train ARGS``), as written.

    The probes run inside the script's process, in interleaved rounds of its own training loop, within
    ``budget_s`` seconds of measurement (counted from its first training steps); ``loader`` picks the N-th
    DataLoader the script makes (default: the first whose batches are followed by a Trainer update).
    ``start_timeout_s``: how long the script may take to reach its first training steps.
    """
    thresholds = Thresholds() if thresholds is None else thresholds
    command = check_inputs(cmd, budget_s, loader, start_timeout_s, "diagnose")
    from gluonbench.env import utc_now

    started = utc_now()
    proc = ScriptProcess(command, loader)
    t_launch = perf_counter()
    proc.start()
    try:
        found, ready = until_training(proc, start_timeout_s)
        info = found.get("loader") or {}
        probes = probe_rounds(proc, info, ready, float(budget_s), thresholds, perf_counter() - t_launch, on_progress)
    finally:
        proc.stop()
    contexts = found.get("contexts") or []
    gpu = [c for c in contexts if c.startswith("gpu")]
    setting = Setting(
        batch_size=int(ready.get("samples") or info.get("batch_size") or 1),
        num_workers=int(info.get("num_workers", 0)),
        cores=os.cpu_count() or 1,
        ctx=("gpu:" + gpu[0][4:-1]) if gpu else "cpu",
        thread_pool=bool(info.get("thread_pool")),
        transform=bool(info.get("transform")),
        hybridized=None,
        budget_s=float(budget_s),
    )
    pipeline = {
        "script": " ".join(command.words()),
        "loader": f"DataLoader #{info.get('index')} of the script: {info.get('dataset')}, "
        f"{info.get('num_workers')} worker(s), batchify {info.get('batchify')}",
        "step": f"the script's own (gluon.Trainer on {', '.join(contexts) or '?'})",
    }
    d = read_probes(probes, setting, thresholds, pipeline, probes.elapsed_s, started, command.name)
    d.notes.append(
        "measured inside the running script: its optimizer, schedules and contexts ran as written, the probes "
        "changed only what its training DataLoader handed out; replayed batches trained its model on repeated "
        "data (the diagnosis measures speed, not the model)"
    )
    return d


class ScriptRounds:
    """One running script's side of the interleaved rounds: its probes' records, and :meth:`run` to send it one
    round and read the blocks back (:func:`probe_rounds` drives one script; ``check --against`` two, in turn)."""

    def __init__(
        self, proc: ScriptProcess, info: dict[str, Any], ready: dict[str, Any], budget_s: float, thresholds: Thresholds
    ) -> None:
        self.proc, self.budget_s = proc, budget_s
        self.plan = Rounds(
            budget_s=budget_s, rel_ci=thresholds.rel_ci, min_blocks=thresholds.min_blocks, converge_on=frozenset()
        )
        self.names, self.skipped = _probe_names(bool(info.get("transform")))
        self.batch_size = max(int(ready.get("samples") or 1), 1)
        self.records = {n: Record(n, est_step_s=float(ready.get("step_s") or 0.01)) for n in self.names}
        self.workers = int(info.get("num_workers", 0))
        self.min_steps = max(1, self.workers)
        self.prefetch = int(info.get("prefetch", 0))
        batches = info.get("batches")
        self.batches = int(batches) if isinstance(batches, int) and batches > 0 else None
        """the training loader's batches per epoch (None: unknown): a block of steps must fit inside one epoch"""
        self.slice_s = min(self.plan.round_seconds(), budget_s / (2 * len(self.names)))

    def run(self, number: int, budget_end: float, only: str | None = None) -> bool:
        """Round ``number``: each probe's block (``only``: that probe's alone), the order shifted by the round;
        False when the round did not come back within the budget and its grace (the complete rounds give the
        figures); the first one raises."""
        schedule = self.schedule(number, only)
        self.proc.channel.send(  # type: ignore[union-attr]
            {"op": "round", "n": number, "plan": schedule, "left_s": budget_end - perf_counter()}
        )
        grace = max(30.0, 20 * sum(r.est_step_s * r.block_steps for r in self.records.values()))
        try:
            message = wait_for(self.proc, "round", max(budget_end - perf_counter(), 0.0) + grace)
        except TimeoutError:
            if number == 1:
                raise ScriptEndedError(
                    f"the script's first round did not end within the budget and {grace:.0f} s more: its training "
                    "steps stalled (or each takes longer than the budget); give a larger --budget"
                ) from None
            return False
        for name, system in (message.get("systems") or {}).items():
            if name in self.records:
                self.records[name].systems.append(SystemSummary(**system))
        for name, blocks in (message.get("results") or {}).items():
            if name in self.records:
                take_blocks(self.records[name], blocks, number)
                rec = self.records[name]
                if rec.blocks:
                    rec.est_step_s = median(rec.blocks) * self.batch_size
        return True

    def schedule(self, number: int, only: str | None = None) -> list[list[Any]]:
        """Round ``number``'s plan for the script: ``[probe, slice seconds, steps a block, steps skipped]`` each."""
        shift = number % len(self.names)
        schedule = []
        # where one probe's step outlasts a slice, that step sets the round's length and a round gives that probe
        # one block whatever the others do: a fast probe then runs FAST_BLOCKS blocks, not the whole slice
        slow = max(r.est_step_s for r in self.records.values()) > self.slice_s
        for name in [only] if only is not None else self.names[shift:] + self.names[:shift]:
            rec = self.records[name]
            # after a switch, the batches a worker queue made in the other mode are left out. With no worker the
            # first step (the batch handed out at the switch computed, the next one fetched in the new mode) is in
            # the new mode; it is left out still where a step is short (what runs after a slow mode's idle wait is
            # noisier), and counted where one step outlasts the slice (leaving it out would double the slice's cost)
            if self.workers == 0:
                skip = 0 if rec.est_step_s > self.slice_s else 1
            else:
                skip = 1 if name == "cached_batch" else self.prefetch + 1
            k = max(self.min_steps, math.ceil(self.plan.block_s / max(rec.est_step_s, 1e-6)))
            slice_s = self.slice_s
            if name == "loader_only":  # one block of a few batches (each batch is timed on its own)
                k = max(self.min_steps, min(k, LOADER_ONLY_BATCHES))
                slice_s = min(slice_s, k * rec.est_step_s)
            else:
                if self.batches is not None:
                    # an epoch's end (and an evaluation pass after it) breaks a block, and each epoch starts with
                    # its skipped steps: a block longer than half of what is left seldom fills (on a fast machine,
                    # where a block's steps outnumber an epoch's, never: the round would wait until it stalled)
                    k = min(k, max(1, (self.batches - skip) // 2))
                if slow:
                    slice_s = min(slice_s, FAST_BLOCKS * k * rec.est_step_s)
            rec.block_steps = k
            schedule.append([name, slice_s, k, skip])
        return schedule

    def probe_set(self, elapsed: float, rounds: int, startup_s: float) -> ProbeSet:
        """The records so far as the diagnosis's :class:`ProbeSet`."""
        return _probe_set(self.records, self.skipped, self.batch_size, elapsed, rounds, startup_s)


def probe_rounds(
    proc: ScriptProcess,
    info: dict[str, Any],
    ready: dict[str, Any],
    budget_s: float,
    thresholds: Thresholds,
    startup_s: float,
    on_progress: Callable[[float, float], None] | None,
    after_round: Callable[[int, dict[str, Record]], None] | None = None,
    stop_early: bool = True,
) -> ProbeSet:
    """The interleaved rounds, as :class:`~gluonbench.engine.measure.Rounds` runs them, sent to the script.

    ``after_round(n, records)`` runs after round ``n`` came back (``records``: each probe's, so far), while the
    script waits for the next one (``check`` measures its ruler there); without ``stop_early`` the rounds go on to
    the budget's end (a fixed amount of evidence, as ``check`` measures)."""
    side = ScriptRounds(proc, info, ready, budget_s, thresholds)
    t0 = perf_counter()
    budget_end = t0 + budget_s
    rounds, settled_s, stop_reason = 0, None, "budget"
    probes = side.probe_set(0.0, 0, startup_s)
    while perf_counter() < budget_end:
        rounds += 1
        if not side.run(rounds, budget_end):
            rounds -= 1
            stop_reason = "stalled in the script"
            break
        if after_round is not None:
            after_round(rounds, side.records)
        elapsed = perf_counter() - t0
        probes = side.probe_set(elapsed, rounds, startup_s)
        if on_progress is not None:
            on_progress(elapsed, budget_s)
        ok = verdict_settled(probes, thresholds, side.workers)
        settled_s = (settled_s if settled_s is not None else elapsed) if ok else None
        if (
            stop_early
            and ok
            and side.plan.converged(side.records)
            and verdict_finished(probes, thresholds, side.workers)
        ):
            stop_reason = "converged"
            break
    probes.stop_reason, probes.settled_s = stop_reason, settled_s
    probes.elapsed_s = perf_counter() - t0
    probes.rounds = rounds
    log.info("%d rounds in the script in %.1f s, stopped on %s", rounds, probes.elapsed_s, stop_reason)
    return probes
