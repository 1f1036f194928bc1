"""Parse and check ``--ctx cpu|gpu|gpu:N``."""

from __future__ import annotations

import re
from typing import Any

from gluonbench.errors import GluonbenchError
from gluonbench.names import arg

_CTX = re.compile(r"^(cpu|gpu)(?::(\d+))?$")


def check_ctx(spec: str) -> tuple[str, int]:
    """Validate the text of a context without touching MXNet."""
    match = _CTX.match(spec.strip().lower())
    if not match:
        raise GluonbenchError(f"{arg('ctx')} {spec!r} is not a context; use cpu, gpu or gpu:N (e.g. gpu:0)")
    return match.group(1), int(match.group(2) or 0)


def parse_ctx(spec: str):
    """Return the MXNet context, or raise if the GPU asked for is not there."""
    from gluonbench._mx import mx, num_gpus

    kind, index = check_ctx(spec)
    if kind == "cpu":
        return mx.cpu()
    available = num_gpus()
    if available == 0:
        raise GluonbenchError(
            f"{arg('ctx')} {spec}: MXNet sees no GPU (CPU wheel, or no driver); install a CUDA wheel "
            f"such as mxnet-cu112 and check nvidia-smi, or use {arg('ctx')} cpu"
        )
    if index >= available:
        raise GluonbenchError(f"{arg('ctx')} {spec}: only {available} GPU(s) visible (gpu:0..gpu:{available - 1})")
    return mx.gpu(index)


def default_ctx_spec() -> str:
    from gluonbench._mx import num_gpus

    return "gpu:0" if num_gpus() > 0 else "cpu"


def resolve_ctx(ctx: Any):
    """An MXNet context from ``ctx``: None (GPU 0 if MXNet sees one, else the CPU), a string such as
    ``gpu:0``, or a context as it is."""
    from gluonbench._mx import mx

    if ctx is None:
        return parse_ctx(default_ctx_spec())
    if isinstance(ctx, str):
        return parse_ctx(ctx)
    if isinstance(ctx, mx.Context):
        return ctx
    raise GluonbenchError(f"ctx={ctx!r} is not a context; pass mx.cpu(), mx.gpu(0) or a string such as 'gpu:0'")


def ctx_text(ctx: Any) -> str:
    """``cpu`` or ``gpu:N``: a context as the command line writes it."""
    return "cpu" if ctx.device_type == "cpu" else f"gpu:{ctx.device_id}"
