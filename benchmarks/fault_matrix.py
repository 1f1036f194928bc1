"""Bad inputs and faults across every subcommand, and how many gluonbench handles well.

The cases are generated from the CLI's own parser: every option of every
subcommand gets the bad values of its kind (a whole number gets ``x``, ``1.5``
and ``-1``; a time gets ``nan``, ``inf`` and ``-1``; a path to read gets a
missing path, a file where a folder belongs and the reverse; a path to write
gets a file, a path under a file and a folder nothing may write in; a name gets
``../x`` and ``a/b``; ...), then a list of faults is added: torn and empty
``runs.jsonl``, broken ``sweep.json`` and configs, a folder in use, a 64 KB
``/dev/shm``, a full disk, an S3 endpoint that never answers, a ``.jpg`` that is
not an image, ``kill -9`` of a sweep.

Each case runs ``python -m gluonbench ...`` in a fresh folder (its own
``TMPDIR``) and is *handled well* when:

* the exit code is 2 (or the code the case documents: 137 for ``kill -9``);
* stderr is exactly one non-empty line, naming the option (or the path) at fault,
  with no ``Traceback``;
* nothing is left behind: no new file in the case's folder or ``TMPDIR``, no
  process of the case still running; and, once for the whole matrix (cases run
  side by side), no new MXNet segment in ``/dev/shm``.

    python benchmarks/fault_matrix.py                    # all cases, 3 at a time (about 6 minutes on 2 cores)
    python benchmarks/fault_matrix.py --only sweep --jobs 1 --json results/benchmarks/fault_matrix.json
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import platform
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
MARK = "GLUONBENCH_FAULT_CASE"
PLAN_LINE = re.compile(r"^(sweep|diagnose|tune|io): |^profile: running ")
"""the first line of a long command (what it is about to run, gluonbench.console): the same rule as tests/conftest.py"""
SILENT_S3_TIMEOUT = "1"
CREDS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


@dataclass
class Case:
    """One bad input or fault: the command, the documented exit code and what its one line must name."""

    id: str
    args: list[str]
    needle: str
    """what the one line must name (case-insensitive; ``|`` separates alternatives: the flag or the bad value)"""
    code: int = 2
    setup: str = ""
    """a named preparation of the case folder (see ``prepare``)"""
    mounts: dict[str, str] = field(default_factory=dict)
    """tmpfs mounts (point -> size) in a private mount namespace"""
    env: dict[str, str] = field(default_factory=dict)
    kill_after_workers: bool = False
    untouched: str = ""
    """a file (``{case}/victim``) outside what the command may write: its mode and content must not change"""
    max_s: float = 0.0
    """when > 0: the case must end within this many seconds (a budget plus its grace)"""
    kill_when: str = ""
    """a glob under the case folder: the command is killed with SIGKILL (its process only) once it matches"""
    then: list[str] = field(default_factory=list)
    """a second gluonbench command run after the first (with the same TMPDIR): the "next start" that cleans up"""
    shell: str = ""
    """run through ``bash -c``: ``{cmd}`` in it is replaced by the command (``ulimit -n 20; exec {cmd} >&-``)"""
    quiet: bool = False
    """stderr is closed: handled means the documented exit code and nothing printed (nothing can be)"""
    keeps: str = ""
    """names in the case folder the command keeps by design (a sweep's run folder with its failed run recorded);
    ``|`` separates several"""
    unchanged: list[str] = field(default_factory=list)
    """input files (``{case}/base.json``) whose bytes must be the same after the command"""
    secrets: list[str] = field(default_factory=list)
    """values that must not appear in any file the command wrote or changed under the case folder"""
    expect: str = ""
    """a glob under the case folder that must match afterwards: the output landed where it was meant to"""
    timeout: float = 0.0
    """when > 0: this case's own limit instead of --timeout (a deadline longer than the matrix's)"""
    fill_whole: bool = False
    """fill the case's tmpfs mounts to the last byte before the command starts"""


@dataclass
class Outcome:
    id: str
    command: str
    ok: bool
    why: str
    code: int | None
    seconds: float
    stderr: str


# -- shared fixtures (made once) ----------------------------------------------------------------


def make_fixtures(root: Path) -> dict[str, Path]:
    from gluonbench.data.images import make_jpeg_folder
    from gluonbench.data.recordio import pack

    sys.path.insert(0, str(REPO / "benchmarks"))
    from _io_common import mnist_dir

    fx = {"root": root}
    fx["jpegs"] = root / "jpegs"
    make_jpeg_folder(fx["jpegs"], 200_000, 10_000, mnist_dir())
    fx["packed"] = root / "packed"
    pack(fx["jpegs"], fx["packed"], shard_size=100_000)
    fx["mnist"] = Path(mnist_dir())
    fx["file"] = root / "a-file.txt"
    fx["file"].write_text("not a folder\n")
    fx["binary"] = root / "binary.bin"
    fx["binary"].write_bytes(bytes(range(256)) * 4)
    fx["empty"] = root / "empty-folder"
    fx["empty"].mkdir()
    fx["under_file"] = fx["file"] / "sub"
    fx["baseline"] = root / "baseline.json"  # a valid baseline (a check's input, read-only for the cases)
    fx["baseline"].write_text(json.dumps(_r4_baseline_doc()))
    for side in ("tune_a", "tune_b"):  # two tune records for compare
        fx[side] = root / f"{side}.json"
        fx[side].write_text(json.dumps(R4B_TUNE))
    fx["locked"] = root / "locked"
    fx["locked"].mkdir()
    fx["locked"].chmod(0o555)
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", str(fx["locked"])], capture_output=True)
    return fx


def release_fixtures(fx: dict[str, Path]) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(fx["locked"])], capture_output=True)
    fx["locked"].chmod(0o755)


# -- cases generated from the parser -----------------------------------------------------------

BASE = {
    "sweep": ["--workers", "0", "--max-batches", "2", "--out", "{case}/out"],
    "diagnose": ["--budget", "2"],
    "pack": ["{jpegs}", "{case}/out"],
    "verify": ["{packed}"],
    "stream": ["{packed}", "--channel", "train", "--channel-dir", "{case}/ch", "--open-timeout", "2"],
    "io": [
        "--modes",
        "file",
        "--sizes",
        "small",
        "--layouts",
        "files",
        "--small",
        "200KB",
        "--large",
        "400KB",
        "--file-size",
        "20KB",
        "--epochs",
        "1",
        "--out",
        "{case}/out",
        "--work-dir",
        "{case}/work",
        "--mnist-dir",
        "{mnist}",
    ],
    "report": [],
}

INT_BAD = ["x", "-1"]
FLOAT_BAD = ["nan", "inf", "-1"]
SIZE_BAD = ["nan", "-5MB", "1XB", "0", "inf"]
NAME_BAD = ["../x", "a/b", ".."]
READ_DIR_BAD = ["{case}/missing", "{file}", "{binary}"]
WRITE_DIR_BAD = ["{file}", "{under_file}", "{locked}/x"]
WRITE_FILE_BAD = ["{empty}", "{under_file}", "{locked}/x.json", "{case}/missing/x.json"]
URL_BAD = ["ftp://127.0.0.1", "http://:9000", "not a url", "http//127.0.0.1:9000"]

STRING_BAD: dict[tuple[str, str], list[str]] = {
    ("sweep", "workers"): ["8..0", "a,b", "0..8:0", "-1"],
    ("sweep", "workload"): ["cifar", ""],
    ("diagnose", "workload"): ["cifar", ""],
    ("sweep", "ctx"): ["tpu", "gpu:x", "gpu:-1"],
    ("diagnose", "ctx"): ["tpu", "gpu:x"],
    ("sweep", "data_dir"): READ_DIR_BAD,
    ("diagnose", "data_dir"): READ_DIR_BAD,
    ("sweep", "uri"): ["{case}/missing", "{file}", "s3://"],
    ("diagnose", "uri"): ["{case}/missing", "{file}", "s3://"],
    ("sweep", "endpoint_url"): URL_BAD,
    ("diagnose", "endpoint_url"): URL_BAD[:2],
    ("stream", "endpoint_url"): URL_BAD,
    ("io", "endpoint_url"): URL_BAD[:2],
    ("sweep", "cache_dir"): ["{file}", "{under_file}"],
    ("sweep", "name"): [*NAME_BAD, ""],
    ("io", "name"): NAME_BAD,
    ("pack", "name"): NAME_BAD,
    ("sweep", "out"): WRITE_DIR_BAD,
    ("io", "out"): WRITE_DIR_BAD,
    ("sweep", "resume"): ["{case}/missing", "{file}", "{empty}"],
    ("sweep", "config"): ["{case}/missing", "{empty}", "{binary}"],
    ("sweep", "overrides"): [
        "nokey",
        "bogus=1",
        "batch_size=x",
        "timeout_s=nan",
        "timeout_s=inf",
        "workers=8..0",
        "name=../x",
        "epochs=0",
        "seed=-1",
    ],
    ("diagnose", "json"): WRITE_FILE_BAD,
    ("diagnose", "cache_dir"): ["{file}"],
    ("diagnose", "thresholds"): ["x", "bogus=1", "rel_ci=nan", "secondary_share=2", "min_blocks=0", "rel_ci=inf"],
    ("pack", "src"): ["{case}/missing", "{file}", "{empty}"],
    ("pack", "out_dir"): ["{jpegs}", "{jpegs}/packed", "{file}", "{packed}"],
    ("pack", "shard_size"): SIZE_BAD,
    ("verify", "out_dir"): ["{case}/missing", "{file}", "{empty}", "{jpegs}"],
    ("stream", "src"): ["{case}/missing", "{file}", "{empty}"],
    ("stream", "channel"): [*NAME_BAD, ""],
    ("stream", "channel_dir"): ["{file}", "{under_file}"],
    ("io", "modes"): ["bogus", ""],
    ("io", "sizes"): ["bogus", ""],
    ("io", "layouts"): ["bogus", ""],
    ("io", "small"): SIZE_BAD,
    ("io", "large"): SIZE_BAD[:3],
    ("io", "file_size"): SIZE_BAD[:3],
    ("io", "shard_size"): SIZE_BAD[:3],
    ("io", "src"): ["{case}/missing", "{file}"],
    ("io", "s3_uri"): ["http://x", "s3://"],
    ("io", "work_dir"): ["{file}", "{under_file}"],
    ("io", "mnist_dir"): ["{case}/missing", "{file}"],
    ("report", "run_dir"): ["{case}/missing", "{file}", "{empty}"],
}
"""Bad values of options that take a string, by (subcommand, dest)."""

