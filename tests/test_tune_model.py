"""The tuner's model and search logic on recorded measurements (pure: no pipeline runs)."""

from __future__ import annotations

import math
import re

import pytest

from gluonbench.tune.model import (
    Confirmed,
    Point,
    Setting,
    candidates,
    choose,
    fit,
    next_workers,
    pipeline_rate,
    worker_grid,
)


def pt(w: int, rate: float, cpu: float, rel: float = 0.03) -> Point:
    return Point(w, rate, (rate * (1 - rel), rate * (1 + rel)), cpu)


# recorded on the 2-core machine: synthetic reads with 4 ms latency (a worker keeps 0.1 cores busy)
LATENCY = [pt(0, 240, 0.1), pt(1, 235, 0.11), pt(4, 930, 0.45)]
# a CPU-heavy transform: each worker keeps a core busy
CPU = [pt(0, 600, 1.0), pt(1, 580, 1.05), pt(2, 1100, 2.0)]


def test_fit_linear_until_the_cpu_saturates():
    m = fit(CPU, cores=2)
    assert m.per_worker == pytest.approx(560, rel=0.05)
    assert m.cpu_per_worker == pytest.approx(1.0, rel=0.1)
    assert not m.latency_bound
    # beyond the cores the model predicts no growth
    assert m.predict(8) == pytest.approx(m.predict(2), rel=0.05)
    assert m.predict(0) == 600


def test_fit_latency_bound_grows_past_the_cores():
    m = fit(LATENCY, cores=2)
    assert m.latency_bound
    assert m.cpu_workers > 10
    assert m.predict(16) > 3 * m.predict(4)
    # extrapolating is less certain than a measured count
    assert m.uncertainty(16) > m.uncertainty(4)


def test_fit_sees_a_plateau():
    m = fit([pt(1, 500, 0.1), pt(4, 1900, 0.4), pt(16, 2100, 1.2)], cores=2)
    assert m.plateau == pytest.approx(2100)
    assert m.predict(64) == pytest.approx(2100)


def test_pipeline_rate_serial_at_zero_workers():
    assert pipeline_rate(1000, 1000, 0) == pytest.approx(500)
    assert pipeline_rate(1000, 400, 3) == 400
    assert math.isnan(pipeline_rate(0, 400, 3))


def test_next_stops_when_the_loader_outruns_the_model():
    d = next_workers([pt(0, 5000, 1.0), pt(1, 4800, 1.0)], ceiling=300, cores=2, max_workers=16)
    assert d.workers is None
    assert "outruns" in d.reason and "at 1 worker (" in d.reason


def test_next_latency_bound_goes_past_the_cores():
    d = next_workers(LATENCY, ceiling=3000, cores=2, max_workers=32)
    assert d.workers is not None and d.workers > 2
    # at most 4x the largest measured count per step: the model is uncertain further out
    assert d.workers <= 16


def test_next_cpu_bound_stops_at_the_cores():
    d = next_workers(CPU, ceiling=5000, cores=2, max_workers=16)
    assert d.workers is None
    assert "CPU-bound" in d.reason
    # the cores run that many such workers at once, not "2 cores run 2.1 at once"
    assert re.search(r"2 cores can run \d+\.\d such workers at once", d.reason), d.reason


def test_next_first_worker_count():
    d = next_workers([pt(0, 100, 0.5)], ceiling=1000, cores=2, max_workers=8)
    assert d.workers == 1


def test_worker_grid():
    assert worker_grid(8, 2) == [0, 1, 2, 3, 4, 6, 8]
    assert worker_grid(20, 10) == [0, 1, 2, 3, 4, 6, 8, 10, 12, 16, 20]


def test_choose_the_cheapest_within_noise():
    confirmed = [
        Confirmed(Setting(0), 500, (480, 520)),
        Confirmed(Setting(2), 1010, (980, 1040)),
        Confirmed(Setting(4), 1000, (970, 1030)),
        Confirmed(Setting(2, thread_pool=True), 1005, (975, 1035)),
        Confirmed(Setting(8), 1020, (1000, 1040)),
    ]
    winner, tied = choose(confirmed)
    # 2 threads, 2 processes, 4 and 8 are within noise of the best (8); threads use less memory
    assert winner.setting == Setting(2, thread_pool=True)
    assert {c.setting for c in tied} == {Setting(2), Setting(4), Setting(8), Setting(2, thread_pool=True)}


def test_choose_heavy_model_zero_workers():
    confirmed = [Confirmed(Setting(0), 200, (195, 206)), Confirmed(Setting(2), 203, (196, 210))]
    assert choose(confirmed)[0].setting == Setting(0)


def test_choose_a_clear_winner():
    confirmed = [Confirmed(Setting(0), 200, (195, 206)), Confirmed(Setting(8), 900, (880, 920))]
    assert choose(confirmed)[0].setting == Setting(8)


def test_setting_cost_order():
    assert Setting(0).cost() < Setting(1, thread_pool=True).cost() < Setting(1).cost() < Setting(2).cost()
    assert Setting(4, prefetch=4).cost() < Setting(4).cost()
    assert Setting(4).cost() < Setting(4, pin_memory=True).cost()


