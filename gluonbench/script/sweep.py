"""``gluonbench sweep --workers 0,2,4 -- python train.py ARGS``: the user's script once per worker count.

A first short start finds the training DataLoader (the N-th the script makes: the first whose batches are
followed by a Trainer update, or ``--loader N``) and is stopped. Then, for each worker count, a fresh process
runs the script with that loader made with ``num_workers=W`` (as if the script said so), and the script's own
training steps are timed after its warm-up: samples/s over ``max_batches`` steps (evaluation passes and epoch
ends left out). Each process is stopped as soon as its steps are timed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from gluonbench.errors import GluonbenchError
from gluonbench.script.run import ScriptProcess, check_inputs, until_training, wait_for

log = logging.getLogger(__name__)


@dataclass
class ScriptRun:
    """One worker count: the script's training steps timed as they ran."""

    workers: int
    steps: int
    samples: int
    seconds: float

    @property
    def samples_per_s(self) -> float:
        return self.samples / self.seconds if self.seconds > 0 else 0.0

    @property
    def step_s(self) -> float:
        return self.seconds / self.steps if self.steps else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "samples_per_s": self.samples_per_s, "step_s": self.step_s}


@dataclass
class ScriptSweep:
    """Every worker count's run, and which of the script's DataLoaders had its ``num_workers`` set."""

    command: list[str]
    loader: int
    loader_info: dict[str, Any] = field(default_factory=dict)
    runs: list[ScriptRun] = field(default_factory=list)

    @property
    def best(self) -> ScriptRun | None:
        return max(self.runs, key=lambda r: r.samples_per_s, default=None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "loader": self.loader,
            "loader_info": self.loader_info,
            "runs": [r.to_dict() for r in self.runs],
        }


def sweep_script(
    cmd: list[str],
    workers: list[int],
    max_batches: int = 100,
    *,
    loader: int | None = None,
    start_timeout_s: float = 120.0,
    on_run: Callable[[ScriptRun], None] | None = None,
) -> ScriptSweep:
    """Run ``cmd`` once per worker count with its training loader's ``num_workers`` set; time ``max_batches`` steps."""
    if not workers or any(isinstance(w, bool) or not isinstance(w, int) or w < 0 for w in workers):
        raise GluonbenchError(f"--workers {workers!r}: give worker counts >= 0, e.g. --workers 0,2,4")
    if isinstance(max_batches, bool) or not isinstance(max_batches, int) or max_batches < 1:
        raise GluonbenchError(f"--max-batches {max_batches!r}: give the training steps to time per run, e.g. 100")
    command = check_inputs(cmd, 60.0, loader, start_timeout_s)
    found = _find_loader(command, loader, start_timeout_s)
    index = int(found["index"])
    out = ScriptSweep(list(cmd), index, found)
    for w in workers:
        proc = ScriptProcess(command, loader=index, workers=(index, w))
        proc.start()
        try:
            until_training(proc, start_timeout_s)
            proc.channel.send({"op": "count", "steps": max_batches})  # type: ignore[union-attr]
            try:
                counted = wait_for(proc, "count", start_timeout_s + 60.0 * max_batches)
            except TimeoutError:
                raise GluonbenchError(
                    f"at {w} worker(s) the script did not finish {max_batches} training steps in time; "
                    "lower --max-batches"
                ) from None
        finally:
            proc.stop()
        run = ScriptRun(w, int(counted["steps"]), int(counted["samples"]), float(counted["seconds"]))
        log.info("%d worker(s): %.1f samples/s", w, run.samples_per_s)
        out.runs.append(run)
        if on_run is not None:
            on_run(run)
    return out


def _find_loader(command: Any, loader: int | None, start_timeout_s: float) -> dict[str, Any]:
    """Start the script once, unchanged, until its training loader is known; what it is."""
    proc = ScriptProcess(command, loader=loader)
    proc.start()
    try:
        found, _ = until_training(proc, start_timeout_s)
    finally:
        proc.stop()
    return found.get("loader") or {}
