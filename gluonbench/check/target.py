"""What ``gluonbench check`` measures: the user's argument turned into one :class:`~gluonbench.pipeline.Pipeline`.

:func:`resolve_pipeline` is the one place a check's pipeline comes from. It accepts

* a registered workload name (``mnist``, ``synthetic``, ...): the workload's training pipeline with its
  model step, as ``gluonbench diagnose --dataset NAME`` measures it;
* ``MODULE:FUNC`` or ``path/to/file.py:FUNC``: a function called with ``options`` as its keyword arguments
  (``--pipeline-option KEY=VALUE``; none by default), returning any of the things below;
* from Python, a callable (called the same way) returning any of the things below, or one of them directly:
  a :class:`~gluonbench.pipeline.Pipeline`, a :class:`~gluonbench.PipelineSpec`, or a mapping with ``dataset``
  (required),
  ``transform``, ``decode``, ``net``, ``loss``, ``batch_size``, ``num_workers`` (made a spec).

Everything but a ready Pipeline is checked as a :class:`~gluonbench.PipelineSpec` and assembled by
:func:`~gluonbench.pipeline.build_pipeline`; a spec's ``close`` is called by :meth:`Target.close`.

The pipeline's *identity* (what a baseline is tied to) is the argument's name: the workload name, the
``MODULE:FUNC`` text, or the callable's ``module:qualname``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gluonbench.errors import GluonbenchError
from gluonbench.knobs import knob_default
from gluonbench.names import arg
from gluonbench.pipeline import Pipeline
from gluonbench.pipeline.build import build_pipeline
from gluonbench.workloads.spec import (
    PipelineSpec,
    check_factory_options,
    check_first_batch,
    check_first_step,
    check_learning_rate,
    dataset_size,
    fenced_user_code,
    import_factory,
)

log = logging.getLogger(__name__)

MAPPING_KEYS = (
    "dataset",
    "transform",
    "decode",
    "batchify_fn",
    "net",
    "loss",
    "batch_size",
    "num_workers",
    "learning_rate",
)


@dataclass
class Target:
    """A pipeline to check, the name a baseline ties it to, and what to close afterwards."""

    pipeline: Pipeline
    identity: str
    closers: list[Callable[[], None]] = field(default_factory=list)

    def close(self) -> None:
        """Release what resolving opened (a workload's caches, producer processes)."""
        for fn in reversed(self.closers):
            fn()
        self.closers.clear()


def _name_of(fn: Any) -> str:
    return f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', type(fn).__name__)}"


def resolve_pipeline(
    what: Any,
    *,
    batch_size: int | None = None,
    num_workers: int = 0,
    ctx: Any = None,
    options: Mapping[str, Any] | None = None,
    data_dir: str | None = None,
    identity: str | None = None,
) -> Target:
    """The user's argument (see the module docstring) as a :class:`Target`; the loader knobs apply where the
    argument does not set its own (a Pipeline keeps its loader). ``batch_size`` None: the spec's (or the
    mapping's) own, else 64; a given one decides, with one warning where the spec says another. Raises
    GluonbenchError on anything else."""
    from gluonbench.contexts import resolve_ctx
    from gluonbench.workloads import workload_names

    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1):
        raise GluonbenchError(f"batch_size must be a whole number >= 1 (got {batch_size!r})")
    if isinstance(num_workers, bool) or not isinstance(num_workers, int) or num_workers < 0:
        raise GluonbenchError(f"num_workers must be a whole number >= 0 (got {num_workers!r})")
    ctx = resolve_ctx(ctx)
    closers: list[Callable[[], None]] = []
    kwargs = dict(options or {})
    if isinstance(what, str):
        if ":" in what:
            where = what.rpartition(":")[0]
            doing = [f"importing {where.rsplit('/', 1)[-1]}"]
            with fenced_user_code(f"pipeline {what}", doing):
                fn = import_factory(what)
                passed = check_factory_options(fn, kwargs, f"pipeline {what}")
                if passed:
                    from gluonbench.identity import options_text

                    log.warning(
                        "pipeline %s takes **options: %s passed to it unchecked (its signature names none of them, so "
                        "a mistyped name is not caught)",
                        what,
                        options_text({k: kwargs[k] for k in passed}),
                    )
                doing[0] = "the factory"
                made = _call(fn, what, kwargs)
            return _from_object(made, identity or what, batch_size, num_workers, ctx, closers)
        if what not in workload_names():
            raise GluonbenchError(
                f"unknown pipeline {what!r}: give a workload ({', '.join(workload_names())}) "
                "or MODULE:FUNC / path/to/file.py:FUNC"
            )
        from gluonbench.workloads import get_workload

        w = get_workload(what, data_dir=data_dir, download=False, **dict(options or {}))
        return _from_object(w, identity or f"workload:{what}", batch_size, num_workers, ctx, closers, registered=True)
    if isinstance(what, Pipeline | PipelineSpec | Mapping):
        if kwargs:
            raise GluonbenchError(
                f"options {sorted(kwargs)} go to a workload name or a pipeline function; this {type(what).__name__} "
                "is already built: build it with them, or pass the function that builds it"
            )
        return _from_object(what, identity or type(what).__name__, batch_size, num_workers, ctx, closers)
    if callable(what):
        return _from_object(
            _call(what, _name_of(what), kwargs), identity or _name_of(what), batch_size, num_workers, ctx, closers
        )
    raise GluonbenchError(
        f"cannot check a {type(what).__name__}: give a workload name, MODULE:FUNC, a Pipeline, a PipelineSpec, "
        "a mapping with 'dataset', or a function returning one"
    )


