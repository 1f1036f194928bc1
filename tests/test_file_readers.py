"""One typed, bounded reader per file kind: a bad baseline, run record, config, profile folder or doctor cache is
one line naming the file, the field and the fix (exit 2), never a traceback, a hang or unbounded memory; a FIFO,
device or socket where a file is expected is refused before anything blocks on it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest
from conftest import assert_one_clear_line

from gluonbench import env
from gluonbench.errors import GluonbenchError


def _baseline_doc() -> dict:
    from gluonbench.check.gate import FORMAT, FORMAT_VERSION, Figure, Snapshot
    from gluonbench.check.ruler import ruler_description

    def fig(rel: float) -> Figure:
        return Figure(1e-4, rel, [rel * 0.9, rel * 1.1], 1e-4, rel, [rel * 0.9, rel * 1.1], 12)

    snap = Snapshot(
        identity="workload:synthetic",
        pipeline={"step": "x"},
        setting={"batch_size": 64},
        cores=2,
        total=fig(0.1),
        stages={"read": Figure(-1e-6, -0.01, [-0.02, 0.01], 1e-6, 0.01, [-0.02, 0.03], 3)},
        ceiling=fig(0.05),
        ruler=fig(1.0),
        budget_s=10.0,
        elapsed_s=10.1,
        rounds=12,
    )
    return {"format": FORMAT, "version": FORMAT_VERSION, "ruler_spec": ruler_description(), **snap.to_dict()}


def _load(path):
    from gluonbench.check.gate import load_baseline

    return load_baseline(path)


def test_a_valid_baseline_is_read(tmp_path):
    path = tmp_path / "b.json"
    path.write_text(json.dumps(_baseline_doc()))
    snap = _load(path)
    assert snap.cores == 2 and snap.budget_s == 10.0 and snap.stages["read"].rel == -0.01


@pytest.mark.parametrize(
    "edit, needles",
    [
        (lambda t: t.replace('"rounds": 12', '"rounds": 1e999', 1), ["1e999", "not finite"]),
        (lambda t: t.replace('"budget_s": 10.0', '"budget_s": Infinity'), ["Infinity"]),
        (lambda t: t.replace('"budget_s": 10.0', '"budget_s": 1e300'), ["budget_s", "1e+300"]),
        (lambda t: t.replace('"cores": 2', '"cores": 0'), ["field cores", "from 1"]),
        (lambda t: t.replace('"cores": 2', '"cores": ' + "9" * 5000), ["5000 digits"]),
        (lambda t: t.replace('"cores": 2', '"cores": "2"'), ["field cores", "whole number"]),
        (lambda t: t.replace('"rounds": 12,', '"rounds": -3,', 1), ["rounds", "from 0"]),
        (lambda t: t.replace('"identity": "workload:synthetic"', '"identity": 5'), ["field identity", "string"]),
        (
            lambda t: t.replace('"setting": {', '"setting": [{').replace('"batch_size": 64}', '"batch_size": 64}]'),
            ["setting"],
        ),
        (lambda t: t[:-1] + ', "env": ' + "[" * 200 + "]" * 200 + "}", ["nested"]),
        (lambda t: t + " " * (5 << 20), ["MiB", "over the 4.0 MiB"]),
    ],
)
def test_a_bad_baseline_names_the_file_the_field_and_the_fix(tmp_path, edit, needles):
    path = tmp_path / "b.json"
    path.write_text(edit(json.dumps(_baseline_doc())))
    with pytest.raises(GluonbenchError) as err:
        _load(path)
    line = str(err.value)
    assert str(path) in line and "save it again" in line
    assert "\n" not in line
    for needle in needles:
        assert needle in line, line


def test_a_figure_out_of_range_names_its_dotted_field(tmp_path):
    doc = _baseline_doc()
    doc["total"]["rel"] = -1
    (tmp_path / "b.json").write_text(json.dumps(doc))
    with pytest.raises(GluonbenchError, match=r"field total\.rel must be from 0"):
        _load(tmp_path / "b.json")
    doc = _baseline_doc()
    doc["ruler"]["rel_ci"] = [1]
    (tmp_path / "b.json").write_text(json.dumps(doc))
    with pytest.raises(GluonbenchError, match=r"field ruler\.rel_ci must be a list of two numbers"):
        _load(tmp_path / "b.json")


def test_padding_is_refused_from_its_size_before_it_is_read(tmp_path, monkeypatch):
    path = tmp_path / "b.json"
    with open(path, "wb") as f:  # a sparse 150 MB file: refused from its size, never read into memory
        f.write(json.dumps(_baseline_doc()).encode())
        f.truncate(150 << 20)
    reads = []
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: reads.append(n) or real_read(fd, n))
    with pytest.raises(GluonbenchError, match=r"150.0 MiB, over the 4.0 MiB"):
        _load(path)
    assert reads == []


def test_a_non_utf8_baseline_is_one_line(tmp_path):
    path = tmp_path / "b.json"
    path.write_bytes(json.dumps(_baseline_doc()).encode().replace(b"synthetic", b"synth\xff"))
    with pytest.raises(GluonbenchError, match=r"not a text file .not UTF-8: byte .* is 0xff"):
        _load(path)


def _special_files(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    sock_path = tmp_path / "sock"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    return {"fifo": fifo, "socket": sock_path, "device": "/dev/zero"}, sock


@pytest.mark.parametrize("kind", ["fifo", "socket", "device"])
def test_no_reader_blocks_on_a_fifo_device_or_socket(tmp_path, kind):
    """Each reader refuses the special file in one line; with a FIFO that has no writer, a reader that opened it
    blocking would hang here (the test's timeout is the proof)."""
    from gluonbench.check.compare import kind_of
    from gluonbench.config import load_toml
    from gluonbench.files import load_json
    from gluonbench.report.store import RunStore

    specials, sock = _special_files(tmp_path)
    target = specials[kind]
    try:
        for call in (
            lambda: _load(target),
            lambda: load_toml(target),
            lambda: kind_of(target),
            lambda: load_json(target, "x", 1 << 20, "fix"),
        ):
            with pytest.raises(GluonbenchError, match=r"not a regular file"):
                call()
        run = tmp_path / "run"
        run.mkdir()
        for name in ("runs.jsonl", "sweep.json"):
            link = run / name
            if kind == "device":
                os.symlink(target, link)
            elif kind == "fifo":
                os.mkfifo(link)
            else:
                continue
        if kind != "socket":
            with pytest.raises(GluonbenchError, match=r"runs.jsonl is not a regular file"):
                RunStore(run).require_records()
            with pytest.raises(GluonbenchError, match=r"sweep.json is not a regular file"):
                RunStore(run).read_settings()
    finally:
        sock.close()


def test_verify_refuses_a_fifo_shard_before_opening_it(tmp_path):
    from gluonbench.data.recordio import verify

    os.mkfifo(tmp_path / "train-00000.rec")
    with pytest.raises(GluonbenchError, match=r"train-00000.rec is not a regular file"):
        verify(tmp_path)


def test_cli_refuses_special_files_in_one_line(tmp_path, cli):
    os.mkfifo(tmp_path / "base.json")
    os.mkfifo(tmp_path / "c.toml")
    os.mkfifo(tmp_path / "x.rec")
    run = tmp_path / "run"
    run.mkdir()
    os.mkfifo(run / "runs.jsonl")
    for args, needle in [
        (["check", "--workload", "synthetic", "--baseline", str(tmp_path / "base.json")], "--baseline"),
        (["sweep", "--workers", "0", "--max-batches", "2", "--config", str(tmp_path / "c.toml")], "--config"),
        (["verify", str(tmp_path)], "x.rec"),
        (["report", str(run)], "runs.jsonl"),
        (["compare", str(run), str(run)], "runs.jsonl"),
    ]:
        assert_one_clear_line(cli(*args), needle, "not a regular file")


def test_run_records_with_unbounded_numbers_are_skipped_lines_not_crashes(tmp_path):
    from gluonbench.report.store import RunStore
    from gluonbench.report.versions import CURRENT

    good = {"spec": {"workers": 0, "repeat": 0}, "status": "ok", "samples_per_s": 10.0}
    lines = [json.dumps(good), '{"spec": {"workers": 1e999}}', '{"spec": {"workers": ' + "9" * 400 + "}}"]
    lines += ["[" * 5000 + "]" * 5000, "[" * 50 + "]" * 50]
    (tmp_path / "runs.jsonl").write_text("\n".join(lines) + "\n")
    records, skipped = RunStore(tmp_path)._read()
    assert records == [{**good, "format_version": CURRENT["record"]}], "the good line, upgraded to the current layout"
    assert skipped == [
        "2 (spec.workers is not a whole number)",
        "3 (an integer of 400 digits)",
        "4 (nested too deeply to be a gluonbench file)",
        "5 (nested more than 32 levels deep)",
    ]


def test_sweep_json_with_infinity_is_one_line(tmp_path):
    from gluonbench.report.store import RunStore

    (tmp_path / "sweep.json").write_text('{"settings": {"timeout_s": Infinity}}')
    with pytest.raises(GluonbenchError, match=r"sweep.json: Infinity is not a number JSON allows"):
        RunStore(tmp_path).read_settings()


@pytest.mark.parametrize(
    "text, needle",
    [
        ("[options]\nwhen = 1979-05-27T07:32:00Z\n", "options.when = 1979-05-27T07:32:00+00:00 is a TOML date/time"),
        ("epochs = 07:32:00\n", "epochs = 07:32:00 is a TOML date/time"),
        ("[sweep]\nworkers = [1979-05-27]\n", "workers[0] = 1979-05-27"),
    ],
)
def test_toml_date_and_time_values_are_one_line(tmp_path, text, needle):
    from gluonbench.config import load_toml

    (tmp_path / "c.toml").write_text(text)
    with pytest.raises(GluonbenchError, match=r"quote it") as err:
        load_toml(tmp_path / "c.toml")
    assert needle in str(err.value)


def test_a_pipeline_option_date_is_kept_as_its_text():
    from gluonbench.workloads.spec import parse_option_value

    assert parse_option_value("2026-01-01") == "2026-01-01"
    assert parse_option_value("07:30:00") == "07:30:00"
    assert parse_option_value("5") == 5


def test_a_profile_folder_with_bad_settings_or_rows_is_one_line_or_skipped(tmp_path):
    from gluonbench.profiler.data import load
    from gluonbench.profiler.formats import SYSTEM_DIR

    out = tmp_path / "profiler-output"
    (out / SYSTEM_DIR / "2026112721").mkdir(parents=True)
    rows = [
        {"Type": "cpu", "Name": "cpu0", "Dimension": "CPUUtilization", "Value": 50.0, "Timestamp": 100.0},
        {"Type": "cpu", "Name": "cpu0", "Dimension": "CPUUtilization", "Value": 1e999, "Timestamp": 101.0},
    ]
    text = "\n".join(json.dumps(r) for r in rows).replace("Infinity", "1e999")
    (out / SYSTEM_DIR / "2026112721" / "1.algo-1.json").write_text(text + "\n")
    from gluonbench.profiler.formats import read_system

    assert [r["Value"] for r in read_system(out)] == [50.0]  # the infinite row is skipped, the good one kept
    load(tmp_path)
    (tmp_path / "profile.json").write_text('{"start": 1e999}')
    with pytest.raises(GluonbenchError, match=r"profile .*profile.json: the number 1e999 is not finite"):
        load(tmp_path)
    (tmp_path / "profile.json").write_text('{"start": "yesterday"}')
    with pytest.raises(GluonbenchError, match=r"field start must be a finite number"):
        load(tmp_path)
    (tmp_path / "profile.json").unlink()
    os.mkfifo(tmp_path / "profile.json")
    with pytest.raises(GluonbenchError, match=r"not a regular file"):
        load(tmp_path)


@pytest.mark.parametrize(
    "content",
    [
        '{"": {"read": {"name": "read", "value": "fast", "unit": "MB/s", "method": "x"}}}',
        '{"": {"read": {"bogus": 1}}}',
        '{"": {"memcpy": {"name": "m", "value": 1e999, "unit": "GB/s", "method": "x"}}}',
        "[1, 2]",
        "\xff\xfe",
    ],
)
def test_a_damaged_doctor_cache_is_measured_again(tmp_path, monkeypatch, content, caplog):
    from gluonbench.doctor import ceilings

    monkeypatch.setenv(env.CACHE_ENV, str(tmp_path))
    ceilings.cache_file().write_bytes(content.encode("latin-1"))
    assert ceilings.cached_ceilings(None) is None
    assert str(ceilings.cache_file()) in caplog.text and "measured again" in caplog.text


def test_a_doctor_cache_fifo_does_not_block(tmp_path, monkeypatch):
    from gluonbench.doctor import ceilings

    monkeypatch.setenv(env.CACHE_ENV, str(tmp_path))
    os.mkfifo(ceilings.cache_file())
    assert ceilings.cached_ceilings(None) is None


def test_the_readers_never_block_on_a_fifo_in_a_subprocess(tmp_path):
    """The same check with a hard deadline: a reader that blocked on the FIFO would be killed by the timeout."""
    os.mkfifo(tmp_path / "b.json")
    code = (
        "from gluonbench.check.gate import load_baseline\n"
        "from gluonbench.errors import GluonbenchError\n"
        f"try:\n    load_baseline({str(tmp_path / 'b.json')!r})\n"
        "except GluonbenchError as e:\n    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "not a regular file" in out.stdout, out.stderr
