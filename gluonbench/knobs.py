"""The DataLoader knobs, declared once: name, type, range, default, what each needs, its flag, its help.

The loader stage (:class:`gluonbench.pipeline.stages.Loader`), the sweep's settings
(:class:`gluonbench.config.SweepSettings`), the tuner's search space (:class:`gluonbench.tune.model.Setting`),
a user's :class:`gluonbench.PipelineSpec`, the records and every command's flags
(:func:`gluonbench.commands.options.add_knob`) all read this table, so a knob the tuner can recommend is a
knob the sweep can run (``--pin-memory``, ``--prefetch``, ``--thread-pool``, ``--batch-size``). Adding a
loader knob is one more :class:`Knob` here (and its use in the loader stage).

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

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gluonbench.errors import GluonbenchError
from gluonbench.settings import Setting


@dataclass(frozen=True)
class Knob(Setting):
    """One DataLoader knob: a :class:`~gluonbench.settings.Setting` (name, type, bounds, default, help, flag and
    its one check) with what it needs to matter, its settings key and how ``gluonbench tune`` searches it."""

    requires: str = ""
    """what it needs to matter, e.g. "a GPU context" for pin_memory"""
    none: str = ""
    """what None means, for an optional knob (its flag's help says it as the default)"""
    key: str = ""  # type: ignore[assignment]
    """its name in the commands' settings and TOML configs (``workers`` for num_workers); default: ``name``"""
    tune: str = ""
    """how ``gluonbench tune`` searches it ("" where it does not)"""
    grid: tuple[int, ...] = ()
    """the values ``gluonbench tune`` may visit (a whole-number knob it searches)"""

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", self.key or self.name)
        object.__setattr__(self, "flag", self.flag or "--" + self.key.replace("_", "-"))

    def check(self, value: Any, what: str | None = None) -> Any:
        """``value`` if it is this knob's type and within its range, else one line naming ``what`` (default: the
        knob's name) and the range."""
        return super().check(value, what or self.name)


KNOBS: dict[str, Knob] = {
    k.name: k
    for k in (
        Knob(
            "batch_size",
            int,
            64,
            1,
            65536,
            help="samples per step",
            tune="only with --batch-sizes (a learning-rate note comes with it)",
        ),
        Knob(
            "num_workers",
            int,
            0,
            0,
            1024,
            help="DataLoader workers building batches; 0: the main process",
            key="workers",
            tune="worker counts up to --max-workers (the core count too), picked by a model of the loader",
            grid=(0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64),
        ),
        Knob(
            "thread_pool",
            bool,
            False,
            requires="num_workers > 0",
            help="DataLoader(thread_pool=True): threads, not processes",
            tune="threads at the cheapest worker count, when they kept up with processes",
        ),
        Knob(
            "prefetch",
            int,
            None,
            0,
            4096,
            optional=True,
            requires="num_workers > 0",
            help="DataLoader(prefetch=N): batches prepared ahead",
            none="MXNet's 2 x workers",
            tune="a shallower queue (prefetch = workers) at the cheapest worker count",
        ),
        Knob(
            "pin_memory",
            bool,
            False,
            requires="a GPU context",
            help="DataLoader(pin_memory=True): page-locked batches, faster host-to-device copies (GPU only)",
            tune="on a GPU context, with the cheapest worker count",
        ),
    )
}
"""Every loader knob by name."""


def check_knobs(settings: Any, name_of: Callable[[str], str] = str, unset: tuple[str, ...] = ()) -> None:
    """Check every loader knob that ``settings`` holds (by its :attr:`Knob.key`; a tuple, such as a sweep's
    worker counts, value by value) against its declaration: the one check of the loader's knobs that every
    command's settings run. ``name_of`` words a key in messages (the settings' ``arg``: a flag from the CLI);
    ``unset``: knobs whose None means "the pipeline's own value" (``batch_size`` beside a ``--pipeline``)."""
    for knob in KNOBS.values():
        if not hasattr(settings, knob.key):
            continue
        value = getattr(settings, knob.key)
        if value is None and knob.name in unset:
            continue
        for one in value if isinstance(value, tuple) else (value,):
            knob.check(one, name_of(knob.key))


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
