"""Ground truth for ``diagnose``: the seed's rule measured by a plain training loop, no gluonbench engine.

For each case of ``gluonbench.workloads.cases`` this trains the case's net with a plain Gluon loop
(a DataLoader, ``autograd.record``, ``backward``, ``trainer.step``) that overlaps like MXNet's: the
async engine computes step i while the loop fetches batch i+1. By default it is the seed's loop
(SEEDS.md, 001: ``nd.waitall()`` before each step, after the batch is fetched), the loop gluonbench's
sweep trains with and its timer runs. ``--in-flight`` instead only waits for the *previous* step's loss,
so two steps can be queued at once: a loop that never synchronises per step. The two differ where a
cheap input pipeline meets a compute-heavy model at 0 workers: on this 2-core VM (2026-11-25) the
in-flight loop gained 1.06-1.07x from one reused batch on the two heavy-model cases (the fetch competes
with the queued step for the cores), the seed's loop 1.00-1.01x, as ``diagnose`` found.
Three inputs take turns, in interleaved rounds:

* ``full``: the pipeline as given;
* ``no_preprocess``: ``dataset[i]`` still read, the transform swapped for one ready sample (the seed's
  step 1, "remove preprocessing"). Where the preprocessing runs inside ``dataset[i]`` (an
  ``ImageFolderDataset`` decoding its JPEGs, ``gluon.data.vision.MNIST(transform=...)``), the case gives the
  same data set with that work left out and its reads kept (``Built.read_only``: each file still opened and
  read, each array still indexed) and that is swapped in instead; the same as ``full`` when neither applies;
* ``reused``: one batch kept and trained on every step (the seed's step 2, "reload the same batch").

A block is timed in steady state, as an epoch of hundreds of steps runs: from the end of its first
iteration (which fetches a batch with no step computing meanwhile) to the dispatch of its last step (whose
compute then finishes untimed). Timing the whole block instead adds one unoverlapped fetch to every block:
on the seed's MNIST at 0 workers that overstated the full pipeline by 2-3 % of a step (2026-11-25).

Each round's seconds per step give paired ratios (the median over rounds and its 95 % CI): the
speed-up of one reused batch over the full pipeline, and of removing preprocessing. The seed's rule
then reads (the same reading as ``diagnose``'s verdict, ``gluonbench.diagnosis.verdict.read_reuse``):
``gpu_io`` when reusing one batch gains nothing (the CI under the 5 % line: a speed-up of 1/(1-0.05), or 1
within the CI and the gain under the line), the input stage whose removal gains the most time
(``preprocessing`` or ``disk_io``) when the whole CI lies above the line, ``at_line`` when a gain beyond
the noise has a CI across the line (the case sits at the line on this machine), ``unclear`` otherwise.

    python benchmarks/ground_truth.py --quick                      # the test suite's cases
    python benchmarks/ground_truth.py --only mnist-seed-0workers --seconds 40
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import math
import os
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from time import perf_counter
from typing import Any

from gluonbench.analysis.stats import median, median_ci
from gluonbench.diagnosis.verdict import Thresholds, read_reuse
from gluonbench.workloads.cases import CASES, Case, build_case

LINE = Thresholds().line
"""a perfect input pipeline must save 5 % of the step (TF's moderately input-bound line) to count"""


@dataclass
class GroundTruth:
    """The plain loop's figures for one case and the seed's rule applied to them."""

    case: str
    seed_rule: str
    """``preprocessing``, ``disk_io``, ``gpu_io`` or ``unclear``"""
    reuse_speedup: float
    """full / reused seconds per step: how much faster one reused batch trains"""
    reuse_ci: list[float]
    preprocess_speedup: float
    """full / no_preprocess"""
    preprocess_ci: list[float]
    rest_speedup: float
    """no_preprocess / reused"""
    rest_ci: list[float]
    step_ms: dict[str, float] = field(default_factory=dict)
    """median ms a step per input"""
    rounds: int = 0
    load_average: float = math.nan

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def seed_rule(reuse: tuple[float, float, float], step_ms: dict[str, float]) -> str:
    """The seed's decision on the (ratio, low, high) speed-up of one reused batch: see the module docstring.

    The same reading as ``diagnose``'s verdict (``gluonbench.diagnosis.verdict.read_reuse``). Of the input
    stages, the one whose removal saves the most time per step (``full - no_preprocess`` against
    ``no_preprocess - reused``) is named.
    """
    reading = read_reuse(reuse, LINE)
    if reading == "nothing":
        return "gpu_io"
    if reading == "gain":
        no_pre = step_ms.get("no_preprocess", step_ms["full"])
        return "preprocessing" if step_ms["full"] - no_pre >= no_pre - step_ms["reused"] else "disk_io"
    return "at_line" if reading == "at_line" else "unclear"


def _forever(loader: Any) -> Iterator[tuple[Any, Any]]:
    while True:
        yield from loader


def _paired(a: list[float], b: list[float]) -> tuple[float, float, float]:
    ratios = [x / y for x, y in zip(a, b, strict=True) if x > 0 and y > 0]
    lo, hi = median_ci(ratios)
    return median(ratios), lo, hi


def measure(
    case: Case, dirs: dict[str, Any], seconds: float = 20.0, min_rounds: int = 8, barrier: bool = True
) -> GroundTruth:
    """Train ``case`` with the plain loop on the CPU for about ``seconds`` and apply the seed's rule.

    ``barrier`` (the seed's loop): wait for all work after each batch is fetched, before its step is dispatched,
    as the seed's script and gluonbench's timer (``engine/loop.py``) do; False keeps one step in flight instead.
    """
    from gluonbench._mx import autograd, gluon, mx, nd
    from gluonbench.pipeline.pipeline import close_loader

    built = build_case(case, dirs)
    kw = built.kwargs
    ctx = mx.cpu()
    dataset, transform, net, loss = kw["dataset"], kw["transform"], kw["net"], kw["loss"]
    bs, workers = kw["batch_size"], kw["num_workers"]
    net.initialize(mx.init.Xavier(magnitude=2.24), ctx=ctx)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.05})
    loaders = []

    def loader_of(ds: Any) -> Iterator[tuple[Any, Any]]:
        dl = gluon.data.DataLoader(ds, bs, shuffle=True, num_workers=workers, last_batch="discard")
        loaders.append(dl)
        return _forever(dl)

    full = loader_of(dataset.transform(transform) if transform else dataset)
    inputs: dict[str, Iterator[tuple[Any, Any]]] = {"full": full}
    if transform is not None:
        ready = transform(*dataset[0])
        inputs["no_preprocess"] = loader_of(dataset.transform(lambda x, y: ready))
    elif built.read_only is not None:  # the CPU work inside dataset[i] left out, its reads kept
        inputs["no_preprocess"] = loader_of(built.read_only)
    first = next(full)

    def reused() -> Iterator[tuple[Any, Any]]:
        while True:
            yield first

    inputs["reused"] = reused()

    def run(batches: Iterator[tuple[Any, Any]], steps: int) -> float:
        """Seconds per step in steady state: ``steps`` loop periods, timed from the end of a first iteration.

        The edges of a block are left out, as an epoch of hundreds of steps hardly has them: the first
        iteration fetches its batch with no step computing meanwhile, and the final wait finishes the last
        step with nothing fetched meanwhile.
        """
        prev = None
        t0 = 0.0
        for i in range(steps + 1):
            if i == 1:
                t0 = perf_counter()
            data, label = next(batches)
            if barrier:
                nd.waitall()
            with autograd.record():
                out = loss(net(data.as_in_context(ctx)), label.as_in_context(ctx))
            out.backward()
            trainer.step(bs)
            if prev is not None and not barrier:
                prev.wait_to_read()  # one step in flight: the next batch loads while this one computes
            prev = out
        seconds = perf_counter() - t0
        nd.waitall()  # the last step finishes outside the timed periods
        return seconds / steps

    try:
        # warm up every input (worker start-up, first-call allocations), then size the blocks to ~0.4 s
        probe = {name: run(it, 5) for name, it in inputs.items()}
        probe = {name: run(it, 5) for name, it in inputs.items()}
        steps = {name: max(5, int(0.4 / max(t, 1e-4))) for name, t in probe.items()}
        times: dict[str, list[float]] = {name: [] for name in inputs}
        names = list(inputs)
        t_end = perf_counter() + seconds
        r = 0
        while r < min_rounds or perf_counter() < t_end:
            order = names[r % len(names) :] + names[: r % len(names)]  # rotate who goes first
            for name in order:
                times[name].append(run(inputs[name], steps[name]))
            r += 1
    finally:
        for dl in loaders:
            close_loader(dl)
        loaders.clear()
        gc.collect()
    reuse = _paired(times["full"], times["reused"])
    if "no_preprocess" in times:
        pre = _paired(times["full"], times["no_preprocess"])
        rest = _paired(times["no_preprocess"], times["reused"])
    else:
        pre, rest = (1.0, 1.0, 1.0), reuse
    step_ms = {k: median(v) * 1000 for k, v in times.items()}
    return GroundTruth(
        case=case.name,
        seed_rule=seed_rule(reuse, step_ms),
        reuse_speedup=reuse[0],
        reuse_ci=[reuse[1], reuse[2]],
        preprocess_speedup=pre[0],
        preprocess_ci=[pre[1], pre[2]],
        rest_speedup=rest[0],
        rest_ci=[rest[1], rest[2]],
        step_ms=step_ms,
        rounds=r,
        load_average=os.getloadavg()[0],
    )


