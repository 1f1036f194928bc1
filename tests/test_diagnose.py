"""``gluonbench.diagnose`` on pipelines whose bottleneck is known by construction, and its API contract.

The ground-truth cases (``gluonbench.workloads.cases``, the ``quick`` ones) are built from real file
reads, real CPU work and real model compute; each must be classified correctly with a short budget.
"""

import json
import math

import numpy as np
import pytest
from conftest import with_more_budget

import gluonbench
from gluonbench.analysis.stats import PAIRED_MIN_ROUNDS
from gluonbench.diagnosis.probes import NAMES as PROBES
from gluonbench.diagnosis.verdict import paired_rounds
from gluonbench.errors import GluonbenchError
from gluonbench.workloads.cases import CASES, build

QUICK = [c for c in CASES if c.quick]
BUDGET_S = {0: 10.0, 2: 14.0}
"""seconds per case: 0-worker pipelines settle fast; with workers, rounds drop prefetched steps"""


@pytest.fixture(scope="session")
def case_dirs(tmp_path_factory, mnist_dir):
    return {"synthetic": tmp_path_factory.mktemp("synthetic-cache"), "mnist": mnist_dir}


def test_at_least_two_quick_cases_per_class():
    classes = [c.expected for c in QUICK]
    assert all(classes.count(k) >= 2 for k in ("preprocessing", "disk_io", "gpu_io")), classes


def _marked(case):
    # a compute-bound case sits near the 5 % line by nature: on a machine busy with other jobs (load 9 on 2
    # cores) the loader's few milliseconds competed with the model and one reused batch gained 1.06-1.21x,
    # which the seed's rule rightly calls input-bound. Its strict check runs with -m slow, on a quiet machine;
    # the input-bound cases (gains of 2x and more) stay in the default suite.
    return pytest.param(case, id=case.name, marks=pytest.mark.slow if case.expected == "gpu_io" else ())


@pytest.mark.parametrize("case", [_marked(c) for c in QUICK])
def test_ground_truth_case_is_classified_right(case, case_dirs, no_leaks):
    budget = BUDGET_S.get(case.workers, 12.0)
    # a busy machine (other jobs on the cores) can leave the CIs too wide for a verdict: retry with a
    # doubled budget, as the inconclusive advice says; a wrong verdict fails at once
    d = with_more_budget(
        lambda b: gluonbench.diagnose(ctx="cpu", budget_s=b, **build(case, case_dirs)),
        (budget, 2 * budget, 4 * budget),
        lambda d: d.verdict != "inconclusive",
    )
    detail = f"{case.name}: {d.verdict} {d.speedups} notes={d.notes} read={d.analysis.get('read')} " + ", ".join(
        f"{k}={p.step_s * 1000:.1f}ms+-{p.rel_half_width:.0%}/{len(p.blocks)}" for k, p in d.probes.items()
    )
    gain, (lo, hi) = d.speedups["input"], d.speedup_ci["input"]
    assert d.verdict == case.expected, detail
    # the verdict's reading: gpu_io when one reused batch gains nothing, else a real gain
    if case.expected == "gpu_io":
        assert d.input_bound == "not" and (min(gain, hi) <= 1 / 0.95 or lo <= 1.0), detail
    else:
        assert lo > 1.0 and gain > 1.05 and d.input_bound in ("highly", "moderately"), detail
    # the budget is honoured as the deadline promises (budget + its bounded grace); a busy machine can
    # stretch the last block past a tighter margin
    from gluonbench.engine.deadline import grace_s

    used = d.setting["budget_s"]
    assert d.elapsed_s < used + grace_s(used), "the budget is honoured"
    paired = paired_rounds(d.probes)
    assert d.stop_reason == "budget" or len(paired) >= PAIRED_MIN_ROUNDS, "an early stop needs shares paired by round"
    assert all(len(p.per_round) <= d.rounds for p in d.probes.values())


@pytest.fixture(scope="module")
def seed_pipeline_diagnosis(mnist_dir):
    """The seed's MNIST pipeline, as a user would pass it: raw dataset, per-sample transform, CNN."""
    from gluonbench.workloads import get_workload
    from gluonbench.workloads.mnist import seed_net

    w = get_workload("mnist", data_dir=mnist_dir, download=False)
    net = seed_net()
    # a busy machine may leave a probe without a block in 6 s: retry with a doubled budget (the contract
    # below is about the result's shape, not about how fast the machine is)
    from gluonbench.engine.deadline import BudgetExceededError

    def run(budget: float):
        try:
            return gluonbench.diagnose(
                w.dataset, w.transform, net, batch_size=64, num_workers=2, ctx="cpu", budget_s=budget
            )
        except BudgetExceededError:  # one step past the budget + grace: the machine is that busy; as advised,
            if budget >= 24:  # raise the budget (the last one's error fails the test)
                raise
            return None

    d = with_more_budget(
        run, (6, 12, 24), lambda d: d is not None and all(p.blocks for p in d.probes.values() if p.same_as is None)
    )
    return d, net


