"""The diagnose probes: one declaration each, of which stages it swaps and what its difference means.

The probes form a chain, each removing one more stage of the pipeline than the one before it:

    full -> no_preprocess -> no_read -> cached_batch -> device_batch
          (preprocessing)   (read)     (loader)        (copy)          = compute

The difference between a probe and the next is the cost of the sub-stage the next one removes;
the last probe's own time is the model compute. ``loader_only`` stands outside the chain: the
full input pipeline with no model step, its ceiling.

The sub-stages roll up into the seed's three verdicts (SEEDS.md, 001):

* ``preprocessing`` = decode + transform (what removing preprocessing gains);
* ``disk_io`` = read (``dataset[i]``) + loader (batchify, worker hand-off): what removing
  reads gains when the same batch is reloaded onto the device;
* ``gpu_io`` = host-to-device copy + model compute: the seed's "reload the same batch onto the
  GPU", which runs at the device's peak for this batch size.

A probe that does not apply to a pipeline (no decode or transform to remove; no copy on a CPU
context) is listed as the same as the probe before it, so its sub-stage costs 0.

To add a probe: declare it in :data:`PROBES` (its place in the chain, the sub-stage it removes and
that sub-stage's headline) and, if the sub-stage is new, its advice in
:mod:`gluonbench.diagnosis.recommend`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gluonbench.pipeline import Pipeline


@dataclass(frozen=True)
class Context:
    """What the swaps are built from: the first batch the full pipeline produced."""

    first_batch: tuple[Any, Any]


@dataclass(frozen=True)
class Probe:
    """One probe: the pipeline with some stages swapped for stand-ins."""

    name: str
    removes: str
    """what the swap removes, in words"""
    build: Callable[[Pipeline, Context], Pipeline]
    substage: str | None = None
    """the sub-stage whose cost is (previous probe in the chain) - (this probe); None outside the chain"""
    headline: str | None = None
    """the seed's verdict the sub-stage belongs to"""
    skip_reason: Callable[[Pipeline], str | None] = lambda p: None
    """why the probe does not apply to a pipeline (it then equals the previous probe), or None"""
    in_chain: bool = True


def _no_preprocessing_reason(p: Pipeline) -> str | None:
    return None if p.preprocesses else "nothing: no decode or transform was given"


def _no_read_reason(p: Pipeline) -> str | None:
    return None if p.dataset is not None else "nothing: a stream has no dataset[i]"


def _device_batch_reason(p: Pipeline) -> str | None:
    return None if p.on_gpu else "nothing: on a CPU context the batch is already where the step runs"


PROBES: tuple[Probe, ...] = (
    Probe("full", "nothing (the pipeline as given)", lambda p, c: p),
    Probe(
        "no_preprocess",
        "decode and the per-sample transform (dataset[i] still runs)",
        lambda p, c: p.without_preprocessing(),
        substage="preprocessing",
        headline="preprocessing",
        skip_reason=_no_preprocessing_reason,
    ),
    Probe(
        "no_read",
        "reading too: dataset[i] swapped for a cached raw sample (the loader still batches and hands over)",
        lambda p, c: p.without_reading(),
        substage="read",
        headline="disk_io",
        skip_reason=_no_read_reason,
    ),
    Probe(
        "cached_batch",
        "the whole loader: one batch kept in host memory and copied to the device every step (the seed's probe)",
        lambda p, c: p.with_host_batch(c.first_batch),
        substage="loader",
        headline="disk_io",
    ),
    Probe(
        "device_batch",
        "the host-to-device copy too: one batch kept on the device",
        lambda p, c: p.with_device_batch(c.first_batch),
        substage="copy",
        headline="gpu_io",
        skip_reason=_device_batch_reason,
    ),
    Probe(
        "loader_only",
        "the model step (the input pipeline alone, its ceiling)",
        lambda p, c: p.without_step(),
        in_chain=False,
    ),
)

NAMES = tuple(p.name for p in PROBES)
CHAIN = tuple(p for p in PROBES if p.in_chain)
SUBSTAGES = (*(p.substage for p in CHAIN if p.substage), "compute")
"""Sub-stages in pipeline order; ``compute`` is the last chain probe's own time."""
HEADLINE_OF = {**{p.substage: p.headline for p in CHAIN if p.substage}, "compute": "gpu_io"}
SUBSTAGE_TEXT = {
    "preprocessing": "preprocessing: decode and the per-sample transform",
    "read": "reading: dataset[i]",
    "loader": "loader: batchify, worker hand-off and prefetch queue",
    "copy": "host-to-device copy",
    "compute": "model compute",
}


def by_name(name: str) -> Probe:
    for p in PROBES:
        if p.name == name:
            return p
    raise KeyError(name)
