"""The options several commands share, declared once, and the parser every command uses."""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from gluonbench.errors import GluonbenchError
from gluonbench.knobs import KNOBS
from gluonbench.settings import DEFAULT_OUT, SETTINGS


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line naming the fix, exit 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


SYNTHETIC_HELP = (
    "synthetic workload knobs (--dataset synthetic): real file reads, real CPU work, a real model; "
    "files are written once under --data-dir, $GLUONBENCH_CACHE or ~/.cache/gluonbench"
)


def add_source_args(p: argparse.ArgumentParser, modes: tuple[str, ...] = ("file", "fastfile", "pipe")) -> None:
    """--source/--uri/--endpoint-url/--cache-dir: train on a data set read through an input mode."""
    p.add_argument(
        "--source",
        choices=modes,
        help=f"input mode: the seed's CNN on --uri read through {', '.join(modes)} mode",
    )
    p.add_argument("--uri", help="data set for --source: an image folder, a packed folder, or s3://bucket/prefix")
    p.add_argument("--endpoint-url", help="S3-compatible endpoint for s3:// (MinIO, moto), e.g. http://127.0.0.1:9000")
    p.add_argument("--cache-dir", help="--source file: copy into this folder (default: a temporary one)")


PIPELINE_HELP = (
    "your own pipeline: a factory MODULE:FUNCTION (or path/file.py:FUNCTION) returning a gluonbench.PipelineSpec; "
    "the working folder is on sys.path"
)


def add_pipeline_args(p: argparse.ArgumentParser) -> None:
    """--pipeline MODULE:FUNCTION and --pipeline-option KEY=VALUE (see gluonbench.PipelineSpec)."""
    g = p.add_argument_group("your own pipeline (instead of --dataset)")
    add_setting(g, "pipeline", metavar="MODULE:FUNCTION", help=PIPELINE_HELP)
    g.add_argument(
        "--pipeline-option",
        dest="pipeline_option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help='keyword argument of the factory (a TOML value: 5, 0.5, true, "text"; else the text), repeatable',
    )


def pipeline_options(args: argparse.Namespace) -> dict[str, Any]:
    from gluonbench.workloads.spec import parse_pipeline_options

    return parse_pipeline_options(args.pipeline_option)


def source_from_args(args: argparse.Namespace, options: dict[str, Any]) -> dict[str, Any] | None:
    from gluonbench.config import source_options

    return source_options(options, args.source, args.uri, args.endpoint_url, args.cache_dir)


SCALE_FLAGS = ("devices", "gpus", "kvstore", "hosts", "servers", "launcher", "hostfile", "port", "diagnose_rank")


def add_scale_args(p: argparse.ArgumentParser) -> None:
    """Scale-out options (gluonbench.distributed): several devices, several processes or hosts."""
    g = p.add_argument_group("scale-out: data-parallel over devices (one process) or kvstore workers (dist_*)")
    add_setting(g, "devices", help="contexts in one process: --ctx cpu --devices 2 (batch size per device)")
    add_setting(g, "gpus", help="GPUs by index (implies --ctx gpu)", several="0,1,2,3 or 0..7")
    add_setting(
        g,
        "kvstore",
        help="local, device, nccl (one process) or dist_sync, dist_device_sync, dist_async (several processes)",
    )
    add_setting(g, "hosts", help="kvstore worker processes per job (one per host with ssh)", several="1,2,4")
    add_setting(g, "servers", shown="1")
    add_setting(g, "launcher", help="local (every process here on 127.0.0.1) or ssh (needs --hostfile)")
    add_setting(g, "hostfile", help="--launcher ssh: one host[:port] per line; servers first, then workers")
    add_setting(g, "port", shown="a free one; a busy one is replaced")
    add_setting(
        g,
        "diagnose_rank",
        help="with --diagnose and a dist_* kvstore: the worker rank that diagnoses its pipeline after training",
    )


def add_synthetic_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(SYNTHETIC_HELP)
    g.add_argument("--samples", type=int, help="training samples (default 4096; test: a quarter)")
    g.add_argument("--record-kb", type=float, help="file size per sample in KiB (default 4)")
    g.add_argument("--read-ms", type=float, help="latency added to each file read, in ms (a slow network FS)")
    g.add_argument(
        "--cold", action="store_true", default=None, help="evict each file from the page cache after reading it"
    )
    g.add_argument("--cpu-ms", type=float, help="CPU time of the per-sample transform's extra work, in ms")
    g.add_argument("--width", type=int, help="units per hidden layer of the model (default 64)")
    g.add_argument("--depth", type=int, help="hidden layers of the model (default 1)")