def line(gt: GroundTruth) -> str:
    def x(v: float, ci: list[float]) -> str:
        return f"{v:.2f}x [{ci[0]:.2f}, {ci[1]:.2f}]"

    return (
        f"{gt.case:40s} seed's rule {gt.seed_rule:13s} reused batch {x(gt.reuse_speedup, gt.reuse_ci)}  "
        f"no preprocessing {x(gt.preprocess_speedup, gt.preprocess_ci)}  rest {x(gt.rest_speedup, gt.rest_ci)}  "
        f"({gt.rounds} rounds, load {gt.load_average:.1f})"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="only the test suite's cases")
    p.add_argument("--only", action="append", default=[], help="run only this case (repeatable)")
    p.add_argument("--seconds", type=float, default=20.0, help="seconds of interleaved rounds per case (default 20)")
    p.add_argument("--mnist-dir", help="folder of the MNIST files (default: gluonbench's look-up, no download)")
    p.add_argument("--json", help="write every case's figures to this file")
    p.add_argument(
        "--in-flight",
        action="store_true",
        help="keep one step in flight (wait only for the previous step's loss) instead of the seed's nd.waitall() "
        "before each step",
    )
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    cases = [c for c in CASES if (c.quick or not args.quick) and (not args.only or c.name in args.only)]
    out = []
    with tempfile.TemporaryDirectory(prefix="gluonbench-truth-") as tmp:
        dirs: dict[str, Any] = {"synthetic": tmp}
        if args.mnist_dir:
            dirs["mnist"] = args.mnist_dir
        for case in cases:
            gt = measure(case, dirs, args.seconds, barrier=not args.in_flight)
            print(line(gt), flush=True)
            out.append(gt.to_dict())
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    unclear = [g["case"] for g in out if g["seed_rule"] in ("unclear", "at_line")]
    print(
        f"ground truth: {len(out) - len(unclear)}/{len(out)} cases clear"
        + (f" (at the line or unclear: {unclear})" if unclear else "")
    )
    return 0 if not unclear else 1


if __name__ == "__main__":
    sys.exit(main())
