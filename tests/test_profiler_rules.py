"""Each rule fires, and stays silent, on recorded metric files built for it, at its boundaries."""

from __future__ import annotations

import json

import pytest
from profile_files import T0, cpu_gpu, write_steps, write_system

from gluonbench.errors import GluonbenchError
from gluonbench.profiler.data import load
from gluonbench.profiler.rules import RULES, parse_overrides, run_rules


def report(folder, rule: str, **params):
    return RULES[rule](**params).evaluate(load(folder))


def test_cpu_bottleneck_share_boundary(tmp_path):
    # 1100 snapshots; the last k are bottlenecks (GPU 5 % < 10, CPU 95 % > 90); fires above 50 %
    for k, fires in ((550, False), (551, True)):
        d = write_system(tmp_path / str(k), 1100, lambda i, k=k: cpu_gpu(95 if i >= 1100 - k else 50, 5))
        r = report(d, "CPUBottleneck")
        assert r.datapoints == 1100 and r.violations == k
        assert r.triggered is fires, (k, r)


def test_cpu_bottleneck_patience_and_thresholds(tmp_path):
    # every snapshot a bottleneck, but only patience (1000) of them: silent; 1001: fires
    for n, fires in ((1000, False), (1001, True)):
        r = report(write_system(tmp_path / str(n), n, lambda i: cpu_gpu(95, 5)), "CPUBottleneck")
        assert r.triggered is fires, (n, r)
    # CPU exactly at cpu_threshold (90) is not above it; GPU exactly at gpu_threshold (10) is not below it
    assert not report(write_system(tmp_path / "c90", 1100, lambda i: cpu_gpu(90, 5)), "CPUBottleneck").triggered
    assert not report(write_system(tmp_path / "g10", 1100, lambda i: cpu_gpu(95, 10)), "CPUBottleneck").triggered
    # overridable: threshold=30 makes a 40 % share fire
    d = write_system(tmp_path / "s40", 1100, lambda i: cpu_gpu(95 if i >= 660 else 50, 5))
    assert not report(d, "CPUBottleneck").triggered
    assert report(d, "CPUBottleneck", threshold=30).triggered


def test_windowed_evaluation_keeps_an_early_bottleneck(tmp_path):
    # Debugger evaluates every 60 s (120 snapshots at 0.5 s) on what it has seen so far. 600 bottlenecks
    # first, then 600 fine snapshots: at the window ending at 540 s (1080 snapshots, past patience) the
    # share is 600/1080 = 55.6 % > 50 %, so the rule fired then, although the whole job ends at 50 %
    r = report(write_system(tmp_path / "a", 1200, lambda i: cpu_gpu(95 if i < 600 else 50, 5)), "CPUBottleneck")
    assert r.details["bottleneck_pct"] == 50.0 and r.triggered and r.times_triggered == 1
    # 530 first: 530/1080 = 49.1 % at that window, less afterwards: silent
    r = report(write_system(tmp_path / "b", 1200, lambda i: cpu_gpu(95 if i < 530 else 50, 5)), "CPUBottleneck")
    assert not r.triggered


def test_io_bottleneck(tmp_path):
    d = write_system(tmp_path / "io", 1100, lambda i: cpu_gpu(30, 5, iowait=60 if i < 600 else 10))
    assert report(d, "IOBottleneck").triggered
    assert not report(d, "CPUBottleneck").triggered
    d = write_system(tmp_path / "io50", 1100, lambda i: cpu_gpu(30, 5, iowait=50))
    assert not report(d, "IOBottleneck").triggered  # 50 is not above io_threshold 50


def test_gpu_rules_not_applicable_without_gpu(tmp_path):
    d = write_system(tmp_path, 50, lambda i: {k: v for k, v in cpu_gpu(50, 0).items() if k[0] != "gpu"})
    for name in (
        "CPUBottleneck",
        "IOBottleneck",
        "LowGPUUtilization",
        "GPUMemoryIncrease",
        "BatchSize",
        "LoadBalancing",
    ):
        r = report(d, name)
        assert not r.applicable and not r.triggered and r.reason, name


def test_low_gpu_utilization(tmp_path):
    # p95 of the last 500 values below 70: fires; at 71 steady: silent; fluctuating 0/100: fires
    assert report(write_system(tmp_path / "low", 1100, lambda i: cpu_gpu(50, 60)), "LowGPUUtilization").triggered
    assert not report(write_system(tmp_path / "ok", 1100, lambda i: cpu_gpu(50, 71)), "LowGPUUtilization").triggered
    flux = report(
        write_system(tmp_path / "flux", 1100, lambda i: cpu_gpu(50, 100 if i % 2 else 0)), "LowGPUUtilization"
    )
    assert flux.triggered and flux.details["algo-1"]["gpu0"]["kind"] == "fluctuating"
    # not before patience: 1000 values
    assert not report(write_system(tmp_path / "p", 1000, lambda i: cpu_gpu(50, 0)), "LowGPUUtilization").triggered


