"""Start a distributed job (scheduler, servers, workers), watch it, and stop every process of it.

``--launcher local`` starts each process here with MXNet's documented variables (``DMLC_ROLE``,
``DMLC_PS_ROOT_URI=127.0.0.1``, ``DMLC_PS_ROOT_PORT``, ``DMLC_NUM_SERVER``, ``DMLC_NUM_WORKER``,
``DMLC_NODE_HOST``, ``DMLC_INTERFACE``), each in its own session with ``PR_SET_PDEATHSIG``, so
they die with this process even when it is killed. ``--launcher ssh`` runs MXNet's shipped
``dmlc_tracker`` (its ssh submitter) in a child process, with the one compatibility it needs on
Python 3.11 (``Thread.isAlive``, removed in 3.9; see :mod:`gluonbench.distributed.tracker`).

The watch loop polls every 0.2 s: a process that exits non-zero (or is killed) before every worker
has reported stops the whole job at once with one line naming it; so does ``timeout_s``. A
scheduler that cannot bind its port (taken since it was picked) is restarted on a fresh port.
Whatever happens, every process group is killed and waited for before returning, and MXNet
shared-memory segments the job's processes left are removed. Locally launched processes get a
private ``TMPDIR``, removed with the job, so what a killed worker leaves there (its pipe channel's
FIFOs, say) does not outlive the job either.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gluonbench import mxops
from gluonbench.distributed.node import RESULT_MARK, encode_spec, set_pdeathsig
from gluonbench.distributed.settings import parse_hostfile
from gluonbench.engine.child import PROGRESS_ENV
from gluonbench.engine.isolation import kill_group
from gluonbench.env import FROM_ENV, SPEC_ENV, utc_now
from gluonbench.errors import GluonbenchError
from gluonbench.files import open_nofollow
from gluonbench.names import arg, param
from gluonbench.pipeline.scale import LAUNCH_ENV, local_rank_gpus
from gluonbench.scratch import clean_shm, owned_tempdir, shm_entries
from gluonbench.sweeprun.run import RunResult, RunSpec

log = logging.getLogger(__name__)

POLL_S = 0.2
DRAIN_S = 15.0
"""How long servers and scheduler may take to leave after the last worker reported."""
PORT_RETRIES = 3


def port_free(port: int, host: str = "") -> bool:
    """True when ``port`` can be bound now (on every interface, as ps-lite's scheduler binds)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
            return True
        except OSError:
            return False


def pick_port(preferred: int | None = None) -> int:
    """``preferred`` when free, else a port the kernel hands out as free (warned when one was asked for)."""
    if preferred is not None:
        if port_free(preferred):
            return preferred
        log.warning("port %d is in use; the scheduler takes a free port instead", preferred)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


@dataclass
class Node:
    """One launched process (a role on this machine, or the ssh tracker)."""

    role: str
    index: int
    proc: subprocess.Popen
    log_path: Path
    started: float = field(default_factory=time.monotonic)

    @property
    def name(self) -> str:
        return self.role if self.role in ("scheduler", "tracker") else f"{self.role} {self.index}"


@dataclass
class JobOutcome:
    """What a job left: one result per worker that reported, and how the job ended."""

    results: list[RunResult]
    status: str = "ok"
    error: str | None = None
    port: int | None = None
    wall_s: float = 0.0
    launcher: str = "local"
    pids: list[int] = field(default_factory=list)


def _exit_text(rc: int) -> str:
    if rc < 0:
        try:
            return f"was killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"was killed by signal {-rc}"
    return f"exited with code {rc}"


def parse_results(text: str) -> list[dict[str, Any]]:
    """The ``GLUONBENCH_RESULT`` lines of a log, as dicts (torn lines skipped)."""
    out = []
    for line in text.splitlines():
        if line.startswith(RESULT_MARK):
            try:
                out.append(json.loads(line[len(RESULT_MARK) :]))
            except json.JSONDecodeError:
                log.warning("a worker's result line is torn; skipped")
    return out


def _last_error_line(path: Path) -> str:
    """The most telling line of a node's log (MXNet's check failure or Python's exception)."""
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    for ln in reversed(lines):
        if ln.startswith(RESULT_MARK):
            continue
        if "Error" in ln or "failed" in ln.lower():
            return ln[:300]
    return ""


class Job:
    """One distributed job of ``spec`` (``spec.hosts`` workers, ``spec.servers`` servers)."""

    def __init__(
        self,
        spec: RunSpec,
        log_dir: Path,
        timeout_s: float,
        launcher: str = "local",
        hostfile: str | None = None,
        port: int | None = None,
        progress: Callable[[int], None] | None = None,
    ) -> None:
        self.spec = spec
        self.log_dir = Path(log_dir)
        self.timeout_s = timeout_s
        self.launcher = launcher
        self.hostfile = hostfile
        self.preferred_port = port
        self.progress = progress
        self.nodes: list[Node] = []
        self.pids: set[int] = set()
        self.progress_path = self.log_dir / f".progress-{os.getpid()}"
        self.tmp_dir: Path | None = None

    # -- starting --------------------------------------------------------------------------------

    def _popen(self, role: str, index: int, argv: list[str], env: dict[str, str], log_name: str) -> Node:
        path = self.log_dir / log_name
        with os.fdopen(open_nofollow(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "ab") as logf:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=logf,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
                preexec_fn=set_pdeathsig,  # libc is loaded already: the child only calls prctl
            )
        self.pids.add(proc.pid)
        node = Node(role, index, proc, path)
        self.nodes.append(node)
        return node

    def _base_env(self, port: int) -> dict[str, str]:
        s = self.spec
        env = dict(os.environ)
        env.update(
            DMLC_PS_ROOT_URI="127.0.0.1",
            DMLC_PS_ROOT_PORT=str(port),
            DMLC_NUM_SERVER=str(s.servers),
            DMLC_NUM_WORKER=str(s.hosts),
            DMLC_NODE_HOST="127.0.0.1",
            DMLC_INTERFACE="lo",
            PYTHONUNBUFFERED="1",
        )
        if self.tmp_dir is not None:
            env["TMPDIR"] = str(self.tmp_dir)  # removed with the job (pipe FIFOs of a killed worker, ...)
            mxops.handover(env, self.tmp_dir)  # each node's MXNet import reuses this process's compiled operators
        env[LAUNCH_ENV] = repr(time.time())
        return env

    def _node_argv(self, spec: RunSpec | None = None) -> list[str]:
        """A node's command line with its spec on it: for the ssh launcher, whose tracker starts each remote
        node with one command line (a local node gets its spec in the environment: :meth:`_local_node`)."""
        return [sys.executable, "-m", "gluonbench.distributed.node", encode_spec((spec or self.spec).to_dict())]

    def _local_node(self, env: dict[str, str], spec: RunSpec | None = None) -> tuple[list[str], dict[str, str]]:
        """A local node's command line and environment: the spec (a factory's options, credentials among them) in
        the environment, which only this user can read, not on the command line, which ``ps`` shows to all."""
        argv = [sys.executable, "-m", "gluonbench.distributed.node", FROM_ENV]
        return argv, dict(env, **{SPEC_ENV: json.dumps((spec or self.spec).to_dict())})

    def worker_devices(self) -> list[tuple[dict[str, str], RunSpec]]:
        """Per local worker: its extra environment and spec (G5). On GPUs each rank gets its own slice of the
        job's GPUs through ``CUDA_VISIBLE_DEVICES`` and sees them as ``gpu(0..k-1)``; on CPU nothing changes."""
        from dataclasses import replace

        from gluonbench._mx import num_gpus

        workers = self.spec.hosts
        slices = local_rank_gpus(self.spec, workers, os.environ.get("CUDA_VISIBLE_DEVICES"), have=None)
        if slices is None:
            return [({}, self.spec)] * workers
        local_rank_gpus(self.spec, workers, os.environ.get("CUDA_VISIBLE_DEVICES"), have=num_gpus())
        per = len(slices[0])
        spec = replace(self.spec, ctx="gpu:0", gpus=list(range(per)) if self.spec.gpus else None, devices=per)
        return [({"CUDA_VISIBLE_DEVICES": ",".join(sl)}, spec) for sl in slices]

    def _start_local(self, port: int, attempt: int) -> None:
        env = self._base_env(port)
        ranks = self.worker_devices()
        argv, env = self._local_node(env)
        tag = f"h{self.spec.hosts}-w{self.spec.workers}-r{self.spec.repeat}"
        self._popen("scheduler", 0, argv, dict(env, DMLC_ROLE="scheduler"), f"{tag}-scheduler.log")
        for i in range(self.spec.servers):
            self._popen("server", i, argv, dict(env, DMLC_ROLE="server"), f"{tag}-server{i}.log")
        for i in range(self.spec.hosts):
            extra, spec = ranks[i]
            wargv, wenv = self._local_node(dict(env, DMLC_ROLE="worker", **extra), spec)
            if i == 0:
                wenv[PROGRESS_ENV] = str(self.progress_path)
            self._popen("worker", i, wargv, wenv, f"{tag}-worker{i}.log")
        log.info(
            "job %s: scheduler on 127.0.0.1:%d (attempt %d), %d server(s), %d worker(s)",
            tag,
            port,
            attempt,
            self.spec.servers,
            self.spec.hosts,
        )

    def _start_ssh(self) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        env[LAUNCH_ENV] = repr(time.time())
        tag = f"h{self.spec.hosts}-w{self.spec.workers}-r{self.spec.repeat}"
        # the tracker's ssh submitter runs each line through a shell: it gets a copy holding only the
        # lines checked as [user@]host[:port] now, not the user's file (which could change meanwhile)
        checked = self.log_dir / f"{tag}-hosts.txt"
        fd = open_nofollow(checked, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.writelines(f"{host}:{port}\n" for host, port in parse_hostfile(str(self.hostfile)))
        argv = [
            sys.executable,
            "-m",
            "gluonbench.distributed.tracker",
            "--num-workers",
            str(self.spec.hosts),
            "--num-servers",
            str(self.spec.servers),
            "--host-file",
            str(checked),
            "--",
            *self._node_argv(),
        ]
        self._popen("tracker", 0, argv, env, f"{tag}-tracker.log")

    # -- watching --------------------------------------------------------------------------------

    def _reap_pids(self) -> None:
        import psutil

        for node in self.nodes:
            try:
                self.pids |= {p.pid for p in psutil.Process(node.proc.pid).children(recursive=True)}
            except psutil.Error:
                pass

    def _collect(self) -> list[dict[str, Any]]:
        out = []
        for node in self.nodes:
            if node.role in ("worker", "tracker"):
                try:
                    out += parse_results(node.log_path.read_text(errors="replace"))
                except OSError:
                    pass
        return out

    def _report_progress(self) -> None:
        if self.progress is None:
            return
        try:
            self.progress(int(self.progress_path.read_text() or 0))
        except (OSError, ValueError):
            pass

    def run(self) -> JobOutcome:
        """Start the job, wait for it, stop it; never leaves a process behind (also on Ctrl-C)."""
        self.log_dir.mkdir(parents=True, exist_ok=True)
        shm_before = shm_entries()
        t0 = time.monotonic()
        outcome = JobOutcome(results=[], launcher=self.launcher)
        try:
            if self.launcher == "local":
                self.tmp_dir = owned_tempdir("job")  # swept by the next run if we are killed
            outcome = self._run(t0)
        finally:
            self.stop()
            removed = clean_shm(shm_before, self.pids)
            if removed:
                log.warning("removed %d shared-memory segment(s) left by the job", len(removed))
            self.progress_path.unlink(missing_ok=True)
            if self.tmp_dir is not None:
                shutil.rmtree(self.tmp_dir, ignore_errors=True)
        outcome.wall_s = time.monotonic() - t0
        outcome.pids = sorted(self.pids)
        return outcome

    def _failed_node(self, finished: bool) -> tuple[Node, int] | None:
        """The first node that ended abnormally: non-zero, or a worker/tracker gone without its result."""
        for node in self.nodes:
            rc = node.proc.poll()
            if rc is None:
                continue
            if rc != 0:
                return node, rc
            if node.role == "worker" and not parse_results(node.log_path.read_text(errors="replace")):
                return node, rc
            if node.role == "tracker" and not finished:
                return node, rc
        for node in self.nodes:
            # dmlc_tracker's ssh threads die with CalledProcessError when a remote process fails; the tracker
            # itself then waits for a scheduler that never finishes
            if node.role == "tracker" and not finished:
                try:
                    if "CalledProcessError" in node.log_path.read_text(errors="replace"):
                        return node, 1
                except OSError:
                    pass
            # a scheduler or server leaving cleanly: the workers are done with it
        return None

    def _outcome(self, results: list[dict[str, Any]], port: int | None, status: str = "ok", error: str | None = None):
        return JobOutcome(
            results=[RunResult.from_dict(r) for r in results],
            status=status,
            error=error,
            port=port,
            launcher=self.launcher,
        )

    def _run(self, t0: float) -> JobOutcome:
        port: int | None = None
        if self.launcher == "ssh":
            self._start_ssh()
        else:
            port = pick_port(self.preferred_port)
            self._start_local(port, 1)
        attempt = 1
        done_at: float | None = None
        while True:
            time.sleep(POLL_S)
            self._reap_pids()
            self._report_progress()
            failed = self._failed_node(False)
            results = self._collect()  # after the poll: a result printed before an exit is seen
            finished = len(results) >= self.spec.hosts
            if failed is not None and self.launcher == "ssh":
                failed = self._failed_node(finished)
            if failed is not None:
                node, rc = failed
                why = _last_error_line(node.log_path)
                if node.role == "scheduler" and "bind failed" in why and attempt < PORT_RETRIES:
                    log.warning("the scheduler could not bind port %s; restarting the job on a free port", port)
                    self.stop()
                    self.nodes.clear()
                    attempt += 1
                    port = pick_port(None)
                    self._start_local(port, attempt)
                    continue
                bad = [r for r in results if r.get("status") != "ok"]
                if bad:
                    why = bad[0].get("error") or why
                return self._outcome(
                    results,
                    port,
                    "failed",
                    f"distributed job stopped: {node.name} (pid {node.proc.pid}) {_exit_text(rc)} after "
                    f"{time.monotonic() - node.started:.1f} s"
                    + (f" ({why})" if why else "")
                    + f"; all {len(self.nodes)} processes of the job were stopped; logs in {self.log_dir}",
                )
            if finished:
                done_at = done_at or time.monotonic()
                alive = [n for n in self.nodes if n.proc.poll() is None]
                if not alive or time.monotonic() - done_at > DRAIN_S:
                    if alive:
                        log.info(
                            "%d process(es) still up %.0f s after the workers reported; stopped", len(alive), DRAIN_S
                        )
                    return self._outcome(results, port)
            if time.monotonic() - t0 > self.timeout_s:
                return self._outcome(
                    results,
                    port,
                    "timeout",
                    f"distributed job exceeded {arg('timeout_s', '--timeout')} {self.timeout_s:g} s; all {len(self.nodes)} processes "
                    f"were stopped; logs in {self.log_dir}",
                )

    def stop(self) -> None:
        """SIGKILL every node's process group and wait for the nodes."""
        for node in self.nodes:
            kill_group(node.proc.pid)
        for pid in self.pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for node in self.nodes:
            try:
                node.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL does not wait
                log.error("%s (pid %d) did not die", node.name, node.proc.pid)


def run_job(spec: RunSpec, log_dir: Path, timeout_s: float, **kwargs: Any) -> JobOutcome:
    """Run one distributed job of ``spec``; see :class:`Job`."""
    if spec.hosts < 1 or spec.servers < 1:
        raise GluonbenchError(
            f"a distributed job needs at least 1 worker ({param('hosts')}) and 1 server ({param('servers')})"
        )
    return Job(spec, log_dir, timeout_s, **kwargs).run()


def params_differ(results: list[RunResult]) -> list[str]:
    """The parameters whose digest (``param_digests``) is not the same on every worker, by name."""
    per_worker = [r.extra.get("param_digests") or {} for r in results]
    names = sorted(set().union(*per_worker)) if per_worker else []
    return [n for n in names if len({d.get(n) for d in per_worker}) > 1]


def job_records(outcome: JobOutcome, spec: RunSpec, started: str) -> list[RunResult]:
    """One record per worker (``kind="dist"``), with the job's outcome and the parameter comparison.

    A failed job without any worker result still leaves one record, carrying the error.
    """
    ok = [r for r in outcome.results if r.ok]
    digests = {r.extra.get("param_sha256") for r in ok}
    job = {
        "status": outcome.status,
        "error": outcome.error,
        "port": outcome.port,
        "launcher": outcome.launcher,
        "wall_s": outcome.wall_s,
        "workers_reported": len(outcome.results),
        "params_identical": outcome.status == "ok" and len(digests) == 1 and None not in digests,
        "params_differ": params_differ(ok),
    }
    records = []
    for r in sorted(outcome.results, key=lambda r: r.extra.get("rank", 0)):
        r.kind = "dist"
        r.extra["job"] = job
        if outcome.status != "ok" and r.ok:
            r.status, r.error = "failed", outcome.error
        records.append(r)
    if not records:
        records.append(
            RunResult(
                spec=spec.to_dict(),
                status=outcome.status,
                error=outcome.error,
                kind="dist",
                started_utc=started,
                finished_utc=utc_now(),
                wall_s=outcome.wall_s,
                extra={"job": job},
            )
        )
    return records
