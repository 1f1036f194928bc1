"""Run a profile: the sampler, the writers, the child process, and the rules and report at the end.

``gluonbench profile -- CMD`` runs CMD as a child in its own process group (a new session): the
terminal's Ctrl-C reaches only gluonbench, which forwards it to the whole group, waits up to
``GRACE_S`` and then kills the group. A watchdog process holds a pipe from gluonbench; if
gluonbench itself is killed (even with SIGKILL), the pipe closes and the watchdog kills the
group, DataLoader workers included. Nothing here imports MXNet.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import psutil

from gluonbench.engine.isolation import kill_group
from gluonbench.errors import GluonbenchError
from gluonbench.files import atomic_write_text
from gluonbench.monitor.gpu import GpuSampler
from gluonbench.monitor.node import NodeMonitor
from gluonbench.names import param
from gluonbench.profiler import hooks
from gluonbench.profiler.data import META
from gluonbench.profiler.formats import SystemWriter
from gluonbench.report import DEFAULT_OUT, versions
from gluonbench.report.store import new_run_dir
from gluonbench.scratch import (
    MARKER_ENV,
    MX_SEGMENT_PATTERN,
    SHM_DIR,
    clean_shm,
    kill_marked,
    marked_pids,
    shm_entries,
)

log = logging.getLogger(__name__)

INTERVALS_MS = (100, 200, 500, 1000, 5000, 60000)
"""Sampling intervals Debugger allows; so does gluonbench."""
GRACE_S = 10.0
FLUSH_S = 10.0

# kills the program's group, then every process carrying its marker (a grandchild that called setsid());
# stdlib only, so it runs wherever the profiled program's Python does (hence its own copy of
# scratch.marked_pids). Until then it notes every marked pid it sees (twice a second): when gluonbench itself
# died (kill -9: end of input without the word 'done'), it also removes the MXNet segments those processes
# made and left in /dev/shm (scratch.MX_SEGMENT_PATTERN, made since the run started), as run_command does on
# a normal exit. argv: group pid, marker, start time, /dev/shm, the segment pattern, a file of forked pids (or "")
WATCHDOG = (
    "import os, re, select, signal, sys\n"
    "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "group, needle, since = int(sys.argv[1]), sys.argv[2].encode(), float(sys.argv[3])\n"
    "shm_dir, segment = sys.argv[4], re.compile(sys.argv[5])\n"
    "forked = sys.argv[6] if len(sys.argv) > 6 else ''\n"
    "me = os.getpid()\n"
    "def marked():\n"
    "    found = set()\n"
    "    for e in os.listdir('/proc'):\n"
    "        try:\n"
    "            if e.isdigit() and int(e) != me and needle in open(f'/proc/{e}/environ', 'rb').read().split(b'\\0'):\n"
    "                found.add(int(e))\n"
    "        except OSError:\n            pass\n"
    "    return found\n"
    "seen, told = {group}, b''\n"
    "while True:\n"
    "    seen |= marked()\n"
    "    if select.select([0], [], [], 0.5)[0]:\n"
    "        chunk = os.read(0, 4096)\n"
    "        if not chunk:\n            break\n"
    "        told += chunk\n"
    "try:\n    os.killpg(group, signal.SIGKILL)\n"
    "except OSError:\n    pass\n"
    "for _ in range(3):\n"
    "    for pid in marked():\n"
    "        seen.add(pid)\n"
    "        try:\n            os.kill(pid, signal.SIGKILL)\n"
    "        except OSError:\n            pass\n"
    "if told != b'done':\n"
    "    try:\n        seen |= {int(x) for x in open(forked).read().split() if x.isdigit()}\n"
    "    except (OSError, ValueError):\n        pass\n"
    "    try:\n        names = os.listdir(shm_dir)\n"
    "    except OSError:\n        names = []\n"
    "    for name in names:\n"
    "        m = segment.fullmatch(name)\n"
    "        path = os.path.join(shm_dir, name)\n"
    "        try:\n"
    "            if m and int(m.group(1), 16) in seen and os.lstat(path).st_ctime >= since:\n"
    "                os.unlink(path)\n"
    "        except OSError:\n            pass\n"
)


@dataclass(frozen=True)
class ProfileSettings:
    """What to sample and where to write (validated by :meth:`check`)."""

    interval_ms: int = 500
    out: str = DEFAULT_OUT
    name: str | None = None
    node_id: str = "algo-1"
    rules: dict[str, dict[str, Any]] = field(default_factory=dict)
    mxnet_profiler: bool = False
    identity: str | None = None
    """what is profiled, as every report names it (:mod:`gluonbench.identity`): a pipeline with its options; None:
    the program's command"""

    def check(self) -> ProfileSettings:
        if self.interval_ms not in INTERVALS_MS:
            raise GluonbenchError(
                f"{param('interval_ms', '--interval')} {self.interval_ms}: choose one of {', '.join(map(str, INTERVALS_MS))} ms (as Debugger)"
            )
        if self.name is not None and (not self.name or "/" in self.name):
            raise GluonbenchError(f"{param('name')} {self.name!r}: use a non-empty name without '/'")
        return self


