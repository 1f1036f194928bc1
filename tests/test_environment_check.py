"""The environment is checked before MXNet is imported: a thread count, engine type or GLUONBENCH_* value that
gluonbench, MXNet, OpenMP or a BLAS library cannot use is one line naming the variable and the fix, exit 2."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import assert_one_clear_line

from gluonbench.env import check_environment, environment_problems
from gluonbench.errors import GluonbenchError


@pytest.mark.parametrize(
    "name, value, needle",
    [
        ("OMP_NUM_THREADS", "abc", "whole number of threads"),
        ("OMP_NUM_THREADS", "0", "from 1 to 4096"),
        ("OMP_NUM_THREADS", "-1", "whole number"),
        ("OMP_NUM_THREADS", "1.5", "whole number"),
        ("OMP_NUM_THREADS", "9" * 30, "from 1 to 4096"),
        ("OMP_NUM_THREADS", "4,x", "whole number"),
        ("OMP_NUM_THREADS", "\u0663", "whole number"),  # an Arabic-Indic three: a digit to str.isdigit, not to libgomp
        ("MXNET_CPU_WORKER_NTHREADS", "0", "from 1"),
        ("MXNET_CPU_WORKER_NTHREADS", "100000", "from 1 to 4096"),
        ("OPENBLAS_NUM_THREADS", "many", "whole number"),
        ("MKL_NUM_THREADS", "-4", "whole number"),
        ("MXNET_ENGINE_TYPE", "FastEngine", "ThreadedEnginePerDevice"),
        ("GLUONBENCH_STALL_FLOOR_S", "x", "seconds"),
        ("GLUONBENCH_STALL_FLOOR_S", "0", "seconds"),
        ("GLUONBENCH_S3_TIMEOUT_S", "nan", "seconds"),
        ("GLUONBENCH_S3_TIMEOUT_S", "1e300", "seconds"),
        ("GLUONBENCH_OFFLINE", "0", "must be 1"),
        ("GLUONBENCH_SHM_CHECK", "off", "must be 0 or 1"),
        ("GLUONBENCH_PACKAGED_DATA", "no", "must be 0 or 1"),
        ("GLUONBENCH_PROGRESS", "yes", "must be 0 or 1"),
        ("GLUONBENCH_PROFILE_SYNC", "2", "must be 0 or 1"),
        ("GLUONBENCH_DATA", "", "not a folder path"),
    ],
)
def test_a_bad_variable_is_one_line_naming_it_and_the_fix(name, value, needle):
    with pytest.raises(GluonbenchError) as err:
        check_environment({name: value})
    line = str(err.value)
    assert line.startswith(f"{name}=") and needle in line and "unset it" in line and "\n" not in line


@pytest.mark.parametrize(
    "env",
    [
        {},
        {"OMP_NUM_THREADS": "4"},
        {"OMP_NUM_THREADS": "4,2"},
        {"OMP_NUM_THREADS": ""},
        {"MXNET_ENGINE_TYPE": "NaiveEngine", "MXNET_CPU_WORKER_NTHREADS": "2", "MKL_NUM_THREADS": "1"},
        {"GLUONBENCH_OFFLINE": "1", "GLUONBENCH_SHM_CHECK": "0", "GLUONBENCH_STALL_FLOOR_S": "2.5"},
        {"GLUONBENCH_FAULT_CASE": "anything"},  # a variable gluonbench does not read is left alone
    ],
)
def test_usable_values_pass(env):
    assert environment_problems(env) == []


def test_a_file_where_a_folder_variable_points_is_refused(tmp_path):
    (tmp_path / "f").write_text("x")
    (problem,) = environment_problems({"GLUONBENCH_CACHE": str(tmp_path / "f")})
    assert "is a file, not a folder" in problem


def test_several_bad_variables_name_the_first_and_count_the_rest():
    with pytest.raises(GluonbenchError, match=r"and 2 more variable"):
        check_environment({"OMP_NUM_THREADS": "x", "MKL_NUM_THREADS": "0", "MXNET_ENGINE_TYPE": "y"})


@pytest.mark.parametrize("command", [["doctor"], ["compare", "a", "b"], ["sweep", "--workers", "0"]])
def test_the_cli_refuses_before_mxnet_is_imported(command):
    code = (
        "import sys\nfrom gluonbench.cli import main\n"
        f"rc = main({command!r})\n"
        "print('mxnet imported' if 'mxnet' in sys.modules else 'mxnet not imported', rc)\n"
    )
    env = dict(os.environ, OMP_NUM_THREADS="abc")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert out.stdout.strip() == "mxnet not imported 2", (out.stdout, out.stderr)
    assert out.stderr.strip() == (
        "gluonbench: error: OMP_NUM_THREADS='abc' must be a whole number of threads from 1 to 4096; "
        f"set it to a count such as {out.stderr.split('such as ')[1].split(' ')[0]} or unset it"
    )


def test_doctor_with_a_bad_thread_count_is_one_line(cli, monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "-3")
    assert_one_clear_line(cli("doctor"), "OMP_NUM_THREADS='-3'", "unset it")
