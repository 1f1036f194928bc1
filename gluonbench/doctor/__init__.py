"""``gluonbench doctor``: preflight checks with fixes, this machine's measured ceilings, and the roofline.

* :mod:`~gluonbench.doctor.checks`: one function per check, each a :class:`Check` (ok / warn / fail,
  the figure, a one-line fix); :data:`~gluonbench.doctor.checks.CHEAP` is the preflight.
* :mod:`~gluonbench.doctor.ceilings`: read MB/s, decode img/s per core, memcpy GB/s, H2D GB/s,
  measured and cached per host.
* :mod:`~gluonbench.doctor.roofline`: each measured stage as a fraction of its ceiling.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from gluonbench.doctor.ceilings import Ceilings, measure_ceilings
from gluonbench.doctor.checks import ALL, CHEAP, FAIL, Check, DoctorSettings, exit_code, parse_ctx, run_checks
from gluonbench.names import arg
from gluonbench.report import versions

__all__ = ["Ceilings", "Check", "DoctorReport", "DoctorSettings", "doctor", "preflight"]


@dataclass
class DoctorReport:
    """The checks, the ceilings and how long it took; ``exit_code`` is 1 when a check failed."""

    checks: list[Check]
    ceilings: Ceilings | None
    settings: dict[str, Any]
    elapsed_s: float
    env: dict[str, Any] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return exit_code(self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {
            versions.KEY: versions.CURRENT["doctor"],
            "checks": [c.to_dict() for c in self.checks],
            "ceilings": self.ceilings.to_dict() if self.ceilings else None,
            "settings": self.settings,
            "elapsed_s": self.elapsed_s,
            "exit_code": self.exit_code,
            "env": self.env,
        }

    def to_text(self) -> str:
        out = [c.line() for c in self.checks]
        if self.ceilings is not None:
            src = f"cached; {arg('refresh')} measures again" if self.ceilings.cached else "measured now, cached"
            out.append(f"ceilings of {self.ceilings.host} ({src}):")
            out += [f"  {c.text()}" for c in self.ceilings.items()]
        n = {s: sum(c.status == s for c in self.checks) for s in ("ok", "warn", "fail")}
        out.append(f"{n['ok']} ok, {n['warn']} warn, {n['fail']} fail in {self.elapsed_s:.1f} s")
        return "\n".join(out) + "\n"


def doctor(settings: DoctorSettings) -> DoctorReport:
    """Run every check, then measure (or load) the ceilings; validates ``settings`` first."""
    from dataclasses import asdict

    from gluonbench.env import environment

    settings = settings.check()
    start = time.monotonic()
    checks = run_checks(settings, ALL)
    ceilings = None
    if settings.ceilings:
        kind, index = parse_ctx(settings.ctx)
        gpu_ok = kind == "gpu" and not any(c.name == "gpu" and c.status == FAIL for c in checks)
        ceilings = measure_ceilings(settings.data_dir, gpu=index if gpu_ok else None, refresh=settings.refresh)
    env = environment()
    return DoctorReport(
        checks,
        ceilings,
        asdict(settings),
        time.monotonic() - start,
        {k: env.get(k) for k in ("hostname", "cpu", "cores_logical", "memory_bytes", "mxnet", "numpy")},
    )


def preflight(
    data_dir: str | None = None,
    ctx: str | None = "cpu",
    workers: int = 0,
    batch_size: int = 64,
    prefetch: int | None = None,
    sample_bytes: int | None = None,
) -> list[Check]:
    """The cheap checks (cores, memory, /dev/shm, threads, data file system): no MXNet import, well under 1 s."""
    settings = DoctorSettings(
        data_dir=data_dir,
        ctx=ctx or "cpu",
        workers=max(0, workers),
        batch_size=max(1, batch_size),
        prefetch=prefetch,
        sample_bytes=sample_bytes,
        ceilings=False,
    )
    return run_checks(settings, CHEAP)


__all__ += ["ALL", "CHEAP"]
