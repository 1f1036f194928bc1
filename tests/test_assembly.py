"""Issue #16 point 2, one assembly: the source and the copy are declared, swappable stages; every built-in
workload is a PipelineSpec factory that ``build_pipeline`` assembles; one parser of context strings."""

from __future__ import annotations

import json
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from gluonbench.engine.measure import Epochs, measure
from gluonbench.errors import GluonbenchError
from gluonbench.pipeline import Copy, Loader, NoCopy, Source, Split, Stream, build_pipeline
from gluonbench.workloads.spec import PipelineSpec


def _net():
    from gluonbench._mx import gluon

    return gluon.nn.Dense(2)


def _samples(n: int = 64) -> list[tuple[np.ndarray, np.float32]]:
    return [(np.full((4,), i % 7, dtype=np.float32), np.float32(i % 2)) for i in range(n)]


@pytest.fixture
def spec() -> PipelineSpec:
    from gluonbench._mx import gluon

    return PipelineSpec(dataset=gluon.data.SimpleDataset(_samples()), net=_net, batch_size=8, name="tiny")


# -- the copy stage ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class SlowCopy(Copy):
    """A copy stage that also counts its calls and takes 20 ms each: what the timer must bill as copy."""

    calls: list = None  # type: ignore[assignment]

    def __call__(self, data, label):
        self.calls.append(data.shape[0])
        time.sleep(0.02)
        return super().__call__(data, label)


def test_the_copy_is_a_declared_stage_that_a_swap_replaces(spec, no_leaks):
    from gluonbench._mx import mx

    p = build_pipeline(spec, ctx="cpu:1")
    assert p.ctx == mx.cpu(1) and type(p.copy_stage) is Copy and p.stages()["copy"] == "cpu(1)"
    calls: list[int] = []
    slow = p.swap("a slow copy", copy=SlowCopy(mx.cpu(1), calls=calls))
    assert dict(slow.swapped) == {"copy": "a slow copy"} and slow.stages()["copy"] == "stand-in: a slow copy"
    times = measure(slow, Epochs(max_steps=4)).records["run"].times
    assert calls == [8, 8, 8, 8], "run_steps calls the pipeline's declared copy stage once per step"
    # the stage's work lands in the copy figure, between the wait and compute timestamps
    assert all(c >= 0.02 for c in times.copy), times.copy
    assert statistics.median(times.wait[1:]) < 0.02, times.wait  # (one scheduler stall may land in a wait)


def test_the_device_batch_probe_swaps_the_copy_for_none(spec, no_leaks):
    from gluonbench._mx import mx
    from gluonbench.diagnosis.measure import measure_first_batch

    p = build_pipeline(spec, ctx="cpu:1")
    on_device = p.with_device_batch(measure_first_batch(p))
    assert isinstance(on_device.copy_stage, NoCopy) and dict(on_device.swapped)["copy"].startswith("no copy")
    assert on_device.stages()["copy"].startswith("stand-in: no copy")
    seen = []

    def step(data, label):
        seen.append(data.context)

    rec = measure(on_device.swap("spy", step=step), Epochs(max_steps=3)).records["run"]
    assert len(rec.times) == 3 and seen == [mx.cpu(1)] * 3


def test_a_data_parallel_step_declares_the_split_copy(spec, no_leaks):
    from types import SimpleNamespace

    from gluonbench._mx import gluon, mx
    from gluonbench.pipeline.scale import ScaleOut

    plan = ScaleOut.for_spec(SimpleNamespace(devices=2, gpus=None, kvstore="local"), mx.cpu(1))
    assert [str(c) for c in plan.contexts] == ["cpu(1)", "cpu(2)"], "devices counted from the given cpu index"
    step = plan.make_step(_net(), mx.init.Xavier(), gluon.loss.SoftmaxCrossEntropyLoss, 0.1)
    p = build_pipeline(spec, ctx=plan.loop_ctx, step=step, batch_size=16)
    assert isinstance(p.copy_stage, Split) and p.stages()["copy"] == "split onto cpu(1), cpu(2) by the step"
    times = measure(p, Epochs(max_steps=3)).records["run"].times
    assert len(times) == 3 and [len(x) for x in step.last_split] == [2, 2]
    assert len(step.copy) == 3, "the step timed its split, which ScaleOut.finish moves into the copy figure"


# -- the source stage -------------------------------------------------------------------------------


def _stream(batches_per_epoch: int = 3):
    from gluonbench._mx import nd

    def batches(size: int, workers: int, epoch: int):
        for i in range(batches_per_epoch):
            yield nd.full((size, 4), epoch * 10 + i), nd.zeros((size,))

    return batches


