"""The command line is built from declarations: each loader knob's flag, in every command that has it, comes
from its one :class:`gluonbench.knobs.Knob` (flag, settings key, help, default), and each shared setting's from
its one :class:`gluonbench.settings.Setting`."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from gluonbench import knobs, settings
from gluonbench.cli import build_parser
from gluonbench.errors import GluonbenchError

REPO = Path(__file__).resolve().parents[1]


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def _actions(declared: Iterable[settings.Setting]) -> list[tuple[str, Any, argparse.Action]]:
    """(command, declaration, its flag's action) for each declaration's flag in each command."""
    declared = list(declared)
    out = []
    for command, sub in _subparsers(build_parser()).items():
        for action in sub._actions:
            for one in declared:
                if one.flag in action.option_strings:
                    out.append((command, one, action))
    return out


def test_every_knob_flag_is_generated_from_its_declaration():
    found = _actions(knobs.KNOBS.values())
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


def test_every_shared_setting_flag_is_generated_from_its_declaration():
    found = _actions(settings.SETTINGS.values())
    assert {s.name for _, s, _ in found} == set(settings.SETTINGS)  # each declared setting is some command's flag
    assert {c for c, s, _ in found if s.name == "seed"} == {"sweep", "diagnose", "tune", "io", "pack", "stream"}
    assert {c for c, s, _ in found if s.name == "ctx"} == {"sweep", "diagnose", "tune", "check", "doctor", "profile"}
    for command, setting, action in found:
        # its flag first (check's --dataset is --workload too), the settings field it fills, its type
        assert action.option_strings[0] == setting.flag and action.dest == setting.key, (command, setting.name)
        if setting.kind is bool:  # a switch: --diagnose turns it on, --no-download off
            assert action.nargs == 0 and action.const is not setting.flag.startswith("--no-"), (command, setting.name)
            continue
        want = str if setting.kind is str or "e.g." in action.help else setting.kind
        assert action.type is want, (command, setting.name, action.type)
        assert tuple(action.choices or ()) == setting.choices, (command, setting.name)
    # no command declares one of these flags by hand
    source = "\n".join(p.read_text() for p in (REPO / "gluonbench" / "commands").glob("*.py"))
    for setting in settings.SETTINGS.values():
        assert f'add_argument("{setting.flag}"' not in source and f'"{setting.flag}",' not in source, setting.flag


def test_one_setting_declaration_changes_the_flag_in_every_command(monkeypatch):
    changed = dataclasses.replace(settings.SETTINGS["seed"], help="the seed (changed once)", flag="--random-seed")
    monkeypatch.setitem(settings.SETTINGS, "seed", changed)
    parser = build_parser()
    for command in ("sweep", "diagnose", "tune"):
        sub = _subparsers(parser)[command]
        action = next(a for a in sub._actions if a.dest == "seed")
        assert action.option_strings == ["--random-seed"] and action.help.startswith("the seed (changed once)")
        assert sub.parse_args(["--random-seed", "7"]).seed == 7


def test_every_settings_type_checks_the_shared_settings_against_their_declaration():
    from gluonbench.bounds import LIMITS
    from gluonbench.config import DiagnoseSettings, IoSettings, SweepSettings, TuneSettings

    top = settings.SETTINGS["seed"].maximum
    for make in (
        lambda: SweepSettings(seed=top + 1),
        lambda: DiagnoseSettings(seed=top + 1),
        lambda: TuneSettings(seed=top + 1),
        lambda: IoSettings(seed=top + 1),
    ):
        with pytest.raises(GluonbenchError, match=f"seed must be from 0 to {top}"):
            make().check()
    with pytest.raises(GluonbenchError, match="max_workers must be 0 or more"):
        TuneSettings(max_workers=-1).check()
    with pytest.raises(GluonbenchError, match="ctx 'tpu' is not a context"):
        DiagnoseSettings(ctx="tpu").check()
    with pytest.raises(GluonbenchError, match="epochs must be from 1 to 100000"):
        SweepSettings(epochs=100_001).check()
    # the bounds table is the declarations'
    for s in (*knobs.KNOBS.values(), *settings.SETTINGS.values()):
        if s.kind is int and s.maximum is not None:
            assert LIMITS[s.key] == (s.minimum, s.maximum), s.name
