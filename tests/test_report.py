"""One exporter interface for every run folder, and ``rundir.rebuild`` / ``gluonbench report`` for any of them."""

from __future__ import annotations

import csv
import io
import json
import math

import pytest
from conftest import assert_one_clear_line

from gluonbench.diagnosis.probes import NAMES
from gluonbench.errors import GluonbenchError
from gluonbench.report.exporters import EXPORTERS, CsvTable, Exporter, MarkdownTable, Table
from gluonbench.report.store import RunStore
from gluonbench.rundir import load, rebuild, report_types


def test_csv_and_markdown_write_one_table_differing_only_in_syntax():
    table = Table(["name", "rate", "note"], [["a", 1.5, "x|y"], ["b", math.nan, None]], align="lrl")
    text = CsvTable().render(table)
    assert list(csv.reader(io.StringIO(text))) == [["name", "rate", "note"], ["a", "1.5", "x|y"], ["b", "", ""]]
    md = MarkdownTable().render(table).splitlines()
    assert md == ["| name | rate | note |", "|---|---:|---|", "| a | 1.5 | x\\|y |", "| b | - | - |"]


def test_every_format_is_an_exporter_with_a_name_and_suffix():
    assert set(EXPORTERS) == {"json", "csv", "markdown", "png", "html"}
    for name, exporter in EXPORTERS.items():
        assert isinstance(exporter, Exporter) and exporter.name == name and exporter.suffix.startswith(".")
    for report_type in report_types():
        assert set(report_type.files) <= set(EXPORTERS), report_type
        assert all(f.endswith(EXPORTERS[n].suffix) for n, f in report_type.files.items()), report_type


def test_load_refuses_what_is_not_a_run_folder(tmp_path):
    with pytest.raises(GluonbenchError, match="not a folder"):
        load(tmp_path / "nope")
    with pytest.raises(GluonbenchError, match=r"no runs\.jsonl"):
        load(tmp_path)
    RunStore(tmp_path).append({"kind": "mystery"})
    with pytest.raises(GluonbenchError, match="no record gluonbench can report on"):
        load(tmp_path)


def test_diagnose_out_keeps_a_run_folder_that_report_rebuilds(cli, tmp_path, no_leaks):
    proc = cli(
        "diagnose",
        "--dataset",
        "synthetic",
        "--samples",
        "512",
        "--batch-size",
        "32",
        "--data-dir",
        str(tmp_path / "cache"),
        "--budget",
        "4",
        "--out",
        str(tmp_path / "out"),
    )
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = (tmp_path / "out").glob("*-diagnose-synthetic-w0")
    assert proc.stdout.rstrip().endswith(f"results: {run_dir}")
    printed = proc.stdout.rsplit("results: ", 1)[0]
    files = {name: run_dir / name for name in ("diagnosis.md", "diagnosis.csv", "diagnosis.json", "report.html")}
    # the stored record renders to exactly what diagnose printed
    assert files["diagnosis.md"].read_text() == printed
    rows = list(csv.DictReader(files["diagnosis.csv"].open()))
    assert [r["probe"] for r in rows] == list(NAMES)
    assert float(rows[0]["samples_per_s"]) > 0
    stored = json.loads(files["diagnosis.json"].read_text())
    assert stored["verdict"] in ("preprocessing", "disk_io", "gpu_io", "inconclusive")
    before = {name: path.read_bytes() for name, path in files.items()}
    for path in files.values():
        path.unlink()
    assert sorted(p.name for p in rebuild(run_dir)) == sorted(files)
    assert {name: path.read_bytes() for name, path in files.items()} == before
    proc = cli("report", str(run_dir))
    assert proc.returncode == 0 and "**Verdict:" in proc.stdout and "diagnosis.csv" in proc.stdout


def test_report_cli_refuses_an_unknown_folder(cli, tmp_path):
    assert_one_clear_line(cli("report", str(tmp_path)), "has no runs.jsonl", "gluonbench sweep, io or diagnose")