def _call(fn: Callable[..., Any], name: str, kwargs: dict[str, Any]) -> Any:
    try:
        return fn(**kwargs)
    except GluonbenchError:
        raise
    except SystemExit as exc:
        from gluonbench.workloads.spec import exit_error

        raise exit_error("pipeline", name, "the function", exc) from None
    except Exception as exc:
        raise GluonbenchError(f"pipeline {name}: calling it failed: {type(exc).__name__}: {exc}") from exc


def _from_object(
    obj: Any,
    identity: str,
    batch_size: int | None,
    num_workers: int,
    ctx: Any,
    closers: list,
    registered: bool = False,
) -> Target:
    if isinstance(obj, Pipeline):
        if obj.swapped:
            raise GluonbenchError(f"pipeline {identity}: it has swapped stages ({obj.swapped}); give the real one")
        return Target(obj, identity, closers)
    if registered:  # a registered workload's spec, at the check's loader setting
        spec = obj
        setting = {"batch_size": batch_size or knob_default("batch_size"), "num_workers": num_workers}
    elif isinstance(obj, PipelineSpec):  # a --pipeline factory's spec: its loader setting first, but a given batch
        spec = obj
        if batch_size is not None and batch_size != obj.batch_size:
            log.warning(
                "the pipeline's spec says batch_size=%d (runs at %d); %s decides (leave it out to run at the spec's)",
                obj.batch_size,
                batch_size,
                arg("batch_size"),
            )
        setting = {
            "batch_size": obj.batch_size if batch_size is None else batch_size,
            "num_workers": obj.loader_setting().get("num_workers", num_workers),
        }
    elif isinstance(obj, Mapping):
        spec, setting = _spec_of_mapping(obj, identity, batch_size, num_workers)
    else:
        raise GluonbenchError(
            f"pipeline {identity} returned a {type(obj).__name__}; return a Pipeline, a PipelineSpec or a "
            f"mapping with keys {', '.join(MAPPING_KEYS)}"
        )
    if spec.close is not None:
        closers.append(spec.close)
    return _from_spec(spec, identity, setting, ctx, closers)