def test_result_contract(seed_pipeline_diagnosis):
    d, _ = seed_pipeline_diagnosis
    assert d.verdict in ("preprocessing", "disk_io", "gpu_io", "inconclusive")
    assert set(d.shares) == {"preprocessing", "disk_io", "gpu_io"}
    assert math.isclose(sum(d.shares.values()), 1.0) and min(d.shares.values()) >= 0
    assert list(d.probes) == list(PROBES)
    for name, p in d.probes.items():
        lo, hi = p.samples_per_s_ci
        assert lo <= p.samples_per_s <= hi, name
        assert p.steps > 0 and len(p.blocks) >= 1 and p.split["total_s"] > 0
        assert p.system["samples"] >= 2 and len(p.system["per_core_pct"]) >= 1
    # 2 workers: the full probe's process tree had them; the cached batch needs no loader step time
    assert d.probes["full"].system["peak_processes"] >= 3
    # (20 ms of slack: one scheduler stall on a busy machine; the wait is tens of microseconds when quiet)
    cached = d.probes["cached_batch"].split
    assert cached["wait_s"] < 0.05 * cached["total_s"] + 0.02, cached
    assert d.probes["loader_only"].split["compute_s"] < d.probes["full"].split["compute_s"]
    assert d.input_bound in ("highly", "moderately", "not", "unknown")
    assert (d.input_bound == "unknown") == (d.verdict == "inconclusive")
    assert {"input", "preprocessing", "disk_io", "read", "loader", "copy"} <= set(d.speedups)
    for key, (lo, hi) in d.speedup_ci.items():
        assert lo <= d.speedups[key] <= hi, key
    assert d.speedups["copy"] == 1.0, "no copy on a CPU context: removing it gains exactly nothing"
    assert d.input_saved == pytest.approx(1 - 1 / d.speedups["input"])
    assert {"contention", "balanced", "full_vs_slower", "loader_vs_model"} <= set(d.overlap)
    assert d.recommendations and all(isinstance(r, str) for r in d.recommendations)
    assert any(e.startswith("during `full`: ") and "cores" in e for e in d.evidence)
    data = json.loads(json.dumps(d.to_dict()))
    assert data["verdict"] == d.verdict and set(data["probes"]) == set(PROBES)
    again = gluonbench.Diagnosis.from_dict(data)
    assert again.probes["full"].samples_per_s == pytest.approx(d.probes["full"].samples_per_s)


def test_net_weights_are_restored(mnist_dir):
    from gluonbench._mx import gluon, mx, nd

    class Raw(gluon.data.Dataset):
        """A user's own data set: reading happens in __getitem__."""

        def __init__(self, n):
            rng = np.random.default_rng(0)
            self.x = rng.integers(0, 255, size=(n, 8, 8, 1), dtype=np.uint8)
            self.y = rng.integers(0, 10, size=n)

        def __getitem__(self, i):
            return self.x[i], self.y[i]

        def __len__(self):
            return len(self.y)

    def transform(x, y):
        return x.astype(np.float32).transpose(2, 0, 1) / 255, np.float32(y)

    net = gluon.nn.Dense(10)
    net.initialize(mx.init.Normal(), ctx=mx.cpu())
    net(nd.zeros((1, 64)))
    before = net.weight.data().asnumpy().copy()
    d = gluonbench.diagnose(Raw(512), transform, net, batch_size=32, budget_s=3)
    assert d.verdict in ("preprocessing", "disk_io", "gpu_io", "inconclusive")
    assert np.array_equal(net.weight.data().asnumpy(), before), "the probes trained the net; weights must be put back"
    # a net not initialised yet is initialised by gluonbench
    fresh = gluon.nn.Dense(10)
    d = gluonbench.diagnose(Raw(256), transform, fresh, batch_size=32, budget_s=2)
    assert fresh.weight.data().shape == (10, 64)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"dataset": [(np.zeros(3), 0)] * 4, "batch_size": 8}, "fewer than batch_size=8"),
        ({"dataset": 42}, "dataset must be a gluon.data.Dataset"),
        ({"dataset": [np.zeros(3)] * 80}, "not (data, label)"),
        ({"dataset": [(np.zeros(3), 0)] * 80, "transform": lambda x, y: x.nope}, "transform fails on dataset[0]"),
        ({"dataset": [(np.zeros(3), 0)] * 80, "budget_s": 0.5}, "budget_s must be at least 2 seconds"),
        ({"dataset": [(np.zeros(3), 0)] * 80, "ctx": "tpu"}, "cpu, gpu or gpu:N"),
        ({"dataset": [(np.zeros(3), 0)] * 80, "num_workers": -1}, "num_workers must be"),
    ],
)
def test_bad_arguments_are_one_clear_error(kwargs, needle):
    with pytest.raises(GluonbenchError) as err:
        gluonbench.diagnose(**kwargs)
    assert needle in str(err.value)


def test_a_net_that_does_not_fit_the_data_is_a_clear_error(no_leaks):
    from gluonbench._mx import gluon

    data = [(np.zeros((3, 4, 4), np.float32), np.float32(1))] * 64
    net = gluon.nn.Conv2D(4, kernel_size=7)  # larger than the 4x4 input
    with pytest.raises(GluonbenchError, match="the model step failed on a batch of shape"):
        gluonbench.diagnose(data, None, net, batch_size=16, budget_s=2)
