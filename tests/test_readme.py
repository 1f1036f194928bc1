"""Every ```python block of README.md runs verbatim in a fresh interpreter, with MXNet imported before and after.

Nothing is prepared for them (no ``$GLUONBENCH_DATA``, an empty MXNet cache, no network): they read the
MNIST gluonbench ships, and write their run folders under a temporary working folder. Every block of
README.md and docs/ is also run by tests/test_docs_blocks.py.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import EMULATE_NUMPY_124, REPO

BLOCKS = re.findall(r"```python\n(.*?)```", (REPO / "README.md").read_text(), flags=re.S)

# `import mxnet` first, then the block (which imports gluonbench); or the block as written, then mxnet
ORDERS = {
    "mxnet-first": "import mxnet\n{block}",
    "gluonbench-first": "import gluonbench\n{block}\nimport mxnet\nfrom mxnet import gluon\n",
}


def run_block(code: str, tmp_path: Path, mnist_dir: Path | None = None) -> subprocess.CompletedProcess:
    """A block in a fresh interpreter with nothing prepared: no ``$GLUONBENCH_DATA``, an empty MXNet
    cache, no network (the blocks use the MNIST gluonbench ships); ``mnist_dir`` is unused."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GLUONBENCH_")}
    env.update(MXNET_HOME=str(tmp_path / "mxnet-home"), GLUONBENCH_OFFLINE="1", PYTHONPATH=str(REPO))
    env["GLUONBENCH_CACHE"] = str(tmp_path / "gluonbench-cache")  # empty, as on a first run, and not in $HOME
    return subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )


def test_readme_has_the_python_api_blocks():
    assert len(BLOCKS) >= 2
    assert any("gluonbench.sweep(" in b for b in BLOCKS) and any("gluonbench.diagnose(" in b for b in BLOCKS)
    for block in BLOCKS:
        compile(block, "README.md", "exec")


@pytest.mark.slow
@pytest.mark.parametrize("order", sorted(ORDERS))
@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_block_runs(index, order, tmp_path, mnist_dir, no_leaks):
    block = BLOCKS[index]
    proc = run_block(ORDERS[order].format(block=block), tmp_path, mnist_dir)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    if "gluonbench.sweep(" in block:
        assert list(tmp_path.glob("gluonbench-results/*-sweep-mnist-cpu/summary.md")), (
            "the sweep's run folder is in cwd"
        )
    if "gluonbench.diagnose(" in block:
        verdict = proc.stdout.splitlines()[0]
        assert verdict in ("preprocessing", "disk_io", "gpu_io", "inconclusive"), proc.stdout


def test_readme_diagnose_block_on_emulated_numpy_without_aliases(tmp_path, mnist_dir, no_leaks):
    """numpy >= 1.24 (Python 3.12's pin) has no np.bool & co.: `import gluonbench` restores them for MXNet."""
    block = next(b for b in BLOCKS if "gluonbench.diagnose(" in b).replace("budget_s=5.0", "budget_s=2.0")
    code = EMULATE_NUMPY_124 + block + "\nassert np.bool is bool\n"
    proc = run_block(code, tmp_path, mnist_dir)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def test_ci_runs_the_readme_test_command_verbatim():
    """.ci/run installs and tests exactly as README.md tells a person to."""
    (command,) = re.findall(r"^pip install -e .*python -m pytest .*$", (REPO / "README.md").read_text(), flags=re.M)
    assert '-m "not gpu and not slow"' in command
    ci_lines = (REPO / ".ci" / "run").read_text().splitlines()
    assert command in ci_lines, f"the README's test command is not a line of .ci/run: {command}"