def test_gpu_memory_increase(tmp_path):
    # a jump of 20 points at snapshot 1050 moves the 10-value moving average by 2 points per value:
    # with increase=5 the biggest window-to-window difference (about 2 points x 3) is 6 > 5 on a 20 jump
    jump = write_system(tmp_path / "jump", 1100, lambda i: cpu_gpu(50, 80, gpu_mem=30 if i < 1050 else 60))
    assert report(jump, "GPUMemoryIncrease").triggered
    small = write_system(tmp_path / "small", 1100, lambda i: cpu_gpu(50, 80, gpu_mem=30 if i < 1050 else 34))
    assert not report(small, "GPUMemoryIncrease").triggered
    early = write_system(tmp_path / "early", 1100, lambda i: cpu_gpu(50, 80, gpu_mem=30 if i < 500 else 90))
    assert not report(early, "GPUMemoryIncrease").triggered  # the jump came before patience


def test_batch_size(tmp_path):
    assert report(write_system(tmp_path / "a", 1100, lambda i: cpu_gpu(20, 30, gpu_mem=20)), "BatchSize").triggered
    # any of the three at 70 or above: silent
    for cpu, gpu, mem in ((70, 30, 20), (20, 70, 20), (20, 30, 70)):
        d = write_system(tmp_path / f"{cpu}-{gpu}-{mem}", 1100, lambda i, c=cpu, g=gpu, m=mem: cpu_gpu(c, g, gpu_mem=m))
        assert not report(d, "BatchSize").triggered, (cpu, gpu, mem)


def test_load_balancing(tmp_path):
    def two(i, skew):
        row = cpu_gpu(50, 80, gpus=2)
        row[("gpu", "gpu1", "GPUUtilization")] = 80 - skew
        return row

    assert report(write_system(tmp_path / "skew", 1100, lambda i: two(i, 60)), "LoadBalancing").triggered
    assert not report(write_system(tmp_path / "even", 1100, lambda i: two(i, 0)), "LoadBalancing").triggered
    one = report(write_system(tmp_path / "one", 1100, lambda i: cpu_gpu(50, 80)), "LoadBalancing")
    assert not one.applicable


def _workers(n_workers: int, cores: int = 4):
    def row(i):
        r = cpu_gpu(50, 80, cores=cores, gpus=0)
        r[("process", "WorkerCount", "Training")] = n_workers
        r[("process", "ProcessCount", "Training")] = n_workers + 1
        return r

    return row


def test_dataloader_workers_against_cores(tmp_path):
    # 4 cores: below 70 % (2.8) fires, 3 is fine, 8 (200 %) is fine, 9 fires
    for workers, fires in ((2, True), (3, False), (8, False), (9, True)):
        d = write_system(tmp_path / str(workers), 40, _workers(workers))
        r = report(d, "Dataloader")
        assert r.applicable and r.triggered is fires, (workers, r)
    # patience: 10 samples are not enough
    assert not report(write_system(tmp_path / "p", 10, _workers(1)), "Dataloader").triggered
    assert report(write_system(tmp_path / "p11", 11, _workers(1)), "Dataloader").triggered


def test_dataloader_needs_a_dataloader(tmp_path):
    d = write_system(tmp_path, 40, _workers(0))
    assert not report(d, "Dataloader").applicable  # no workers, no wrap() events: cannot tell
    d2 = write_system(tmp_path / "debugger", 40, lambda i: cpu_gpu(50, 80))
    assert "no worker counts" in report(d2, "Dataloader").reason


def test_max_initialization_time(tmp_path):
    # 25 minutes of metrics (interval 5 s); the first step at 21 min fires, at 19 min is silent
    for first_min, fires in ((21, True), (19, False)):
        d = write_system(tmp_path / str(first_min), 300, lambda i: cpu_gpu(50, 80), interval=5.0)
        write_steps(d, [0.1] * 5, start=T0 + first_min * 60)
        r = report(d, "MaxInitializationTime")
        assert r.triggered is fires, (first_min, r)
        assert r.details["initialization_s"] == pytest.approx(first_min * 60, abs=0.01)
    # hooks loaded but no step at all after 25 minutes: fires
    d = write_system(tmp_path / "none", 300, lambda i: cpu_gpu(50, 80), interval=5.0)
    write_steps(d, [], hooks=True)
    assert report(d, "MaxInitializationTime").triggered
    # no hooks at all: the rule cannot know
    assert not report(
        write_system(tmp_path / "nohooks", 300, lambda i: cpu_gpu(50, 80), interval=5.0), "MaxInitializationTime"
    ).applicable