CONTEXT = {
    # options that only mean something beside others
    ("sweep", "uri"): ["--source", "file"],
    ("diagnose", "uri"): ["--source", "file"],
    ("sweep", "endpoint_url"): ["--source", "file", "--uri", "s3://bucket/x"],
    ("diagnose", "endpoint_url"): ["--source", "file", "--uri", "s3://bucket/x"],
    ("io", "endpoint_url"): ["--s3-uri", "s3://bucket/x"],
    ("sweep", "cache_dir"): ["--source", "file", "--uri", "{packed}"],
    ("diagnose", "cache_dir"): ["--source", "file", "--uri", "{packed}"],
    ("sweep", "samples"): ["--dataset", "synthetic"],
    ("stream", "shard_index"): ["--shard-count", "2"],
    ("stream", "shard_count"): ["--shard-index", "0"],
}
SYNTHETIC = {"samples", "record_kb", "read_ms", "cpu_ms", "width", "depth"}
SKIP = {("sweep", "resume")}  # resume cases replace the base command: generated with the faults below


def _flag(action) -> str:
    return action.option_strings[-1] if action.option_strings else action.dest


def _needle(action) -> str:
    """What the one line must name: the flag without dashes and a trailing -s, or the positional's value."""
    flag = _flag(action).lstrip("-")
    return flag.removesuffix("-s") if flag.endswith("-s") else flag


def parser_cases() -> list[Case]:
    from gluonbench.cli import build_parser

    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    cases: list[Case] = []
    for command, sp in sub.choices.items():
        if command not in BASE:  # tune, profile, check, ...: their rows are hand-written (reliability_cases)
            continue
        for action in sp._actions:
            if action.dest in ("help",) or action.nargs == 0 or (command, action.dest) in SKIP:
                continue
            key = (command, action.dest)
            if action.choices:
                values = ["bogus"]
            elif key in STRING_BAD:
                values = STRING_BAD[key]
            elif action.type is int:
                values = INT_BAD + (["4294967296"] if action.dest == "seed" else [])
            elif action.type is float:
                values = FLOAT_BAD
            else:
                print(f"no bad values for {command} {_flag(action)}", file=sys.stderr)
                continue
            context = list(CONTEXT.get(key, []))
            if command in ("sweep", "diagnose") and action.dest in SYNTHETIC and action.dest != "samples":
                context = ["--dataset", "synthetic", "--samples", "256"]
            for n, value in enumerate(values):
                base = list(BASE[command])
                if not action.option_strings:  # a positional: replace the base's
                    positionals = [a.dest for a in sp._actions if not a.option_strings and a.dest != "help"]
                    i = positionals.index(action.dest)
                    base = ([*base[:i], value, *base[i + 1 :]]) if base else [value]
                    args = [command, *base, *context]
                    needle = "{value}"
                else:
                    if action.dest == "out" and "--out" in base:
                        j = base.index("--out")
                        del base[j : j + 2]
                    args = [command, *base, *context, f"{_flag(action)}={value}"]
                    needle = _needle(action) + (f"|{value}" if value.strip() else "")
                    if action.dest in ("overrides", "thresholds") and "=" in value:
                        needle += "|" + value.split("=")[0]
                if action.dest == "config":
                    needle = "config"
                cases.append(Case(f"{command}:{_flag(action)}:{n}", args, needle.replace("{value}", value)))
    return cases


def fault_cases() -> list[Case]:
    s = BASE["sweep"]
    cases = [
        Case("report:torn-only", ["report", "{case}/run"], "runs.jsonl", setup="run:torn-only"),
        Case("report:not-objects", ["report", "{case}/run"], "no valid record", setup="run:not-objects"),
        Case("report:empty-runs", ["report", "{case}/run"], "no valid record", setup="run:empty"),
        Case("report:no-runs", ["report", "{case}/run"], "runs.jsonl", setup="run:no-runs"),
        Case("resume:corrupt-settings", ["sweep", "--resume", "{case}/run"], "sweep.json", setup="run:bad-json"),
        Case("resume:settings-not-object", ["sweep", "--resume", "{case}/run"], "sweep.json", setup="run:list"),
        Case("resume:settings-bad-value", ["sweep", "--resume", "{case}/run"], "batch_size", setup="run:bad-value"),
        Case("resume:settings-nan", ["sweep", "--resume", "{case}/run"], "timeout", setup="run:nan"),
        Case("resume:folder-in-use", ["sweep", "--resume", "{case}/run"], "in use", setup="run:locked"),
        Case("config:invalid-toml", ["sweep", *s, "--config", "{case}/c.toml"], "config", setup="toml:invalid"),
        Case("config:nan", ["sweep", *s, "--config", "{case}/c.toml"], "timeout", setup="toml:nan"),
        Case("config:inf", ["sweep", *s, "--config", "{case}/c.toml"], "timeout", setup="toml:inf"),
        Case("config:sweep-not-table", ["sweep", *s, "--config", "{case}/c.toml"], "config", setup="toml:scalar"),
        Case("config:string-number", ["sweep", *s, "--config", "{case}/c.toml"], "batch_size", setup="toml:string"),
        Case("config:float-workers", ["sweep", *s, "--config", "{case}/c.toml"], "workers", setup="toml:workers"),
        Case("config:options-not-table", ["sweep", *s, "--config", "{case}/c.toml"], "options", setup="toml:options"),
        Case("shm:sweep-64k", ["sweep", "--workers", "2", "--max-batches", "2", "--out", "{case}/out"], "/dev/shm",
             mounts={"/dev/shm": "64k"}),
        Case("shm:diagnose-64k", ["diagnose", "--workers", "2", "--budget", "5"], "/dev/shm", mounts={"/dev/shm": "64k"}),
        Case("shm:thread-pool-64k", ["sweep", "--workers", "2", "--thread-pool", "--max-batches", "2", "--out",
             "{case}/out"], "/dev/shm", mounts={"/dev/shm": "64k"}),
        Case("disk-full:sweep", ["sweep", *s[:-1], "{case}/full"], "disk full", setup="fill:{case}/full",
             mounts={"{case}/full": "256k"}),
        Case("disk-full:pack", ["pack", "{jpegs}", "{case}/full/out"], "disk full", setup="fill:{case}/full",
             mounts={"{case}/full": "256k"}),
        Case("s3:silent-endpoint-stream", ["stream", "s3://bucket/x", "--channel", "train", "--channel-dir",
             "{case}/ch", "--endpoint-url", "{silent}"], "did not answer",
             env={"GLUONBENCH_S3_TIMEOUT_S": SILENT_S3_TIMEOUT, **CREDS}),
        Case("s3:silent-endpoint-sweep", ["sweep", *s, "--source", "file", "--uri", "s3://bucket/x",
             "--endpoint-url", "{silent}"], "did not answer", env={"GLUONBENCH_S3_TIMEOUT_S": SILENT_S3_TIMEOUT, **CREDS}),
        Case("pack:jpg-not-an-image", ["pack", "{case}/src", "{case}/out"], "not one", setup="src:bad-jpg"),
        Case("verify:truncated-shard", ["verify", "{case}/packed"], ".rec", setup="packed:truncated"),
        Case("verify:bad-manifest", ["verify", "{case}/packed"], "manifest", setup="packed:bad-manifest"),
        Case("stream:stale-fifo-no-consumer", ["stream", "{packed}", "--channel", "train", "--channel-dir",
             "{case}/ch", "--open-timeout", "2"], "no consumer", setup="fifo:stale"),
        Case("sweep:kill-9", ["sweep", "--workers", "2", "--epochs", "5", "--out", "{case}/out"], "", code=-9,
             kill_after_workers=True),
    ]  # fmt: skip
    return cases + reliability_cases()