def _spec_of_mapping(
    spec: Mapping[str, Any], identity: str, batch_size: int | None, num_workers: int
) -> tuple[PipelineSpec, dict[str, Any]]:
    """A mapping of :data:`MAPPING_KEYS` as a :class:`PipelineSpec` and its loader setting (a given
    ``batch_size``, else the mapping's own, else 64; the mapping's ``num_workers``, else the check's); no net:
    the seed's CNN."""
    from gluonbench.pipeline.samples import as_dataset
    from gluonbench.workloads.mnist import seed_net

    unknown = sorted(set(spec) - set(MAPPING_KEYS))
    if unknown:
        raise GluonbenchError(
            f"pipeline {identity}: unknown key(s) {', '.join(unknown)}; known: {', '.join(MAPPING_KEYS)}"
        )
    if spec.get("dataset") is None:
        raise GluonbenchError(f"pipeline {identity}: the mapping needs a 'dataset' (a gluon Dataset of (data, label))")
    bs = batch_size if batch_size is not None else spec.get("batch_size", knob_default("batch_size"))
    nw = spec.get("num_workers", num_workers)
    if isinstance(nw, bool) or not isinstance(nw, int) or nw < 0:
        raise GluonbenchError(f"pipeline {identity}: num_workers must be a whole number >= 0 (got {nw!r})")
    for key in ("transform", "decode", "batchify_fn"):
        if spec.get(key) is not None and not callable(spec[key]):
            raise GluonbenchError(f"pipeline {identity}: {key} must be callable (data, label) -> (data, label)")
    made = PipelineSpec(
        dataset=as_dataset(spec["dataset"]),
        net=spec.get("net") or seed_net,
        loss=spec.get("loss"),
        transform=spec.get("transform"),
        decode=spec.get("decode"),
        batchify_fn=spec.get("batchify_fn"),
        learning_rate=check_learning_rate(spec.get("learning_rate", 0.1), f"pipeline {identity}"),
        name=identity,
    )
    return made, {"batch_size": bs, "num_workers": nw}


def _from_spec(spec: PipelineSpec, identity: str, setting: dict[str, Any], ctx: Any, closers: list) -> Target:
    """The check's pipeline of ``spec``: its net built and put on ``ctx``, the model step, then the one assembly."""
    from gluonbench._mx import gluon
    from gluonbench.pipeline.net import initialise_missing, prepare_net
    from gluonbench.pipeline.samples import checked_step
    from gluonbench.pipeline.stages import ModelStep

    if spec.dataset is None:
        raise GluonbenchError(f"pipeline {identity}: a streamed source has no dataset[i] to check; use file mode")
    check_learning_rate(spec.learning_rate, f"pipeline {identity}")
    bs = setting["batch_size"]
    n = dataset_size(spec.dataset, f"pipeline {identity}")
    if isinstance(bs, bool) or not isinstance(bs, int) or bs < 1 or bs > n:
        raise GluonbenchError(f"pipeline {identity}: batch_size must be a whole number in 1..{n} (got {bs!r})")
    # the loader's first batch: any item the transform and the batchify turn into (data, label) arrays
    first = check_first_batch(spec.dataset, spec.decode, spec.transform, bs, spec.batchify_fn, f"pipeline {identity}")
    check_first_step(spec, f"pipeline {identity}", first)  # a loss not connected to the graph: one line, here
    try:
        net = spec.make_net()  # a Block, or the function that builds one
    except GluonbenchError:
        raise
    except Exception as exc:
        raise GluonbenchError(f"pipeline {identity}: building its net failed: {type(exc).__name__}: {exc}") from exc
    if spec.init is not None:  # the spec's initializer, for the parameters the factory left uninitialised only
        initialise_missing(net, spec.init, ctx)
    prepare_net(net, ctx)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": float(spec.learning_rate)})
    step = checked_step(ModelStep(net, spec.make_loss(), trainer), net)
    pipeline = build_pipeline(spec, ctx=ctx, step=step, **setting)  # the one assembly
    return Target(pipeline, identity, closers)
