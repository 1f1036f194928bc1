"""Every command's settings are validated by the library (the CLI only parses flags into them)."""

from __future__ import annotations

import dataclasses

import pytest

from gluonbench.config import (
    LISTS,
    DiagnoseSettings,
    IoSettings,
    SweepSettings,
    check_types,
    coerce,
    declaration,
    parse_thresholds,
    source_options,
    synthetic_options,
)
from gluonbench.diagnosis.verdict import Thresholds
from gluonbench.errors import GluonbenchError
from gluonbench.settings import DEFAULT_OUT


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"secondary_share": 2.0}, "out of range"),
        ({"rel_ci": 0.0}, "out of range"),
        ({"min_blocks": 2.5}, "whole number"),
        ({"highly_input_bound": "high"}, "must be a number"),
        ({"moderately_input_bound": 0.5, "highly_input_bound": 0.3}, "make it the smaller"),
    ],
)
def test_thresholds_validate_themselves(changes, needle):
    with pytest.raises(GluonbenchError, match=needle):
        Thresholds(**changes)


def test_parse_thresholds():
    assert parse_thresholds(["secondary_share=0.25", "min_blocks=8"]) == Thresholds(secondary_share=0.25, min_blocks=8)
    with pytest.raises(GluonbenchError, match="--threshold nope: unknown; known: highly_input_bound"):
        parse_thresholds(["nope=1"])
    with pytest.raises(GluonbenchError, match="must be a whole number"):
        parse_thresholds(["min_blocks=x"])


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        # from Python, a message names the Python argument (the CLI's flags: tests/test_diagnose_cli.py)
        ({"batch_size": 0}, "batch_size must be at least 1"),
        ({"workers": -1}, "workers must be 0 or more"),
        ({"budget_s": 1.0}, "budget_s must be at least 2 seconds"),
        ({"ctx": "tpu"}, "ctx 'tpu'"),
        ({"workload": "cifar"}, "unknown workload 'cifar'"),
        ({"json_path": "/nonexistent/d.json"}, "does not exist"),
        ({"thresholds": {"rel_ci": 0.1}}, "thresholds must be a Thresholds"),
    ],
)
def test_diagnose_settings_check(changes, needle):
    with pytest.raises(GluonbenchError, match=needle.replace("(", r"\(")):
        DiagnoseSettings(**changes).check()


def test_settings_are_frozen_and_labelled():
    d = DiagnoseSettings(workers=2).check()
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.workers = 3  # type: ignore[misc]
    assert d.label() == "diagnose-mnist-w2" and d.to_dict()["thresholds"] == Thresholds().to_dict()
    assert SweepSettings(workers=(0, 2)).check().label() == "sweep-mnist-cpu"
    with pytest.raises(GluonbenchError, match=r"^ctx 'tpu'"):
        SweepSettings(ctx="tpu").check()
    with pytest.raises(GluonbenchError, match="choose from file, fastfile, pipe"):
        IoSettings(modes=("ftp",)).check()


def test_workload_options_from_flags():
    assert synthetic_options("synthetic", {"cpu_ms": 2.0, "width": None}) == {"cpu_ms": 2.0}
    with pytest.raises(GluonbenchError, match="cpu_ms only apply to workload synthetic"):
        synthetic_options("mnist", {"cpu_ms": 2.0})
    assert source_options({}, "fastfile", "packed/") == {"mode": "fastfile", "uri": "packed/"}
    assert source_options({"mode": "pipe"}, None, "s3://b/p", "http://127.0.0.1:9000") == {
        "mode": "pipe",
        "uri": "s3://b/p",
        "endpoint_url": "http://127.0.0.1:9000",
    }
    assert source_options({}) is None
    with pytest.raises(GluonbenchError, match="go with mode/uri"):
        source_options({}, endpoint_url="http://127.0.0.1:9000")


