"""tune's ceiling, "fed"/"limits" statements and speed-ups come from the confirmation's interleaved rounds, where the
ceiling ran beside the settings it is compared with; its own expectation is set beside what a sweep of its suggested
config reads, with why. Constructed measurements (milliseconds per sample), no run."""

from __future__ import annotations

import math

import pytest

from gluonbench.tune.model import epoch_rate, gain_over
from gluonbench.tune.result import BatchSizeResult, TuneResult

# per round, the background load slows both pipelines alike (factor per round); the ceiling is 1.02x the full one
LOAD = [1.0, 1.8, 0.9, 2.5, 1.1, 1.6, 1.0, 2.2]
FULL = {r: 1e-3 * f for r, f in enumerate(LOAD)}  # seconds per sample
CEILING = {r: 1e-3 * f / 1.02 for r, f in enumerate(LOAD)}


def test_gains_are_paired_round_by_round():
    g, lo, hi = gain_over(CEILING, 1020.0, (400.0, 1100.0), FULL, 1000.0, (400.0, 1100.0))
    assert math.isclose(g, 1.02, rel_tol=1e-9) and lo <= 1.02 <= hi and hi - lo < 1e-6
    # without rounds in common: the two medians and their CIs (a wide interval, not a paired one)
    g2, lo2, hi2 = gain_over({}, 1020.0, (400.0, 1100.0), FULL, 1000.0, (400.0, 1100.0))
    assert math.isclose(g2, 1.02, rel_tol=1e-9) and hi2 - lo2 > 1.0


def result(gain: list[float], *, workers: int = 0, stop: str = "", first_ceiling: float = 2290.0, **kw) -> TuneResult:
    """A tune at 1000 samples/s whose ceiling, in the confirmation's rounds, is ``gain`` times faster; the first
    phase's ceiling (``first_ceiling``) ran at another moment."""
    setting = {"num_workers": workers, "thread_pool": False, "prefetch": None, "pin_memory": False}
    label = "0 workers" if workers == 0 else ("1 worker" if workers == 1 else f"{workers} workers")
    b = BatchSizeResult(
        batch_size=64,
        setting=setting,
        samples_per_s=1000.0,
        ci=(900.0, 1100.0),
        within_noise=[label],
        confirmed=[
            {"setting": setting, "label": label, "samples_per_s": 1000.0, "ci": [900, 1100], "ceiling_gain": gain}
        ],
        ceiling_samples_per_s=1000.0 * gain[0],
        ceiling_ci=(800.0, 1300.0),
        stop_reason=stop,
        ceiling_gain=gain,
        speedup=[1.0, 1.0, 1.0],
        ceiling_source="confirmation",
        first_ceiling_samples_per_s=first_ceiling,
        rounds=8,
    )
    return TuneResult(
        setting=setting,
        batch_size=64,
        dataloader="gluon.data.DataLoader(dataset, batch_size=64, shuffle=True, num_workers=0)",
        samples_per_s=1000.0,
        ci=(900.0, 1100.0),
        current=setting,
        current_batch_size=64,
        current_samples_per_s=1000.0,
        current_ci=(900.0, 1100.0),
        ceiling_samples_per_s=1000.0 * gain[0],
        ceiling_ci=(800.0, 1300.0),
        batch_sizes=[b],
        cores=2,
        same_rounds={"ceiling_gain": gain, "speedup": [1.0, 1.0, 1.0], "ceiling_source": "confirmation", "rounds": 8},
        **kw,
    )


def fed_line(r: TuneResult) -> str:
    return next(line for line in r.to_text().splitlines() if line.startswith("model fed:"))


def test_a_ceiling_from_another_moment_no_longer_says_the_input_limits_training():
    """Issue 37's text model: the first phase's ceiling ran 2.29x faster (cores busy 0.85 against 0.42); in the same
    rounds as the full pipeline one reused batch gains 1.01x: fed, whatever the first phase said."""
    r = result([1.01, 0.97, 1.04])
    assert r.keeps_model_fed == "yes"
    assert math.isclose(r.of_ceiling, 1 / 1.01)
    line = fed_line(r)
    assert "1.01x [0.97, 1.04]" in line and "in the same rounds" in line and "keeps the model fed" in line, line
    assert "still limits" not in r.to_text()
    d = r.to_dict()
    assert d["keeps_model_fed"] == "yes" and d["ceiling_speedup"] == pytest.approx(1.01)


