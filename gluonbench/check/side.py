"""One side of ``gluonbench check --against``: a process that builds one tree's pipeline and runs it in rounds on cue.

``python -m gluonbench.check.side`` is started by :mod:`gluonbench.check.against`, once for the baseline's tree and
once for the candidate's, each with its own tree first on ``PYTHONPATH`` so that it imports its own code. It talks
JSON lines: the parent writes the setting, then one command per line on stdin; the side answers on stdout (its log
goes to stderr).

* ``{"target": ..., "options": ..., ...}`` -> ``{"ready": true, "identity": ..., "module_file": ..., "probes": [...]}``
  (or ``{"error": "one line"}``): the pipeline is built and its probes' stand-ins made from its first batch;
* ``{"cmd": "go"}`` -> ``{"round": N, "wall": {probe: s/sample}, "cpu": {probe: CPU s/sample}}``: one round of the
  current phase (the first ``go`` of a phase opens its loaders and warms them up);
* ``{"cmd": "next"}``: the current phase ends (its loaders close); the next ``go`` starts the next phase;
* ``{"cmd": "stop"}`` (or end of input): everything closes and the process exits 0.

Between two commands the side does nothing: its loaders have settled (no prefetching into the other side's turn).
The phases are those of :func:`gluonbench.check.gate.measure_snapshot`: the full pipeline alone (the verdict's
figure), then the chain of diagnose probes (the stages).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any

log = logging.getLogger(__name__)

LONG_S = 24 * 3600.0
"""The side's own Rounds budget: the parent decides when a phase ends."""


class _PhaseEndError(Exception):
    """The parent ended the phase (``next``) or the measurement (``stop``)."""

    def __init__(self, cmd: str) -> None:
        super().__init__(cmd)
        self.cmd = cmd


def _send(out: Any, doc: dict[str, Any]) -> None:
    out.write(json.dumps(doc) + "\n")
    out.flush()


def _read(inp: Any) -> dict[str, Any]:
    line = inp.readline()
    if not line:
        return {"cmd": "stop"}
    return json.loads(line)


def _module_file(target: str) -> str | None:
    """Where the target's code was imported from: the file of a ``path.py:FUNC``, the module of ``MODULE:FUNC``."""
    from gluonbench.workloads.spec import is_file_target, split_target

    if ":" not in target:
        return None
    where, _ = split_target(target)
    if is_file_target(where):
        return os.path.abspath(where)
    module = sys.modules.get(where)
    return getattr(module, "__file__", None)


def main() -> int:
    from gluonbench.engine.child import die_with_parent

    die_with_parent()
    os.register_at_fork(after_in_child=die_with_parent)  # DataLoader workers die with this process
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(name)s %(levelname)s %(message)s")
    inp, out = sys.stdin, sys.stdout
    sys.stdout = sys.stderr  # whatever the user's code prints goes to the log, never into the protocol
    setting = _read(inp)
    try:
        target, built, pipeline = _build(setting)
    except Exception as exc:  # a user's factory: any error is one line for the parent
        from gluonbench.errors import GluonbenchError

        text = str(exc) if isinstance(exc, GluonbenchError) else f"{type(exc).__name__}: {exc}"
        _send(out, {"error": text.splitlines()[0] if text else type(exc).__name__})
        return 0
    _send(
        out,
        {
            "ready": True,
            "identity": target.identity,
            "module_file": _module_file(str(setting["target"])),
            "probes": list(built),
            "stages": pipeline.stages(),
            "setting": {"batch_size": pipeline.batch_size, "num_workers": pipeline.num_workers},
        },
    )
    try:
        _run(inp, out, {"full": pipeline}, built, float(setting.get("round_s", 0.0)))
    except Exception as exc:  # the user's code failed mid-run: its one line is the log's last, which the parent shows
        from gluonbench.errors import GluonbenchError

        if not isinstance(exc, GluonbenchError):
            raise
        logging.getLogger(__name__).info("the side failed", exc_info=exc)
        print(exc, file=sys.stderr, flush=True)
        return 1
    finally:
        target.close()
    return 0


def _build(setting: dict[str, Any]) -> tuple[Any, dict[str, Any], Any]:
    from gluonbench.check.target import resolve_pipeline
    from gluonbench.diagnosis.measure import measure_first_batch
    from gluonbench.diagnosis.probes import CHAIN, Context

    target = resolve_pipeline(
        setting["target"],
        batch_size=None if setting.get("batch_size") is None else int(setting["batch_size"]),
        num_workers=int(setting.get("num_workers", 0)),
        ctx=setting.get("ctx"),
        options=setting.get("options") or None,
        data_dir=setting.get("data_dir"),
    )
    pipeline = target.pipeline
    context = Context(first_batch=measure_first_batch(pipeline))
    built = {p.name: p.build(pipeline, context) for p in CHAIN if p.skip_reason(pipeline) is None}
    return target, built, pipeline


def _run(inp: Any, out: Any, gate: dict[str, Any], stages: dict[str, Any], round_s: float) -> None:
    from gluonbench.engine.measure import Measurement, Rounds, measure

    cmd = _read(inp).get("cmd")
    for pipelines in (gate, stages):
        if cmd != "go":
            return

        def report(m: Measurement) -> bool:
            n = m.rounds
            _send(
                out,
                {
                    "round": n,
                    "wall": {k: r.per_round.get(n) for k, r in m.records.items()},
                    "cpu": {k: r.cpu_per_round.get(n) for k, r in m.records.items()},
                },
            )
            following = _read(inp).get("cmd")
            if following != "go":
                raise _PhaseEndError(str(following))
            return False  # not settled: the next round runs

        try:
            measure(pipelines, Rounds(budget_s=LONG_S, round_s=round_s, rel_ci=1e9), settled=report)
            return  # pragma: no cover - the parent always ends a phase first
        except _PhaseEndError as ended:
            cmd = ended.cmd
        if cmd == "next":
            _send(out, {"phase_done": True})
            cmd = _read(inp).get("cmd")


if __name__ == "__main__":
    sys.exit(main())
