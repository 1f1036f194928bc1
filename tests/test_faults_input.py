"""Faults, class 4 (tracebacks on ordinary errors): every bad number and name is one line, before any work."""

from __future__ import annotations

import pytest
from conftest import assert_one_clear_line

from gluonbench import api
from gluonbench.config import SweepSettings
from gluonbench.errors import GluonbenchError


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["--timeout", "nan"], ["--timeout", "finite"]),
        (["--timeout", "inf"], ["--timeout", "finite"]),
        (["--diagnose-budget", "inf"], ["--diagnose-budget"]),
        (["--set", "timeout_s=nan"], ["--set", "finite"]),
        (["--name", "../x"], ["--name", "plain name"]),
        (["--name", "a/b"], ["--name", "plain name"]),
        (["--seed", "-1"], ["--seed", "4294967295"]),
        (["--dataset", "synthetic", "--read-ms", "inf"], ["read_ms"]),
        (["--dataset", "synthetic", "--width", "-1"], ["width"]),
    ],
)
def test_sweep_numbers_and_names(cli, tmp_path, args, needles):
    out = tmp_path / "out"
    assert_one_clear_line(cli("sweep", "--workers", "0", "--max-batches", "2", "--out", str(out), *args), *needles)
    assert not out.exists(), "no run folder for a sweep refused up front"


def test_config_that_is_a_folder_binary_or_nan(cli, tmp_path):
    binary = tmp_path / "c.bin"
    binary.write_bytes(bytes(range(256)))
    nan = tmp_path / "nan.toml"
    nan.write_text("timeout_s = nan\n")
    for config, needle in [(tmp_path, "is a folder"), (binary, "not a text file"), (nan, "finite")]:
        out = tmp_path / "out"
        assert_one_clear_line(
            cli("sweep", "--config", str(config), "--out", str(out)),
            "--config" if needle != "finite" else "timeout",
            needle,
        )
        assert not out.exists()


def test_output_path_that_is_a_file_or_under_one(cli, tmp_path):
    a_file = tmp_path / "f"
    a_file.write_text("x")
    for out in (a_file, a_file / "sub"):
        assert_one_clear_line(cli("sweep", "--workers", "0", "--out", str(out)), "--out", "is a file")


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["diagnose", "--budget", "inf"], "--budget"),
        (["diagnose", "--threshold", "rel_ci=nan"], "--threshold rel_ci"),
        (["diagnose", "--threshold", "x"], "--threshold 'x'"),
        (["stream", ".", "--channel", "t", "--channel-dir", "{tmp}/ch", "--open-timeout", "nan"], "--open-timeout"),
        (["stream", ".", "--channel", "t", "--channel-dir", "{tmp}/ch", "--write-timeout", "inf"], "--write-timeout"),
        (["io", "--timeout", "inf", "--out", "{tmp}/out"], "--timeout"),
        (["pack", ".", "{tmp}/out", "--seed", "-1"], "--seed"),
    ],
)
def test_other_commands_refuse_nan_inf_and_bad_keys(cli, tmp_path, args, needle):
    assert_one_clear_line(cli(*[a.replace("{tmp}", str(tmp_path)) for a in args]), needle)
    assert not (tmp_path / "out").exists() and not (tmp_path / "ch").exists()


@pytest.mark.parametrize(
    ("settings", "needle"),
    [
        (SweepSettings(batch_size="64"), "batch_size must be a whole number"),
        (SweepSettings(workers="0,2"), "workers must be a tuple"),
        (SweepSettings(timeout_s="60"), "timeout_s must be a number"),
        (SweepSettings(thread_pool="yes"), "thread_pool must be True or False"),
        (SweepSettings(timeout_s=float("nan")), "finite"),
        (SweepSettings(name="../up"), "plain name"),
        ({"workers": (0,)}, "must be a SweepSettings"),
    ],
)
def test_python_api_settings_of_the_wrong_type(tmp_path, settings, needle):
    with pytest.raises(GluonbenchError, match=needle) as err:
        api.sweep(settings, out=tmp_path / "out")
    assert "\n" not in str(err.value)
    assert not (tmp_path / "out").exists()
