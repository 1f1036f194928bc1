"""Does the order of the probes within a round matter? Read from stored diagnoses (nothing is measured).

In every round each probe runs one slice in turn; the order rotates by one each round
(:class:`gluonbench.engine.measure.Rounds`), so two probes are ``d`` or ``n - d`` slices apart (``n`` probes
measured). The diagnosis pairs probes round by round (``per_round``). For each probe against ``full``,
this prints how far a round's log ratio strays from that pair's median, over that pair's own median
absolute deviation, grouped by how far apart the two ran in that round, pooled over every case and
file. Values that grow with the distance say that probes run further apart see more of the machine's
background changes, so pairs that the verdict compares (``full`` and ``cached_batch``) would be read more
precisely if they ran next to each other.

    python benchmarks/round_order.py results/benchmarks/diagnose_accuracy-20261127T*.json
    python benchmarks/round_order.py my-diagnosis.json        # gluonbench diagnose --json
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

MIN_ROUNDS = 10
"""a pair needs this many paired rounds to have a median absolute deviation worth dividing by"""


def diagnoses(doc: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(name, diagnosis) pairs of a ``diagnose_accuracy`` JSON (its records) or of one diagnosis JSON."""
    if "records" in doc:
        return [(r["case"], r["diagnosis"]) for r in doc["records"] if r.get("diagnosis")]
    return [(doc.get("label") or "diagnosis", doc)] if "probes" in doc else []


def deviations(d: dict[str, Any]) -> dict[tuple[int, int], list[float]]:
    """``(probes measured, distance) -> [|log ratio - median| / MAD]`` of every probe against ``full``."""
    probes = d["probes"]
    order = [name for name, p in probes.items() if p.get("same_as") is None]  # the measured ones, in round order
    n = len(order)
    full = probes["full"]["per_round"]  # index i is round i + 1; None where the round had no block
    out: dict[tuple[int, int], list[float]] = defaultdict(list)
    for j, name in enumerate(order):
        if name == "full":
            continue
        other = probes[name]["per_round"]
        pts = [(i + 1, math.log(full[i] / other[i])) for i in range(min(len(full), len(other))) if full[i] and other[i]]
        if len(pts) < MIN_ROUNDS:
            continue
        med = statistics.median(v for _, v in pts)
        mad = statistics.median(abs(v - med) for _, v in pts)
        if mad <= 0:
            continue
        for number, v in pts:
            shift = number % n  # Rounds: round `number` runs order[shift:] + order[:shift]
            distance = abs((j - shift) % n - (0 - shift) % n)
            out[(n, distance)].append(abs(v - med) / mad)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("files", nargs="+", help="diagnose_accuracy JSON files, or diagnosis JSON files")
    args = p.parse_args(argv)
    pooled: dict[tuple[int, int], list[float]] = defaultdict(list)
    cases = 0
    for name in dict.fromkeys(args.files):  # a file named twice counts once
        try:
            doc = json.loads(Path(name).read_text())
        except (OSError, ValueError) as exc:
            print(f"round_order.py: {name}: {exc}", file=sys.stderr)
            return 2
        for _, d in diagnoses(doc):
            cases += 1
            for key, values in deviations(d).items():
                pooled[key].extend(values)
    if not pooled:
        print(
            f"round_order.py: no diagnosis with {MIN_ROUNDS} paired rounds in {len(args.files)} file(s)",
            file=sys.stderr,
        )
        return 2
    print(f"{cases} diagnoses; |log ratio - median| / MAD of each probe against full, by distance in the round")
    print("probes  distance  rounds  median  mean")
    for (n, distance), values in sorted(pooled.items()):
        print(
            f"{n:6d}  {distance:8d}  {len(values):6d}  {statistics.median(values):6.2f}  {statistics.mean(values):4.2f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