def test_a_pipe_mode_spec_is_a_stream_source(no_leaks):
    closed = []
    spec = PipelineSpec(
        batches=_stream(),
        net=_net,
        batch_size=4,
        info={"mode": "pipe", "uri": "mem://x"},
        close=lambda: closed.append(1),
    ).check()
    p = build_pipeline(spec)
    assert p.dataset is None and isinstance(p.loader, Stream) and p.source.streams
    assert p.stages()["source"] == "pipe" and p.source.info["uri"] == "mem://x"
    rec = measure(p, Epochs(epochs=2)).records["run"]
    assert [len(e) for e in rec.epochs] == [3, 3] and sum(rec.times.samples) == 24
    assert closed == [], "closing the running pipeline leaves its source to its owner"
    p.source.close()
    assert closed == [1]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({}, "give dataset= (random access, dataset[i]) or batches= (a stream of batches), not neither"),
        ({"dataset": [(1, 2)], "batches": _stream()}, "not both"),
        ({"batches": 5}, "batches must be a function (batch_size, workers, epoch)"),
        ({"batches": _stream(), "info": [1]}, "info must be a dict with text keys"),
        ({"batches": _stream(), "info": {str(i): i for i in range(101)}}, "info has 101 entries; keep it to 100"),
        ({"batches": _stream(), "close": "no"}, "close must be a function of no argument"),
    ],
)
def test_bad_source_fields_are_one_line(fields, message):
    with pytest.raises(GluonbenchError) as err:
        PipelineSpec(net=_net, **fields).check()
    assert message in str(err.value) and "\n" not in str(err.value)


def test_the_source_swap_feeds_a_stream_through_the_same_pipeline(spec, no_leaks):
    p = build_pipeline(spec)
    assert isinstance(p.source, Source) and p.source.mode == "memory" and p.source.dataset is p.dataset
    piped = p.with_source(Source("pipe", batches=_stream(2)), "a pipe channel")
    assert isinstance(piped.loader, Stream) and piped.dataset is None and piped.batch_size == 8
    assert piped.stages()["source"] == "stand-in: a pipe channel"
    assert len(measure(piped, Epochs()).records["run"].times) == 2
    back = piped.with_source(Source("file", dataset=spec.dataset), "a file copy")
    assert isinstance(back.loader, Loader) and back.dataset is spec.dataset


def test_a_real_pipe_channel_spec_runs_through_build_pipeline(packed_dir, no_leaks):
    from gluonbench.workloads import source

    spec = source.make(uri=str(packed_dir), mode="pipe", timeout=30).check()
    try:
        assert spec.dataset is None and spec.batches is not None and spec.info["mode"] == "pipe"
        p = build_pipeline(spec, batch_size=16)
        assert isinstance(p.loader, Stream) and p.stages()["source"] == "pipe"
        rec = measure(p, Epochs(max_steps=2)).records["run"]
        assert rec.times.samples == [16, 16]
    finally:
        p.source.close()
    assert spec.info["records_read"] >= 32


def test_imagefolder_and_seed004_are_spec_factories(jpeg_dir, tmp_path, no_leaks):
    from gluonbench.workloads.vision_zoo import make_imagefolder, make_seed004

    folder = make_imagefolder(uri=str(jpeg_dir), image_size=28, preset="none")
    seed004 = make_seed004(data_dir=str(tmp_path), data_mb=0.4, file_kb=39, model=None, image_size=28)
    for spec in (folder, seed004):
        try:
            assert isinstance(spec, PipelineSpec) and spec.close is not None
            spec.check()
            p = build_pipeline(spec, batch_size=4)
            assert p.stages()["source"] == "in place" and p.stages()["decode"] == "Decode"
            rec = measure(p, Epochs(max_steps=2)).records["run"]
            assert rec.times.samples == [4, 4]
        finally:
            spec.close()
    assert seed004.name == "seed004-files" and seed004.info["model"] == "seed-cnn"


def test_build_pipeline_takes_only_specs(spec):
    from gluonbench.workloads import get_workload

    with pytest.raises(GluonbenchError, match=r"needs a PipelineSpec.*get_workload\(NAME\)"):
        build_pipeline([spec])
    assert build_pipeline(spec).dataset is spec.dataset
    registered = get_workload("synthetic", samples=64)
    assert isinstance(registered, PipelineSpec) and registered.name == "synthetic"


# -- contexts ---------------------------------------------------------------------------------------


