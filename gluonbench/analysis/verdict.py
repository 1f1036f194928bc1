"""From probe timings to a verdict: which stage of the pipeline costs the step time.

The seed's method (SEEDS.md, 001) made quantitative. With ``t_full``,
``t_no_preprocess`` and ``t_cached_batch`` the probes' median seconds per sample:

* ``preprocessing = t_full - t_no_preprocess``  (what removing the transform gains)
* ``disk_io       = t_no_preprocess - t_cached_batch``  (what removing reading,
  batching and the host-to-device copy gains)
* ``gpu_io        = t_cached_batch``  (device-bound: compute, or the copy at peak
  for this batch size; on a CPU context, the CPU compute)

each clipped at zero and divided by their sum (``t_full`` when nothing is
clipped), so the shares sum to 1.

**Significance.** A stage's time has an uncertainty: the sum of the CI
half-widths of the probes behind it (``h_full + h_no_preprocess`` for
preprocessing, ``h_no_preprocess + h_cached`` for disk I/O, ``h_cached`` for
the device). A stage is *present* when its time exceeds that uncertainty.
Preprocessing and disk I/O are *established* when present: removing them gave
a gain larger than the noise. The device stage is established when its time,
less its uncertainty, exceeds the other two stages' times plus theirs: the
seed's "no gain", which can only be claimed when the noise could not hide a
gain as large as the device time.

**Verdict.** The stage with the largest share, if established. When it is not
and the measurement converged (every CI within ``rel_ci``), the stages are
tied within the precision reached: the verdict is the largest established
other stage, with a note naming the tie. Otherwise: ``inconclusive``.
Other present stages with at least ``secondary_share`` are named secondary.
No verdict is given before every probe has ``min_blocks`` blocks.

**Input-bound label** (TF Profiler's input-pipeline analyzer): the share of the
``full`` probe's step time spent waiting for the next batch: at least
``highly_input_bound`` is *highly*, at least ``moderately_input_bound``
*moderately*, else *not* input-bound.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import Any

STAGES = ("preprocessing", "disk_io", "gpu_io")
VERDICTS = (*STAGES, "inconclusive")


@dataclass(frozen=True)
class Thresholds:
    """Every threshold of the verdict and of the stopping rule, documented and configurable."""

    rel_ci: float = 0.05
    """measurement stops when each probe's median has a 95 % CI within +-rel_ci"""
    min_blocks: int = 6
    """blocks (of consecutive steps) per probe before its CI is trusted: from 6 values on, even the
    min-max range covers the median with >= 95 % (1 - 2 x 0.5^6 = 96.9 %)"""
    secondary_share: float = 0.15
    """other stages with at least this share (and present) are named secondary"""
    highly_input_bound: float = 0.20
    """input wait share of step time for 'highly input-bound' (TF Profiler)"""
    moderately_input_bound: float = 0.05
    """input wait share of step time for 'moderately input-bound' (TF Profiler)"""

    def __post_init__(self) -> None:
        # validated here, whoever builds it (--threshold, a config, Python); GluonbenchError: one line, exit 2
        from gluonbench.errors import GluonbenchError

        for f in fields(self):
            value = getattr(self, f.name)
            whole = f.name == "min_blocks"
            if isinstance(value, bool) or not isinstance(value, int if whole else int | float):
                kind = "whole number" if whole else "number"
                raise GluonbenchError(f"threshold {f.name}={value!r} must be a {kind}")
            if value <= 0 or (not whole and f.name != "rel_ci" and value >= 1):
                raise GluonbenchError(
                    f"threshold {f.name}={value} is out of range; min_blocks and rel_ci are positive, "
                    "shares and fractions lie in (0, 1)"
                )
        if self.moderately_input_bound > self.highly_input_bound:
            raise GluonbenchError(
                f"threshold moderately_input_bound={self.moderately_input_bound} exceeds "
                f"highly_input_bound={self.highly_input_bound}; make it the smaller of the two"
            )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class ProbeTiming:
    """What the verdict needs of one probe: median seconds per sample and its 95 % CI."""

    median: float
    low: float
    high: float

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2


