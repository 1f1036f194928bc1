""":func:`build_pipeline`: the one place a training pipeline is assembled from its parts.

Sweep runs, diagnosis probes, the tuner, profiles and data-parallel runs all turn what is trained (a
:class:`gluonbench.PipelineSpec`, a dict of its fields, or a built-in :class:`~gluonbench.workloads.Workload`)
into the :class:`~gluonbench.pipeline.Pipeline` that :func:`gluonbench.engine.measure.measure` runs here,
with the loader knobs of :data:`gluonbench.knobs.KNOBS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gluonbench.errors import GluonbenchError
from gluonbench.knobs import KNOBS, check_loader
from gluonbench.pipeline.pipeline import Pipeline, Step
from gluonbench.pipeline.stages import Loader, Stream
from gluonbench.workloads.base import Workload
from gluonbench.workloads.spec import PipelineSpec


def _ctx(text: str) -> Any:
    from gluonbench._mx import mx

    kind, _, index = text.strip().lower().partition(":")
    return mx.gpu(int(index or 0)) if kind == "gpu" else mx.cpu()


def build_pipeline(
    spec: PipelineSpec | Workload | Mapping[str, Any],
    ctx: Any = None,
    step: Step | None = None,
    source: Mapping[str, Any] | None = None,
    shuffle: bool = True,
    **knobs: Any,
) -> Pipeline:
    """The :class:`Pipeline` of ``spec``: read, decode, transform, loader, copy to ``ctx``, ``step``.

    ``knobs`` (``batch_size``, ``num_workers``, ``thread_pool``, ``prefetch``, ``pin_memory``; checked
    against their declaration) override the spec's own loader setting; a knob given as None is not given. ``ctx`` (an MXNet context or
    ``"cpu"``/``"gpu:N"``) defaults to the spec's; ``step`` is the model step (``None``: no step; the
    engine builds the real one from the spec's net and loss). A workload with a stream of batches
    (Pipe mode) gets a :class:`Stream` loader stage.
    """
    if isinstance(spec, Mapping):
        spec = PipelineSpec.from_dict(spec)
    setting = check_loader({k: v for k, v in knobs.items() if v is not None})  # None: not given
    if isinstance(spec, PipelineSpec):
        setting = {**spec.loader_setting(), **setting}
        dataset, decode, transform = spec.dataset, spec.decode, spec.transform
        info: dict[str, Any] = {}
        stream = None
        if ctx is None:
            ctx = spec.ctx
    elif isinstance(spec, Workload):
        dataset, decode, transform, info = spec.train, spec.decode, spec.transform, dict(spec.info)
        stream = spec.train_batches
    else:
        raise GluonbenchError(
            f"build_pipeline needs a PipelineSpec, a dict of its fields or a Workload (got {type(spec).__name__})"
        )
    if ctx is None:
        ctx = "cpu"
    if isinstance(ctx, str):
        ctx = _ctx(ctx)
    batch_size = setting.get("batch_size", KNOBS["batch_size"].default)
    workers = setting.get("num_workers", KNOBS["num_workers"].default)
    loader: Loader | Stream
    if stream is not None:
        loader = Stream(stream, batch_size, workers)
    else:
        loader = Loader(
            batch_size=batch_size,
            num_workers=workers,
            thread_pool=setting.get("thread_pool", KNOBS["thread_pool"].default),
            prefetch=setting.get("prefetch", KNOBS["prefetch"].default),
            shuffle=shuffle,
            pin_memory=setting.get("pin_memory", KNOBS["pin_memory"].default),
        )
    return Pipeline(
        dataset=dataset,
        loader=loader,
        ctx=ctx,
        step=step,
        decode=decode,
        transform=transform,
        source={**info, **dict(source or {})},
    )