NEXT_START = ["report", "{case}/no-such-run"]  # any command: gluonbench sweeps stale scratch folders on start
# a program whose grandchild leaves the process group with setsid() and would sleep for ten minutes
SETSID_GRANDCHILD = (
    "import os, time\n"
    "if os.fork() == 0:\n"
    "    os.setsid()\n"
    "    open('grandchild.pid', 'w').write(str(os.getpid()))\n"
    "    time.sleep(600)\n"
    "    os._exit(0)\n"
    "time.sleep(600)\n"
)


def reliability_cases() -> list[Case]:
    """Issue #21's classes: links and devices at output paths, shell payloads in hostfiles, budgets that a
    stage outlives, values without bounds, values silently changed; ``tune`` and ``profile`` rows included."""
    s = BASE["sweep"]
    v = "{case}/victim"
    cases = [
        # 1. touching what is not ours
        Case("diagnose:r21-json-symlink", ["diagnose", "--budget", "2", "--json", "{case}/link.json"], "symbolic link",
             setup="link:{case}/link.json", untouched=v),
        Case("tune:r21-json-symlink", ["tune", "--budget", "10", "--json", "{case}/link.json"], "symbolic link",
             setup="link:{case}/link.json", untouched=v),
        Case("tune:r21-toml-fifo", ["tune", "--budget", "10", "--toml", "{case}/fifo.toml"], "not a regular file",
             setup="fifo-at:{case}/fifo.toml"),
        Case("resume:r21-runs-symlink", ["sweep", "--resume", "{case}/run"], "symbolic link", setup="run:link-runs",
             untouched=v),
        Case("resume:r21-lock-symlink", ["sweep", "--resume", "{case}/run"], "symbolic link", setup="run:link-lock",
             untouched=v),
        Case("resume:r21-logs-symlink", ["sweep", "--resume", "{case}/run"], "symbolic link", setup="run:link-logs"),
        Case("sweep:r21-endpoint-credentials", ["sweep", *s, "--source", "file", "--uri", "s3://b/x", "--endpoint-url",
             "http://user:s3cret@127.0.0.1:9"], "credentials"),
        # 2. shell injection
        Case("sweep:r21-hostfile-injection", ["sweep", *s, "--kvstore", "dist_sync", "--launcher", "ssh", "--hostfile",
             "{case}/hosts.txt"], "line 1", setup="hosts:inject"),
        Case("sweep:r21-hostfile-binary", ["sweep", *s, "--kvstore", "dist_sync", "--launcher", "ssh", "--hostfile",
             "{binary}"], "hostfile"),
        # 4. hangs past the budget
        Case("diagnose:r21-read-past-budget", ["diagnose", "--dataset", "synthetic", "--read-ms", "100000", "--budget",
             "5"], "stalled in read", max_s=90),
        Case("tune:r21-read-past-budget", ["tune", "--dataset", "synthetic", "--read-ms", "100000", "--budget", "10"],
             "stalled in read", max_s=100),
        # 6. bounds
        Case("sweep:r21-huge-range", ["sweep", "--workers", "0..99999999999", "--out", "{case}/out"], "--workers"),
        Case("sweep:r21-devices", ["sweep", *s, "--devices", "100000"], "--devices"),
        Case("sweep:r21-400-digit-batch", ["sweep", *s, "--batch-size", "1" * 400], "--batch-size"),
        Case("sweep:r21-timeout-1e300", ["sweep", *s, "--timeout", "1e300"], "--timeout"),
        Case("sweep:r21-long-component", ["sweep", "--workers", "0", "--out", "{case}/" + "d" * 300], "--out"),
        Case("sweep:r21-long-path", ["sweep", "--workers", "0", "--out", "{case}/" + "d/" * 2100], "--out"),
        Case("sweep:r21-name-not-utf8", ["sweep", *s, "--name", "\udcff"], "--name"),
        Case("io:r21-400-digit-size", ["io", *BASE["io"], "--small", "1" * 400], "size"),
        Case("config:r21-dev-zero", ["sweep", *s, "--config", "/dev/zero"], "regular file"),
        Case("config:r21-deep", ["sweep", *s, "--config", "{case}/c.toml"], "nested", setup="toml:deep"),
        Case("verify:r21-deep-manifest", ["verify", "{case}/packed"], "manifest", setup="packed:deep-manifest"),
        # 7. silently accepted
        Case("config:r21-bool-batch", ["sweep", *s, "--config", "{case}/c.toml"], "batch_size", setup="toml:bool"),
        Case("config:r21-fraction-batch", ["sweep", *s, "--config", "{case}/c.toml"], "batch_size",
             setup="toml:fraction"),
        Case("config:r21-bool-timeout", ["sweep", *s, "--config", "{case}/c.toml"], "timeout", setup="toml:bool-timeout"),
        Case("config:r21-key-beside-sweep", ["sweep", *s, "--config", "{case}/c.toml"], "beside [sweep]",
             setup="toml:beside"),
        Case("profile:r21-rule-nan", ["profile", "--rule", "CPUBottleneck.threshold=nan", "--out", "{case}/out", "--",
             "true"], "threshold"),
        Case("profile:r21-rule-inf", ["profile", "--rule", "StepOutlier.stddev=inf", "--out", "{case}/out", "--", "true"],
             "stddev"),
        Case("verify:r21-shard-listed-twice", ["verify", "{case}/packed"], "twice", setup="packed:twice"),
        Case("report:r21-other-kind", ["report", "{case}/run"], "cannot read", setup="run:other-kind"),
        Case("report:r21-spec-empty", ["report", "{case}/run"], "no valid record", setup="run:spec-empty"),
        # 3. left behind after SIGKILL of the parent: the next gluonbench start sweeps what a dead owner left
        Case("io:r21-kill-9-work-folder", ["io", *[a for a in BASE["io"] if a not in ("--work-dir", "{case}/work")]],
             "", code=-9, kill_when="tmp/gluonbench-io-*/*", then=NEXT_START),
        Case("sweep:r21-kill-9-pipe", ["sweep", "--source", "pipe", "--uri", "{packed}", "--workers", "0",
             "--max-batches", "400", "--epochs", "3", "--out", "{case}/out"], "", code=-9,
             kill_when="out/*/logs/w0-r0.log", then=NEXT_START),
        Case("sweep:r21-kill-9-dist-job", ["sweep", "--workers", "0", "--max-batches", "400", "--kvstore", "dist_sync",
             "--hosts", "2", "--out", "{case}/out"], "", code=-9, kill_when="tmp/gluonbench-job-*", then=NEXT_START),
        Case("profile:r21-kill-9-setsid-grandchild", ["profile", "--out", "{case}/out", "--", sys.executable, "-c",
             SETSID_GRANDCHILD], "", code=-9, kill_when="grandchild.pid"),
    ]  # fmt: skip
    if os.geteuid() == 0:  # a device node, made with mknod in the case folder (never the real /dev)
        cases.append(Case("diagnose:r21-json-device", ["diagnose", "--budget", "2", "--json", "{case}/null.json"],
                          "not a regular file", setup="mknod:{case}/null.json"))  # fmt: skip
        cases.append(Case("diagnose:r21-full-disk-before-measuring", ["diagnose", "--budget", "30", "--json",
                          "{case}/full/d.json"], "disk full", setup="fill:{case}/full", mounts={"{case}/full": "256k"},
                          max_s=60))  # fmt: skip
    for c in cases:
        if c.untouched and not c.setup.startswith("link:") and not c.setup.startswith("run:"):
            c.setup = c.setup or "victim"
    return cases


# -- round 4: every file kind read with bounds, special files, the environment, streams and limits ------------

R4_CHECK = ["check", "--workload", "synthetic", "--budget", "10", "--baseline", "{case}/base.json"]
R4_SWEEP = ["sweep", "--workers", "0", "--max-batches", "2", "--out", "{case}/out"]

R4_BASELINES = {
    # name: (how the valid baseline is damaged, what the one line must name)
    "count-1e999": (("text", '"rounds": 12', '"rounds": 1e999'), "not finite"),
    "budget-infinity": (("text", '"budget_s": 10.0', '"budget_s": Infinity'), "Infinity"),
    "budget-nan": (("text", '"budget_s": 10.0', '"budget_s": NaN'), "NaN"),
    "budget-1e300": (("field", "budget_s", 1e300), "budget_s"),
    "budget-zero": (("field", "budget_s", 0), "budget_s"),
    "budget-string": (("field", "budget_s", "ten"), "budget_s"),
    "cores-zero": (("field", "cores", 0), "cores"),
    "cores-negative": (("field", "cores", -2), "cores"),
    "cores-huge": (("field", "cores", 10**9), "cores"),
    "cores-float": (("field", "cores", 2.5), "cores"),
    "cores-bool": (("field", "cores", True), "cores"),
    "cores-5000-digits": (("text", '"cores": 2', '"cores": ' + "9" * 5000), "digits"),
    "rounds-negative": (("field", "rounds", -1), "rounds"),
    "elapsed-negative": (("field", "elapsed_s", -5), "elapsed_s"),
    "identity-number": (("field", "identity", 7), "identity"),
    "identity-huge": (("field", "identity", "x" * 10000), "identity"),
    "total-string": (("field", "total", "fast"), "total"),
    "total-missing": (("drop", "total"), "total"),
    "total-rel-negative": (("figure", "total", "rel", -1), "total.rel"),
    "ruler-ci-short": (("figure", "ruler", "rel_ci", [1]), "ruler.rel_ci"),
    "ceiling-rounds-float": (("figure", "ceiling", "rounds", 1.5), "ceiling.rounds"),
    "stages-list": (("field", "stages", [1, 2]), "stages"),
    "setting-list": (("field", "setting", [1]), "setting"),
    "env-deep": (("text", '"env": {}', '"env": ' + "[" * 200 + "]" * 200), "nested"),
    "padding-150mb": (("pad", 150 << 20), "MiB"),
    "not-utf8": (("bytes", b"synthetic", b"synth\xff"), "UTF-8"),
    "empty": (("raw", b""), "JSON"),
    "truncated": (("cut", 100), "JSON"),
}

