"""The one timer's step split of the seed's MNIST (0 workers, 150 steps) on cpu(0) and on cpu(1) (issue #18, G2).

Run from the repository root: ``python benchmarks/step_split_contexts.py LABEL`` (LABEL names the code
measured, e.g. ``main`` or ``branch``); figures in results/README.md.
"""

import os
import sys

import gluonbench  # noqa: F401  (the MXNet/numpy shims)
from gluonbench._mx import gluon, mx
from gluonbench.engine.loop import run_steps
from gluonbench.pipeline.stages import ModelStep
from gluonbench.workloads import get_workload

DATA = os.path.join(os.environ.get("GLUONBENCH_DATA", "../shared/data"), "mnist")


def main() -> None:
    label = sys.argv[1] if len(sys.argv) > 1 else "this checkout"
    w = get_workload("mnist", data_dir=DATA, download=False)
    for dev in (0, 1):
        ctx = mx.cpu(dev)
        mx.random.seed(1)
        net = w.make_net()
        net.collect_params().initialize(w.initializer(), ctx=ctx)
        step = ModelStep(net, w.make_loss(), gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.1}))
        loader = gluon.data.DataLoader(w.dataset.transform(w.transform), 64, shuffle=True, num_workers=0)
        s = run_steps(loader, ctx, step, max_steps=150).split()
        print(
            f"{label} {ctx} wait {s.wait_s:.2f} copy {s.copy_s:.3f} compute {s.compute_s:.2f} total {s.total_s:.2f} "
            f"wait_frac {s.wait_frac:.3f} samples/s {s.samples_per_s:.0f}"
        )


if __name__ == "__main__":
    main()
