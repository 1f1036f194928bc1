"""Re-read stored diagnoses by the current verdict rule, from their own probe records (nothing is measured).

A diagnosis's verdict, speed-ups, shares, labels, overlap and advice are pure functions of its probes'
records (per-round figures, blocks, splits, psutil evidence), so a ``--json`` written under an earlier
rule can be brought up to date: each ``X.json`` is rewritten and its ``X.md`` (the printed report)
rebuilt beside it. Prints one line per file: the old and the new verdict and the reused batch's speed-up.

    python benchmarks/reassess_diagnoses.py results/diagnose/*.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from gluonbench.diagnosis.report import to_text
from gluonbench.diagnosis.run import Diagnosis, reassess
from gluonbench.files import atomic_write_text


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="+", help="diagnosis JSON files (gluonbench diagnose --json)")
    p.add_argument("--dry-run", action="store_true", help="print the new verdicts, write nothing")
    args = p.parse_args(argv)
    for name in args.files:
        path = Path(name)
        old = Diagnosis.from_dict(json.loads(path.read_text()))
        new = reassess(old)
        lo, hi = new.speedup_ci.get("input", [float("nan")] * 2)
        print(
            f"{path}: {old.verdict} -> {new.verdict} ({new.input_bound} input-bound); one reused batch "
            f"{new.speedups.get('input', float('nan')):.2f}x [{lo:.2f}, {hi:.2f}]"
        )
        if not args.dry_run:
            atomic_write_text(path, json.dumps(new.to_dict(), indent=2))
            atomic_write_text(path.with_suffix(".md"), to_text(new))
    return 0


if __name__ == "__main__":
    sys.exit(main())
