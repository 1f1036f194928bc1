""":func:`build_pipeline`: the one place a training pipeline is assembled from its parts.

Sweep runs, diagnosis probes, the tuner, profiles, checks and data-parallel runs all turn what is trained
(a :class:`gluonbench.PipelineSpec`, or a dict of its fields; a registered workload is a spec too)
into the :class:`~gluonbench.pipeline.Pipeline` that
:func:`gluonbench.engine.measure.measure` runs here, with the loader knobs of :data:`gluonbench.knobs.KNOBS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gluonbench.contexts import parse_ctx
from gluonbench.errors import GluonbenchError
from gluonbench.knobs import KNOBS, check_loader
from gluonbench.pipeline.pipeline import Pipeline, Step
from gluonbench.pipeline.stages import Copy, Loader, Source, Stream
from gluonbench.workloads.spec import PipelineSpec


def build_pipeline(
    spec: PipelineSpec | Mapping[str, Any],
    ctx: Any = None,
    step: Step | None = None,
    source: Source | Mapping[str, Any] | None = None,
    shuffle: bool = True,
    copy: Copy | None = None,
    **knobs: Any,
) -> Pipeline:
    """The :class:`Pipeline` of ``spec``: source, read, decode, transform, loader, copy to ``ctx``, ``step``.

    ``knobs`` (``batch_size``, ``num_workers``, ``thread_pool``, ``prefetch``, ``pin_memory``; checked
    against their declaration) override the spec's own loader setting; a knob given as None is not given.
    ``ctx`` (an MXNet context or ``"cpu"``/``"cpu:N"``/``"gpu:N"``) defaults to the spec's; ``step`` is the
    model step (``None``: no step; a sweep run builds the real one from the spec's net and loss). The source
    stage holds the spec's data set, or its stream of batches (Pipe mode: a :class:`Stream` loader stage),
    what it reports (``spec.info``, plus ``source`` where that is a mapping) and its ``close``. ``copy``
    declares the copy stage (None: a :class:`Copy` to ``ctx``, or the split of a step that splits its batch).
    """
    if isinstance(spec, Mapping):
        spec = PipelineSpec.from_dict(spec)
    if not isinstance(spec, PipelineSpec):
        raise GluonbenchError(
            f"build_pipeline needs a PipelineSpec or a dict of its fields (got {type(spec).__name__}); "
            "a registered workload gives one with gluonbench.workloads.get_workload(NAME)"
        )
    setting = check_loader({k: v for k, v in knobs.items() if v is not None})  # None: not given
    setting = {**spec.loader_setting(), **setting}
    if ctx is None:
        ctx = spec.ctx or "cpu"
    if isinstance(ctx, str):
        ctx = parse_ctx(ctx, "ctx")
    info = dict(spec.info or {})
    stage = Source(str(info.get("mode", "memory")), spec.dataset, spec.batches, info, spec.close)
    if isinstance(source, Source):
        stage = Source.of(source, stage.dataset, stage.batches)
    elif source:
        info = {**stage.info, **dict(source)}
        stage = Source(str(info.get("mode", stage.mode)), stage.dataset, stage.batches, info, stage.closer)
    batch_size = setting.get("batch_size", KNOBS["batch_size"].default)
    workers = setting.get("num_workers", KNOBS["num_workers"].default)
    loader: Loader | Stream
    if stage.streams:
        loader = Stream(stage.batches, batch_size, workers)
    else:
        loader = Loader(
            batch_size=batch_size,
            num_workers=workers,
            thread_pool=setting.get("thread_pool", KNOBS["thread_pool"].default),
            prefetch=setting.get("prefetch", KNOBS["prefetch"].default),
            shuffle=shuffle,
            pin_memory=setting.get("pin_memory", KNOBS["pin_memory"].default),
            batchify_fn=spec.batchify_fn,
        )
    return Pipeline(
        dataset=stage.dataset,
        loader=loader,
        ctx=ctx,
        step=step,
        decode=spec.decode,
        transform=spec.transform,
        source=stage,
        copy=copy,
    )
