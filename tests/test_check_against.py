"""``gluonbench check --against REF``: REF's code and the working tree's, measured side by side in one job."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import run_cli, scratch_folders, scratch_left, with_more_budget

PIPE = """
import numpy as np

ROUNDS = {rounds}


def make(samples: int = 512) -> dict:
    from gluonbench._mx import gluon
    from gluonbench.workloads.synthetic import SyntheticTransform

    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(samples, 28, 28, 1), dtype=np.uint8)
    labels = rng.integers(0, 10, size=samples).astype(np.int32)
    dataset = gluon.data.SimpleDataset(list(zip(images, labels)))
    return {{"dataset": dataset, "transform": SyntheticTransform(ROUNDS), "batch_size": 32}}
"""


def _git(repo: Path, *args: str) -> str:
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@example.org")
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@example.org")
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, env=env, check=True)
    return proc.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A project with two commits: the second's transform does five times the work of the first's."""
    root = tmp_path / "project"
    (root / "ci").mkdir(parents=True)
    _git(root, "init", "-q")
    (root / "ci" / "pipe.py").write_text(PIPE.format(rounds=4))
    _git(root, "add", "ci/pipe.py")
    _git(root, "commit", "-qm", "base")
    (root / "ci" / "pipe.py").write_text(PIPE.format(rounds=20))
    _git(root, "commit", "-qam", "a slower transform")
    return root


SCRATCH = ("against", "againstlog")
"""the scratch folders a check --against makes (the baseline's tree, the sides' logs or scripts' folders)"""


def test_a_slower_commit_is_caught_against_its_parent_and_the_baseline_tree_is_removed(repo, tmp_path):
    before = scratch_folders(SCRATCH)
    out = tmp_path / "check.json"

    def check(budget: float) -> subprocess.CompletedProcess:
        return run_cli(
            "check", "--pipeline", "ci/pipe.py:make", "--against", "HEAD~1", "--budget", f"{budget:g}",
            "--json", str(out), cwd=repo,
        )  # fmt: skip

    proc = with_more_budget(check, (12, 30), lambda p: p.returncode != 3)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "REGRESSION" in proc.stdout and "measured side by side" in proc.stdout
    assert "the stage that got slower: preprocessing" in proc.stdout or "preprocessing" in proc.stdout
    data = json.loads(out.read_text())
    assert data["reference"] == "baseline" and data["outcome"] == "regression" and data["slowdown"] > 1.05
    assert "HEAD~1" in data["baseline_path"]
    assert not scratch_left(before, SCRATCH)  # the baseline's tree and the sides' logs are gone


@pytest.mark.slow
def test_uncommitted_changes_are_the_candidate(repo):
    # the working tree undoes the slowdown (not committed): against HEAD it is not slower
    (repo / "ci" / "pipe.py").write_text(PIPE.format(rounds=4))

    def check(budget: float) -> subprocess.CompletedProcess:
        return run_cli(
            "check", "--pipeline", "ci/pipe.py:make", "--against", "HEAD", "--budget", f"{budget:g}", cwd=repo
        )

    proc = with_more_budget(check, (12, 30), lambda p: p.returncode != 3)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASS" in proc.stdout


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--against", "no-such-branch"), "no such commit"),
        (("--against", "HEAD", "--baseline", "b.json"), "not allowed with argument"),
        (("--against", "--budget"), "expected one argument"),
    ],
    ids=["unknown-ref", "two-modes", "no-ref"],
)
def test_bad_against_is_one_line(repo, args, says):
    proc = run_cli("check", "--pipeline", "ci/pipe.py:make", *args, cwd=repo)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert says in proc.stderr


def test_outside_a_repository_and_a_file_missing_from_ref_are_one_line(repo, tmp_path):
    elsewhere = tmp_path / "plain"
    elsewhere.mkdir()
    (elsewhere / "pipe.py").write_text(PIPE.format(rounds=4))
    proc = run_cli("check", "--pipeline", "pipe.py:make", "--against", "HEAD", cwd=elsewhere)
    assert proc.returncode == 2 and "not inside a git repository" in proc.stderr, proc.stderr
    (repo / "ci" / "new.py").write_text(PIPE.format(rounds=4))  # untracked: not in HEAD's tree
    proc = run_cli("check", "--pipeline", "ci/new.py:make", "--against", "HEAD", cwd=repo)
    assert proc.returncode == 2 and "is not in the baseline's tree" in proc.stderr, proc.stderr


def test_a_side_whose_factory_fails_is_one_line_naming_the_side(repo):
    (repo / "ci" / "pipe.py").write_text("def make():\n    raise ValueError('broken on purpose')\n")
    proc = run_cli("check", "--pipeline", "ci/pipe.py:make", "--against", "HEAD", "--budget", "10", cwd=repo)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (line,) = proc.stderr.strip().splitlines()[-1:]
    assert "the candidate side (working tree)" in line and "broken on purpose" in line


def test_the_baseline_may_be_another_checkout_folder(repo, tmp_path):
    from gluonbench.check.against import Tree, baseline_tree, map_target

    other = tmp_path / "other"
    other.mkdir()
    tree = baseline_tree(str(other), repo)
    assert tree.root == other.resolve() and tree.scratch is None
    committed = baseline_tree("HEAD~1", repo)
    try:
        assert (committed.root / "ci" / "pipe.py").read_text() == PIPE.format(rounds=4)
        mapped = map_target(str(repo / "ci" / "pipe.py") + ":make", repo, committed)
        assert mapped == f"{committed.root / 'ci' / 'pipe.py'}:make"
        assert map_target("mypkg.data:make", repo, Tree(other, "x")) == "mypkg.data:make"
    finally:
        import shutil

        shutil.rmtree(committed.scratch)
