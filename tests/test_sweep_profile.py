"""sweep --profile: the profiler rules and a report for every run of a sweep."""

from __future__ import annotations

import json

import pytest


@pytest.mark.slow
def test_sweep_profile_rules_per_run(cli, mnist_dir, tmp_path, no_leaks):
    proc = cli(
        "sweep", "--workers", "0,2", "--max-batches", "60", "--profile", "--data-dir", str(mnist_dir),
        "--no-download", "--out", str(tmp_path),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "rules fired:" in proc.stderr
    run_dir = next(tmp_path.iterdir())
    runs = {json.loads(line)["spec"]["workers"]: json.loads(line) for line in (run_dir / "runs.jsonl").open()}
    for workers, run in runs.items():
        prof = run["extra"]["profile"]
        rules = {
            r["rule"]: r
            for r in json.loads((run_dir / "profiles" / prof["dir"].rsplit("/", 1)[1] / "rules.json").read_text())
        }
        assert rules["Dataloader"]["applicable"], rules["Dataloader"]["reason"]
        # the training loop is marked from the sweep's progress: initialisation is measured
        assert rules["MaxInitializationTime"]["details"]["initialization_s"] > 0
        if rules["Dataloader"]["datapoints"] > rules["Dataloader"]["parameters"]["patience"]:
            # judged: 0 workers is too few on 2+ cores; 2 workers (4 processes: train and test loaders) are not
            assert ("Dataloader" in prof["triggered"]) is (workers == 0), rules["Dataloader"]
    # the sweep's report.html links each run's profile page, which sits beside it in profiles/
    page = (run_dir / "report.html").read_text()
    for run in runs.values():
        name = run["extra"]["profile"]["dir"].rsplit("/", 1)[1]
        assert (run_dir / "profiles" / name / "report.html").is_file() and name in page
