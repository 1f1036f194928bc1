"""A user's net made ready for the step stage on a context, and put back as it was afterwards.

A measurement trains the net for a few hundred steps (the diagnose probes, tune's ceilings, a check):
:func:`prepare_net` puts every parameter on the measuring context and saves what
:func:`restore_net` puts back (the weights and each parameter's own contexts).
"""

from __future__ import annotations

import logging
from typing import Any

from gluonbench.workloads.base import initialise_missing, uninitialised

__all__ = ["initialise_missing", "prepare_net", "restore_net", "uninitialised"]

log = logging.getLogger(__name__)


def prepare_net(net: Any, ctx: Any) -> dict[str, Any]:
    """Put every parameter of ``net`` on ``ctx`` (only); return what :func:`restore_net` puts back.

    Parameters not yet initialised are (Xavier, magnitude 2.24). The others are moved with MXNet's own
    ``Parameter.reset_ctx``, which also handles a net set up the usual way (``net.initialize()``: the
    default CPU context, shapes deferred to the first forward pass): its deferred parameters are
    re-targeted to ``ctx`` instead of being left on ``cpu(0)`` (G1: the Trainer then refused the mix of
    contexts). The saved state is each parameter's contexts and, where it has data, a copy of it.
    """
    from gluonbench._mx import mx

    saved: dict[str, Any] = {}
    init = mx.init.Xavier(magnitude=2.24)
    missing = {id(p) for p in uninitialised(net)}
    for name, p in net.collect_params().items():
        if id(p) in missing:
            p.initialize(None, ctx=ctx, default_init=init)
            continue
        before = list(p._deferred_init[1]) if p._data is None else p.list_ctx()
        # a deferred parameter keeps its initializers (``net.initialize(init)``'s and its own)
        inits = p._deferred_init[0::2] if p._data is None else None
        saved[name] = (before, None if p._data is None else p.data(before[0]).copy(), inits)
        if before != [ctx]:
            log.info("moving parameter %s from %s to %s", name, before, ctx)
            p.reset_ctx(ctx)
    return saved


def restore_net(net: Any, saved: dict[str, Any]) -> None:
    """Put back what :func:`prepare_net` saved: each parameter's weights and its own contexts.

    A parameter that was deferred (no weights yet) is re-initialised from its own initializer, so no
    weight trained by the probes is left in the user's net.
    """
    params = net.collect_params()
    for name, (contexts, data, inits) in saved.items():
        p = params[name]
        if p._data is None:  # still deferred: the probes never ran a forward pass
            p.reset_ctx(contexts)
            continue
        if data is None:
            init, default_init = inits
            p.initialize(init, ctx=contexts, default_init=default_init, force_reinit=True)
            continue
        else:
            p.set_data(data.as_in_context(p.list_ctx()[0]))
        if p.list_ctx() != contexts:
            p.reset_ctx(contexts)
