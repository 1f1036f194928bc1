"""Background load: how much of the machine other programs use, and what that does to a measurement.

A measurement on a machine other jobs share is slower and noisier than on a quiet one: a diagnosis's intervals
widen, and a check against a baseline stored at another moment can read the difference in load as a change in the
code. :func:`background_load` samples the machine's CPU time over a short window and subtracts this process tree's
own: what is left is other processes' CPU (in cores). ``steal`` is the time a virtual machine's hypervisor gave to
other guests (the cores this VM was promised but did not get).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import psutil

OTHER_CORES_WARN = 0.25
"""other processes' CPU, in cores, at or above which a measurement is said to share the machine"""
OTHER_SHARE_WARN = 0.10
"""... or at or above this share of the cores (whichever is larger)"""
STEAL_WARN_PCT = 5.0
"""hypervisor steal time, in % of the cores' time, at or above which the VM is said to be short of CPU"""


@dataclass(frozen=True)
class BackgroundLoad:
    """Other processes' CPU and the hypervisor's steal over a window of wall time."""

    window_s: float
    cores: int
    other_cores: float
    """CPU seconds per second of processes outside this process tree"""
    steal_pct: float
    """steal time in % of all cores' time (0 on bare metal)"""

    @property
    def busy(self) -> bool:
        """Whether the load is enough to change a measurement (see the thresholds above)."""
        limit = max(OTHER_CORES_WARN, OTHER_SHARE_WARN * self.cores)
        return self.other_cores >= limit or self.steal_pct >= STEAL_WARN_PCT

    def text(self) -> str:
        """``other processes kept 1.3 of 2 cores busy, steal 0.0 % (over 0.5 s)``"""
        return (
            f"other processes kept {self.other_cores:.1f} of {self.cores} cores busy, steal {self.steal_pct:.1f} % "
            f"(over {self.window_s:.1f} s)"
        )

    def effect(self) -> str:
        """What such a load does to measurements, and what to do."""
        return (
            "a measurement here shares the cores: it runs slower and noisier, a diagnosis or tune needs a larger "
            "budget, and a check against a baseline stored at another moment can read the load as a change "
            "(check --against measures both side by side); measure on a quieter machine where you can"
        )

    def to_dict(self) -> dict[str, float | int | bool]:
        return {**asdict(self), "busy": self.busy}


def _machine() -> tuple[float, float, float]:
    """(busy, steal, total) CPU seconds of every core since boot; guest time is inside user time on Linux."""
    t = psutil.cpu_times()
    steal = getattr(t, "steal", 0.0)
    idle = t.idle + getattr(t, "iowait", 0.0)
    total = sum(getattr(t, f) for f in t._fields if f not in ("guest", "guest_nice"))
    return total - idle - steal, steal, total


def own_cpu_s() -> float:
    """CPU seconds of this process, its living descendants and its children that ended (and were waited for: the
    loader workers of a closed DataLoader)."""
    me = psutil.Process()
    out = 0.0
    for p in (me, *me.children(recursive=True)):
        try:
            t = p.cpu_times()
            out += t.user + t.system + (t.children_user + t.children_system if p is me else 0.0)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            pass
    return out


def warning(load: BackgroundLoad, what: str) -> str | None:
    """The one line a command prints after its measurement when the load was enough to change it, else None."""
    if not load.busy:
        return None
    return f"gluonbench: warning: during this {what} {load.text()}: {load.effect()}"


class LoadMeter:
    """Other processes' CPU between :meth:`start` and :meth:`stop` (this process tree's own is left out; its
    descendants must still be alive at :meth:`stop` for theirs to be)."""

    def start(self) -> LoadMeter:
        self.machine0, self.own0, self.t0 = _machine(), own_cpu_s(), time.monotonic()
        return self

    def stop(self) -> BackgroundLoad:
        (busy1, steal1, total1), own1, t1 = _machine(), own_cpu_s(), time.monotonic()
        busy0, steal0, total0 = self.machine0
        cores = psutil.cpu_count() or 1
        wall = max(t1 - self.t0, 1e-6)
        total = max(total1 - total0, 1e-9)
        other = max(0.0, (busy1 - busy0) - (own1 - self.own0)) / wall
        return BackgroundLoad(
            window_s=wall,
            cores=cores,
            other_cores=min(other, float(cores)),
            steal_pct=100.0 * (steal1 - steal0) / total,
        )


def background_load(window_s: float = 0.5) -> BackgroundLoad:
    """Sample the machine for ``window_s`` seconds: other processes' CPU (cores) and steal (%)."""
    meter = LoadMeter().start()
    time.sleep(window_s)
    return meter.stop()


def from_summary(system: dict, window_s: float | None = None) -> BackgroundLoad | None:
    """The background load a :class:`~gluonbench.monitor.system.SystemSummary` (as a dict) saw during a measurement:
    the machine's busy share over the cores less this process tree's own (no steal: the summary does not keep it)."""
    per = system.get("per_core_pct") or []
    cores = int(system.get("cores") or len(per) or 0)
    if not per or not cores:
        return None
    machine = sum(per) / len(per)
    own = float(system.get("cpu_util_pct", 0.0))
    other = max(0.0, machine - own) / 100.0 * cores
    return BackgroundLoad(float(window_s or system.get("duration_s") or 0.0), cores, other, 0.0)