VISION_HELP = (
    "image workloads (--dataset imagefolder --data-dir DIR, --dataset seed004, or --source MODE --uri DIR): "
    "a gluoncv model, random weights, never downloaded"
)


VISION_FLAGS = ("model", "classes", "image_size", "preset", "layout")


def add_vision_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(VISION_HELP)
    add_setting(g, "model", note="e.g. resnet18_v1, mobilenetv2_1.0")
    add_setting(g, "classes", shown="the data set's classes")
    add_setting(g, "image_size", help="input size", shown="the model's, 224; 32 for cifar_*; 28 seed CNN")
    add_setting(
        g,
        "preset",
        help="per-sample training transforms",
        shown="imagenet: RandomResizedCrop, flip, jitter, lighting, normalise",
    )
    g.add_argument("--layout", choices=("files", "shards"), help="--dataset seed004: ~39 KB JPEGs or RecordIO shards")


def vision_options(args: argparse.Namespace) -> dict[str, Any]:
    """The image-workload flags given on the command line."""
    return {k: getattr(args, k) for k in VISION_FLAGS if getattr(args, k, None) is not None}


def source_workload(workload: str) -> str:
    from gluonbench.workloads.vision_zoo import VISION_WORKLOADS

    return workload if workload in VISION_WORKLOADS else "source"


def synthetic_options(args: argparse.Namespace, workload: str) -> dict[str, Any]:
    from gluonbench.config import SYNTHETIC_KNOBS, synthetic_options

    return synthetic_options(workload, {k: getattr(args, k, None) for k in SYNTHETIC_KNOBS})


def add_no_preflight(sub: Any) -> None:
    """``--no-preflight`` on the commands that run the cheap doctor checks first."""
    for name in ("sweep", "diagnose", "tune"):
        sub.choices[name].add_argument(
            "--no-preflight",
            dest="preflight",
            action="store_false",
            help="skip the cheap doctor checks (cores, /dev/shm, threads, data fs) that run first",
        )


def add_knob(
    p: Any,
    name: str,
    *,
    note: str = "",
    unset: bool = False,
    several: str = "",
    pipeline_default: bool = False,
) -> None:
    """The flag of loader knob ``name``, generated from its one declaration in :data:`gluonbench.knobs.KNOBS`:
    the flag, the settings key it fills (``args.workers`` for num_workers), its help and its default.

    ``note``: what the value means in this command (e.g. "the current setting, the baseline"); ``unset``: the
    flag defaults to None, so a ``--config`` file or the settings' own default applies; ``several``: the flag
    takes a list of values (``0..8``, ``0..8:2``, ``0,2,4``) and this is its default; ``pipeline_default``: the
    flag defaults to None, meaning the pipeline's own value, else the knob's default.
    """
    knob = KNOBS[name]
    text = knob.help + (f"; {note}" if note else "")
    default = None if unset or pipeline_default else knob.default
    if knob.kind is bool:
        p.add_argument(knob.flag, dest=knob.key, action="store_true", default=default, help=text)
        return
    if pipeline_default:
        text += f" (default: the pipeline's own {knob.name}, else {knob.default})"
    elif several:
        text += f"; several: {', '.join(LIST_SYNTAX)} (default {several})"
    else:
        text += f" (default: {knob.none})" if knob.default is None else f" (default {knob.default})"
    p.add_argument(knob.flag, dest=knob.key, type=str if several else int, default=default, help=text)


LIST_SYNTAX = ("0..8", "0..8:2", "0,2,4,8")
"""how a flag that takes several whole numbers writes them (:func:`gluonbench.ranges.parse_int_list`)"""


BY_GPU = "gpu:0 if MXNet sees a GPU, else cpu"


def add_dataset_args(p: Any, datasets: str, *, default: str | None = None, unset: bool = False) -> None:
    """``--dataset``, ``--data-dir``, ``--no-download``: the built-in data set a command runs on.

    ``datasets``: the names this command takes (its help); ``unset``: leave ``download`` None (a --config decides).
    """
    add_setting(p, "workload", default=default, help=datasets)
    add_setting(p, "data_dir", metavar="DIR")
    add_setting(p, "download", default=None if unset else True, help="never download; fail if no local copy")