@dataclass
class ProfileResult:
    """Where the profile is and how the job ended."""

    profile_dir: Path
    exit_code: int | None
    rules: list[Any] = field(default_factory=list)
    interrupted: bool = False

    @property
    def triggered(self) -> list[str]:
        return [r.rule for r in self.rules if r.triggered]


def _default_name(cmd: list[str]) -> str:
    """The run's name from the command: the script's stem, ``python -m``'s module, ``python-c`` for code given
    with ``-c``, else the program's name; at most 64 characters of ``[A-Za-z0-9-_.]``."""
    python = Path(cmd[0]).name.startswith("python")
    words = cmd[1:] if python else cmd
    if python and words[:1] == ["-c"]:
        return "python-c"
    for i, word in enumerate(words):
        if python and word == "-m" and i + 1 < len(words):
            return _safe_name(words[i + 1])
        if not word.startswith("-"):
            return _safe_name(Path(word).stem)
    return "job"


def _safe_name(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in text)[:64] or "job"


def check_command(cmd: list[str]) -> list[str]:
    """Refuse a command that cannot start: empty, not found, or ``python SCRIPT`` with no SCRIPT."""
    if not cmd:
        raise GluonbenchError("no command to profile; e.g. gluonbench profile -- python train.py")
    exe = cmd[0]
    if shutil.which(exe) is None:
        raise GluonbenchError(f"command not found: {exe}; give a program on PATH or a path to an executable")
    if Path(exe).name.startswith("python") and len(cmd) > 1:
        script = cmd[1]
        if not script.startswith("-") and not Path(script).is_file():
            raise GluonbenchError(f"script not found: {script}; check the path (relative to {os.getcwd()})")
    return cmd


class Profiler:
    """One profile: samples the tree rooted at a pid, writes the Debugger layout, builds the report."""

    def __init__(self, settings: ProfileSettings, name: str = "job") -> None:
        self.settings = settings.check()
        self.dir = new_run_dir(settings.out, f"profile-{settings.name or name}")
        self.output = self.dir / "profiler-output"
        try:
            self.output.mkdir()
        except OSError as exc:
            raise GluonbenchError(
                f"cannot write into {self.dir}: {exc.strerror}; choose a writable {param('out')}"
            ) from exc
        self.writer = SystemWriter(self.output, settings.node_id, flush_s=min(FLUSH_S, 60.0))
        self.monitor: NodeMonitor | None = None
        self.result: ProfileResult | None = None
        """set when the profile is stopped (the ``with gluonbench.profile()`` block has ended)"""
        self.meta: dict[str, Any] = {
            "node_id": settings.node_id,
            "interval_ms": settings.interval_ms,
            "cores": psutil.cpu_count() or 1,
            "notes": [],
        }

    def env(self) -> dict[str, str]:
        """What the hooks in the profiled process read."""
        env = {hooks.PROFILE_ENV: str(self.output.resolve()), hooks.NODE_ENV: self.settings.node_id}
        if self.settings.mxnet_profiler:
            env[hooks.MXNET_ENV] = "1"
        return env

    def start(self, pid: int, command: list[str] | None = None, worker_depth: int = 1) -> None:
        gpus = GpuSampler.open()
        if gpus.note:
            self.meta["notes"].append(gpus.note)
        else:
            self.meta["gpu_map"] = gpus.gpu_map  # which physical GPU each gpu(N) of the program is
        what = self.settings.identity or (" ".join(command) if command else None)
        self.meta.update(start=time.time(), command=command, pid=pid, identity=what)
        self._write_meta()
        self.monitor = NodeMonitor(pid, self.settings.interval_ms / 1000.0, self._sink, gpus, worker_depth)
        self.monitor.start()

    def _sink(self, rows: list) -> None:
        """The sampler's rows to the writer; a write error (disk full, folder removed) is logged once
        and sampling goes on, so the profiled program is never disturbed."""
        try:
            self.writer.add(rows)
        except OSError as exc:
            if not self.meta.get("write_error"):
                self.meta["write_error"] = str(exc)
                log.warning("cannot write system metrics under %s: %s", self.output, exc)

    def _write_meta(self) -> None:
        from gluonbench.validate import redact

        meta = redact(self.meta)  # a command line's NAME=secret and URL credentials are not kept
        atomic_write_text(self.dir / META, json.dumps(versions.stamp("profile", meta), indent=2, sort_keys=True))

    def stop(self, exit_code: int | None, interrupted: bool = False) -> ProfileResult:
        """Stop sampling, flush everything, then run the rules and write the report."""
        if self.monitor is not None:
            summary = self.monitor.stop()
            self.meta["sampler_cpu_s"] = round(summary.monitor_cpu_s, 4)
            self.meta["samples"] = summary.samples
        end = time.time()
        self.meta.update(end=end, exit_code=exit_code, interrupted=interrupted)
        try:
            self.writer.close(end)
            self._write_meta()
        except OSError as exc:
            raise GluonbenchError(
                f"cannot write the profile into {self.dir}: {exc.strerror}; the program exited with {exit_code}"
            ) from exc
        return ProfileResult(self.dir, exit_code, build_report(self.dir, self.settings.rules), interrupted)


