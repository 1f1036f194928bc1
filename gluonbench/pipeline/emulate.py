"""Emulated compute (DLIO / MLPerf Storage's method): the model step swapped for a timed wait.

``--emulate-step-ms T`` waits ``T`` ms per batch of the run's batch size; a named target
(``resnet50@v100``) takes its per-sample compute time from a published figure and scales it to
the run's batch size. Accelerator utilisation ``AU = emulated compute time / total time``;
DLIO and MLPerf Storage pass a run at ``AU >= 90 %``.

Named targets (per-batch compute times as published in DLIO's workload configurations,
``argonne-lcf/dlio_benchmark``, ``dlio_benchmark/configs/workload/<name>.yaml``, key
``train.computation_time`` at ``reader.batch_size``; they are the benchmark authors' figures, not
measured here):

===================  ==============================  =========  =================
target               DLIO config                     seconds    per batch of
===================  ==============================  =========  =================
``resnet50@v100``    ``resnet50_v100.yaml``          0.195      64  (328 img/s)
``resnet50@a100``    ``resnet50_a100.yaml``          0.435      400 (920 img/s)
``resnet50@h100``    ``resnet50_h100.yaml``          0.103      64  (621 img/s)
===================  ==============================  =========  =================
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from gluonbench.errors import GluonbenchError
from gluonbench.names import param

AU_PASS = 0.90
"""DLIO's (and MLPerf Storage's) pass line for accelerator utilisation."""

MAX_STEP_MS = 600_000.0
"""The longest emulated step accepted: 10 minutes per batch (a longer one is a typo, not a model)."""


@dataclass(frozen=True)
class Target:
    """A published per-batch compute time of a model on an accelerator."""

    name: str
    seconds_per_batch: float
    batch_size: int
    source: str

    @property
    def seconds_per_sample(self) -> float:
        return self.seconds_per_batch / self.batch_size


_DLIO = "DLIO benchmark workload config argonne-lcf/dlio_benchmark dlio_benchmark/configs/workload/"
TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("resnet50@v100", 0.195, 64, _DLIO + "resnet50_v100.yaml (train.computation_time)"),
        Target("resnet50@a100", 0.435, 400, _DLIO + "resnet50_a100.yaml (train.computation_time)"),
        Target("resnet50@h100", 0.103, 64, _DLIO + "resnet50_h100.yaml (train.computation_time)"),
    )
}


def step_ms(raw: Any, what: str | None = None) -> float | str:
    """A validated emulation setting: milliseconds per batch (a number > 0) or a target's name."""
    what = what or param("emulate_step_ms")  # the argument as the caller knows it
    if isinstance(raw, str) and raw.strip().lower() in TARGETS:
        return raw.strip().lower()
    if isinstance(raw, bool):
        raise GluonbenchError(f"{what} takes milliseconds per batch or a target's name, not {raw!r}; e.g. 50")
    try:
        value = float(raw)
    except (TypeError, ValueError):
        raise GluonbenchError(
            f"{what} {raw!r} is neither milliseconds per batch nor a known target; use e.g. 50 or one of "
            + ", ".join(TARGETS)
        ) from None
    if not (math.isfinite(value) and value > 0):
        raise GluonbenchError(
            f"{what} must be a positive, finite number of milliseconds per batch (got {raw!r}); e.g. 50"
        )
    if value > MAX_STEP_MS:
        raise GluonbenchError(
            f"{what} {raw!r} is over {MAX_STEP_MS:.0f} ms (10 minutes) per batch; give the step time in milliseconds"
        )
    return value


def seconds_per_batch(setting: float | str, batch_size: int) -> float:
    """The wait per batch of ``batch_size`` for a setting from :func:`step_ms`."""
    value = step_ms(setting)
    if isinstance(value, str):
        return TARGETS[value].seconds_per_sample * batch_size
    return value / 1000.0


def emulated_step(setting: float | str, batch_size: int) -> Any:
    """The :class:`~gluonbench.pipeline.EmulatedStep` for a setting at ``batch_size``."""
    from gluonbench.pipeline import EmulatedStep

    return EmulatedStep(seconds_per_batch(setting, batch_size), batch_size)


def describe(setting: float | str, batch_size: int) -> str:
    """One line naming the emulated compute and where its figure comes from."""
    s = seconds_per_batch(setting, batch_size)
    value = step_ms(setting)
    if isinstance(value, str):
        t = TARGETS[value]
        return (
            f"emulated compute {value}: {s * 1000:.1f} ms per batch of {batch_size} "
            f"({t.seconds_per_batch:g} s per batch of {t.batch_size}, published in {t.source})"
        )
    return f"emulated compute: {s * 1000:g} ms per batch of {batch_size}"


@dataclass(frozen=True)
class Utilisation:
    """Accelerator utilisation of an emulated run: emulated compute time / total time."""

    emulated_s: float
    total_s: float
    au: float
    passes: bool
    """AU >= :data:`AU_PASS` (DLIO's 90 %)"""
    pass_line: float = AU_PASS

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def au_of(emulated_s: float, total_s: float) -> Utilisation:
    """AU from the emulated compute seconds and the total seconds they took (NaN when no time passed)."""
    au = emulated_s / total_s if total_s > 0 else math.nan
    return Utilisation(emulated_s, total_s, au, bool(au >= AU_PASS))


def utilisation(setting: float | str, batch_size: int, samples: float, seconds: float) -> Utilisation:
    """AU of ``samples`` that went through the pipeline in ``seconds`` with the step emulated at ``setting``.

    The emulated compute time is the wait per batch of ``batch_size`` scaled to the samples (a smaller last
    batch waits less, as :class:`~gluonbench.pipeline.EmulatedStep` does). The one AU formula of sweep runs
    (a run's steady steps), io cells (their epochs) and tune (a throughput: ``samples_per_s`` in 1 s).
    """
    return au_of(seconds_per_batch(setting, batch_size) * samples / batch_size, seconds)
