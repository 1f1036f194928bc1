"""Sample a process tree and the machine with psutil, every 500 ms by default.

The tree is the process being measured and all its descendants (DataLoader
workers included). Memory is the sum of PSS (proportional set size) over the
tree, so pages a forked worker shares with its parent count once; where PSS is
not readable, RSS. Per-core CPU and iowait come from deltas of
``psutil.cpu_times(percpu=True)``, so the sampler keeps no global psutil state
and several monitors can run at once.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import asdict, dataclass, field

import psutil


@dataclass
class SystemSummary:
    """What the sampler saw between ``start()`` and ``stop()``."""

    duration_s: float = 0.0
    samples: int = 0
    interval_s: float = 0.5
    cores: int = 0
    peak_mem_bytes: int = 0
    peak_mem_main_bytes: int = 0
    peak_mem_workers_bytes: int = 0
    peak_processes: int = 0
    cpu_util_pct: float = 0.0
    per_core_pct: list[float] = field(default_factory=list)
    per_core_max_pct: list[float] = field(default_factory=list)
    iowait_pct: float = 0.0
    read_bytes_per_s: float = 0.0
    read_chars_per_s: float = 0.0
    memory_samples: int = 0
    """samples that read memory (PSS); fewer than ``samples`` when PSS is costly (see MEMORY_BUDGET)"""
    monitor_cpu_s: float = 0.0
    """CPU seconds the sampling thread itself used (its overhead on the measured process)."""

    def to_dict(self) -> dict:
        return asdict(self)


def _cpu_vector() -> list[tuple[float, float, float]]:
    """(busy, iowait, total) seconds per core since boot."""
    out = []
    for t in psutil.cpu_times(percpu=True):
        total = sum(t)
        idle = t.idle + getattr(t, "iowait", 0.0)
        out.append((total - idle, getattr(t, "iowait", 0.0), total))
    return out


SCAN_BUDGET = 0.003
"""Most of the time the scans for new processes in the tree may cost: the sampler thread's CPU time, which is
what a scan takes from the measured code. Not wall time: on a busy machine a scan waits for a core, and a
wall-time cost that counted the wait spaced the scans by seconds, so a short run's DataLoader workers were
never seen."""

MEMORY_BUDGET = 0.005
"""Most of the wall time the PSS readings may cost; the rest of a sample is far cheaper."""


def _pss(pid: int) -> int | None:
    """PSS in bytes from ``/proc/PID/smaps_rollup`` (the kernel's own sum: ~0.1 ms, where
    psutil's ``memory_full_info`` parses every mapping in ``smaps``: ~3 ms a process)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _busy_pct(now: list[tuple[float, float, float]], before: list[tuple[float, float, float]]) -> list[float]:
    """Per-core busy % between two :func:`_cpu_vector` readings."""
    return [100.0 * (b - b0) / max(t - t0, 1e-9) for (b, _, t), (b0, _, t0) in zip(now, before, strict=False)]


class SystemMonitor:
    """Background sampler of a process tree; use as a context manager.

    >>> with SystemMonitor() as mon:
    ...     work()
    >>> mon.summary.peak_mem_bytes
    """

    def __init__(
        self, pid: int | None = None, interval: float = 0.5, memory_due: float = 0.0, edges_only: bool = False
    ) -> None:
        """``memory_due``: the ``perf_counter`` time from which a memory (PSS) sample is due; a caller that samples
        one process tree in many short windows passes on the previous window's :attr:`memory_due`, so the
        readings keep their spacing (:data:`MEMORY_BUDGET`) instead of costing two at every window.
        ``edges_only``: memory is read at :meth:`start` and :meth:`stop` only, never by the sampler thread
        while the measured code runs (a PSS reading keeps a core busy for milliseconds: inside a timed window
        it slows a pipeline that uses every core more than one that leaves a core idle)."""
        self.pid = pid or os.getpid()
        self.edges_only = edges_only
        self.interval = interval
        self.summary = SystemSummary(interval_s=interval, cores=psutil.cpu_count() or 1)
        self.pids_seen: set[int] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._cpu_by_pid: dict[int, float] = {}
        self._io_by_pid: dict[int, tuple[int, int]] = {}
        self._procs: dict[int, psutil.Process] = {}
        self.last_pids: list[int] = []
        """the tree's processes at the latest sample, the root first"""
        self.mem_by_pid: dict[int, int] = {}
        """latest PSS (or RSS) per process of the tree, bytes; updated when memory is sampled"""
        self._next_mem = memory_due
        self._next_scan = 0.0
        self._members: list[psutil.Process] = []
        self._lock = threading.Lock()

    # -- sampling ---------------------------------------------------------
    def _tree(self, scan: bool = True) -> list[psutil.Process]:
        """The root and its descendants. ``scan=False`` keeps the members found by the last scan
        (dropping the dead): finding new descendants reads every process's ``/proc/PID/stat``."""
        if not scan and self._members:
            alive = [p for p in self._members if p.is_running()]
            if alive and alive[0].pid == self.pid:
                self._members = alive
                return alive
        try:
            root = self._procs.setdefault(self.pid, psutil.Process(self.pid))
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            return []
        # keep Process objects so cpu/io deltas stay per process identity
        self._members = [self._procs.setdefault(p.pid, p) for p in procs]
        return self._members

    def sample(self, memory: bool = True) -> None:
        """Take one sample now, e.g. while a short-lived DataLoader's workers are alive."""
        self._sample(memory)

    def _sample(self, memory: bool | None = None) -> None:
        """One sample; memory (PSS) only when due (``memory=None``), always with ``memory=True``."""
        with self._lock:
            self._sample_locked(memory)

    def _sample_locked(self, memory: bool | None) -> None:
        now = time.perf_counter()
        if memory is None:
            memory = now >= self._next_mem
        mem_total = mem_main = 0
        # a scan for new descendants reads every process's stat file (a couple of ms of CPU): spaced to
        # cost at most SCAN_BUDGET of the sampler thread's CPU time; always with memory
        scan = memory or now >= self._next_scan
        cpu0 = time.thread_time()
        procs = self._tree(scan)
        if scan:
            self._next_scan = now + max(self.interval, (time.thread_time() - cpu0) / SCAN_BUDGET)
        for p in procs:
            try:
                with p.oneshot():
                    if memory:
                        # PSS splits copy-on-write pages shared with forked workers
                        mem = _pss(p.pid)
                        if mem is None:
                            mem = p.memory_info().rss
                    times = p.cpu_times()
                    try:
                        io = p.io_counters()
                        self._io_by_pid[p.pid] = (io.read_bytes, io.read_chars)
                    except (psutil.AccessDenied, AttributeError):
                        pass
            except psutil.Error:
                continue
            self.pids_seen.add(p.pid)
            self._cpu_by_pid[p.pid] = times.user + times.system
            if memory:
                self.mem_by_pid[p.pid] = mem
                mem_total += mem
                if p.pid == self.pid:
                    mem_main = mem
        s = self.summary
        s.samples += 1
        if memory:
            # PSS makes the kernel walk each process's page tables (milliseconds for a large
            # MXNet process): space these samples so they cost at most MEMORY_BUDGET of wall time
            cost = time.perf_counter() - now
            self._next_mem = now + max(self.interval, cost / MEMORY_BUDGET)
            s.memory_samples += 1
            s.peak_mem_bytes = max(s.peak_mem_bytes, mem_total)
            s.peak_mem_main_bytes = max(s.peak_mem_main_bytes, mem_main)
            s.peak_mem_workers_bytes = max(s.peak_mem_workers_bytes, mem_total - mem_main)
        s.peak_processes = max(s.peak_processes, len(procs))
        self.last_pids = [p.pid for p in procs]
        cpu = _cpu_vector()
        busy = _busy_pct(cpu, self._last_cpu)
        s.per_core_max_pct = (
            [max(a, b) for a, b in zip(s.per_core_max_pct, busy, strict=False)] if s.per_core_max_pct else busy
        )
        self._last_cpu = cpu

    def _loop(self) -> None:
        t0 = time.thread_time()
        while not self._stop.wait(self.interval):
            self._sample(False if self.edges_only else None)
        # the sampler's own cost: CPU time of this thread, the most it can take from the measured code
        self.summary.monitor_cpu_s = time.thread_time() - t0

    # -- lifecycle --------------------------------------------------------
    def start(self) -> SystemMonitor:
        self._t0 = time.perf_counter()
        self._cpu0 = _cpu_vector()
        self._last_cpu = self._cpu0
        self._sample()  # finds the process tree and reads each member's CPU time
        self._tree_cpu0 = self._tree_cpu()
        # the baseline of read counters comes from that first sample: bytes read before start() do not count
        self._io0 = dict(self._io_by_pid)
        self._thread = threading.Thread(target=self._loop, name="gluonbench-monitor", daemon=True)
        self._thread.start()
        return self

    @property
    def members(self) -> list[psutil.Process]:
        """The process and its descendants as the last scan found them (the root first; the dead dropped by the
        next sample)."""
        return list(self._members)

    def _tree_cpu(self) -> float:
        """CPU seconds of every process of the tree seen in this window, as the last sample read them."""
        return sum(self._cpu_by_pid.values())

    @property
    def memory_due(self) -> float:
        """The ``perf_counter`` time from which the next memory sample is due."""
        return self._next_mem

    def stop(self, memory: bool | None = True) -> SystemSummary:
        """End the window with a last sample: with memory (``True``), or only if one is due (``None``)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample(memory=memory)
        s = self.summary
        wall = max(time.perf_counter() - self._t0, 1e-9)
        s.duration_s = wall
        tree_cpu = self._tree_cpu() - self._tree_cpu0  # the last sample, just above, read the CPU times
        s.cpu_util_pct = 100.0 * tree_cpu / (wall * s.cores)
        cpu1 = _cpu_vector()
        s.per_core_pct = _busy_pct(cpu1, self._cpu0)
        elapsed = sum(t - t0 for (_, _, t), (_, _, t0) in zip(cpu1, self._cpu0, strict=False))
        iowait = sum(i - i0 for (_, i, _), (_, i0, _) in zip(cpu1, self._cpu0, strict=False))
        s.iowait_pct = 100.0 * iowait / max(elapsed, 1e-9)
        read_bytes = sum(v[0] for v in self._io_by_pid.values()) - sum(v[0] for v in self._io0.values())
        read_chars = sum(v[1] for v in self._io_by_pid.values()) - sum(v[1] for v in self._io0.values())
        s.read_bytes_per_s = max(read_bytes, 0) / wall
        s.read_chars_per_s = max(read_chars, 0) / wall
        return s

    def __enter__(self) -> SystemMonitor:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


@dataclass
class TreeUsage:
    """What a process tree has used so far (or, as a difference of two readings, over a window).

    Read by :func:`tree_usage`, per process of the tree, from the kernel's per-process counters: nothing
    system-wide, so other programs on a shared machine do not count (system-wide iowait is mostly their I/O).
    """

    cpu_s: float = 0.0
    """CPU seconds, every thread (MXNet's engine threads included: ``mx.image.imdecode`` runs there)"""
    user_s: float = 0.0
    """of it, in user mode (Python, NumPy, decoders)"""
    system_s: float = 0.0
    """of it, in the kernel (system calls: opening and reading files among them)"""
    runq_s: float = 0.0
    """seconds the tree's threads were ready to run but waited for a core (``/proc/PID/task/TID/schedstat``):
    CPU work slowed by other programs, not I/O"""
    read_bytes: int = 0
    """bytes the tree made the kernel fetch from storage (``/proc/PID/io`` ``read_bytes``; a page-cache hit reads 0)"""
    blkio_s: float = 0.0
    """seconds blocked waiting for storage (``/proc/PID/stat`` field 42, delay accounting)"""
    blkio_reported: bool = False
    """the kernel keeps :attr:`blkio_s` (delay accounting on); when off it reads 0, which is not evidence"""
    processes: int = 0

    def __add__(self, other: TreeUsage) -> TreeUsage:
        """Two windows of one tree, one after the other (the process count is the larger)."""
        return TreeUsage(
            self.cpu_s + other.cpu_s,
            self.user_s + other.user_s,
            self.system_s + other.system_s,
            self.runq_s + other.runq_s,
            self.read_bytes + other.read_bytes,
            self.blkio_s + other.blkio_s,
            self.blkio_reported and other.blkio_reported,
            max(self.processes, other.processes),
        )

    def __sub__(self, other: TreeUsage) -> TreeUsage:
        return TreeUsage(
            self.cpu_s - other.cpu_s,
            self.user_s - other.user_s,
            self.system_s - other.system_s,
            self.runq_s - other.runq_s,
            self.read_bytes - other.read_bytes,
            self.blkio_s - other.blkio_s,
            self.blkio_reported and other.blkio_reported,
            max(self.processes, other.processes),
        )


def delay_accounting() -> bool:
    """True when the kernel counts time blocked on I/O per process (``kernel.task_delayacct``; on by default
    before Linux 5.14, where the setting does not exist)."""
    try:
        with open("/proc/sys/kernel/task_delayacct") as f:
            return f.read().strip() == "1"
    except OSError:
        return os.path.exists("/proc/self/stat")


_TICK_S = 1.0 / (os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100)


def _process_usage(pid: int, own: bool) -> TreeUsage | None:
    """One process's counters; ``own``: this process (user/system from ``getrusage``, microseconds)."""
    u = TreeUsage(processes=1)
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()  # after the command name, which may hold spaces
        # fields[0] is field 3 (state): field N is fields[N - 3]
        utime, stime = int(fields[11]) * _TICK_S, int(fields[12]) * _TICK_S
        ns = runq = blkio = 0
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    parts = f.read().split()
                ns, runq = ns + int(parts[0]), runq + int(parts[1])
                # time blocked on storage is the thread's own (the process's stat holds its main thread's only):
                # a read in a thread_pool worker or MXNet's engine thread counts too
                with open(f"/proc/{pid}/task/{tid}/stat") as f:
                    task = f.read().rsplit(")", 1)[1].split()
                blkio += int(task[39]) if len(task) > 39 else 0
            except (OSError, ValueError, IndexError):
                continue  # a thread that ended between the listing and the read
        u.runq_s = runq / 1e9
        u.blkio_s = blkio * _TICK_S
        if own:
            import resource

            r = resource.getrusage(resource.RUSAGE_SELF)
            # the kernel's precise total, split by its ticks; threads that have ended still count
            u.user_s, u.system_s = r.ru_utime, r.ru_stime
            u.cpu_s = u.user_s + u.system_s
        else:
            # clock ticks split the precise (nanosecond) total between user and kernel time
            u.cpu_s = ns / 1e9 if ns else utime + stime
            ticks = utime + stime
            u.user_s = u.cpu_s * utime / ticks if ticks > 0 else u.cpu_s
            u.system_s = u.cpu_s - u.user_s
    except (OSError, ValueError, IndexError):
        return None
    try:
        with open(f"/proc/{pid}/io") as f:
            for line in f:
                if line.startswith("read_bytes:"):
                    u.read_bytes = int(line.split()[1])
                    break
    except (OSError, ValueError, IndexError):
        pass  # another user's process, or no I/O accounting: 0 bytes, as a cache hit
    return u


def tree_usage(members: list[psutil.Process] | list[int] | None = None, reported: bool | None = None) -> TreeUsage:
    """CPU (user and system apart), run-queue wait, storage bytes read and time blocked on I/O of this process
    (every thread) and ``members``, its child processes (the loader workers a :class:`SystemMonitor` found; this
    process among them is skipped). ``reported``: :func:`delay_accounting`, when the caller already knows it.
    Nanosecond clocks where Linux has them (a measured window is a fraction of a second)."""
    me = os.getpid()
    total = _process_usage(me, own=True) or TreeUsage()
    for m in members or []:
        pid = m if isinstance(m, int) else m.pid
        if pid == me:
            continue
        u = _process_usage(pid, own=False)
        if u is None:
            continue
        total.cpu_s += u.cpu_s
        total.user_s += u.user_s
        total.system_s += u.system_s
        total.runq_s += u.runq_s
        total.read_bytes += u.read_bytes
        total.blkio_s += u.blkio_s
        total.processes += 1
    total.blkio_reported = delay_accounting() if reported is None else reported
    return total


def merge_summaries(parts: list[SystemSummary]) -> SystemSummary:
    """One summary of several sampled windows (e.g. the rounds of one probe): rates and percentages
    weighted by each window's duration, peaks the maximum, sample counts added."""
    if not parts:
        return SystemSummary()
    total = sum(p.duration_s for p in parts) or 1e-9

    def mean(get) -> float:
        return sum(get(p) * p.duration_s for p in parts) / total

    cores = max(len(p.per_core_pct) for p in parts)
    per_core = [mean(lambda p, i=i: p.per_core_pct[i] if i < len(p.per_core_pct) else 0.0) for i in range(cores)]
    return SystemSummary(
        duration_s=sum(p.duration_s for p in parts),
        samples=sum(p.samples for p in parts),
        interval_s=parts[0].interval_s,
        cores=parts[0].cores,
        peak_mem_bytes=max(p.peak_mem_bytes for p in parts),
        peak_mem_main_bytes=max(p.peak_mem_main_bytes for p in parts),
        peak_mem_workers_bytes=max(p.peak_mem_workers_bytes for p in parts),
        peak_processes=max(p.peak_processes for p in parts),
        cpu_util_pct=mean(lambda p: p.cpu_util_pct),
        per_core_pct=per_core,
        per_core_max_pct=[
            max((p.per_core_max_pct[i] for p in parts if i < len(p.per_core_max_pct)), default=0.0)
            for i in range(cores)
        ],
        iowait_pct=mean(lambda p: p.iowait_pct),
        read_bytes_per_s=mean(lambda p: p.read_bytes_per_s),
        read_chars_per_s=mean(lambda p: p.read_chars_per_s),
        memory_samples=sum(p.memory_samples for p in parts),
        monitor_cpu_s=sum(p.monitor_cpu_s for p in parts),
    )
