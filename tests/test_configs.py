"""Every shipped config loads through config.py and describes its machine consistently."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from gluonbench.config import SweepSettings, coerce, load_toml
from gluonbench.distributed import is_dist

CONFIGS = Path(__file__).resolve().parents[1] / "configs"
P3 = ["p3.2xlarge", "p3.8xlarge", "p3.16xlarge", "p3dn.24xlarge", "p3.16xlarge-2hosts-dist"]


@pytest.mark.parametrize("name", P3)
def test_p3_config_loads_and_fits_its_machine(name, tmp_path):
    path = CONFIGS / f"{name}.toml"
    machine = tomllib.loads(path.read_text())["machine"]
    values = load_toml(path)
    if values.get("launcher") == "ssh":
        hostfile = tmp_path / "hosts.txt"
        hostfile.write_text("10.0.0.1\n10.0.0.2\n")
        values["hostfile"] = str(hostfile)
    s = coerce(SweepSettings(), values, source=f"--config {path}").check()
    gpus = len(s.gpus) if s.gpus else 1
    assert gpus == machine["gpus"]
    assert max(s.workers) <= machine["vcpus"] // machine["gpus"]  # loader workers up to the vCPUs per GPU
    assert not s.ctx.startswith("cpu")
    if gpus > 1:
        assert s.kvstore is not None
    if is_dist(s.kvstore):
        assert max(s.hosts) == machine["instances"] and s.launcher == "ssh"
    specs = s.specs()
    assert specs and all(sp.batch_size == 64 for sp in specs)


def test_scale_fields_are_additive():
    """A config without the new fields still loads to the single-device defaults."""
    s = coerce(SweepSettings(), load_toml(CONFIGS / "mnist-cpu.toml"), source="cfg").check()
    assert (s.devices, s.gpus, s.kvstore, s.hosts, s.servers, s.launcher) == (1, None, None, (1,), 1, "local")
    assert [sp.key for sp in s.specs()] == [(w, 0) for w in range(9)]


def test_sweep_settings_and_run_spec_share_one_declaration():
    """The settings a sweep hands to each run are declared once (RunSetting); the loader defaults are the knobs'."""
    from dataclasses import fields

    from gluonbench.config import SweepSettings
    from gluonbench.knobs import KNOBS
    from gluonbench.sweeprun.run import RunSetting, RunSpec

    shared = {f.name for f in fields(RunSetting)}
    assert issubclass(SweepSettings, RunSetting) and issubclass(RunSpec, RunSetting)
    assert {"batch_size", "thread_pool", "prefetch", "pin_memory"} <= shared
    for knob in ("batch_size", "thread_pool", "prefetch", "pin_memory"):  # batch_size unset: the knob's once checked
        assert getattr(SweepSettings().check(), knob) == getattr(RunSpec(), knob) == KNOBS[knob].default
    assert SweepSettings().batch_size is None  # unset: a pipeline's own batch size, else the knob's default
    assert RunSpec().workers == KNOBS["num_workers"].default
    settings = SweepSettings(workers=(0, 2), repeat=2, batch_size=32, prefetch=3, pin_memory=True).check()
    runs = settings.specs()
    assert [(r.workers, r.repeat) for r in runs] == [(0, 0), (2, 0), (0, 1), (2, 1)]
    for run in runs:
        assert all(getattr(run, name) == getattr(settings, name) for name in shared - {"workload", "options"})