@pytest.mark.parametrize(
    "make, python",
    [
        (lambda: SweepSettings(ctx="tpu").check(), "ctx 'tpu' is not a context"),
        (
            lambda: SweepSettings(seed=-1).check(),
            "seed must be 0 or more (got -1); numpy and MXNet take 0 to 4294967295",
        ),
        (lambda: SweepSettings(prefetch=-1).check(), "prefetch must be 0 or more"),
        (lambda: IoSettings(stage="parse").check(), "stage must be read or decode"),
        (lambda: IoSettings(page_cache="hot").check(), "page_cache must be warm"),
        (lambda: IoSettings(small_bytes=10**9).check(), "small_bytes must not exceed large_bytes"),
        (lambda: IoSettings(preset="imagenet").check(), "preset applies to stage decode"),
        (lambda: IoSettings(s3_uri="bucket/x").check(), "s3_uri 'bucket/x' must look like s3://"),
        (lambda: source_options({}, cache_dir="/tmp/x"), "cache_dir go with mode/uri; add uri"),
    ],
)
def test_library_messages_name_the_argument(make, python):
    """From Python a bad value is named by its argument; the CLI (use_flags) names the flag instead."""
    from gluonbench.names import use_flags

    with pytest.raises(GluonbenchError) as err:
        make()
    assert python in str(err.value) and "--" not in str(err.value).split(";")[0]
    use_flags()
    try:
        with pytest.raises(GluonbenchError) as err:
            make()
    finally:
        use_flags(False)
    assert str(err.value).startswith("--"), str(err.value)


def test_cli_names_the_flag_for_the_same_bad_value(tmp_path):
    from conftest import assert_one_clear_line, run_cli

    assert_one_clear_line(run_cli("sweep", "--ctx", "tpu", "--out", str(tmp_path)), "--ctx 'tpu' is not a context")
    assert_one_clear_line(run_cli("io", "--small", "1GB", "--out", str(tmp_path)), "--small must not exceed --large")


DECLARED = [f.name for f in dataclasses.fields(SweepSettings) if declaration(f.name) and f.name not in LISTS]


@pytest.mark.parametrize("name", DECLARED)
def test_a_sweep_setting_reads_its_text_by_its_one_declaration(name):
    """A config's or --set's text becomes each declared setting's type, and a value of another type is one line
    naming it, whatever the setting: the conversion is the declaration's, not a list of names per type."""
    s = declaration(name)
    value = {bool: True, int: max(s.minimum or 0, 3), float: 12.5, str: "cpu:1" if name == "ctx" else "w0-8"}[s.kind]
    text = str(value).lower() if s.kind is bool else str(value)
    assert getattr(coerce(SweepSettings(), {name: text}, "--set"), name) == value
    wrong = {bool: "maybe", int: "x", float: "x", str: 5}[s.kind]
    with pytest.raises(GluonbenchError, match=f"^--set: {name} must be (true or false|a whole number|a number|a str)"):
        coerce(SweepSettings(), {name: wrong}, "--set")
    with pytest.raises(GluonbenchError, match=f"setting {name} must be {(s.kind is str and 'a string') or ''}"):
        check_types(dataclasses.replace(SweepSettings(batch_size=64), **{name: [value]}))


def test_paths_and_names_are_declared_settings_the_flags_come_from():
    """--out, --name, --json and --data-dir are declared once (type, default, help, flag) and the flags say so."""
    from conftest import run_cli

    for name, flag in (("out", "--out"), ("name", "--name"), ("json_path", "--json"), ("data_dir", "--data-dir")):
        assert declaration(name).flag == flag and declaration(name).kind is str
    assert declaration("out").default == DEFAULT_OUT
    with pytest.raises(GluonbenchError, match="must be a plain name"):
        DiagnoseSettings(name="../up").check()
    help_text = run_cli("diagnose", "--help").stdout
    assert "--data-dir DIR" in help_text and declaration("data_dir").help.split(" (")[0] in " ".join(help_text.split())
