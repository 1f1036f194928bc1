"""Entry point of a run's child process: ``python -m gluonbench.engine.child SPEC RESULT``.

Reads a :class:`RunSpec` JSON, runs :func:`train_and_eval`, and writes the
:class:`RunResult` JSON atomically. Any exception is written as a failed result
(exit 1), so the parent records it; a hard crash leaves no result file and the
parent records the exit signal.
"""

from __future__ import annotations

import json
import logging
import sys
import traceback
from pathlib import Path

from gluonbench.report.store import atomic_write_text


def main(argv: list[str]) -> int:
    spec_path, result_path = Path(argv[0]), Path(argv[1])
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    from gluonbench.engine.run import RunResult, RunSpec, train_and_eval, utc_now

    spec = RunSpec.from_dict(json.loads(spec_path.read_text()))
    try:
        result = train_and_eval(spec)
        code = 0
    except BaseException as exc:
        traceback.print_exc()
        result = RunResult(
            spec=spec.to_dict(), status="failed", error=f"{type(exc).__name__}: {exc}"[:500], finished_utc=utc_now()
        )
        code = 1
    atomic_write_text(result_path, json.dumps(result.to_dict()))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