def add_setting(
    p: Any,
    name: str,
    *,
    default: Any = None,
    shown: str | None = None,
    help: str = "",
    note: str = "",
    several: str = "",
    metavar: str | None = None,
    dest: str | None = None,
    aliases: tuple[str, ...] = (),
    **extra: Any,
) -> None:
    """The flag of shared setting ``name``, generated from its one declaration in
    :data:`gluonbench.settings.SETTINGS`: the flag, the settings field it fills (``args.timeout_s`` for
    ``--timeout``), its type (a switch for a bool: ``--diagnose``, ``--no-download``), its choices, its help and
    its default.

    ``default``: this command's (None: a ``--config`` file or the settings' own default applies; the help says
    the declaration's); ``shown``: the default in words where it is not a value (``gpu:0 if MXNet sees a GPU,
    else cpu``); ``help``: this command's words for the setting in place of the declaration's; ``note``: added to
    them; ``several``: the flag takes a list of values, written as this example (``1,2,4``); ``dest``: the
    attribute of the parsed arguments, where it is not the settings field; ``aliases``: more spellings of the
    flag; ``extra``: more of argparse's arguments (``nargs``).
    """
    s = SETTINGS[name]
    text = (help or s.help) + (f"; {note}" if note else "")
    if several:
        text += f", e.g. {several}"
    if shown is not None:
        text += f" (default: {shown})"
    elif s.kind is not bool and (default is not None or s.default is not None):
        text += f" (default {s.shown_default(default)})"
    if s.kind is bool:
        action = "store_false" if s.flag.startswith("--no-") else "store_true"
        p.add_argument(s.flag, *aliases, dest=dest or s.key, action=action, default=default, help=text, **extra)
        return
    kind = str if several or s.kind is str else s.kind
    if s.choices:
        extra.setdefault("choices", s.choices)
    p.add_argument(
        s.flag, *aliases, dest=dest or s.key, type=kind, default=default, metavar=metavar, help=text, **extra
    )


def add_budget(p: Any, what: str, note: str = "") -> None:
    """``--budget`` (``args.budget_s``, default 60 s): the seconds a budgeted command measures for."""
    p.add_argument("--budget", dest="budget_s", type=float, default=60.0, help=f"seconds for {what} (default 60){note}")


def add_emulate_step(p: Any, note: str = "") -> None:
    """``--emulate-step-ms``: the model step swapped for a timed wait (AU, as DLIO reports it)."""
    p.add_argument(
        "--emulate-step-ms",
        metavar="MS|TARGET",
        help="swap the model step for a timed wait: ms per batch, or resnet50@v100, resnet50@a100, resnet50@h100 "
        f"(DLIO's published per-batch times); reports AU{note}",
    )


def add_json(p: Any, what: str) -> None:
    """``--json FILE``: also write ``what`` as JSON (atomically)."""
    add_setting(p, "json_path", help=f"also write {what} as JSON (atomically)", metavar="FILE")


def add_results_out(p: Any, what: str = "run folders") -> None:
    """``--out`` (default :data:`gluonbench.report.DEFAULT_OUT`): the parent folder of the run folders a command
    writes."""
    add_setting(p, "out", default=DEFAULT_OUT, shown=f"{DEFAULT_OUT}/", help=f"parent folder of {what}", metavar="DIR")


def add_name(p: Any, shown: str, what: str = "run folder") -> None:
    """``--name``: the suffix of the folder a command writes (default ``shown``)."""
    add_setting(p, "name", help=f"suffix of the {what}", shown=shown)


def add_rule(p: Any, note: str = "") -> None:
    """``--rule RULE.PARAM=VALUE``: a profiler rule's parameter, repeatable."""
    p.add_argument("--rule", action="append", metavar="RULE.PARAM=VALUE", help=f"{note}override a rule parameter")


def add_script_args(p: Any, title: str, loader: str) -> None:
    """``-- CMD`` with ``--loader N`` and ``--start-timeout S``: a user's training script, run as written."""
    g = p.add_argument_group(title)
    g.add_argument(
        "--loader",
        type=int,
        metavar="N",
        help=f"{loader} the N-th DataLoader the script makes "
        "(default: the first whose batches are followed by a Trainer update)",
    )
    g.add_argument(
        "--start-timeout",
        dest="start_timeout_s",
        type=float,
        default=120.0,
        metavar="S",
        help="seconds the script may take to reach its first training steps (default 120)",
    )
    add_command(p, "a training command: python train.py ARGS")


