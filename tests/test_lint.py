"""The code base stays ruff clean (the version is pinned in the test extras)."""

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_ruff_clean():
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff is not installed (pip install -e '.[test]')")
    proc = subprocess.run(
        [ruff, "check", "gluonbench", "tests", "benchmarks"], cwd=REPO, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_import_layers_and_no_cycles():
    """setup.cfg's [importlinter] contracts: the layers of DESIGN.md, and no cycles between packages."""
    lint = shutil.which("lint-imports")
    if lint is None:
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    proc = subprocess.run([lint, "--config", "setup.cfg"], cwd=REPO, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 kept, 0 broken" in proc.stdout, proc.stdout


def test_no_private_names_imported_across_modules():
    """No ``from gluonbench.x import _name``, nor ``module._name`` of an imported gluonbench module: promote it."""
    import ast

    offenders = []
    for path in sorted((REPO / "gluonbench").rglob("*.py")):
        where = path.relative_to(REPO)
        modules = set()  # local names bound to gluonbench modules
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gluonbench"):
                for a in node.names:
                    if a.name.startswith("_") and not a.name.startswith("__"):
                        offenders.append(f"{where}: from {node.module} import {a.name}")
                    base = REPO / node.module.replace(".", "/") / a.name
                    if base.with_suffix(".py").is_file() or base.is_dir():
                        modules.add(a.asname or a.name)
            elif isinstance(node, ast.Import):
                modules |= {a.asname for a in node.names if a.name.startswith("gluonbench") and a.asname}
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in modules
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                offenders.append(f"{where}: {node.value.id}.{node.attr}")
    assert not offenders, offenders