R4_SPECIAL = ("fifo", "socket", "device", "folder")

R4_SPECIAL_TARGETS = {
    # name: (command, the path that is made special, what the one line must name)
    "check-baseline": (["check", "--workload", "synthetic", "--budget", "10", "--baseline", "{case}/x.json"], "x.json"),
    "sweep-config": ([*R4_SWEEP, "--config", "{case}/x.json"], "x.json"),
    "verify-rec": (["verify", "{case}/packed"], "packed/x.rec"),
    "report-runs": (["report", "{case}/run"], "run/runs.jsonl"),
    "compare-runs": (["compare", "{case}/run", "{case}/run"], "run/runs.jsonl"),
    "compare-tune-file": (["compare", "{case}/x.json", "{case}/x.json"], "x.json"),
    "resume-settings": (["sweep", "--resume", "{case}/run"], "run/sweep.json"),
}

R4_RECORDS = {
    # name: (files of a run folder, command, what the one line must name)
    "settings-infinity": ({"sweep.json": '{"settings": {"timeout_s": Infinity}}'}, "resume", "Infinity"),
    "settings-1e999": ({"sweep.json": '{"settings": {"workers": [0], "timeout_s": 1e999}}'}, "resume", "not finite"),
    "settings-deep": ({"sweep.json": '{"settings": ' + "[" * 100 + "]" * 100 + "}"}, "resume", "nested"),
    "settings-digits": ({"sweep.json": '{"settings": {"batch_size": ' + "9" * 600 + "}}"}, "resume", "digits"),
    "settings-not-utf8": ({"sweep.json": b'{"settings": {"name": "\xff"}}'}, "resume", "UTF-8"),
    "settings-padding": ({"sweep.json": ("pad", 8 << 20)}, "resume", "MiB"),
    "runs-padding-report": ({"runs.jsonl": ("pad", 300 << 20)}, "report", "MiB"),
    "runs-padding-compare": ({"runs.jsonl": ("pad", 300 << 20)}, "compare", "MiB"),
    "runs-all-deep-report": ({"runs.jsonl": "[" * 5000 + "]" * 5000 + "\n"}, "report", "no valid record"),
    "runs-all-digits-compare": ({"runs.jsonl": '{"spec": {"workers": ' + "9" * 500 + "}}\n"}, "compare", "no valid"),
    "tune-file-1e999": ({"../t.json": '{"evidence": 1e999, "dataloader": {}}'}, "compare-tune", "not finite"),
    "tune-file-padding": ({"../t.json": ("pad", 20 << 20)}, "compare-tune", "MiB"),
    "tune-file-not-utf8": ({"../t.json": b'{"evidence": "\xff"}'}, "compare-tune", "UTF-8"),
}

R4_TOML = {
    "date-option": ("[options]\nwhen = 1979-05-27\n", "options.when"),
    "datetime-option": ("[options]\nwhen = 1979-05-27T07:32:00Z\n", "options.when"),
    "time-setting": ("epochs = 07:32:00\n", "epochs"),
    "date-in-list": ("workers = [1979-05-27]\n", "workers[0]"),
    "local-datetime-in-sweep": ("[sweep]\nname = 1979-05-27T07:32:00\n", "name"),
    "not-utf8": (b"name = 'ab\xff'\n", "UTF-8"),
    "padding": (("pad", 2 << 20), "KiB|MiB"),
    "nul-bytes": (b"\x00" * 64, "config"),
}

R4_PROFILE = {
    "meta-1e999": ('{"start": 1e999}', "not finite"),
    "meta-string-start": ('{"start": "yesterday"}', "start"),
    "meta-list": ("[1, 2]", "profile.json"),
    "meta-not-utf8": (b'{"name": "\xff"}', "UTF-8"),
    "meta-deep": ("[" * 5000 + "]" * 5000, "nested"),
    "meta-padding": (("pad", 20 << 20), "MiB"),
    "meta-fifo": (("fifo",), "regular file"),
}