def add_command(p: Any, help: str) -> None:
    """``-- CMD``: the program a command runs (everything after ``--``)."""
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD", help=help)


def script_command(args: argparse.Namespace) -> list[str]:
    """The training command after ``--`` (``[]`` when none was given)."""
    cmd = list(getattr(args, "cmd", None) or [])
    return cmd[1:] if cmd[:1] == ["--"] else cmd


SCRIPT_ONLY = ("loader", "start_timeout_s")
"""the flags of :func:`add_script_args` that mean something only with a training command"""


@dataclass(frozen=True)
class ScriptFlags:
    """A command's flags as they meet a training command (``gluonbench COMMAND [flags] -- python train.py``).

    ``apart``: the flags that do not apply to a training command (they name or shape a pipeline the script decides
    itself); ``given``: those of them set on the command line, ``defaulted``: those left at their default (each a
    settings key, e.g. ``workers``). With no training command, ``given`` holds the script-only flags
    (``--loader``, ``--start-timeout``) that were set instead.
    """

    command: str
    cmd: list[str]
    apart: tuple[str, ...]
    given: tuple[str, ...]
    flags: dict[str, str] = field(default_factory=dict)
    """each key's flag as the user writes it (``workers`` -> ``--workers``)"""

    @property
    def defaulted(self) -> tuple[str, ...]:
        """The flags that do not apply and were left at their defaults (nothing to say about them)."""
        return tuple(k for k in self.apart if k not in self.given)

    def flag(self, key: str) -> str:
        """The flag of settings key ``key`` as the user writes it."""
        return self.flags.get(key) or "--" + key.replace("_", "-")

    def line(self, why: str) -> str:
        """The one line naming every flag given that does not apply, and ``why`` (what the user does instead)."""
        named = [self.flag(k) for k in self.given]
        text = named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]
        if not self.cmd:
            verb = "goes" if len(named) == 1 else "go"
            return (
                f"{text} {verb} with a training command: add one after the flags, as in gluonbench {self.command} "
                "[flags] -- python train.py ARGS"
            )
        verb = "does" if len(named) == 1 else "do"
        return f"{text} {verb} not apply to a training command: {why}"

    def refuse(self, why: str = "", reasons: dict[str, str] | None = None) -> None:
        """Raise the one line (:meth:`line`) when a flag that does not apply was given; ``reasons``: a flag's own
        ``why`` (the first given flag that has one is the one said)."""
        if not self.given:
            return
        own = next((reasons[k] for k in self.given if reasons and k in reasons), why)
        raise GluonbenchError(self.line(own))


def script_flags(
    args: argparse.Namespace, add: Callable[[Any], Any], applies: tuple[str, ...], only: tuple[str, ...] = SCRIPT_ONLY
) -> ScriptFlags:
    """Which of a command's flags (the sub-parser ``add`` declares) do not apply to its training command, and which
    of those were given (compared with the parser's defaults): every flag but ``applies`` and ``only``, the flags
    that go with a training command alone (``--loader``, ``--start-timeout``). Without a training command, the
    flags of ``only`` that were given."""
    defaults, flags = _parser_defaults(add)
    cmd = script_command(args)
    command = add.__module__.rsplit(".", 1)[-1]
    if not cmd:
        set_ = tuple(k for k in only if k in defaults and getattr(args, k, defaults[k]) != defaults[k])
        return ScriptFlags(command, cmd, only, set_, flags)
    apart = tuple(k for k in defaults if k not in applies and k not in only and k != "cmd")
    given = tuple(k for k in apart if getattr(args, k, defaults[k]) != defaults[k])
    return ScriptFlags(command, cmd, apart, given, flags)


@functools.cache
def _parser_defaults(add: Callable[[Any], Any]) -> tuple[dict[str, Any], dict[str, str]]:
    """The defaults and flags of the sub-parser ``add`` declares, read from a fresh one (the command's own flags:
    not the global ones, nor those added to several commands afterwards)."""
    parser = add(Parser(prog="gluonbench").add_subparsers(parser_class=Parser))
    defaults: dict[str, Any] = {}
    flags: dict[str, str] = {}
    for action in parser._actions:
        if action.dest in ("help", argparse.SUPPRESS):
            continue
        defaults[action.dest] = action.default
        longs = [s for s in action.option_strings if s.startswith("--")]
        if longs:
            flags[action.dest] = longs[0]
    return defaults, flags