def test_one_parser_of_context_strings():
    from gluonbench._mx import mx
    from gluonbench.config import SweepSettings
    from gluonbench.contexts import check_ctx, ctx_text, parse_ctx
    from gluonbench.doctor.checks import parse_ctx as doctor_ctx

    assert parse_ctx("cpu:1") == mx.cpu(1) and parse_ctx("CPU") == mx.cpu(0)
    assert check_ctx("gpu:3") == ("gpu", 3) and doctor_ctx("cpu:2") == ("cpu", 2)
    assert [ctx_text(c) for c in (mx.cpu(), mx.cpu(1), mx.gpu(2))] == ["cpu", "cpu:1", "gpu:2"]
    assert SweepSettings(ctx="cpu:1").check().ctx == "cpu:1"
    PipelineSpec(dataset=[(1, 2)], net=_net, ctx="cpu:1").check()
    for bad in ("cpu:x", "tpu", "cpu:1024", ""):
        with pytest.raises(GluonbenchError, match=r"cpu, gpu or gpu:N, or cpu:N|device index"):
            check_ctx(bad)


def test_a_run_on_cpu_1_copies_its_batches_there(spec, no_leaks):
    """``ctx="cpu:1"``: the run's copy stage puts every batch on cpu(1), where the step runs."""
    from gluonbench._mx import gluon, mx
    from gluonbench.sweeprun.run import RunSpec, train_and_eval

    seen = []

    class Spy(gluon.nn.Block):
        def __init__(self):
            super().__init__()
            self.dense = gluon.nn.Dense(2)

        def forward(self, x):
            seen.append(x.context)
            return self.dense(x)

    tiny = PipelineSpec(dataset=spec.dataset, test_dataset=spec.dataset, net=Spy, name="spy")
    result = train_and_eval(RunSpec(ctx="cpu:1", workers=0, batch_size=8, max_batches=3), tiny)
    assert result.status == "ok" and result.steady["steps"] == 2
    assert seen and set(seen) == {mx.cpu(1)}, "training and evaluation batches were copied to cpu(1)"


@pytest.mark.slow
def test_sweep_runs_on_cpu_1(cli, mnist_dir, tmp_path, no_leaks):
    """``--ctx cpu:1 --devices 2``: the run's devices are cpu(1), cpu(2), not cpu(0)'s."""
    proc = cli(
        "sweep", "--ctx", "cpu:1", "--devices", "2", "--kvstore", "local", "--workers", "0", "--max-batches", "3",
        "--data-dir", str(mnist_dir), "--out", str(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    (run_dir,) = tmp_path.iterdir()
    (rec,) = [json.loads(x) for x in (run_dir / "runs.jsonl").read_text().splitlines()]
    assert rec["status"] == "ok" and rec["extra"]["devices"] == ["cpu(1)", "cpu(2)"]


# -- one factory call, one check --------------------------------------------------------------------

COUNTED = """
import numpy as np
import gluonbench

CALLS = []

def make(samples=64):
    from mxnet import gluon
    CALLS.append(samples)
    data = [(np.full((4,), i % 7, dtype=np.float32), np.float32(i % 2)) for i in range(samples)]
    return gluonbench.PipelineSpec(dataset=gluon.data.SimpleDataset(data), net=lambda: gluon.nn.Dense(2),
                                   batch_size=8, close=lambda: CALLS.append("closed"))
"""


def test_a_pipeline_factory_is_called_once_in_the_parent(tmp_path: Path, monkeypatch, no_leaks):
    import sys

    from gluonbench import api
    from gluonbench.config import DiagnoseSettings

    (tmp_path / "counted_pipe.py").write_text(COUNTED)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    sys.modules.pop("counted_pipe", None)
    settings = DiagnoseSettings(pipeline="counted_pipe:make", budget_s=2, batch_size=8).check()
    api.check_user_pipeline(settings, keep=True)  # what the CLI does before its first line
    _, d = api.run_diagnosis(settings)
    module = sys.modules["counted_pipe"]
    assert module.CALLS == [64, "closed"], "the factory ran once; its spec was closed after the diagnosis"
    assert d.pipeline["read"] == "SimpleDataset"


def test_check_takes_a_spec_all_the_way(spec):
    from gluonbench.check.target import resolve_pipeline

    closed = []
    target = resolve_pipeline(
        PipelineSpec(
            dataset=spec.dataset, net=_net, batch_size=4, loader={"num_workers": 0}, close=lambda: closed.append(1)
        )
    )
    try:
        assert target.pipeline.batch_size == 4 and target.pipeline.step is not None
        assert target.pipeline.source.mode == "memory"
    finally:
        target.close()
    assert closed == [1]
