"""The registry of named workloads (each a factory returning a :class:`~gluonbench.PipelineSpec`)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from gluonbench.errors import GluonbenchError
from gluonbench.names import param

log = logging.getLogger(__name__)


WorkloadFactory = Callable[..., Any]
"""a registered workload's factory: keyword options -> a :class:`~gluonbench.PipelineSpec`"""
_REGISTRY: dict[str, WorkloadFactory] = {}


def register(name: str) -> Callable[[WorkloadFactory], WorkloadFactory]:
    def deco(factory: WorkloadFactory) -> WorkloadFactory:
        _REGISTRY[name] = factory
        return factory

    return deco


def workload_names() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def get_workload(name: str, **options: Any) -> Any:
    """The named workload's :class:`~gluonbench.PipelineSpec`; ``options`` are the factory's keyword arguments."""
    _load_builtin()
    try:
        factory = _REGISTRY[name]
    except KeyError:
        raise GluonbenchError(
            f"unknown {param('workload')} {name!r}; choose one of {', '.join(sorted(_REGISTRY))}"
        ) from None
    unknown = _unknown_options(factory, options)
    if unknown:
        import inspect

        takes = list(inspect.signature(factory).parameters)
        raise GluonbenchError(
            f"workload {name} takes no option {', '.join(map(repr, unknown))} (it takes {', '.join(takes)}); "
            "check the spelling of the --set key"
        )
    return factory(**options)


def _unknown_options(factory: Any, options: dict[str, Any]) -> list[str]:
    """The options ``factory``'s signature cannot take (none where it takes ``**options``)."""
    import inspect

    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return []
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return []
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    names = {p.name for p in params if p.kind in kinds}
    return [k for k in options if k not in names]


def _load_builtin() -> None:
    # importing registers them
    from gluonbench.workloads import mnist, source, spec, synthetic, vision_zoo  # noqa: F401


def uninitialised(net: Any) -> list[Any]:
    """The parameters of ``net`` that have neither data nor a deferred initialisation: the only ones gluonbench
    may initialise (a net factory's own weights, pretrained or frozen, are the user's)."""
    return [p for p in net.collect_params().values() if p._data is None and not p._deferred_init]


def initialise_missing(net: Any, init: Any, ctx: Any) -> int:
    """Initialise only the parameters of ``net`` not yet initialised, with ``init`` on ``ctx`` (one context or a
    list); put the others on ``ctx`` as they are. Never re-initialises: weights a net factory set (pretrained
    embeddings, ``set_data``, a frozen layer) are kept, and MXNet's "already initialized, ignoring" warning is
    not raised. Returns how many parameters were initialised here."""
    contexts = list(ctx) if isinstance(ctx, list | tuple) else [ctx]
    missing = uninitialised(net)
    for p in missing:
        # the parameter's own initializer (``Parameter(init=...)``) first, ``init`` for the others
        p.initialize(None, ctx=contexts, default_init=init)
    ids = {id(p) for p in missing}
    for name, p in net.collect_params().items():
        if id(p) in ids:
            continue
        before = list(p._deferred_init[1]) if p._data is None else p.list_ctx()
        if before != contexts:
            log.info("moving parameter %s from %s to %s", name, before, contexts)
            p.reset_ctx(contexts)
    return len(missing)


@contextmanager
def opened_workload(
    name: str,
    ctx: Any,
    *,
    data_dir: str | None = None,
    download: bool = True,
    options: dict[str, Any] | None = None,
    workload: Any = None,
    stream_hint: str = "",
    with_net: bool = True,
) -> Iterator[tuple[Any, Any]]:
    """A registered workload opened for measuring its ``dataset[i]`` pipeline: ``(workload, net)``.

    The net (None without ``with_net``) is initialised on ``ctx``: only its parameters not yet initialised. A stream (Pipe mode) is refused
    with ``stream_hint`` as the fix. A workload opened here is closed on leaving; a given ``workload``
    is left open for its owner.
    """
    owned = workload is None
    w = workload or get_workload(name, data_dir=data_dir, download=download, **(options or {}))
    try:
        if w.dataset is None:
            raise GluonbenchError(f"{name}: the data arrive as a stream (Pipe mode), {stream_hint}")
        net = None
        if with_net:
            net = w.make_net()
            initialise_missing(net, w.initializer(), ctx)  # a factory's own (pretrained, frozen) weights are kept
        yield w, net
    finally:
        if owned and w.close is not None:
            w.close()