@dataclass
class Verdict:
    verdict: str
    shares: dict[str, float]
    stage_s: dict[str, float]
    """seconds per sample attributed to each stage (clipped at zero)"""
    stage_uncertainty_s: dict[str, float]
    present: dict[str, bool]
    established: dict[str, bool]
    secondary: list[str] = field(default_factory=list)
    input_bound: str = "not"
    wait_frac: float = math.nan
    converged: bool = False
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def input_bound_label(wait_frac: float, thresholds: Thresholds = Thresholds()) -> str:
    """TF's label: ``highly`` (>= 20 % of step time waiting for input), ``moderately`` (>= 5 %), ``not``."""
    if not math.isfinite(wait_frac):
        return "unknown"
    if wait_frac >= thresholds.highly_input_bound:
        return "highly"
    if wait_frac >= thresholds.moderately_input_bound:
        return "moderately"
    return "not"


def classify(
    full: ProbeTiming,
    no_preprocess: ProbeTiming,
    cached_batch: ProbeTiming,
    wait_frac: float = math.nan,
    converged: bool = False,
    thresholds: Thresholds = Thresholds(),
    enough_data: bool = True,
) -> Verdict:
    """The verdict from three probes' timings (see the module docstring for the rules).

    ``enough_data=False`` (fewer than ``min_blocks`` blocks in a probe, so its CI
    means little) makes the verdict ``inconclusive`` whatever the figures.
    """
    raw = {
        "preprocessing": full.median - no_preprocess.median,
        "disk_io": no_preprocess.median - cached_batch.median,
        "gpu_io": cached_batch.median,
    }
    unc = {
        "preprocessing": full.half_width + no_preprocess.half_width,
        "disk_io": no_preprocess.half_width + cached_batch.half_width,
        "gpu_io": cached_batch.half_width,
    }
    stage = {k: max(v, 0.0) for k, v in raw.items()}
    total = sum(stage.values())
    shares = {k: (v / total if total > 0 else 0.0) for k, v in stage.items()}
    present = {k: stage[k] > unc[k] for k in STAGES}
    others_top = max(stage[k] + unc[k] for k in ("preprocessing", "disk_io"))
    established = {
        "preprocessing": present["preprocessing"],
        "disk_io": present["disk_io"],
        "gpu_io": stage["gpu_io"] - unc["gpu_io"] > others_top,
    }
    notes: list[str] = []
    ranked = sorted(STAGES, key=lambda k: shares[k], reverse=True)
    leader = ranked[0]
    verdict = "inconclusive"
    if not enough_data:
        notes.append(f"fewer than {thresholds.min_blocks} blocks in a probe: too little data for a verdict")
    elif total > 0 and established[leader]:
        verdict = leader
    elif total > 0 and converged:
        fallback = next((k for k in ranked[1:] if established[k]), None)
        if fallback is not None:
            verdict = fallback
            notes.append(
                f"{leader} ({shares[leader]:.0%}) and {fallback} ({shares[fallback]:.0%}) cost about the same "
                "within the precision reached; both are worth fixing"
            )
    if verdict in STAGES:
        runner = next(k for k in ranked if k != verdict)
        if stage[verdict] - unc[verdict] <= stage[runner] + unc[runner] and not notes and present[runner]:
            notes.append(
                f"close call: {verdict} ({shares[verdict]:.0%}) is ahead of {runner} ({shares[runner]:.0%}) "
                "by less than the noise"
            )
    anomalies = {
        "preprocessing": "no_preprocess ran slower than full",
        "disk_io": "cached_batch ran slower than no_preprocess",
    }
    for k, what in anomalies.items():
        if raw[k] < 0 and -raw[k] > unc[k]:
            notes.append(f"{what} ({-raw[k] * 1e6:.1f} us a sample beyond the noise); {k} is taken as 0")
    secondary = (
        []
        if verdict == "inconclusive"
        else [k for k in ranked if k != verdict and present[k] and shares[k] >= thresholds.secondary_share]
    )
    return Verdict(
        verdict=verdict,
        shares=shares,
        stage_s=stage,
        stage_uncertainty_s=unc,
        present=present,
        established=established,
        secondary=secondary,
        input_bound=input_bound_label(wait_frac, thresholds),
        wait_frac=wait_frac,
        converged=converged,
        notes=notes,
    )


def timings(probes: Mapping[str, Any]) -> tuple[ProbeTiming, ProbeTiming, ProbeTiming]:
    """:class:`ProbeTiming` of full, no_preprocess and cached_batch from probe results (objects or dicts)."""

    def one(p: Any) -> ProbeTiming:
        if isinstance(p, Mapping):
            med, (lo, hi) = p["s_per_sample"], p["s_per_sample_ci"]
        else:
            med, (lo, hi) = p.s_per_sample, p.s_per_sample_ci
        return ProbeTiming(float(med), float(lo), float(hi))

    return one(probes["full"]), one(probes["no_preprocess"]), one(probes["cached_batch"])
