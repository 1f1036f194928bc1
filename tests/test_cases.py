"""The ground-truth cases (``gluonbench.workloads.cases``) build and feed a valid batch, and
``benchmarks/diagnose_accuracy.py`` scores a run as its docstring says (constructed rows, nothing measured)."""

from __future__ import annotations

import sys
import time

import numpy as np
import pytest
from conftest import REPO

from gluonbench.workloads.cases import CASES, build_case
from gluonbench.workloads.user_cases import BUILDERS

sys.path.insert(0, str(REPO / "benchmarks"))
import diagnose_accuracy as acc

USER_CASES = [c for c in CASES if c.workload in BUILDERS or c.name == "arrays-tiny-samples-linear"]


@pytest.fixture(scope="module")
def dirs(tmp_path_factory, mnist_dir):
    return {"synthetic": tmp_path_factory.mktemp("cases"), "mnist": mnist_dir}


def test_every_kind_of_user_pipeline_has_a_case():
    kinds = {c.workload for c in CASES}
    assert set(BUILDERS) <= kinds
    assert len({c.name for c in CASES}) == len(CASES)
    assert {c.expected for c in USER_CASES} == {"preprocessing", "disk_io", "gpu_io"}


@pytest.mark.parametrize("case", USER_CASES, ids=lambda c: c.name)
def test_a_user_case_builds_fast_and_feeds_its_net_a_valid_batch(case, dirs):
    from gluonbench._mx import autograd, gluon, mx

    built = build_case(case, dirs)  # its time is diagnose_accuracy.py's "setup" column (a benchmark, not a test)
    kw = built.kwargs
    assert kw["label"] == case.name and kw["batch_size"] == case.batch_size and kw["num_workers"] == case.workers
    dataset = kw["dataset"] if kw["transform"] is None else kw["dataset"].transform(kw["transform"])
    data, label = next(iter(gluon.data.DataLoader(dataset, case.batch_size, last_batch="discard")))
    assert data.shape[0] == label.shape[0] == case.batch_size
    assert np.isfinite(data.asnumpy()).all()
    net, loss = kw["net"], kw["loss"]
    net.initialize(mx.init.Xavier(), ctx=mx.cpu())
    with autograd.record():
        out = loss(net(data), label)
    out.backward()
    assert np.isfinite(out.asnumpy()).all()
    if built.read_only is not None:
        # the plain loop's "remove preprocessing": the same items and labels, the sample one ready array
        assert len(built.read_only) == len(dataset)
        ready, ready_label = built.read_only[len(dataset) - 1]
        assert ready.shape == dataset[0][0].shape
        assert float(ready_label) == float(dataset[len(dataset) - 1][1])


def test_preprocessing_inside_dataset_items_has_a_read_only_twin_and_a_separate_transform_has_none(dirs):
    by_name = {c.name: c for c in CASES}
    assert build_case(by_name["imagefolder-jpeg-small-cnn"], dirs).read_only is not None
    assert build_case(by_name["gluon-mnist-transform-mlp"], dirs).read_only is not None
    encoded = build_case(by_name["encoded-bytes-imdecode"], dirs)
    assert encoded.read_only is None and encoded.kwargs["transform"] is not None
    assert isinstance(encoded.kwargs["dataset"][0][0], bytes)  # the item is bytes until the transform decodes it


def test_slow_storage_reads_wait():
    case = next(c for c in CASES if c.workload == "slow-storage")
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        ds = build_case(case, {"synthetic": tmp}).kwargs["dataset"]
        t0 = time.perf_counter()
        for i in range(5):
            ds[i]
        assert time.perf_counter() - t0 >= 5 * 0.004


def test_score_counts_only_decisive_cases_and_a_wrong_class_fails():
    rows = [
        ("a", "preprocessing", "preprocessing"),
        ("b", "disk_io", "disk_io"),
        ("c", "gpu_io", "gpu_io"),
        ("d", "at_line", "disk_io"),  # the plain loop at the line: reported, not scored
        ("e", "unclear", "inconclusive"),
    ]
    s = acc.score(rows)
    assert s.decisive == ["a", "b", "c"] and s.agree == ["a", "b", "c"] and s.not_scored == ["d", "e"]
    assert s.passed and "PASS" in s.summary()
    wrong = acc.score([*rows, ("f", "preprocessing", "disk_io")])
    assert wrong.wrong == ["f"] and not wrong.passed and "FAIL" in wrong.summary()
    assert not acc.score([*rows, ("g", "gpu_io", "error")]).passed  # a refused pipeline is wrong


def test_at_most_one_in_ten_decisive_cases_may_stay_undecided():
    ten = [(f"c{i}", "gpu_io", "gpu_io") for i in range(9)]
    assert acc.score([*ten, ("x", "disk_io", "inconclusive")]).passed  # 1 of 10
    assert not acc.score([*ten, ("x", "disk_io", "inconclusive"), ("y", "gpu_io", "at_line")]).passed  # 2 of 11
    assert not acc.score([("x", "disk_io", "at_line")]).passed  # 1 of 1
    assert not acc.score([("d", "at_line", "gpu_io")]).passed  # nothing decisive: nothing shown


def test_busy_cores_are_ended_with_the_run_even_when_it_fails_and_are_not_this_process_tree():
    import psutil

    def alive(pid: int) -> bool:
        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    with pytest.raises(RuntimeError), acc.busy_cores(2) as pids:
        assert len(pids) == 2 and all(alive(pid) for pid in pids)
        # another job's processes, as far as a diagnosis of this process's pipeline can tell
        assert not set(pids) & {p.pid for p in psutil.Process().children(recursive=True)}
        raise RuntimeError("a case failed")
    time.sleep(0.2)
    assert not any(alive(pid) for pid in pids)


@pytest.mark.slow
def test_the_plain_loop_removes_the_work_inside_dataset_items_through_the_read_only_twin(dirs):
    import ground_truth

    case = next(c for c in CASES if c.name == "gluon-mnist-transform-mlp")
    gt = ground_truth.measure(case, dirs, seconds=1.0, min_rounds=2)
    assert set(gt.step_ms) == {"full", "no_preprocess", "reused"}
    assert gt.rounds >= 2 and gt.preprocess_speedup > 0


def test_a_round_order_for_the_benchmark_reaches_the_rounds_diagnose_builds(monkeypatch):
    import gluonbench.diagnosis.run as diagnosis_run

    monkeypatch.setattr(diagnosis_run, "Rounds", diagnosis_run.Rounds)  # restored after the test
    acc.use_round_order("pairs")
    assert diagnosis_run.Rounds(budget_s=5.0).order == "pairs"
