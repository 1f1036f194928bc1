"""`gluonbench io`: the seed 004 matrix end to end (local and S3), its exports, and its recommendation rules."""

from __future__ import annotations

import csv
import json
import shutil

import pytest
from conftest import PLAN_LINE

from gluonbench.analysis.io_rules import recommend

TINY = ["--small", "300KB", "--large", "900KB", "--file-size", "15KB", "--timeout", "30", "--threads", "2"]


def test_io_matrix_local_writes_every_output(cli, tmp_path, mnist_dir, no_leaks):
    out = tmp_path / "results"
    proc = cli("io", *TINY, "--out", str(out), "--mnist-dir", str(mnist_dir))
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = list(out.iterdir())
    assert run_dir.name.endswith("io-local-read")
    for name in ("runs.jsonl", "sweep.json", "io.csv", "io.md", "io.json", "io.png"):
        assert (run_dir / name).stat().st_size > 0, name
    rows = [json.loads(line) for line in (run_dir / "runs.jsonl").read_text().splitlines()]
    cells = {(r["cell"]["mode"], r["cell"]["size"], r["cell"]["layout"]) for r in rows}
    assert cells == {(m, s, f) for m in ("file", "fastfile", "pipe") for s in ("small", "large")
                     for f in ("files", "shards")}  # fmt: skip
    samples = {
        (r["cell"]["size"], r["cell"]["layout"]): r["open"]["samples"] for r in rows if r["cell"]["mode"] == "file"
    }
    for r in rows:
        c = r["cell"]
        assert r["status"] == "ok", r["error"]
        assert r["kind"] == "io" and len(r["epochs"]) == 2
        assert r["startup_s"] > 0 and r["read_mb_per_s"] > 0 and r["samples_per_s"] > 0 and r["total_s"] > 0
        # every sample arrives in every epoch (epoch 1 counts all; epoch 0's first batch is in start-up)
        assert r["epochs"][1]["samples"] == samples[c["size"], c["layout"]] > 0
        assert 0.9 * c["data_bytes"] < r["epochs"][1]["bytes"] <= c["data_bytes"]
        if c["mode"] == "file":
            assert r["open"]["copy_s"] > 0 and r["disk_used"] >= c["data_bytes"]
        else:
            assert r["disk_used"] == 0
        assert r["resident_before"] == pytest.approx(1.0), "warm: the origin sits in the page cache"
    large = [r for r in rows if r["cell"]["size"] == "large"]
    assert all(r["cell"]["data_bytes"] > 800_000 for r in large)
    assert 5 <= min(r["cell"]["objects"] for r in large if r["cell"]["layout"] == "shards") <= 6, "~a fifth a shard"
    table = list(csv.DictReader((run_dir / "io.csv").open()))
    assert len(table) == 12 and {"startup_s", "read_mb_per_s", "disk_used", "epochs_mb_per_s"} <= set(table[0])
    md = (run_dir / "io.md").read_text()
    assert "## Recommendation" in md and "File mode copied the large set" in md and "150 MB" in md
    assert "fastfile" in proc.stdout and "results:" in proc.stdout
    # `report` rebuilds the io exports from runs.jsonl alone
    for name in ("io.csv", "io.md", "io.png"):
        (run_dir / name).unlink()
    proc = cli("report", str(run_dir))
    assert proc.returncode == 0 and (run_dir / "io.md").read_text() == md