def build_report(folder: str | Path, rules: dict[str, dict[str, Any]] | None = None, out: str | Path | None = None):
    """(Re)build ``rules.json`` and ``report.html`` from a profile's files alone; return the rule reports.

    ``report.html`` is :class:`~gluonbench.profiler.report.ProfileReport` written by the HTML exporter
    every run folder's report goes through.
    """
    from gluonbench.profiler.data import load
    from gluonbench.profiler.report import ProfileReport
    from gluonbench.profiler.rules import run_rules

    data = load(Path(folder))
    reports = run_rules(data, rules)
    target = Path(out) if out else data.root
    try:
        target.mkdir(parents=True, exist_ok=True)
        atomic_write_text(target / "rules.json", json.dumps([r.to_dict() for r in reports], indent=2, default=str))
        ProfileReport(data, reports).write(target)
        if any(e.get("cat") == "operator" for e in data.events):
            # gluonbench's step events and MXNet's operators in one file for Perfetto / chrome://tracing
            atomic_write_text(target / "trace.json", json.dumps({"traceEvents": data.events}))
    except OSError as exc:
        raise GluonbenchError(
            f"cannot write the report into {target}: {exc.strerror}; pass a writable {param('out')}"
        ) from exc
    return reports


def _exit_code(rc: int) -> int:
    return 128 - rc if rc < 0 else rc


def start_watchdog(pid: int, token: str, since: float, forked: str | Path = "") -> subprocess.Popen:
    """The :data:`WATCHDOG` of a program started as ``pid`` whose tree carries ``token``: it ends the program's group,
    its marked processes and the MXNet segments they made since ``since`` when its stdin closes (this process gone).
    ``forked``: a file of pids the program's processes forked (the script mode's), whose segments are the program's
    too though those processes ended between two of the watchdog's looks."""
    return subprocess.Popen(
        [
            sys.executable,
            "-c",
            WATCHDOG,
            str(pid),
            f"{MARKER_ENV}={token}",
            str(since),
            str(SHM_DIR),
            MX_SEGMENT_PATTERN,
            str(forked),
        ],
        stdin=subprocess.PIPE,
        start_new_session=True,
    )


def run_command(
    cmd: list[str], settings: ProfileSettings, run_as: list[str] | None = None, env: dict[str, str] | None = None
) -> ProfileResult:
    """Profile ``cmd`` until it exits; return its exit code (128+N for signal N) with the profile.

    ``run_as``: the command actually started in its place (the same program through a bootstrap, such as the
    script mode's hooks); the profile's name and record keep ``cmd``. ``env``: added to the program's environment."""
    check_command(cmd)
    prof = Profiler(settings, _default_name(cmd))
    token = uuid.uuid4().hex  # marks the program's whole tree, also what leaves its group with setsid()
    env = dict(os.environ, **(env or {}), **prof.env(), **{MARKER_ENV: token})
    shm_before = shm_entries()
    since = time.time() - 1.0  # a segment older than the run is not the program's (a reused pid's); 1 s for clocks
    try:
        child = subprocess.Popen(run_as or cmd, env=env, start_new_session=True)
    except OSError as exc:
        raise GluonbenchError(f"cannot start {cmd[0]}: {exc.strerror}") from exc
    watchdog = start_watchdog(child.pid, token, since)
    interrupted = False
    code: int | None = None
    try:
        prof.start(child.pid, cmd)
        code = _exit_code(child.wait())
    except KeyboardInterrupt:
        from gluonbench import interrupts

        interrupts.handled()  # the stop is acted on here: the program is stopped and what it recorded is written
        interrupted = True
        code = _exit_code(_stop_group(child))
    finally:
        tree = {child.pid, *marked_pids(token)}
        kill_group(child.pid)
        kill_marked(token)
        try:
            watchdog.stdin.write(b"done")  # a normal end: run_command cleans /dev/shm itself, with a warning
            watchdog.stdin.close()
        except OSError:  # the watchdog is gone (killed by someone): nothing to tell it
            pass
        watchdog.wait()
        try:
            result = prof.stop(code, interrupted)
        finally:
            # MXNet segments the program's tree made and left (a DataLoader stopped mid-epoch leaves the batches
            # its workers had prefetched): only those made during this run by a process seen in the tree
            if prof.monitor is not None:
                tree |= prof.monitor.pids_seen
            removed = clean_shm(shm_before, tree)
            if removed:
                log.warning(
                    "removed %d shared-memory segment(s) the program left: %s", len(removed), ", ".join(removed)
                )
    return result


