"""Parse and check ``--ctx cpu|gpu|gpu:N``."""

from __future__ import annotations

import re

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