def test_outrun_by_the_loader_alone_and_not_fed_are_said_as_one_story():
    """Issue 37 on MNIST: 0 workers recommended, 'the input pipeline still limits training', and 'the loader outruns
    the model at 1 workers' in one output. Both lines now come from one derivation and say how both hold."""
    stop = "the loader outruns the model at 1 worker (3000 >= 1800 samples/s)"
    r = result([1.30, 1.21, 1.42], workers=0, stop=stop)
    assert r.keeps_model_fed == "no"
    text = r.to_text()
    assert "still limits training" in fed_line(r)
    stopped = next(line for line in text.splitlines() if line.startswith("search stopped:"))
    assert stopped.startswith("search stopped: the loader alone (no model step) outruns the model at 1 worker")
    assert "the first phase's ceiling" in stopped and "in the full pipeline it does not" in stopped, stopped
    assert "1.30x slower than one reused batch" in stopped and "share 2 cores" in stopped, stopped
    assert "at 0 workers they run one after the other" in stopped, stopped
    # fed: the outrun stands as it is, with what it compared
    fed = result([1.0, 0.96, 1.03], workers=1, stop=stop)
    stopped = next(line for line in fed.to_text().splitlines() if line.startswith("search stopped:"))
    assert "in the full pipeline it does not" not in stopped and "the first phase's ceiling" in stopped


def test_a_cheaper_recommendation_not_fed_names_the_setting_that_is():
    r = result([1.07, 1.06, 1.09], workers=0)
    b = r.batch_sizes[0]
    one = {"num_workers": 1, "thread_pool": False, "prefetch": None, "pin_memory": False}
    b.confirmed.append(
        {
            "setting": one,
            "label": "1 worker",
            "samples_per_s": 1040.0,
            "ci": [950, 1100],
            "ceiling_gain": [1.01, 0.98, 1.03],
        }
    )
    line = fed_line(r)
    assert line.startswith("model fed:   no") and "1 worker keeps it fed in the same rounds" in line, line


def test_above_the_ceiling_is_read_as_at_it_from_the_same_rounds():
    r = result([0.95, 0.9, 1.01])
    line = next(line for line in r.to_text().splitlines() if line.startswith("expected:"))
    assert "105 % of the model ceiling" in line and "in the same rounds" in line, line
    assert "above 100 % within the noise" in line and "read it as at the ceiling" in line, line
    # recommending the current setting: no speed-up of a setting over itself
    assert "the current setting itself (0 workers, batch 64)" in line and "1.00x" not in line, line


def test_an_older_file_without_same_rounds_falls_back_to_the_medians():
    d = result([1.5, 1.4, 1.6]).to_dict()
    d.pop("same_rounds")
    old = TuneResult.from_dict(d)
    g, (lo, hi) = old.ceiling_gain()
    assert math.isclose(g, 1.5) and lo < 1.5 < hi
    assert "measured in the search's first phase" in old.ceiling_text()


def test_epoch_rate_counts_each_epochs_first_batch():
    # 1663 samples/s steady, 10 batches of 64 an epoch, one worker builds 200 samples/s: each epoch first waits
    # 0.32 s for it, which a 0.385 s epoch of steady steps cannot hide
    rate = epoch_rate(1663.0, 64, 10, 200.0)
    assert math.isclose(rate, 640 / (640 / 1663 + 64 / 200))
    assert epoch_rate(1663.0, 64, 10, math.inf) == 1663.0  # 0 workers: nothing to fill
    assert math.isnan(epoch_rate(1663.0, 64, 10, math.nan))


def test_tune_sets_its_expectation_beside_what_a_sweep_reads():
    epoch = {"samples_per_s": epoch_rate(1000.0, 64, 10, 200.0), "batches": 10, "batch_size": 64, "first_batch_s": 0.32}
    r = result([1.0, 0.97, 1.03], workers=2, epoch=epoch)
    text = r.to_text()
    sweep = next(line for line in text.splitlines() if line.startswith("sweep:"))
    assert f"about {epoch['samples_per_s']:.0f} samples/s, not 1000" in sweep and "320 ms" in sweep, sweep
    assert "whole epochs" in sweep and "steady state" in sweep and "warm-up" in sweep, sweep
    assert f"expect about {epoch['samples_per_s']:.0f} samples/s there" in r.to_toml()
    # within 5 %: nothing to explain
    close = result([1.0, 0.97, 1.03], workers=2, epoch={**epoch, "samples_per_s": 980.0})
    assert "sweep:" not in close.to_text() and "expect about" not in close.to_toml()
