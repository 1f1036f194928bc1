"""The DataLoader knobs, declared once: name, type, range, default, what each needs, its flag.

The loader stage (:class:`gluonbench.pipeline.stages.Loader`), the sweep's settings
(:class:`gluonbench.config.SweepSettings`), the tuner's search space (:class:`gluonbench.tune.model.Setting`),
a user's :class:`gluonbench.PipelineSpec` and the records all read this table, so a knob the tuner can
recommend is a knob the sweep can run (``--pin-memory``, ``--prefetch``, ``--thread-pool``, ``--batch-size``).

========================  ========  ===========  =============================================================
knob                      type      range        needs / means
========================  ========  ===========  =============================================================
``batch_size``            int       1..65536     samples per step
``num_workers``           int       0..1024      worker processes (or threads) building batches; 0: the main one
``thread_pool``           bool                   threads instead of processes (needs ``num_workers`` > 0)
``prefetch``              int|None  0..4096      batches prepared ahead; None: MXNet's ``2 x num_workers``
``pin_memory``            bool                   page-locked batches: matters only with a GPU context
========================  ========  ===========  =============================================================
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gluonbench.errors import GluonbenchError


@dataclass(frozen=True)
class Knob:
    """One DataLoader knob: its name, type, bounds, default, what it needs to matter, and its help."""

    name: str
    kind: type
    default: Any
    minimum: int | None = None
    maximum: int | None = None
    optional: bool = False
    """None is a value (e.g. ``prefetch=None``: MXNet's default)"""
    requires: str = ""
    """what it needs to matter, e.g. "a GPU context" for pin_memory"""
    help: str = ""

    @property
    def flag(self) -> str:
        """The command-line flag: ``--num-workers`` is spelled ``--workers`` by the commands."""
        return "--workers" if self.name == "num_workers" else "--" + self.name.replace("_", "-")

    def check(self, value: Any, what: str | None = None) -> Any:
        """``value`` if it is this knob's type and within its range, else one line naming ``what`` (default: the
        knob's name) and the range."""
        what = what or self.name
        if value is None and self.optional:
            return None
        if self.kind is bool:
            if not isinstance(value, bool):
                raise GluonbenchError(f"{what} must be True or False (got {value!r})")
            return value
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and math.isfinite(value) and value == int(value):
                value = int(value)
            else:
                none = " or None" if self.optional else ""
                raise GluonbenchError(f"{what} must be a whole number{none} (got {value!r})")
        lo, hi = self.minimum, self.maximum
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise GluonbenchError(f"{what} must be between {lo} and {hi} (got {value})")
        return value


KNOBS: dict[str, Knob] = {
    k.name: k
    for k in (
        Knob("batch_size", int, 64, 1, 65536, help="samples per step (64, as the seed)"),
        Knob("num_workers", int, 0, 0, 1024, help="worker processes building batches; 0: the main process"),
        Knob(
            "thread_pool",
            bool,
            False,
            requires="num_workers > 0",
            help="DataLoader(thread_pool=True): threads, not processes",
        ),
        Knob(
            "prefetch",
            int,
            None,
            0,
            4096,
            optional=True,
            requires="num_workers > 0",
            help="DataLoader(prefetch=N): batches prepared ahead (None: MXNet's 2 x num_workers)",
        ),
        Knob(
            "pin_memory",
            bool,
            False,
            requires="a GPU context",
            help="DataLoader(pin_memory=True): page-locked batches, faster host-to-device copies (GPU only)",
        ),
    )
}
"""Every loader knob by name."""


def knob_default(name: str) -> Any:
    """The declared default of knob ``name``."""
    return KNOBS[name].default


def check_loader(values: Mapping[str, Any], what: str = "") -> dict[str, Any]:
    """Each of ``values`` checked against its knob (unknown names refused); the checked values.

    ``what`` prefixes the names in messages (e.g. ``"loader."``).
    """
    if not isinstance(values, Mapping):
        raise GluonbenchError(f"{what or 'loader'} must be a table of loader knobs (got {values!r})")
    unknown = sorted(set(values) - set(KNOBS))
    if unknown:
        raise GluonbenchError(
            f"unknown loader knob(s) {', '.join(f'{what}{k}' for k in unknown)}; known: {', '.join(KNOBS)}"
        )
    return {k: KNOBS[k].check(v, f"{what}{k}") for k, v in values.items()}


def unmet(values: Mapping[str, Any], on_gpu: bool) -> list[str]:
    """The knobs set in ``values`` whose requirement is not met, as one phrase each (for a warning or a note)."""
    out = []
    if values.get("pin_memory") and not on_gpu:
        out.append("pin_memory matters only with a GPU context")
    if not values.get("num_workers"):
        if values.get("thread_pool"):
            out.append("thread_pool matters only with num_workers > 0")
        if values.get("prefetch") is not None:
            out.append("prefetch matters only with num_workers > 0")
    return out
