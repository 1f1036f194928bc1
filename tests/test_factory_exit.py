"""User code that calls sys.exit is an error that names it, never a silent pass (a CI gate that exits 0)."""

from __future__ import annotations

import pytest
from conftest import run_cli

from gluonbench.check.target import resolve_pipeline
from gluonbench.errors import GluonbenchError
from gluonbench.workloads.spec import load_spec


@pytest.fixture
def factories(tmp_path):
    (tmp_path / "fx.py").write_text(
        "import sys\n\ndef exit0():\n    sys.exit(0)\n\ndef exit_text():\n    exit('bye')\n"
    )
    (tmp_path / "modexit.py").write_text("import sys\nsys.exit(3)\n\ndef make():\n    return {}\n")
    return tmp_path


@pytest.mark.parametrize(
    ("target", "says"),
    [("fx.py:exit0", "the factory called sys.exit(0)"), ("fx.py:exit_text", "sys.exit('bye')"),
     ("modexit.py:make", "importing modexit.py called sys.exit(3)")],
)  # fmt: skip
def test_sys_exit_in_a_factory_or_its_module_is_an_error(factories, target, says):
    with pytest.raises(GluonbenchError, match=r"sys\.exit") as err:
        load_spec(str(factories / target))
    assert says in str(err.value) and "__main__" in str(err.value)
    with pytest.raises(GluonbenchError, match=r"sys\.exit"):
        resolve_pipeline(str(factories / target))


@pytest.mark.parametrize(
    "command", [("check", "--save-baseline", "b.json"), ("diagnose", "--budget", "10")], ids=["check", "diagnose"]
)
def test_the_cli_exits_2_in_one_line_not_0(factories, command):
    proc = run_cli(*command, "--pipeline", "fx.py:exit0", cwd=factories)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "called sys.exit(0)" in proc.stderr.strip().splitlines()[-1]
    assert not (factories / "b.json").exists()
