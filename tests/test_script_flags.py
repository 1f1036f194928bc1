"""One rule for every command's flags beside a training command (``gluonbench COMMAND [flags] -- python train.py``):
the flags that do not apply are refused in one line naming each one given; the script-only flags without a training
command likewise. Parsed here, not run: milliseconds."""

from __future__ import annotations

import pytest

from gluonbench.commands import check, diagnose, sweep, tune
from gluonbench.commands.options import SCRIPT_ONLY, Parser, script_flags
from gluonbench.errors import GluonbenchError
from gluonbench.script.run import parse_command

SCRIPT = ["--", "python", "train.py"]


def _flags(module, *words: str):
    parser = Parser(prog="gluonbench")
    module.add(parser.add_subparsers(dest="command", parser_class=Parser))
    args = parser.parse_args([module.__name__.rsplit(".", 1)[-1], *words])
    return script_flags(args, module.add, module.SCRIPT_APPLIES, getattr(module, "SCRIPT_ONLY_FLAGS", SCRIPT_ONLY))


def _refused(module, *words: str, why: str = "the script decides") -> str:
    flags = _flags(module, *words)
    with pytest.raises(GluonbenchError) as err:
        flags.refuse(why)
    return str(err.value)


@pytest.mark.parametrize("module", [check, diagnose, sweep, tune])
def test_flags_left_at_their_defaults_are_not_refused_and_those_given_are_named_in_one_line(module):
    base = ["--baseline", "b.json"] if module is check else []
    flags = _flags(module, *base, *SCRIPT)
    assert flags.cmd == ["python", "train.py"] and flags.given == ()
    assert "batch_size" in flags.apart and "batch_size" in flags.defaulted  # does not apply; left at its default
    flags.refuse("never raised")
    line = _refused(module, *base, "--batch-size", "64", "--ctx", "cpu", *SCRIPT)
    assert line.startswith("--batch-size and --ctx do not apply to a training command: the script decides"), line
    assert _flags(module, *base, "--batch-size", "64", *SCRIPT).defaulted == tuple(
        k for k in _flags(module, *base, *SCRIPT).apart if k != "batch_size"
    )


@pytest.mark.parametrize("module", [check, diagnose, sweep, tune])
def test_the_flags_that_apply_to_a_script_are_not_refused(module):
    applies = {
        check: ["--baseline", "b.json", "--max-slowdown", "9%", "--budget", "30", "--json", "c.json"],
        diagnose: ["--budget", "30", "--json", "d.json", "--out", "o", "--threshold", "rel_ci=0.1"],
        sweep: ["--workers", "0,2", "--max-batches", "50", "--repeat", "2", "--timeout", "60", "--out", "o"],
        tune: ["--budget", "30", "--max-workers", "4", "--json", "t.json", "--out", "o"],
    }[module]
    flags = _flags(module, *applies, "--loader", "2", "--start-timeout", "30", *SCRIPT)
    assert flags.given == (), flags.given


def test_a_script_only_flag_without_a_training_command_is_one_line_naming_the_command():
    line = _refused(tune, "--loader", "2")
    assert line.startswith("--loader goes with a training command") and "gluonbench tune [flags] -- python" in line
    line = _refused(sweep, "--loader", "2", "--start-timeout", "9")
    assert line.startswith("--loader and --start-timeout go with a training command") and "gluonbench sweep" in line
    assert _flags(diagnose, "--workers", "2").given == ()  # no training command: the pipeline flags are the command's


def test_tune_says_why_the_batch_size_and_the_loader_knobs_are_not_taken():
    def line(*words: str) -> str:
        with pytest.raises(GluonbenchError) as err:
            _flags(tune, *words, *SCRIPT).refuse(tune.SCRIPT_WHY, tune.script_reasons())
        return str(err.value)

    assert "the batch size is not searched in a script" in line("--batch-size", "64")
    assert "the tune searches num_workers" in line(
        "--seed", "2", "--prefetch", "4"
    )  # the first with a reason of its own
    assert line("--seed", "2").endswith(tune.SCRIPT_WHY)


@pytest.mark.parametrize("command", ["diagnose", "sweep", "tune", "check"])
def test_a_bad_training_command_names_the_command_in_use_in_its_example(command):
    for cmd in (["bash", "x.sh"], ["python"], ["python", "-m"]):
        with pytest.raises(GluonbenchError, match=f"e.g. gluonbench {command} -- python"):
            parse_command(cmd, command)