def test_step_outlier(tmp_path):
    # 200 steps of 10 ms plus k steps of 100 ms: more than 10 outliers fire
    for k, fires in ((10, False), (11, True)):
        d = write_system(tmp_path / str(k), 20, lambda i: cpu_gpu(50, 80))
        write_steps(d, [0.01] * 200 + [0.1] * k)
        r = report(d, "StepOutlier")
        assert r.violations == k and r.triggered is fires, (k, r)
    # 100 steps are too few to judge (Debugger evaluates from 101)
    d = write_system(tmp_path / "few", 20, lambda i: cpu_gpu(50, 80))
    write_steps(d, [0.01] * 70 + [0.1] * 30)
    assert not report(d, "StepOutlier").triggered


def test_input_bound_levels(tmp_path):
    # step 10 ms; wait w: share = w / (w + 10 ms); 5 % and 20 % are the boundaries (inclusive)
    cases = ((0.0, "low", False), (0.0005, "low", False), (0.00053, "moderate", True), (0.0025, "high", True))
    for wait, level, fires in cases:
        d = write_system(tmp_path / str(wait), 20, lambda i: cpu_gpu(50, 80))
        write_steps(d, [0.01] * 50, waits=[wait] * 50)
        r = report(d, "InputBound")
        assert r.details["level"] == level and r.triggered is fires, (wait, r.details)


def test_overall_system_usage_never_fires(tmp_path):
    d = write_system(tmp_path, 100, lambda i: cpu_gpu(i, 100 - i))
    r = report(d, "OverallSystemUsage")
    assert r.applicable and not r.triggered
    table = r.details["algo-1"]
    assert table["CPU %"]["max"] == 99 and table["GPU %"]["p50"] == pytest.approx(50.5)


def test_overrides_are_validated():
    assert parse_overrides(["CPUBottleneck.threshold=30"]) == {"CPUBottleneck": {"threshold": "30"}}
    for bad, needle in (
        ("Nope.x=1", "unknown rule"),
        ("CPUBottleneck.nope=1", "unknown parameter"),
        ("CPUBottleneck.patience=abc", "must be a whole number"),
        ("CPUBottleneck", "RULE.PARAM=VALUE"),
    ):
        with pytest.raises(GluonbenchError, match=needle):
            parse_overrides([bad])


def test_run_rules_reports_are_json(tmp_path):
    d = write_system(tmp_path, 30, lambda i: cpu_gpu(50, 80))
    reports = run_rules(load(d))
    assert [r.rule for r in reports] == list(RULES)
    json.dumps([r.to_dict() for r in reports])
    for r in reports:
        assert set(r.to_dict()) >= {"triggered", "violations", "datapoints", "parameters", "recommendation", "reason"}


def test_batch_size_advice_defers_to_a_cpu_bottleneck(tmp_path):
    # one saturated core of 16 (a single-threaded input pipeline), an idle GPU: the CPU's mean is low, so
    # BatchSize fires as Debugger's does; its advice must not call the CPU lightly used and send the user
    # to a larger batch while CPUBottleneck says the CPU cannot feed the GPU (seen on an H100 machine)
    def one_core_busy(i):
        row = cpu_gpu(2, 0, gpu_mem=3, cores=16)
        row[("cpu", "cpu15", "CPUUtilization")] = 100.0
        return row

    reports = {r.rule: r for r in run_rules(load(write_system(tmp_path / "busy", 1100, one_core_busy)))}
    assert reports["CPUBottleneck"].triggered and reports["BatchSize"].triggered
    advice = reports["BatchSize"].recommendation
    assert "CPUBottleneck" in advice and "input pipeline is the limit" in advice
    assert not advice.startswith("CPU, GPU and GPU memory are all lightly used")
    # alone (all cores lightly used), BatchSize keeps Debugger's advice
    alone = {
        r.rule: r
        for r in run_rules(load(write_system(tmp_path / "light", 1100, lambda i: cpu_gpu(20, 30, gpu_mem=20))))
    }
    assert not alone["CPUBottleneck"].triggered
    assert alone["BatchSize"].recommendation.startswith("CPU, GPU and GPU memory are all lightly used")