def test_io_over_s3_and_cold_cache(cli, tmp_path, s3_endpoint, mnist_dir, no_leaks):
    out = tmp_path / "results"
    proc = cli(
        "io", *TINY, "--sizes", "small", "--s3-uri", "s3://gluonbench-io/bench", "--endpoint-url", s3_endpoint,
        "--epochs", "1", "--out", str(out), "--mnist-dir", str(mnist_dir),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = list(out.iterdir())
    rows = [json.loads(line) for line in (run_dir / "runs.jsonl").read_text().splitlines()]
    assert len(rows) == 6 and all(r["status"] == "ok" for r in rows), [r["error"] for r in rows]
    assert {r["cell"]["uri"] for r in rows} == {
        "s3://gluonbench-io/bench/small-files",
        "s3://gluonbench-io/bench/small-shards",
    }
    assert all(r["cache_method"].startswith("n/a") for r in rows)
    # cold page cache on a local origin: the origin's pages are evicted before the cell
    work = tmp_path / "work"
    proc = cli(
        "io", *TINY, "--sizes", "small", "--layouts", "shards", "--modes", "fastfile", "--page-cache", "cold",
        "--epochs", "1", "--work-dir", str(work), "--out", str(out), "--name", "cold",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (row,) = [json.loads(line) for line in next(out.glob("*-cold")).joinpath("runs.jsonl").read_text().splitlines()]
    assert row["cache_method"].startswith("fadvise") and row["resident_before"] < 0.5
    assert (work / "small-shards" / "manifest.json").is_file(), "--work-dir keeps the data sets for reuse"
    shutil.rmtree(work)


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--modes", "file,ftp"], "--modes 'file,ftp': choose from file, fastfile, pipe"),
        (["--small", "lots"], "--small 'lots' is not a size"),
        (["--src", "/nonexistent-src"], "does not exist"),
        (["--endpoint-url", "http://127.0.0.1:1"], "--endpoint-url goes with --s3-uri"),
        (["--s3-uri", "s3://gluonbench-io/x", "--endpoint-url", "http://127.0.0.1:1"], "cannot reach the S3 endpoint"),
    ],
)
def test_io_bad_input(cli, tmp_path, args, needle):
    proc = cli("io", *args, "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip() and not PLAN_LINE.match(line)]
    assert len(lines) == 1 and needle in lines[0], lines
    assert not (tmp_path / "out").exists(), "no run folder for bad input"


def test_io_unwritable_work_dir(cli, tmp_path):
    from conftest import make_unwritable, release

    blocked = make_unwritable(tmp_path / "ro")
    try:
        proc = cli("io", *TINY, "--work-dir", str(blocked / "sub"), "--out", str(tmp_path / "out"))
    finally:
        release(tmp_path / "ro")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "--work-dir" in proc.stderr, proc.stderr


def _row(
    mode, size, layout, *, startup, mb, sps, total, copy_s=0.0, copied=0, disk=0, objects=10, data=1e8, store="s3"
):
    return {
        "status": "ok",
        "cell": {"mode": mode, "size": size, "layout": layout, "data_bytes": data, "objects": objects, "store": store},
        "open": {"copy_s": copy_s, "bytes_copied": copied},
        "startup_s": startup, "read_mb_per_s": mb, "samples_per_s": sps, "total_s": total, "disk_used": disk,
        "epochs": [{}, {}],
    }  # fmt: skip


def test_recommendation_follows_the_numbers():
    rows = [
        _row("file", "large", "files", startup=9, mb=100, sps=2500, total=12, copy_s=8, copied=800e6, disk=8e8,
             objects=20000),
        _row("fastfile", "large", "files", startup=0.1, mb=20, sps=500, total=40, objects=20000),
        _row("file", "large", "shards", startup=5, mb=400, sps=10000, total=7, copy_s=4, copied=800e6, disk=8e8),
        _row("fastfile", "large", "shards", startup=0.1, mb=380, sps=9500, total=2.3),
        _row("pipe", "large", "shards", startup=0.3, mb=300, sps=7500, total=3),
    ]  # fmt: skip
    advice = {a.rule: a.text for a in recommend(rows)}
    assert "200 MB/s" in advice["file-mode"] and "50 GB takes 4 min" in advice["file-mode"]
    assert advice["pack"].startswith("Pack the many small files") and "19.0x" in advice["pack"]
    assert "95%" in advice["fastfile"] and "prefer FastFile" in advice["fastfile"]
    assert "0.79x" in advice["pipe"] and "prefer FastFile" in advice["pipe"]
    assert "fastfile over shards, 2.30 s" in advice["fastest"]
    # the same rules, numbers the other way round, give the other advice
    rows[1]["samples_per_s"] = 9000
    rows[0]["samples_per_s"] = 9800
    rows[3]["read_mb_per_s"] = 100
    advice = {a.rule: a.text for a in recommend(rows)}
    assert advice["pack"].startswith("Packing into shards gained at most 1.1x")
    assert "only 25%" in advice["fastfile"]
    assert "faster than FastFile" in advice["pipe"]


def test_new_commands_have_examples_in_help(cli):
    for command in ("pack", "verify", "stream", "io"):
        proc = cli(command, "--help")
        assert proc.returncode == 0 and "examples:" in proc.stdout, command


def test_local_copy_rates_are_not_extrapolated_to_s3():
    """A page-cache copy (~5 GB/s) must not become "50 GB takes 10 s": quote seed 004's figures, as published ones."""
    rows = [
        _row("file", "large", "shards", startup=0.05, mb=5000, sps=90000, total=0.2, copy_s=0.04, copied=200e6,
             disk=2e8, store="local"),
        _row("fastfile", "large", "shards", startup=0.01, mb=4800, sps=88000, total=0.2, store="local"),
    ]  # fmt: skip
    advice = {a.rule: a.text for a in recommend(rows)}
    text = advice["file-mode"]
    assert "5000 MB/s" in text and "from a local folder" in text
    assert "50 GB takes" not in text and "not extrapolated" in text
    assert "Published figures (seed 004, not measured here)" in text and "about 200 MB/s" in text
    assert "gluonbench io --s3-uri s3://BUCKET/PREFIX" in text and "--endpoint-url" in text
    assert "do not show S3's request latency" in advice["scope"]
    # measured on S3: extrapolated, and no scope caveat
    for r in rows:
        r["cell"]["store"] = "s3"
    advice = {a.rule: a.text for a in recommend(rows)}
    assert "50 GB takes 10 s" in advice["file-mode"] and "scope" not in advice
