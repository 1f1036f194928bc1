"""Overhead of gluonbench's instrumentation against the seed's bare loop.

The seed's own script (SEEDS.md, 001), verbatim but for a batch cap, and gluonbench's
instrumented run (``train_and_eval``: per-step timing, psutil sampling every 500 ms)
run alternately in one process with the same settings, for several rounds after one
warm-up round each; which goes first alternates by round. Each round gives a paired ratio
(gluonbench / bare); the headline is the median of those ratios with its 95 % confidence
interval (distribution-free, as ``gluonbench.analysis.stats.median_ci``). Target: <= 1.03.
The verdict is *pass* when the whole CI is at or below the target, *fail* when the whole CI
is above it, and *inconclusive* (more rounds needed) when the CI straddles it.

End to end, run-to-run noise on a shared or virtual machine can be larger than the target.
The part gluonbench adds that costs CPU is its psutil sampling thread; its own CPU time
(``time.thread_time``), over the run's wall time, is reported too: a direct, low-noise
upper bound on the time it can take from the training thread. (The per-step timestamps
are five ``perf_counter`` calls a step.)

    python benchmarks/overhead.py --data-dir ../shared/data/mnist --workers 0 --rounds 5
    python benchmarks/overhead.py --workers 0,2 --max-batches 300 --rounds 7 --out results/benchmarks
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from datetime import UTC, datetime
from pathlib import Path
from time import time

import numpy as np

from gluonbench._mx import autograd, gluon, mx, nd
from gluonbench.analysis.stats import median_ci
from gluonbench.env import command_line, environment
from gluonbench.files import atomic_write_text
from gluonbench.ranges import parse_int_list
from gluonbench.sweeprun.run import RunSpec, train_and_eval

TARGET = 1.03


# ---- the seed's script (SEEDS.md 001), unchanged except the batch cap and root= ----
def seed_train(num_workers: int, root: str, max_batches: int | None) -> tuple[float, float, float]:
    ctx = mx.cpu()
    num_fc = 512
    num_outputs = 10
    net = gluon.nn.HybridSequential()
    with net.name_scope():
        net.add(gluon.nn.Conv2D(channels=20, kernel_size=5, activation="relu"))
        net.add(gluon.nn.MaxPool2D(pool_size=2, strides=2))
        net.add(gluon.nn.Conv2D(channels=50, kernel_size=5, activation="relu"))
        net.add(gluon.nn.MaxPool2D(pool_size=2, strides=2))
        net.add(gluon.nn.Flatten())
        net.add(gluon.nn.Dense(num_fc, activation="relu"))
        net.add(gluon.nn.Dense(num_outputs))
    net.hybridize()
    softmax_cross_entropy = gluon.loss.SoftmaxCrossEntropyLoss()

    def evaluate_accuracy(data_iterator, net):
        acc = mx.metric.Accuracy()
        for i, (data, label) in enumerate(data_iterator):
            if max_batches is not None and i >= max_batches:
                break
            predictions = nd.argmax(net(data.as_in_context(ctx)), axis=1)
            acc.update(preds=predictions, labels=label.as_in_context(ctx))
        return acc.get()[1]

    def transform(data, label):
        return nd.transpose(data.astype(np.float32), (2, 0, 1)) / 255, label.astype(np.float32)

    def data_loader(train, batch_size, num_workers):
        dataset = gluon.data.vision.MNIST(root=root, train=train, transform=transform)
        return gluon.data.DataLoader(dataset, batch_size, shuffle=train, num_workers=num_workers)

    mx.random.seed(1)
    np.random.seed(1)  # gluonbench seeds numpy too; same shuffle order for both
    epochs = 1
    train_data = data_loader(train=True, batch_size=64, num_workers=num_workers)
    test_data = data_loader(train=False, batch_size=64, num_workers=num_workers)
    net.collect_params().initialize(mx.init.Xavier(magnitude=2.24), ctx=ctx, force_reinit=True)
    trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1})
    train_start = time()
    for _e in range(epochs):
        for i, (data, label) in enumerate(train_data):
            if max_batches is not None and i >= max_batches:
                break
            data = data.as_in_context(ctx)
            label = label.as_in_context(ctx)
            nd.waitall()
            with autograd.record():
                output = net(data)
                loss = softmax_cross_entropy(output, label)
            loss.backward()
            trainer.step(data.shape[0])
    nd.waitall()
    eval_start = time()
    test_accuracy = evaluate_accuracy(test_data, net)
    eval_end = time()
    for loader in (train_data, test_data):
        if loader._worker_pool is not None:
            loader._worker_pool.terminate()
            loader._worker_pool.join()
            loader._worker_pool = None
    return eval_start - train_start, eval_end - eval_start, float(test_accuracy)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[2] / "shared" / "data" / "mnist"))
    p.add_argument("--workers", default="0,2")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--max-batches", type=int, default=None, help="cap per run (default: the full epoch)")
    p.add_argument("--out", help="folder to write overhead-<UTC>.json and .md into")
    args = p.parse_args()
    root = args.data_dir
    report = {
        "command": command_line(),
        "env": environment(),
        "date_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "target": TARGET,
        "cases": [],
    }
    lines = [
        "# gluonbench overhead vs the seed's bare loop",
        "",
        f"- Machine: {report['env']['cpu']} ({report['env']['cores_logical']} cores), Python {report['env']['python']}, mxnet {report['env']['mxnet']}",
        f"- Date (UTC): {report['date_utc']}",
        f"- Command: `{report['command']}`",
        "",
        "| workers | batches | rounds | bare train s (median) | gluonbench train s (median) | ratio (median of rounds) | 95 % CI | per-round ratios | verdict (target <= 1.03) | sampler CPU / wall |",
        "|---:|---:|---:|---:|---:|---:|---|---|---|---:|",
    ]
    ok_all = True
    for w in parse_int_list(args.workers):
        spec = RunSpec(data_dir=root, workers=w, max_batches=args.max_batches, download=False)
        bare, gb, sampler = [], [], []
        for rnd in range(args.rounds + 1):  # round 0 is warm-up
            order = (0, 1) if rnd % 2 == 0 else (1, 0)  # alternate who goes first
            for who in order:
                if who == 0:
                    t, _, _ = seed_train(w, root, args.max_batches)
                    (bare if rnd else []).append(t)
                else:
                    r = train_and_eval(spec)
                    (gb if rnd else []).append(r.train_s)
                    if rnd:
                        # the sampler thread's CPU time over the run's wall time: its cost, measured directly
                        sampler.append(r.system["monitor_cpu_s"] / r.system["duration_s"])
            if rnd:
                print(f"workers {w} round {rnd}: bare {bare[-1]:.3f} s, gluonbench {gb[-1]:.3f} s", file=sys.stderr)
        per_round = [g / b for g, b in zip(gb, bare, strict=True)]
        ratio = statistics.median(per_round)
        low, high = median_ci(per_round)
        verdict = "pass" if high <= TARGET else "fail" if low > TARGET else "inconclusive"
        ok = verdict == "pass"
        ok_all &= ok
        report["cases"].append(
            {
                "workers": w,
                "max_batches": args.max_batches,
                "bare_train_s": bare,
                "gluonbench_train_s": gb,
                "ratio_median_of_rounds": ratio,
                "ratio_ci95": [low, high],
                "ratio_of_medians": statistics.median(gb) / statistics.median(bare),
                "verdict": verdict,
                "sampler_cpu_share": sampler,
                "per_round_ratios": per_round,
                "pass": ok,
            }
        )
        lines.append(
            f"| {w} | {args.max_batches or 'epoch'} | {args.rounds} | {statistics.median(bare):.3f} | "
            f"{statistics.median(gb):.3f} | **{ratio:.3f}** | {low:.3f}-{high:.3f} | "
            f"{', '.join(f'{x:.3f}' for x in per_round)} | {verdict} | {statistics.median(sampler) * 100:.2f} % |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        atomic_write_text(out / f"overhead-{stamp}.json", json.dumps(report, indent=2))
        atomic_write_text(out / f"overhead-{stamp}.md", text)
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