def test_candidates_include_current_and_cheaper():
    points = [pt(0, 300, 0.5), pt(1, 290, 0.5), pt(4, 1150, 1.6), pt(8, 1200, 1.9)]
    cands = candidates(points, ceiling=1100, current=Setting(0), threads=Point(4, 1180, (1100, 1250), 1.0))
    settings = [s for s, _ in cands]
    assert Setting(4) in settings  # cheapest predicted within 5 % of the best
    assert Setting(4, thread_pool=True) in settings
    assert Setting(0) in settings  # the current setting, the baseline
    assert len(cands) <= 4
    assert all(why for _, why in cands)


def test_candidates_gpu_pin_memory():
    cands = candidates([pt(0, 300, 0.5), pt(2, 2000, 1.0)], 1000, Setting(0), on_gpu=True)
    assert Setting(2, pin_memory=True) in [s for s, _ in cands]


def test_dataloader_line_and_toml_load(tmp_path):
    from gluonbench.config import SweepSettings, coerce, load_toml
    from gluonbench.tune.result import TuneResult, dataloader_line

    s = Setting(4, thread_pool=True)
    line = dataloader_line(s, 128)
    assert line == "gluon.data.DataLoader(dataset, batch_size=128, shuffle=True, num_workers=4, thread_pool=True)"
    r = TuneResult(
        setting=Setting(6, prefetch=6).to_dict(),
        batch_size=128,
        dataloader=line,
        samples_per_s=1000.0,
        ci=(950.0, 1050.0),
        current=Setting(0).to_dict(),
        current_batch_size=64,
        current_samples_per_s=300.0,
        current_ci=(290.0, 310.0),
        ceiling_samples_per_s=1100.0,
        ceiling_ci=(1000.0, 1200.0),
        emulated={
            "setting": "resnet50@v100",
            "text": "x",
            "au": 0.95,
            "passes": True,
            "pass_line": 0.9,
            "au_current": 0.3,
            "passes_current": False,
        },
        sweep={"workload": "synthetic", "ctx": "cpu", "data_dir": None, "options": {"read_ms": 4.0, "cold": False}},
    )
    path = tmp_path / "tuned.toml"
    path.write_text(r.to_toml())
    settings = coerce(SweepSettings(), load_toml(path), source="--config").check()
    assert settings.workers == (6,)
    assert settings.batch_size == 128
    assert settings.prefetch == 6
    assert settings.workload == "synthetic"
    assert settings.options == {"read_ms": 4.0, "cold": False}
    assert settings.emulate_step_ms == "resnet50@v100"
    assert settings.specs()[0].prefetch == 6
    assert r.to_dict()["speedup"] == pytest.approx(1000 / 300)
    assert r.cut_short == [] and "warning" not in r.to_text()
    r.skipped = [
        {"what": "loader: 1 worker", "reason": "no block measured within its budget"},
        {"what": "loader alone at 16 workers", "reason": "budget: the loader cannot reach the model"},
        {"what": "pin_memory", "reason": "a CPU context has no host-to-device copy to speed up"},
    ]
    assert r.cut_short == ["loader: 1 worker", "loader alone at 16 workers"]
    assert "budget ran out before loader: 1 worker; loader alone at 16 workers" in r.to_text()


def test_emulation_settings():
    from gluonbench.errors import GluonbenchError
    from gluonbench.pipeline.emulate import TARGETS, au_of, seconds_per_batch, step_ms

    assert step_ms("50") == 50.0
    assert step_ms("ResNet50@V100") == "resnet50@v100"
    # the published figure, scaled to the batch size: 0.195 s per 64 images
    assert seconds_per_batch("resnet50@v100", 128) == pytest.approx(0.39)
    assert seconds_per_batch(20.0, 128) == pytest.approx(0.02)
    assert all(t.source and t.seconds_per_batch > 0 for t in TARGETS.values())
    for bad in ("-1", "0", "nan", "resnet50@tpu"):
        with pytest.raises(GluonbenchError):
            step_ms(bad)
    assert au_of(0.9, 1.0).passes and not au_of(0.89, 1.0).passes


@pytest.mark.parametrize(
    ("rate", "ci", "fed"),
    [
        (1090.0, (1080.0, 1100.0), "yes"),  # the ceiling 1100 [1095, 1105]: 1.01x, nothing to gain
        (800.0, (790.0, 810.0), "no"),  # 1.38x: the input pipeline still limits training
        (1030.0, (850.0, 1150.0), "unclear"),  # 1.07x with a wide CI
        (1045.0, (1040.0, 1050.0), "unclear"),  # 1.05x [1.04, 1.06]: beyond the noise, across the 5 % line
    ],
)
def test_tune_says_whether_the_model_is_fed_by_the_seeds_rule(rate, ci, fed):
    from gluonbench.tune.result import TuneResult

    r = TuneResult(
        setting=Setting(2).to_dict(),
        batch_size=64,
        dataloader="x",
        samples_per_s=rate,
        ci=ci,
        current=Setting(0).to_dict(),
        current_batch_size=64,
        current_samples_per_s=500.0,
        current_ci=(490.0, 510.0),
        ceiling_samples_per_s=1100.0,
        ceiling_ci=(1095.0, 1105.0),
    )
    assert r.keeps_model_fed == fed
    text = r.to_text()
    assert f"model fed:   {fed}: one reused batch (the model ceiling) would train {1100 / rate:.2f}x" in text
    assert ("keeps the model fed" in text) == (fed == "yes")
    assert ("too close to the 5% line to call" in text) == (fed == "unclear" and ci[0] > 1000), text
    assert r.to_dict()["keeps_model_fed"] == fed
