"""The seed's CNN trains through every input mode, in process and through `sweep` (child processes, workers)."""

from __future__ import annotations

import json

import pytest
from conftest import run_clis, upload_folder, with_more_budget

from gluonbench.data import recordio
from gluonbench.sweeprun.run import RunSpec, train_and_eval


@pytest.fixture(scope="module")
def s3_packed(s3_endpoint, packed_dir) -> str:
    return upload_folder(packed_dir, "s3://gluonbench-train/packed", s3_endpoint)


@pytest.mark.parametrize("where", ["local", "s3"])
@pytest.mark.parametrize("mode", ["file", "fastfile", "pipe"])
def test_train_a_few_batches_over_each_source(mode, where, packed_dir, s3_packed, s3_endpoint, no_leaks):
    options = {"mode": mode, "uri": str(packed_dir), "timeout": 30}
    if where == "s3":
        options.update(uri=s3_packed, endpoint_url=s3_endpoint)
    spec = RunSpec(workload="source", workers=2, batch_size=8, epochs=2, max_batches=9, options=options)
    result = train_and_eval(spec)
    n = recordio.load_manifest(packed_dir).records  # 61: epoch 0 is 8 batches (the last one short), epoch 1 one
    assert n % 8 and n // 8 + 1 == 8
    assert result.status == "ok"
    assert result.train_samples == n + 8 and result.steady["steps"] == 8
    assert result.source["mode"] == mode and result.source["kind"] == "recordio"
    assert result.source["startup_s"] > 0
    if mode == "file":
        assert result.source["bytes_copied"] > 0 and result.source["disk_used"] > 0


def test_sweep_over_s3_fastfile_and_local_pipe(s3_packed, s3_endpoint, packed_dir, jpeg_dir, tmp_path, no_leaks):
    out = tmp_path / "results"
    proc, piped = run_clis(  # both at once: neither is timed
        ("sweep", "--source", "fastfile", "--uri", s3_packed, "--endpoint-url", s3_endpoint, "--workers", "0,2",
         "--max-batches", "4", "--batch-size", "16", "--out", str(out)),
        ("sweep", "--source", "pipe", "--uri", str(packed_dir), "--workers", "0", "--max-batches", "3",
         "--batch-size", "16", "--out", str(tmp_path / "piped"), "--name", "pipe"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = list(out.iterdir())
    assert run_dir.name.endswith("sweep-source-fastfile-cpu")
    runs = [json.loads(line) for line in (run_dir / "runs.jsonl").read_text().splitlines()]
    assert [r["status"] for r in runs] == ["ok", "ok"]
    n = recordio.load_manifest(packed_dir).records  # 61 samples: 4 batches of 16, the last one short
    assert all(r["source"]["mode"] == "fastfile" and r["train_samples"] == n for r in runs)
    assert runs[1]["system"]["peak_processes"] >= 3, "DataLoader worker processes read S3 (a client per process)"
    assert piped.returncode == 0, piped.stderr
    (pipe_dir,) = (tmp_path / "piped").glob("*-pipe")
    (run,) = [json.loads(line) for line in (pipe_dir / "runs.jsonl").read_text().splitlines()]
    assert run["status"] == "ok" and run["source"]["mode"] == "pipe" and run["train_samples"] == 48


PROBES_SEEN = {"full", "no_preprocess", "cached_batch", "loader_only"}


def test_diagnose_over_a_source(cli, s3_packed, s3_endpoint, packed_dir, tmp_path, no_leaks):
    out = tmp_path / "d.json"

    def diagnose(budget: float):
        return cli(
            "diagnose", "--source", "fastfile", "--uri", s3_packed, "--endpoint-url", s3_endpoint,
            "--batch-size", "8", "--budget", f"{budget:g}", "--json", str(out),
        )  # fmt: skip

    def every_probe(proc) -> bool:  # a busy machine can leave a probe without a round in 6 s: measure again
        return proc.returncode != 0 or set(json.loads(out.read_text())["probes"]) >= PROBES_SEEN

    proc = with_more_budget(diagnose, (6, 15), every_probe)
    assert proc.returncode == 0, proc.stderr
    d = json.loads(out.read_text())
    assert d["verdict"] in ("preprocessing", "disk_io", "gpu_io", "inconclusive")
    assert sum(d["shares"].values()) == pytest.approx(1.0)
    assert set(d["probes"]) >= PROBES_SEEN
    # a stream has no dataset[i] for the probes: one clear line, exit 2
    proc = cli("diagnose", "--source", "pipe", "--uri", str(packed_dir))
    assert proc.returncode == 2 and "invalid choice: 'pipe'" in proc.stderr


def test_diagnose_api_refuses_a_stream_and_closes_it(packed_dir, no_leaks):
    from gluonbench.api import diagnose_workload
    from gluonbench.errors import GluonbenchError

    with pytest.raises(GluonbenchError, match=r"stream \(Pipe mode\).*mode file or fastfile"):
        diagnose_workload("source", batch_size=8, budget_s=5, options={"mode": "pipe", "uri": str(packed_dir)})