R4_THREADS = ("OMP_NUM_THREADS", "MXNET_CPU_WORKER_NTHREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
R4_THREAD_VALUES = {"abc": "abc", "zero": "0", "negative": "-1", "fraction": "1.5", "huge": "99999999999"}

R4_ENV_OTHER = {
    "MXNET_ENGINE_TYPE": ("TurboEngine", "naive"),
    "GLUONBENCH_STALL_FLOOR_S": ("x", "0", "inf"),
    "GLUONBENCH_S3_TIMEOUT_S": ("nan", "-1", "1e300"),
    "GLUONBENCH_OFFLINE": ("0", "yes"),
    "GLUONBENCH_SHM_CHECK": ("off", "2"),
    "GLUONBENCH_PACKAGED_DATA": ("no",),
    "GLUONBENCH_PROFILE_SYNC": ("false",),
    "GLUONBENCH_MXNET_PROFILER": ("on",),
    "GLUONBENCH_PROGRESS": ("yes",),
    "GLUONBENCH_DATA": ("", "{case}/a-file"),
    "GLUONBENCH_CACHE": ("{case}/a-file",),
}

R4_LIMITS = {"nofile-20": ("ulimit -n 20", "ulimit -n"), "as-400m": ("ulimit -v 400000", "ulimit -v"),
             "fsize-1k": ("ulimit -f 1", "ulimit -f")}  # fmt: skip
R4_LIMIT_COMMANDS = {
    "sweep": R4_SWEEP,
    "diagnose": ["diagnose", "--budget", "5"],
    "tune": ["tune", "--budget", "10"],
    "check": ["check", "--workload", "synthetic", "--budget", "10", "--save-baseline", "{case}/b.json"],
    "doctor": ["doctor"],
    "compare": ["compare", "{case}/a", "{case}/b"],
}

R4_STREAMS = {
    "stdout-closed": ("exec {cmd} >&-", False),
    "stdin-stdout-closed": ("exec {cmd} <&- >&-", False),
    "stdin-closed": ("exec {cmd} <&-", False),
    "all-closed": ("exec {cmd} <&- >&- 2>&-", True),
    "stdout-stderr-closed": ("exec {cmd} >&- 2>&-", True),
}
R4_STREAM_COMMANDS = {
    "compare-missing": (["compare", "{case}/a", "{case}/b"], "no such"),
    "sweep-bad-workers": (["sweep", "--workers", "x", "--out", "{case}/out"], "--workers"),
    "check-bad-baseline": (R4_CHECK, "not finite"),
    "report-missing": (["report", "{case}/nothing"], "nothing"),
}


FENCED = str(REPO / "tests" / "fenced_factories.py")
R4_MIDRUN = {  # a factory of tests/fenced_factories.py -> what the one line names
    "transform_raises": "transform (preprocess)",
    "shapes_differ": "loader (batchify)",
    "forward_raises": "step (forward/backward/update)",
    "loss_detached": "not connected to the graph",
    "param_unused": "gets no gradient",
}
R4_MIDRUN_COMMANDS = {
    "sweep": ["sweep", "--workers", "0,1", "--max-batches", "40", "--out", "{case}/out"],
    "tune": ["tune", "--budget", "10"],
    "check": ["check", "--budget", "10", "--save-baseline", "{case}/b.json"],
    "diagnose": ["diagnose", "--budget", "10", "--workers", "0"],
    "profile": ["profile", "--max-batches", "40", "--out", "{case}/out"],
}


def midrun_cases() -> list[Case]:
    """A --pipeline that fails after its first batch passed the check, or whose loss is not connected to the graph:
    one line naming the stage, exit 2, in every command; a sweep records the failed run (exit 1) and keeps it, profile
    keeps the profile up to the fault."""
    cases = []
    for func, needle in R4_MIDRUN.items():
        before = func in ("loss_detached", "param_unused")  # refused before measuring, in every command
        for command, args in R4_MIDRUN_COMMANDS.items():
            sweep_run = command == "sweep" and not before
            keeps = "" if before else "out" if command in ("sweep", "profile") else "gluonbench-results"
            cases.append(Case(f"r41:midrun:{func}:{command}", [*args, "--pipeline", f"{FENCED}:{func}"], needle,
                              code=1 if sweep_run else 2, keeps="" if command == "check" else keeps))  # fmt: skip
    return cases


def round4_cases() -> list[Case]:
    """Rows of issue 41's round 4: at least 150 real commands on real bad inputs."""
    cases = midrun_cases()
    for name, (_edit, needle) in R4_BASELINES.items():
        cases.append(Case(f"r41:baseline:{name}", R4_CHECK, needle, setup=f"r4-baseline:{name}"))
    for target, (args, _what) in R4_SPECIAL_TARGETS.items():
        for kind in R4_SPECIAL:
            needle = "folder" if kind == "folder" else "regular file"
            if kind == "folder" and target in ("compare-runs", "report-runs", "resume-settings"):
                needle = "regular file|folder"
            if kind == "folder" and target == "compare-tune-file":
                needle = "runs.jsonl"  # a folder where a tune file was named is read as a run folder
            cases.append(Case(f"r41:special:{target}:{kind}", args, needle, setup=f"r4-special:{target}/{kind}"))
    for name, (_files, command, needle) in R4_RECORDS.items():
        args = {"resume": ["sweep", "--resume", "{case}/run"], "report": ["report", "{case}/run"],
                "compare": ["compare", "{case}/run", "{case}/run"],
                "compare-tune": ["compare", "{case}/t.json", "{case}/t.json"]}[command]  # fmt: skip
        cases.append(Case(f"r41:records:{name}", args, needle, setup=f"r4-records:{name}"))
    for name, (_text, needle) in R4_TOML.items():
        cases.append(Case(f"r41:config:{name}", [*R4_SWEEP, "--config", "{case}/c.toml"], needle,
                          setup=f"r4-toml:{name}"))  # fmt: skip
    for name, (_text, needle) in R4_PROFILE.items():
        cases.append(Case(f"r41:profile:{name}", ["report", "{case}/prof"], needle, setup=f"r4-profile:{name}"))
    for var in R4_THREADS:
        for label, value in R4_THREAD_VALUES.items():
            for command, args in (("doctor", ["doctor"]), ("sweep", R4_SWEEP)):
                cases.append(Case(f"r41:env:{var}:{label}:{command}", args, var, env={var: value}))
    for var, values in R4_ENV_OTHER.items():
        for i, value in enumerate(values):
            for command, args in (("sweep", R4_SWEEP), ("diagnose", ["diagnose", "--budget", "5"])):
                cases.append(Case(f"r41:env:{var}:{i}:{command}", args, var, env={var: value}, setup="r4-file"))
    for name, (limit, needle) in R4_LIMITS.items():
        for command, args in R4_LIMIT_COMMANDS.items():
            cases.append(Case(f"r41:limit:{name}:{command}", args, needle, shell=f"{limit}; exec {{cmd}}"))
    for name, (shell, quiet) in R4_STREAMS.items():
        for command, (args, needle) in R4_STREAM_COMMANDS.items():
            setup = "r4-baseline:count-1e999" if command == "check-bad-baseline" else ""
            cases.append(Case(f"r41:streams:{name}:{command}", args, needle, shell=shell, quiet=quiet, setup=setup))
    return cases


def _r4_baseline_doc() -> dict:
    from gluonbench.check.gate import FORMAT, FORMAT_VERSION, Figure, Snapshot
    from gluonbench.check.ruler import ruler_description

    def fig(rel: float) -> Figure:
        return Figure(1e-4, rel, [rel * 0.9, rel * 1.1], 1e-4, rel, [rel * 0.9, rel * 1.1], 12)

    snap = Snapshot(identity="workload:synthetic", pipeline={"step": "x"}, setting={"batch_size": 64}, cores=2,
                    total=fig(0.1), stages={"read": fig(0.01)}, ceiling=fig(0.05), ruler=fig(1.0), budget_s=10.0,
                    elapsed_s=10.1, rounds=12)  # fmt: skip
    return {"format": FORMAT, "version": FORMAT_VERSION, "ruler_spec": ruler_description(), **snap.to_dict()}


def _r4_write(path: Path, content) -> None:
    """``content``: text, bytes, ``("pad", n)`` (a sparse file of n bytes) or ``("fifo",)``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, tuple) and content[0] == "pad":
        with open(path, "wb") as f:
            f.write(b"{")
            f.truncate(content[1])
    elif isinstance(content, tuple) and content[0] == "fifo":
        os.mkfifo(path, 0o600)
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)


def _r4_special(path: Path, kind: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "fifo":
        os.mkfifo(path, 0o600)
    elif kind == "socket":
        import socket

        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.close()  # the socket file stays
    elif kind == "device":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()


def prepare_round4(kind: str, arg: str, folder: Path) -> None:
    if kind == "r4-file":
        (folder / "a-file").write_text("a file, not a folder\n")
    elif kind == "r4-baseline":
        edit, _needle = R4_BASELINES[arg]
        doc = _r4_baseline_doc()
        text = json.dumps(doc)
        how = edit[0]
        if how == "text":
            assert edit[1] in text, edit
            data = text.replace(edit[1], edit[2], 1).encode()
        elif how == "field":
            data = json.dumps({**doc, edit[1]: edit[2]}).encode()
        elif how == "drop":
            doc.pop(edit[1])
            data = json.dumps(doc).encode()
        elif how == "figure":
            doc[edit[1]][edit[2]] = edit[3]
            data = json.dumps(doc).encode()
        elif how == "bytes":
            data = text.encode().replace(edit[1], edit[2])
        elif how == "raw":
            data = edit[1]
        elif how == "cut":
            data = text.encode()[: edit[1]]
        else:  # pad
            _r4_write(folder / "base.json", ("pad", edit[1]))
            return
        (folder / "base.json").write_bytes(data)
    elif kind == "r4-special":
        target, special = arg.split("/")
        _args, what = R4_SPECIAL_TARGETS[target]
        if target.startswith(("report", "compare-runs", "resume")):
            (folder / "run").mkdir()
            if what != "run/sweep.json":
                (folder / "run" / "sweep.json").write_text('{"settings": {"workers": [0]}}')
        if target == "verify-rec":
            (folder / "packed").mkdir()
        _r4_special(folder / what, special)
    elif kind == "r4-records":
        files, _command, _needle = R4_RECORDS[arg]
        (folder / "run").mkdir()
        for name, content in files.items():
            _r4_write((folder / "run" / name).resolve(), content)
        if "sweep.json" not in files and not name.startswith(".."):
            (folder / "run" / "sweep.json").write_text('{"settings": {"workers": [0]}}')
    elif kind == "r4-toml":
        _r4_write(folder / "c.toml", R4_TOML[arg][0])
    elif kind == "r4-profile":
        system = folder / "prof" / "profiler-output" / "system" / "incremental" / "2026112721"
        system.mkdir(parents=True)
        row = {"Type": "cpu", "Name": "cpu0", "Dimension": "CPUUtilization", "Value": 5.0, "Timestamp": 1.8e9}
        (system / "1800000000.algo-1.json").write_text(json.dumps(row) + "\n")
        _r4_write(folder / "prof" / "profile.json", R4_PROFILE[arg][0])


# -- round 4b: outputs that are inputs, a factory that changes folder, secrets in options, user code fenced, full
# devices -----------------------------------------------------------------------------------------------------------

R4B_TUNE = {"dataloader": "x", "evidence": [{"phase": "p", "label": "w0", "samples_per_s": 10.0, "ci": [9, 11]}]}
R4B_SWEEP3 = REPO / "results" / "20261122T163950Z-sweep-mnist-cpu-1epoch-repeat3"
"""a real sweep's run folder in the repository: compare's input (nothing may be written into it)"""
R4B_BASE = "{case}/base.json"
R4B_CHECK_B = ["check", "--workload", "synthetic", "--budget", "10", "--baseline", R4B_BASE]
R4B_CHECK_S = ["check", "--workload", "synthetic", "--budget", "10", "--save-baseline", R4B_BASE]
R4B_A, R4B_B = "{case}/a.json", "{case}/b.json"

R4B_OUTPUTS = {
    # name: (args, env, what the one line must name, the inputs that must not change)
    "check-baseline-json": ([*R4B_CHECK_B, "--json", R4B_BASE], {}, "also an input", [R4B_BASE]),
    "check-baseline-junit": ([*R4B_CHECK_B, "--junit", R4B_BASE], {}, "also an input", [R4B_BASE]),
    "check-save-json": ([*R4B_CHECK_S, "--json", R4B_BASE], {}, "also an input", [R4B_BASE]),
    "check-save-junit": ([*R4B_CHECK_S, "--junit", R4B_BASE], {}, "also an input", [R4B_BASE]),
    "check-baseline-summary": (R4B_CHECK_B, {"GITHUB_STEP_SUMMARY": R4B_BASE}, "GITHUB_STEP_SUMMARY", [R4B_BASE]),
    "check-save-summary": (R4B_CHECK_S, {"GITHUB_STEP_SUMMARY": R4B_BASE}, "GITHUB_STEP_SUMMARY", [R4B_BASE]),
    "check-json-equals-junit": ([*R4B_CHECK_B, "--json", "{case}/r.x", "--junit", "{case}/r.x"], {}, "--junit|--json",
                                [R4B_BASE]),
    "check-json-symlink-to-baseline": ([*R4B_CHECK_B, "--json", "{case}/link.json"], {}, "symbolic link|also an input",
                                       [R4B_BASE]),
    "compare-json-a": (["compare", R4B_A, R4B_B, "--json", R4B_A], {}, "also an input", [R4B_A, R4B_B]),
    "compare-json-b": (["compare", R4B_A, R4B_B, "--json", R4B_B], {}, "also an input", [R4B_A, R4B_B]),
    "compare-markdown-a": (["compare", R4B_A, R4B_B, "--markdown", R4B_A], {}, "also an input", [R4B_A, R4B_B]),
    "compare-html-b": (["compare", R4B_A, R4B_B, "--html", R4B_B], {}, "also an input", [R4B_A, R4B_B]),
    "compare-json-records-name": (["compare", R4B_A, R4B_B, "--json", "{case}/runs.jsonl"], {}, "records",
                                  [R4B_A, R4B_B]),
    "compare-html-inside-run": (["compare", str(R4B_SWEEP3), str(R4B_SWEEP3), "--html", str(R4B_SWEEP3 / "c.html")],
                                {}, "inside the run folder", [str(R4B_SWEEP3 / "runs.jsonl")]),
    "compare-json-equals-markdown": (["compare", R4B_A, R4B_B, "--json", "{case}/c.x", "--markdown", "{case}/c.x"], {},
                                     "--markdown|--json", [R4B_A, R4B_B]),
    "compare-markdown-run-settings": (["compare", str(R4B_SWEEP3), str(R4B_SWEEP3), "--markdown",
                                       str(R4B_SWEEP3 / "sweep.json")], {}, "also an input|inside|records",
                                      [str(R4B_SWEEP3 / "sweep.json")]),
}  # fmt: skip

R4B_RELATIVE = {
    # command: (args with relative outputs, what must exist afterwards, what it keeps)
    "sweep": (["sweep", "--workers", "0", "--max-batches", "4", "--out", "out"], "out/*/runs.jsonl", "out"),
    "check": (["check", "--budget", "15", "--save-baseline", "b.json", "--json", "c.json"], "b.json", "b.json|c.json"),
    "diagnose": (["diagnose", "--budget", "10", "--workers", "0", "--json", "d.json", "--out", "out"], "d.json",
                 "d.json|out"),
    "tune": (["tune", "--budget", "10", "--json", "t.json", "--out", "out"], "t.json", "t.json|out"),
    "profile": (["profile", "--max-batches", "10", "--out", "out"], "out/*/report.html", "out"),
}  # fmt: skip

R4B_SECRETS = {
    # name: (the option, its value, the part of it that must never be kept)
    "aws-secret-key": ("aws_secret_access_key", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYr41bSECRET", "wJalrXUtnFEMI"),
    "password": ("password", "hunter2-r41b-pw", "hunter2-r41b"),
    "github-token": ("api_token", "ghp_" + "R41bToken" * 4, "R41bTokenR41bToken"),
    "url-userinfo": ("db_url", "postgres://admin:pg-r41b-pass@db.example:5432/x", "pg-r41b-pass"),
}
R4B_SECRET_COMMANDS = {
    "sweep": (["sweep", "--workers", "0", "--max-batches", "4", "--out", "{case}/out"], "out"),
    "check": (["check", "--budget", "15", "--save-baseline", "{case}/b.json", "--json", "{case}/c.json"],
              "b.json|c.json"),
    "diagnose": (["diagnose", "--budget", "10", "--workers", "0", "--json", "{case}/d.json", "--out", "{case}/out"],
                 "d.json|out"),
    "tune": (["tune", "--budget", "10", "--json", "{case}/t.json", "--toml", "{case}/t.toml", "--out", "{case}/out"],
             "t.json|t.toml|out"),
    "profile": (["profile", "--max-batches", "10", "--out", "{case}/out"], "out"),
}  # fmt: skip

R4B_FENCE = {
    # name: (the factory, the environment that makes its module misbehave, exit code, what the one line names)
    "exit": ("exits", {}, 2, "sys.exit(0)"),
    "exit-at-import": ("options", {"GB_EXIT_AT_IMPORT": "1"}, 2, "sys.exit(0)"),
    "keyboard-interrupt": ("interrupts", {}, 2, "KeyboardInterrupt"),
    "keyboard-interrupt-at-import": ("options", {"GB_INTERRUPT_AT_IMPORT": "1"}, 2, "KeyboardInterrupt"),
    "never-returns": ("sleeps", {}, 2, "did not return"),
    "import-never-returns": ("options", {"GB_HANG_AT_IMPORT": "1"}, 2, "did not return"),
    "socket-read-never-returns": ("reads_socket", {}, 2, "did not return"),
    "non-daemon-thread": ("thread", {}, 0, ""),
    "subprocess": ("child", {}, 0, ""),
    "double-fork-grandchild": ("grandchild", {}, 0, ""),
    "fork": ("fork", {}, 0, ""),
    "fork-returns-from-factory": ("fork_returns", {}, 0, ""),
}
R4B_FENCE_COMMANDS = {
    # command: (args, what it keeps, the factory's deadline in seconds)
    "check": (["check", "--budget", "15", "--save-baseline", "{case}/b.json"], "b.json", 40),
    "sweep": (["sweep", "--workers", "0", "--max-batches", "4", "--out", "{case}/out"], "out", 300),
    "diagnose": (["diagnose", "--budget", "10", "--workers", "0", "--out", "{case}/out"], "out", 40),
}

R4B_FULL = {
    # name: (args, environment): with a 256 KiB tmpfs at {case}/full holding 240 KiB
    "check-save-baseline": (["check", "--workload", "synthetic", "--budget", "10", "--save-baseline",
                             "{case}/full/b.json"], {}),
    "check-json": (["check", "--workload", "synthetic", "--budget", "10", "--baseline", "{baseline}", "--json",
                    "{case}/full/r.json"], {}),
    "check-junit": (["check", "--workload", "synthetic", "--budget", "10", "--baseline", "{baseline}", "--junit",
                     "{case}/full/r.xml"], {}),
    "check-step-summary": (["check", "--workload", "synthetic", "--budget", "10", "--baseline", "{baseline}"],
                           {"GITHUB_STEP_SUMMARY": "{case}/full/summary.md"}),
    "compare-json": (["compare", "{tune_a}", "{tune_b}", "--json", "{case}/full/c.json"], {}),
    "compare-markdown": (["compare", "{tune_a}", "{tune_b}", "--markdown", "{case}/full/c.md"], {}),
    "compare-html": (["compare", "{tune_a}", "{tune_b}", "--html", "{case}/full/c.html"], {}),
    "tune-json": (["tune", "--budget", "10", "--json", "{case}/full/t.json"], {}),
    "tune-toml": (["tune", "--budget", "10", "--toml", "{case}/full/t.toml"], {}),
    "tune-out": (["tune", "--budget", "10", "--out", "{case}/full/o"], {}),
    "diagnose-out": (["diagnose", "--budget", "5", "--out", "{case}/full/o"], {}),
    "profile-out": (["profile", "--out", "{case}/full/o", "--", "true"], {}),
    "profile-pipeline-out": (["profile", "--pipeline", f"{FENCED}:options", "--out", "{case}/full/o"], {}),
    "io-out": (["io", *[("{case}/full/o" if a == "{case}/out" else a) for a in BASE["io"]]], {}),
}  # fmt: skip
R4B_WHOLLY_FULL = {
    # name: (args, what the one line names): not a byte left; the write itself fails
    "doctor-json": (["doctor", "--no-ceilings", "--json", "{case}/full/d.json"], "disk full"),
    "compare-json": (["compare", "{tune_a}", "{tune_b}", "--json", "{case}/full/c.json"], "disk full"),
    "report-profile-out": (["report", "{case}/prof", "--out", "{case}/full/r"], "disk full"),
}
R4B_DEV_FULL = {
    # name: args writing to /dev/full (a device: refused before work, never written through)
    "check-json": ["check", "--workload", "synthetic", "--budget", "10", "--baseline", "{baseline}", "--json",
                   "/dev/full"],
    "check-junit": ["check", "--workload", "synthetic", "--budget", "10", "--baseline", "{baseline}", "--junit",
                    "/dev/full"],
    "check-save-baseline": ["check", "--workload", "synthetic", "--budget", "10", "--save-baseline", "/dev/full"],
    "tune-json": ["tune", "--budget", "10", "--json", "/dev/full"],
    "tune-toml": ["tune", "--budget", "10", "--toml", "/dev/full"],
    "diagnose-json": ["diagnose", "--budget", "5", "--json", "/dev/full"],
    "compare-markdown": ["compare", "{tune_a}", "{tune_b}", "--markdown", "/dev/full"],
    "doctor-json": ["doctor", "--no-ceilings", "--json", "/dev/full"],
}  # fmt: skip


def round4b_cases() -> list[Case]:
    """Issue 41's classes with no row in round 4: an output that is an input, a factory that changes folder,
    credentials in --pipeline-option, user code that exits, interrupts, blocks or leaves things running, and outputs
    on a full device."""
    cases = []
    for name, (args, env, needle, inputs) in R4B_OUTPUTS.items():
        setup = "r41b-inputs:link" if "symlink" in name else "r41b-inputs"
        cases.append(Case(f"r41b:outputs:{name}", args, needle, setup=setup, env=dict(env), unchanged=list(inputs)))
    for command, (args, expect, keeps) in R4B_RELATIVE.items():
        for where, func, var in (("factory", "chdir", "GB_CHDIR"), ("import", "options", "GB_CHDIR_AT_IMPORT")):
            cases.append(Case(f"r41b:chdir:{where}:{command}", [*args, "--pipeline", f"{FENCED}:{func}"], "", code=0,
                              setup="r41b-elsewhere", env={var: "{case}/elsewhere"}, expect=expect, keeps=keeps,
                              max_s=200))  # fmt: skip
    for name, (option, value, secret) in R4B_SECRETS.items():
        for command, (args, keeps) in R4B_SECRET_COMMANDS.items():
            cases.append(Case(f"r41b:secrets:{name}:{command}", [*args, "--pipeline", f"{FENCED}:secrets",
                              "--pipeline-option", f"{option}={value}"], "", code=0, keeps=keeps,
                              secrets=[secret]))  # fmt: skip
    for name, (func, env, code, needle) in R4B_FENCE.items():
        for command, (args, keeps, deadline) in R4B_FENCE_COMMANDS.items():
            if name == "socket-read-never-returns" and command == "sweep":
                continue  # the same 300 s deadline as never-returns: one such sweep row is enough
            blocks = "never-returns" in name
            cases.append(Case(f"r41b:fence:{name}:{command}", [*args, "--pipeline", f"{FENCED}:{func}"], needle,
                              code=code, env={**env, "GB_PIDFILE": "{case}/pids"}, keeps=f"{keeps}|pids",
                              max_s=deadline + 40 if blocks else 0, timeout=deadline + 100 if blocks else 0))  # fmt: skip
    for name, (args, env) in R4B_FULL.items():
        cases.append(Case(f"r41b:full:{name}", args, "disk full", setup="fill:{case}/full", env=dict(env),
                          mounts={"{case}/full": "256k"}, max_s=60))  # fmt: skip
    for name, (args, needle) in R4B_WHOLLY_FULL.items():
        cases.append(Case(f"r41b:full-to-the-byte:{name}", args, needle, fill_whole=True, mounts={"{case}/full": "256k"},
                          setup="r41b-profile" if name.startswith("report") else ""))  # fmt: skip
    for name, args in R4B_DEV_FULL.items():
        cases.append(Case(f"r41b:dev-full:{name}", args, "regular file|device|/dev/full", max_s=60))
    return cases


def prepare_round4b(kind: str, arg: str, folder: Path, fx: dict[str, Path]) -> None:
    if kind == "r41b-inputs":
        (folder / "base.json").write_text(json.dumps(_r4_baseline_doc()))
        (folder / "a.json").write_text(json.dumps(R4B_TUNE))
        (folder / "b.json").write_text(json.dumps({**R4B_TUNE, "dataloader": "y"}))
        if arg == "link":
            (folder / "link.json").symlink_to(folder / "base.json")
    elif kind == "r41b-elsewhere":
        (folder / "elsewhere").mkdir()
    elif kind == "r41b-profile":
        prepare_round4("r4-profile", "meta-1e999", folder)
        (folder / "prof" / "profile.json").write_text(json.dumps({"start": 1.8e9, "end": 1.8e9 + 10, "cores": 2}))


# -- running one case ---------------------------------------------------------------------------


def prepare(case: Case, folder: Path, fx: dict[str, Path]) -> None:
    kind, _, arg = case.setup.partition(":")
    if case.untouched:
        (folder / "victim").write_text("keep\n")
    if kind == "link":
        Path(arg).symlink_to(folder / "victim")
    elif kind == "fifo-at":
        os.mkfifo(arg, 0o600)
    elif kind == "mknod":
        os.mknod(arg, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    elif kind == "hosts":
        (folder / "hosts.txt").write_text("node2$(touch PWNED)\nnode1\n")
    if kind == "run" and arg.startswith("link-"):
        run = folder / "run"
        run.mkdir()
        (run / "sweep.json").write_text(json.dumps({"settings": {"workers": [0], "max_batches": 2}}))
        name = {"link-runs": "runs.jsonl", "link-lock": ".lock", "link-logs": "logs"}[arg]
        if arg == "link-logs":
            (folder / "logs-target").mkdir()
            (run / name).symlink_to(folder / "logs-target")
        else:
            (run / name).symlink_to(folder / "victim")
    elif kind == "run":
        run = folder / "run"
        run.mkdir()
        good = {"settings": {"workers": [0], "max_batches": 2}, "command": "fault_matrix"}
        settings = {
            "bad-json": '{"settings": {',
            "list": "[1, 2]",
            "bad-value": json.dumps({"settings": {"workers": [0], "batch_size": "x"}}),
            "nan": '{"settings": {"workers": [0], "timeout_s": NaN}}',
        }.get(arg, json.dumps(good))
        (run / "sweep.json").write_text(settings)
        runs = {"torn-only": '{"spec": {"workers": 0', "not-objects": '[1]\n"x"\n3\n', "empty": "",
                "other-kind": '{"kind": "io", "x": 1}\n{"kind": "diagnosis", "x": 1}\n',
                "spec-empty": '{"spec": {}, "status": "ok"}\n'}  # fmt: skip
        if arg in runs:
            (run / "runs.jsonl").write_text(runs[arg])
        if arg == "locked":
            import fcntl

            fd = os.open(run / ".lock", os.O_RDWR | os.O_CREAT)
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
            case.env["_LOCK_FD"] = str(fd)
    elif kind == "toml":
        text = {
            "invalid": "[sweep\nworkers =",
            "nan": "timeout_s = nan",
            "inf": "timeout_s = inf",
            "scalar": "sweep = 3",
            "string": "batch_size = 'sixty-four'",
            "workers": "workers = [1.5]",
            "options": "options = 3",
            "deep": "x = " + "[" * 5000 + "]" * 5000,
            "bool": "batch_size = true",
            "fraction": "batch_size = 64.9",
            "bool-timeout": "timeout_s = true",
            "beside": "name = 'x'\n[sweep]\nworkers = '0'",
        }[arg]
        (folder / "c.toml").write_text(text + "\n")
    elif kind == "src":
        shutil.copytree(fx["jpegs"], folder / "src")
        next((folder / "src").glob("*/*.jpg")).write_bytes(b"<html>404</html>")
    elif kind == "packed":
        shutil.copytree(fx["packed"], folder / "packed")
        if arg == "truncated":
            rec = next((folder / "packed").glob("*.rec"))
            rec.write_bytes(rec.read_bytes()[:-100])
        elif arg == "deep-manifest":
            (folder / "packed" / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)
        elif arg == "twice":
            path = folder / "packed" / "manifest.json"
            manifest = json.loads(path.read_text())
            manifest["shards"].append(manifest["shards"][0])
            manifest["records"] += manifest["shards"][0]["records"]
            path.write_text(json.dumps(manifest))
        else:
            (folder / "packed" / "manifest.json").write_text("{")
    elif kind == "fifo":
        (folder / "ch").mkdir(mode=0o700)
        os.mkfifo(folder / "ch" / "train_0", 0o600)
    elif kind.startswith("r41b"):
        prepare_round4b(kind, arg, folder, fx)
    elif kind.startswith("r4"):
        prepare_round4(kind, arg, folder)


def _fill(mounts: dict[str, str], whole: bool = False) -> str:
    """Fill each mount to 240 KiB (16 KiB left: below what a command checks for before measuring), or ``whole``
    (not a byte left: the write itself fails)."""
    count = "count=240" if not whole else ""
    return "; ".join(f"(dd if=/dev/zero of={shlex.quote(p)}/.fill bs=1k {count} 2>/dev/null || true)" for p in mounts)


def _names(line: str, needle: str) -> bool:
    line = line.lower()
    return any(n.lower() in line or n.replace("-", "_").lower() in line for n in needle.split("|") if n)


def _snapshot(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _stamps(folder: Path) -> dict[Path, tuple[int, int]]:
    """Each regular file under ``folder``: its modification time and size."""
    stamps = {}
    for p in folder.rglob("*"):
        try:
            st = p.lstat()
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            stamps[p] = (st.st_mtime_ns, st.st_size)
    return stamps


def _written(folder: Path, before: dict[Path, tuple[int, int]]) -> list[Path]:
    """Regular files under ``folder`` that are new or changed since ``before``."""
    now = _stamps(folder)
    return [p for p, stamp in now.items() if before.get(p) != stamp]


def _shm() -> set[str]:
    try:
        return {n for n in os.listdir("/dev/shm") if n.startswith("mx_")}
    except OSError:
        return set()


def _ours(case_id: str) -> list[str]:
    found = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        try:
            if p.environ().get(MARK) == case_id and p.status() != psutil.STATUS_ZOMBIE:
                found.append(f"{p.pid} {' '.join(p.info['cmdline'] or [])[:80]}")
        except (psutil.Error, OSError):
            continue
    return found


def run_case(case: Case, fx: dict[str, Path], work: Path, silent: str, timeout: float) -> Outcome:
    folder = work / case.id.replace(":", "_").replace("/", "_")
    folder.mkdir(parents=True)
    tmp = folder / "tmp"
    tmp.mkdir()
    subst = {k: str(v) for k, v in fx.items()} | {"case": str(folder), "silent": silent}

    def fill(text: str) -> str:
        for k, v in subst.items():
            text = text.replace("{" + k + "}", v)
        return text

    case.args = [fill(a) for a in case.args]
    case.needle = fill(case.needle)
    case.setup = fill(case.setup)
    mounts = {fill(k): v for k, v in case.mounts.items()}
    prepare(case, folder, fx)
    lock_fd = case.env.pop("_LOCK_FD", None)
    before = _snapshot(folder)
    inputs = {p: _digest(Path(fill(p))) for p in case.unchanged}
    stamps = _stamps(folder)
    timeout = case.timeout or timeout
    env = dict(os.environ, TMPDIR=str(tmp), PYTHONUNBUFFERED="1", **{MARK: case.id})
    env.pop("GLUONBENCH_PROGRESS", None)
    env.update({k: fill(v) for k, v in case.env.items()})
    argv = [sys.executable, "-m", "gluonbench", *case.args]
    if case.shell:
        argv = ["bash", "-c", case.shell.replace("{cmd}", shlex.join(argv))]
    if mounts:
        script = "set -e; " + "".join(
            f"mkdir -p {shlex.quote(p)}; mount -t tmpfs -o size={s} tmpfs {shlex.quote(p)}; " for p, s in mounts.items()
        )
        if case.setup.startswith("fill:") or case.fill_whole:
            script += _fill(mounts, whole=case.fill_whole) + "; "
        argv = ["unshare", "-m", "sh", "-c", script + "exec " + shlex.join(argv)]
    t0 = time.monotonic()
    proc = subprocess.Popen(
        argv, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        if case.kill_after_workers:
            me = psutil.Process(proc.pid)
            deadline = time.monotonic() + timeout
            while len(me.children(recursive=True)) < 4 and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.2)
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
        elif case.kill_when:
            deadline = time.monotonic() + timeout
            while not list(folder.glob(case.kill_when)) and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.1)
            time.sleep(0.5)
            with contextlib.suppress(ProcessLookupError):  # it may have ended on its own first (a busy machine)
                os.kill(proc.pid, signal.SIGKILL)  # the parent only, as `kill -9 PID` does: its children must follow
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        try:
            _out, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:  # a process outside the group holds the pipes: it is reported below
            proc.stdout.close()
            proc.stderr.close()
            proc.wait()
            err = ""
        err += f"\n[fault_matrix: no answer within {timeout:g} s]"
    finally:
        if lock_fd is not None:
            os.close(int(lock_fd))
    seconds = time.monotonic() - t0
    time.sleep(3 if case.kill_after_workers or case.kill_when else 0.5)  # a killed run's watchdog needs a moment
    if case.then:  # the next gluonbench start, with the same TMPDIR
        subprocess.run([sys.executable, "-m", "gluonbench", *[fill(a) for a in case.then]], cwd=folder, env=env,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=timeout)  # fmt: skip
    why = []
    lines = [line for line in err.splitlines() if line.strip()]
    if len(lines) == 2 and PLAN_LINE.match(lines[0]):  # a long command's plan line may precede it (as in tests/)
        lines = lines[1:]
    if proc.returncode != case.code:
        why.append(f"exit {proc.returncode}, expected {case.code}")
    if "Traceback" in err:
        why.append("traceback")
    if case.quiet:
        if lines:
            why.append(f"{len(lines)} lines where stderr is closed")
    elif case.code == 2:
        if len(lines) != 1:
            why.append(f"{len(lines)} lines on stderr")
        elif case.needle and not _names(lines[0], case.needle):
            why.append(f"the line does not name {case.needle!r}")
    if case.untouched:
        victim = Path(fill(case.untouched))
        if victim.is_symlink() or not victim.is_file() or victim.read_text() != "keep\n":
            why.append(f"{victim.name} (outside what it may write) was changed")
    if case.max_s and seconds > case.max_s:
        why.append(f"took {seconds:.0f} s, more than budget + grace ({case.max_s:g} s)")
    if (folder / "PWNED").exists():
        why.append("a hostfile line ran in a shell")
    left = sorted(_snapshot(folder) - before - {"tmp"})
    left = [p for p in left if not p.startswith("full")]  # the tmpfs mount point itself
    if case.kill_after_workers or case.kill_when:
        left = [p for p in left if not p.startswith("out")]  # the sweep's results folder is kept, as documented
        left = [p for p in left if p != "grandchild.pid"]  # written by the profiled program itself
    if case.keeps:
        left = [p for p in left if not p.startswith(tuple(case.keeps.split("|")))]
    for p, digest in inputs.items():
        if _digest(Path(fill(p))) != digest:
            why.append(f"the input {Path(fill(p)).name} was changed")
    if case.secrets:
        written = _written(folder, stamps)
        found = sorted({f"{path.relative_to(folder)}" for path in written for v in case.secrets
                        if fill(v).encode() in path.read_bytes()})  # fmt: skip
        if found:
            why.append(f"a secret kept in {', '.join(found[:3])}")
        if not written:
            why.append("no file written to look for the secret in")
    if case.expect and not list(folder.glob(fill(case.expect))):
        why.append(f"nothing at {case.expect} (the output did not land where it was meant to)")
    if left:
        why.append(f"left behind: {', '.join(left[:3])}")
    alive = _ours(case.id)
    if alive:
        why.append(f"processes left: {alive[:2]}")
        for line in alive:
            try:
                os.kill(int(line.split()[0]), signal.SIGKILL)
            except OSError:
                pass
    return Outcome(
        case.id,
        shlex.join(["gluonbench", *case.args]).encode("utf-8", "backslashreplace").decode(),
        not why,
        "; ".join(why),
        proc.returncode,
        seconds,
        err[-600:],
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("--jobs", type=int, default=3, help="cases run at once (default 3)")
    ap.add_argument("--only", help="run only cases whose id contains this text")
    ap.add_argument("--timeout", type=float, default=120, help="seconds a case may take (default 120)")
    ap.add_argument("--json", help="also write every outcome as JSON")
    ap.add_argument("--markdown", help="also write the printed report as Markdown")
    args = ap.parse_args(argv)

    cases = parser_cases() + fault_cases() + round4_cases() + round4b_cases()
    if args.only:
        cases = [c for c in cases if args.only in c.id]
    root = Path(tempfile.mkdtemp(prefix="gb-fault-matrix-"))
    silent = _silent_endpoint()
    fx = make_fixtures(root / "fixtures")
    shm_before = _shm()
    t0 = time.monotonic()
    try:
        with ThreadPoolExecutor(args.jobs) as pool:
            outcomes = list(pool.map(lambda c: run_case(c, fx, root / "cases", silent[0], args.timeout), cases))
    finally:
        release_fixtures(fx)
        silent[1].close()
        shutil.rmtree(root, ignore_errors=True)
    elapsed = time.monotonic() - t0
    time.sleep(2)
    shm_left = sorted(_shm() - shm_before)
    if shm_left:  # checked once for the whole matrix: cases run side by side
        outcomes.append(Outcome("matrix:/dev/shm", "(all cases)", False, f"/dev/shm left: {shm_left[:3]}", None, 0, ""))
    good = sum(o.ok for o in outcomes)
    by_command: dict[str, list[int]] = {}
    for o in outcomes:
        parts = o.id.split(":")
        tally = by_command.setdefault(":".join(parts[:2]) if parts[0] in ("r41", "r41b") else parts[0], [0, 0])
        tally[0] += o.ok
        tally[1] += 1
    report = [
        "# gluonbench fault matrix",
        "",
        f"- Command: `python benchmarks/fault_matrix.py {' '.join(argv or sys.argv[1:])}`".rstrip(),
        f"- Machine: {platform.node()}, {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
        f", {platform.platform()}",
        f"- Date (UTC): {datetime.now(UTC).isoformat(timespec='seconds')}; {elapsed:.0f} s for {len(outcomes)} cases "
        f"({args.jobs} at a time; load average {os.getloadavg()[0]:.1f} at the end)",
        "",
        f"**Handled well: {good} / {len(outcomes)} ({100 * good / max(len(outcomes), 1):.0f} %)** "
        "(one line on stderr naming the problem, exit 2 or the documented code, no traceback, nothing left behind)",
        "",
        "| command | handled well | cases |",
        "|---|---:|---:|",
        *[f"| {c} | {t[0]} | {t[1]} |" for c, t in sorted(by_command.items())],
        "",
    ]
    failures = [o for o in outcomes if not o.ok]
    if failures:
        report += ["## Not handled well", ""]
        for o in failures:
            tail = o.stderr.strip().splitlines()[-1:] or [""]
            report.append(f"- `{o.id}`: {o.why}. `{o.command}` -> {tail[0][:200]}")
        report.append("")
    report += ["## Every case", "", "| case | exit | s | the line |", "|---|---:|---:|---|"]
    for o in outcomes:
        line = (o.stderr.strip().splitlines() or [""])[-1].replace("|", "\\|")[:160]
        report.append(f"| `{o.id}` {'' if o.ok else '**(not handled)**'} | {o.code} | {o.seconds:.1f} | {line} |")
    text = "\n".join(report) + "\n"
    print(text)
    if args.markdown:
        Path(args.markdown).parent.mkdir(parents=True, exist_ok=True)
        Path(args.markdown).write_text(text)
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(
            json.dumps(
                {"handled_well": good, "cases": len(outcomes), "outcomes": [asdict(o) for o in outcomes]}, indent=1
            )
        )
    return 0 if good == len(outcomes) else 1


def _silent_endpoint():
    """An endpoint that accepts TCP connections and never answers (kept open for the whole matrix)."""
    import socket

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    return f"http://127.0.0.1:{server.getsockname()[1]}", server


if __name__ == "__main__":
    sys.exit(main())
