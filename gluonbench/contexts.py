"""The one parser of context strings: ``cpu``, ``cpu:N``, ``gpu``, ``gpu:N`` (``--ctx``, ``PipelineSpec.ctx``).

MXNet treats ``cpu(0)``, ``cpu(1)``, ... as distinct devices, each with its own worker queue, and copies
between them for real: ``cpu:1`` runs a GPU's device code paths (a copy stage, the host batch waited
for apart from the step) on a machine without one. :func:`check_ctx` reads the text without MXNet;
:func:`parse_ctx` returns the MXNet context (and refuses a GPU MXNet does not see, or one that no code in
``libmxnet.so`` runs on: :mod:`gluonbench.gpucode`); :func:`ctx_text` is the inverse.
"""

from __future__ import annotations

import re
from typing import Any

from gluonbench.errors import GluonbenchError
from gluonbench.names import param

MAX_INDEX = 1023
"""the highest device index a context string may name"""

_CTX = re.compile(r"^(cpu|gpu)(?::(\d+))?$")


def check_ctx(spec: Any, what: str | None = None) -> tuple[str, int]:
    """``(kind, index)`` of a context string, validated without touching MXNet."""
    name = what or param("ctx")
    match = _CTX.match(spec.strip().lower()) if isinstance(spec, str) else None
    if not match:
        raise GluonbenchError(
            f"{name} {spec!r} is not a context; use cpu, gpu or gpu:N, or cpu:N for another CPU device "
            "(e.g. gpu:0, cpu:1)"
        )
    index = int(match.group(2) or 0)
    if index > MAX_INDEX:
        raise GluonbenchError(f"{name} {spec!r}: the device index must be 0..{MAX_INDEX}")
    return match.group(1), index


def parse_ctx(spec: str, what: str | None = None) -> Any:
    """The MXNet context of ``spec`` (``cpu:1`` is ``mx.cpu(1)``); raise if the GPU asked for is not there."""
    from gluonbench._mx import mx, num_gpus

    name = what or param("ctx")
    kind, index = check_ctx(spec, name)
    if kind == "cpu":
        return mx.cpu(index)
    from gluonbench.gpucode import gpu_problem, missing_gpu_advice

    available = num_gpus()
    if available == 0:
        raise GluonbenchError(
            f"{name} {spec}: MXNet sees no GPU (CPU wheel, or no driver): {missing_gpu_advice(index)}; "
            f"or use {name} cpu"
        )
    if index >= available:
        raise GluonbenchError(f"{name} {spec}: only {available} GPU(s) visible (gpu:0..gpu:{available - 1})")

    problem = gpu_problem(index)
    if problem:
        raise GluonbenchError(f"{name} {spec}: {problem}")
    return mx.gpu(index)


def ctx_text(ctx: Any) -> str:
    """A context as the command line writes it: ``cpu``, ``cpu:1``, ``gpu:0``."""
    kind, index = ctx.device_type, int(ctx.device_id)
    if kind == "gpu":
        return f"gpu:{index}"
    return "cpu" if index == 0 else f"cpu:{index}"


def default_ctx_spec() -> str:
    """``gpu:0`` where MXNet sees a GPU, else ``cpu``."""
    from gluonbench._mx import num_gpus

    return "gpu:0" if num_gpus() > 0 else "cpu"


def resolve_ctx(ctx: Any) -> Any:
    """An MXNet context from ``ctx``: None (GPU 0 if MXNet sees one, else the CPU), a string such as
    ``gpu:0`` or ``cpu:1``, or a context as it is."""
    from gluonbench._mx import mx

    if ctx is None:
        return parse_ctx(default_ctx_spec())
    if isinstance(ctx, str):
        return parse_ctx(ctx)
    if isinstance(ctx, mx.Context):
        return ctx
    raise GluonbenchError(f"ctx={ctx!r} is not a context; pass mx.cpu(), mx.gpu(0) or a string such as 'gpu:0'")
