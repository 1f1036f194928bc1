"""``gluonbench profile --pipeline MODULE:FUNCTION``: the profiled program is one training run of that pipeline.

:func:`pipeline_command` is the command ``gluonbench profile`` runs under its sampler:
``python -m gluonbench.profiler.pipeline_run RUN_SPEC_JSON``. That program trains the pipeline once (the
sweep's run, :func:`gluonbench.sweeprun.run.train_and_eval`, in its own process), with the profiler's step
events: each step and the wait for its batch are marked, inside a ``train`` phase, so the rules see steps
as they see them from a hooked script.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Iterator
from typing import Any

from gluonbench.profiler import hooks


def pipeline_command(
    target: str,
    options: dict[str, Any] | None = None,
    workers: int = 0,
    batch_size: int | None = None,
    max_batches: int | None = None,
    epochs: int = 1,
    ctx: str = "cpu",
    thread_pool: bool = False,
    prefetch: int | None = None,
    pin_memory: bool = False,
) -> list[str]:
    """The program ``gluonbench profile`` runs for a pipeline factory: its settings checked first, one line
    per mistake (the factory itself is loaded and checked here too, before the profile starts). ``batch_size``
    None: the pipeline's own."""
    from gluonbench.config import SweepSettings

    settings = SweepSettings(
        pipeline=target,
        pipeline_options=dict(options or {}),
        workers=(workers,),
        batch_size=batch_size,
        max_batches=max_batches,
        epochs=epochs,
        ctx=ctx,
        thread_pool=thread_pool,
        prefetch=prefetch,
        pin_memory=pin_memory,
    ).check()
    from gluonbench.config import resolve_batch_size
    from gluonbench.workloads.spec import check_pipeline

    check_pipeline(  # reuses the spec the CLI checked before its first line, if it did: one factory call
        target,
        options,
        ctx,
        pin_memory,
        keep=batch_size is None,  # then read for its batch size below, and released
        batch_size=batch_size,
        num_workers=workers,
        thread_pool=thread_pool,
        prefetch=prefetch,
    )
    spec = resolve_batch_size(settings, keep=False).specs()[0]  # the pipeline's own batch size unless one is given
    return [sys.executable, "-m", "gluonbench.profiler.pipeline_run", json.dumps(spec.to_dict())]


def marked(batches: Iterable[Any]) -> Iterator[Any]:
    """``batches`` with the profiler's marks: the wait for each batch, and each step (the time until the next
    batch is asked for)."""
    for item in hooks.wrap(batches):
        with hooks.step():
            yield item


def main(argv: list[str]) -> int:
    import logging

    from gluonbench.sweeprun.run import RunSpec, seed_line, train_and_eval

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    spec = RunSpec.from_dict(json.loads(argv[0]))
    with hooks.phase("train"):
        result = train_and_eval(spec, observe=marked)
    print(seed_line(result), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
