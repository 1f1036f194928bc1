"""gluonbench profile on the seed's MNIST (examples/train_mnist.py): real MXNet, real workers."""

from __future__ import annotations

import json
import sys

from conftest import REPO

from gluonbench.profiler.data import load


def test_mnist_with_workers_and_mxnet_profiler(cli, mnist_dir, tmp_path, no_leaks):
    proc = cli(
        "profile", "--interval", "200", "--mxnet-profiler", "--out", str(tmp_path / "r"), "--",
        sys.executable, str(REPO / "examples" / "train_mnist.py"), "--workers", "2", "--batches", "100",
        "--eval-batches", "2", "--data-dir", str(mnist_dir), "--no-download",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    prof = next((tmp_path / "r").iterdir())
    data = load(prof)
    assert len(data.train_steps()) == 100 and all(s.wait_s is not None for s in data.train_steps())
    workers = data.nodes["algo-1"].get("WorkerCount", "Training")
    assert workers.values.max() >= 2  # the DataLoader's worker processes, seen in the tree
    assert any(e.get("cat") == "operator" for e in data.events)  # MXNet's own profiler dump, merged
    assert (prof / "trace.json").is_file()
    rules = {r["rule"]: r for r in json.loads((prof / "rules.json").read_text())}
    assert rules["InputBound"]["applicable"] and rules["MaxInitializationTime"]["applicable"]
    assert "Operators (MXNet profiler)" in (prof / "report.html").read_text()
