"""The command line is built from declarations: each loader knob's flag, in every command that has it, comes
from its one :class:`gluonbench.knobs.Knob` (flag, settings key, help, default)."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from gluonbench import knobs
from gluonbench.cli import build_parser
from gluonbench.errors import GluonbenchError


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _knob_actions() -> list[tuple[str, knobs.Knob, argparse.Action]]:
    out = []
    for command, sub in _subparsers(build_parser()).items():
        for action in sub._actions:
            for knob in knobs.KNOBS.values():
                if knob.flag in action.option_strings:
                    out.append((command, knob, action))
    return out


def test_every_knob_flag_is_generated_from_its_declaration():
    found = _knob_actions()
    flags = {(command, knob.name) for command, knob, _ in found}
    # the commands that take the loader's knobs
    assert {c for c, _ in flags} == {"sweep", "diagnose", "tune", "profile", "check", "doctor", "io"}
    assert {n for c, n in flags if c in ("sweep", "profile", "tune")} == set(knobs.KNOBS)
    for command, knob, action in found:
        assert action.option_strings == [knob.flag], (command, knob.name)
        assert action.dest == knob.key, (command, knob.name)
        assert action.help.startswith(knob.help), (command, knob.name, action.help)
        assert action.default in (knob.default, None), (command, knob.name, action.default)


def test_one_declaration_changes_the_flag_in_every_command(monkeypatch):
    changed = dataclasses.replace(knobs.KNOBS["prefetch"], help="batches queued (changed once)", flag="--queue")
    monkeypatch.setitem(knobs.KNOBS, "prefetch", changed)
    parser = build_parser()
    for command in ("sweep", "tune", "profile", "doctor"):
        sub = _subparsers(parser)[command]
        action = next(a for a in sub._actions if a.dest == "prefetch")
        assert action.option_strings == ["--queue"] and action.help.startswith("batches queued (changed once)")
        assert sub.parse_args(["--queue", "3"]).prefetch == 3


@pytest.mark.parametrize("command", ["sweep", "diagnose", "tune", "profile", "check", "doctor", "io"])
def test_knob_flags_parse_as_before(command):
    sub = _subparsers(build_parser())[command]
    required = ["--baseline", "b.json"] if command == "check" else []
    args = sub.parse_args([*required, "--batch-size", "32"])
    assert args.batch_size == 32
    defaults = sub.parse_args(required)
    # the commands that run a pipeline leave the batch size unset (the pipeline's own, else the declared default);
    # doctor and io start from the declared default
    assert defaults.batch_size == (64 if command in ("doctor", "io") else None)


def test_every_command_checks_the_loader_knobs_against_their_declaration():
    from gluonbench.config import DiagnoseSettings, SweepSettings, TuneSettings

    top = knobs.KNOBS["num_workers"].maximum
    for make in (
        lambda: SweepSettings(workers=(0, top + 1)),
        lambda: DiagnoseSettings(workers=top + 1),
        lambda: TuneSettings(workers=top + 1),
    ):
        with pytest.raises(GluonbenchError, match=f"workers must be .*{top}"):
            make().check()
    with pytest.raises(GluonbenchError, match="prefetch must be 0 or more"):
        TuneSettings(prefetch=-1).check()
    with pytest.raises(GluonbenchError, match="batch_size must be at least 1"):
        DiagnoseSettings(batch_size=0).check()