def _stop_group(child: subprocess.Popen) -> int:
    """Ctrl-C for the child's whole group, then SIGKILL after GRACE_S; the child's return code."""
    try:
        os.killpg(child.pid, signal.SIGINT)
    except OSError:
        pass
    deadline = time.monotonic() + GRACE_S
    while True:
        try:
            return child.wait(timeout=max(deadline - time.monotonic(), 0.01))
        except subprocess.TimeoutExpired:
            kill_group(child.pid)
        except KeyboardInterrupt:  # a second Ctrl-C: stop waiting
            kill_group(child.pid)


@contextmanager
def profile(
    name: str = "python",
    interval_ms: int = 500,
    out: str = DEFAULT_OUT,
    rules: dict[str, dict[str, Any]] | None = None,
    node_id: str = "algo-1",
) -> Iterator[Profiler]:
    """Profile the code in the ``with`` block (this process and its children)::

        with gluonbench.profile(name="mnist") as p:
            train()
        print(p.result.profile_dir, p.result.triggered)

    The hooks (``gluonbench.profiler.step()``, ``wrap()``) in the block record into this profile.
    """
    prof = Profiler(ProfileSettings(interval_ms=interval_ms, out=out, name=name, node_id=node_id, rules=rules or {}))
    saved = {k: os.environ.get(k) for k in prof.env()}
    os.environ.update(prof.env())
    hooks.reset()
    prof.start(os.getpid(), None)
    failed: BaseException | None = None
    try:
        yield prof
    except BaseException as exc:
        failed = exc
        raise
    finally:
        hooks.reset()  # flush this process's events before the report reads them
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        code = 0 if failed is None else 130 if isinstance(failed, KeyboardInterrupt) else 1
        prof.result = prof.stop(code, isinstance(failed, KeyboardInterrupt))


class RunProfile:
    """One sweep run profiled from the sweep's process (``sweep --profile``): the run's child and its
    workers are this process's descendants. :meth:`attach` stops it and records the rules in the run's
    ``extra["profile"]``; a disabled one does nothing."""

    def __init__(self, parent: Path | None, name: str, settings: ProfileSettings | None = None) -> None:
        self.prof: Profiler | None = None
        self.loop: list[float] = []  # wall times at which the run's step count grew
        self.steps = 0
        if parent is not None:
            self.prof = Profiler(replace(settings or ProfileSettings(), out=str(parent), name=name))
            self.prof.start(os.getpid(), [sys.executable, "-m", "gluonbench", "sweep"], worker_depth=2)

    def progress(self, callback: Callable[[int], None] | None) -> Callable[[int], None] | None:
        """Wrap the sweep's progress callback (the run's step count, polled every 0.5 s) to mark the
        training loop: the run's child has no hooks, so this is where the loop starts and ends."""
        if self.prof is None:
            return callback

        def on_steps(steps: int) -> None:
            if steps > self.steps:
                self.steps = steps
                self.loop.append(time.time())
            if callback is not None:
                callback(steps)

        return on_steps

    def _write_loop(self) -> None:
        if self.prof is None or not self.loop:
            return
        from gluonbench.profiler.formats import FRAMEWORK_DIR, TraceWriter

        t0, t1 = self.loop[0], self.loop[-1]
        writer = TraceWriter(self.prof.output / FRAMEWORK_DIR / f"{int(t0 * 1e6)}_{os.getpid()}-sweep_progress.json")
        writer.write(
            [
                {
                    "name": "TrainingLoop",
                    "cat": "phase",
                    "ph": "X",
                    "ts": t0 * 1e6,
                    "dur": (t1 - t0) * 1e6,
                    "pid": os.getpid(),
                    "tid": 0,
                    "args": {"steps": self.steps, "source": "sweep progress", "dataloader": True},
                }
            ]
        )
        writer.close()

    def attach(self, result: Any) -> None:
        if self.prof is None:
            return
        self._write_loop()
        status = getattr(result, "status", "ok")
        res = self.prof.stop(0 if status == "ok" else 1)
        self.prof = None
        result.extra["profile"] = {
            "dir": str(res.profile_dir),
            "triggered": res.triggered,
            "not_applicable": [r.rule for r in res.rules if not r.applicable],
        }

    def __enter__(self) -> RunProfile:
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.prof is not None:  # the run did not finish (Ctrl-C): keep what was sampled
            self.prof.stop(None, interrupted=True)
            self.prof = None
