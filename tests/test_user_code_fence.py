"""User code cannot move the command's paths: a factory (or its module's import) that calls os.chdir gets the
working folder changed back once it returns, so a relative --out or --json still lands where the user meant."""

from __future__ import annotations

import logging
import os

import pytest

from gluonbench.errors import GluonbenchError

FACTORY = """
import os
import numpy as np
import gluonbench
from mxnet import gluon

{at_import}


def make(fail=False):
    {in_factory}
    if fail:
        raise ValueError("no data")
    x = np.random.rand(64, 4).astype("float32")
    y = np.random.randint(0, 2, 64).astype("float32")
    return gluonbench.PipelineSpec(dataset=gluon.data.ArrayDataset(x, y), net=gluon.nn.Dense(2), batch_size=16)
"""


@pytest.mark.parametrize("where", ["at_import", "in_factory"])
@pytest.mark.parametrize("fail", [False, True])
def test_a_factory_that_changes_folder_leaves_the_commands_folder_as_it_was(tmp_path, monkeypatch, caplog, where, fail):
    from gluonbench.workloads.spec import load_spec

    (tmp_path / "elsewhere").mkdir()
    code = {"at_import": "pass", "in_factory": "pass"}
    code[where] = f"os.chdir({str(tmp_path / 'elsewhere')!r})"
    (tmp_path / f"chdir_{where}_{fail}.py").write_text(FACTORY.format(**code))
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    target = f"{tmp_path / f'chdir_{where}_{fail}.py'}:make"
    with caplog.at_level(logging.WARNING):
        if fail:
            with pytest.raises(GluonbenchError, match="the factory raised ValueError"):
                load_spec(target, {"fail": True})
        else:
            load_spec(target)
    assert os.getcwd() == str(here)
    assert "changed the working folder to" in caplog.text and str(tmp_path / "elsewhere") in caplog.text
