"""The ruler's cost per round in ``check -- CMD`` (gluonbench/script/check.py), before and after it kept its pipeline
open across rounds: the old way (one ``measure()`` of a 1.2 s budget per round, its own warm-up each time) beside
the new (:class:`~gluonbench.script.check.RulerSteps`: a fixed number of steps timed directly), alternated, on this
machine. Prints the median wall seconds per round of each and the ruler figure each gives (s/sample).

    python benchmarks/ruler_round_cost.py [ROUNDS]
"""

from __future__ import annotations

import statistics
import sys
from time import perf_counter


def main(rounds: int = 5) -> None:
    from gluonbench._mx import mx
    from gluonbench.check.gate import RULER
    from gluonbench.check.ruler import ruler_pipeline
    from gluonbench.engine.measure import Rounds, measure
    from gluonbench.script.check import RulerSteps

    old = ruler_pipeline(mx.cpu()).open()

    def old_round() -> float:  # as measure_script measured the ruler before
        plan = Rounds(budget_s=1.2, round_s=0.0, warmup_steps=1, monitor_interval=0.05)
        m = measure({RULER: old}, plan, done=lambda _m: False)
        values = list(m.records[RULER].per_round.values())
        return statistics.median(values) if values else 0.0

    new = RulerSteps()
    print(f"RulerSteps times {new.steps} steps a round")
    cost: dict[str, list[float]] = {"measure() per round (before)": [], "RulerSteps per round (after)": []}
    figure: dict[str, list[float]] = {k: [] for k in cost}
    try:
        for _ in range(rounds):
            for name, one in zip(cost, (old_round, new.time_round), strict=True):
                t0 = perf_counter()
                figure[name].append(one())
                cost[name].append(perf_counter() - t0)
    finally:
        old.close()
        new.close()
    for name in cost:
        print(
            f"{name}: {statistics.median(cost[name]):.2f} s a round (min {min(cost[name]):.2f}, max "
            f"{max(cost[name]):.2f}); ruler {statistics.median(figure[name]) * 1e3:.2f} ms/sample"
        )


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5)
