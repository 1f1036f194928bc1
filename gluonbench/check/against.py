"""``gluonbench check --against REF``: the baseline's code and the candidate's, measured side by side in one job.

A baseline saved at another moment cannot tell a 10 % change from the machine's drift. Here both are measured now,
in alternating blocks ("duet" benchmarking):

* the **candidate** is the working tree as it is (uncommitted changes included);
* the **baseline** is ``REF``'s tree: a git ref of the repository being checked, copied into a temporary folder that
  gluonbench makes and removes (``git archive``; a folder left by a run killed with ``kill -9`` is removed by the
  next run), or the path of another checkout;
* each runs in its own process (:mod:`gluonbench.check.side`) with its own tree first on ``PYTHONPATH``, so that
  each imports its own code (the baseline's factory must come from its own tree: an editable install of the
  candidate that shadows it is refused in one line). Both start in the current folder, so relative data and option
  paths resolve against the candidate's folder (untracked data are found);
* the parent gives the two sides turns, one round each, the order alternating each round; the idle side does not
  step (its loaders have settled). First the full pipeline alone (the verdict's figure, :data:`GATE_SHARE` of the
  budget), then the chain of diagnose probes (the stages).

**Figures.** Each figure is taken over the baseline's full pipeline in the same round (the *reference*, as the ruler
is for a stored baseline): the candidate's full pipeline over the baseline's, round by round, is the slowdown; the
decision, the stage that got slower, the table and its renderings are those of a stored-baseline check
(:func:`gluonbench.check.gate.decide`): regression (exit 1), pass (exit 0), inconclusive with the budget that would
settle it (exit 3).
"""

from __future__ import annotations

import json
import logging
import os
import select
import shutil
import subprocess
import sys
import tarfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from time import monotonic
from typing import Any

from gluonbench.check.gate import (
    GATE_SHARE,
    PAIRED_MIN_ROUNDS,
    STAGE_MIN_ROUNDS,
    CheckResult,
    Figure,
    Snapshot,
    check_budget,
    cores_here,
    decide,
    minus,
    parse_fraction,
    relative_figure,
)
from gluonbench.engine.isolation import kill_group
from gluonbench.errors import GluonbenchError
from gluonbench.names import param

log = logging.getLogger(__name__)

ROUND_S = 0.1
"""measured seconds per side per round (at least one block of steps)"""
START_S = 300.0
"""longest a side may take to build its pipeline (the factory, its data, the first batch)"""
TURN_GRACE_S = 60.0
"""longest one turn may run past the budget (a warm-up, a slow step) before the side is called stalled"""


@dataclass
class Tree:
    """One side's code: the folder first on its ``PYTHONPATH`` and where it came from."""

    root: Path
    label: str
    """``REF`` (its commit) or ``working tree``"""
    commit: str | None = None
    scratch: Path | None = None
    """the temporary folder gluonbench made for it (removed at the end), if any"""


def _git(repo: Path, *args: str, binary: bool = False) -> Any:
    try:
        proc = subprocess.run(
            ["git", "-C", str(repo), *args], capture_output=True, timeout=120, text=not binary, check=False
        )
    except FileNotFoundError:
        raise GluonbenchError(
            "git is not installed; --against REF needs git (or give a path to another checkout)"
        ) from None
    except subprocess.TimeoutExpired:
        raise GluonbenchError(f"git {' '.join(args)} did not finish in 120 s in {repo}") from None
    return proc


def repo_root(where: Path) -> Path:
    """The top folder of the git repository holding ``where``, or one line saying there is none."""
    proc = _git(where, "rev-parse", "--show-toplevel")
    if proc.returncode != 0:
        raise GluonbenchError(
            f"{where} is not inside a git repository; --against REF compares with REF's tree: run it from your "
            "project's checkout, or give --against the path of another checkout"
        )
    return Path(proc.stdout.strip())


def baseline_tree(ref: str, candidate: Path) -> Tree:
    """``ref``'s tree: an existing folder as it is, else the commit ``ref`` names, copied into an owned temp folder."""
    from gluonbench.scratch import owned_tempdir

    if not ref or ref.startswith("-"):
        raise GluonbenchError(f"--against {ref!r} is not a git ref or a folder; e.g. --against origin/main")
    as_path = Path(ref).expanduser()
    if as_path.is_dir():
        return Tree(as_path.resolve(), f"checkout {as_path.resolve()}")
    proc = _git(candidate, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if proc.returncode != 0:
        raise GluonbenchError(
            f"--against {ref}: no such commit in {candidate} and no such folder; give a branch, tag or commit "
            "(a CI checkout needs the history: fetch-depth: 0), or the path of another checkout"
        )
    commit = proc.stdout.strip()
    scratch = owned_tempdir("against")
    root = scratch / "tree"
    root.mkdir()
    try:
        archive = subprocess.Popen(
            ["git", "-C", str(candidate), "archive", "--format=tar", commit],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert archive.stdout is not None
        with tarfile.open(fileobj=archive.stdout, mode="r|") as tar:
            tar.extractall(root, filter="data")
        err = archive.stderr.read().decode(errors="replace") if archive.stderr else ""
        if archive.wait(timeout=120) != 0:
            raise GluonbenchError(f"git archive {ref} failed: {err.strip().splitlines()[-1] if err.strip() else '?'}")
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return Tree(root, f"{ref} ({commit[:12]})", commit=commit, scratch=scratch)


def map_target(target: str, candidate: Path, tree: Tree) -> str:
    """The baseline's version of ``target``: a ``path.py:FUNC`` inside the candidate's repository becomes the same
    path in the baseline's tree; a module name is found through the tree's place on ``PYTHONPATH``."""
    from gluonbench.workloads.spec import is_file_target, split_target

    if ":" not in target:
        return target
    where, func = split_target(target)
    if not is_file_target(where):
        return target
    path = Path(where).expanduser().resolve()
    if not path.is_file():
        raise GluonbenchError(f"--pipeline {target}: {where} is not a file; give path/to/file.py:FUNCTION")
    try:
        rel = path.relative_to(candidate)
    except ValueError:
        return str(path) + ":" + func  # outside the repository: the same file on both sides
    mapped = tree.root / rel
    if not mapped.is_file():
        raise GluonbenchError(f"{rel} is not in the baseline's tree ({tree.label}); the file must exist in both")
    return f"{mapped}:{func}"


def tree_paths(tree: Tree) -> list[str]:
    """The folders a side's code is imported from, first on its ``PYTHONPATH``: the tree's root and its ``src/``."""
    return [str(tree.root)] + ([str(tree.root / "src")] if (tree.root / "src").is_dir() else [])


class Side:
    """A running :mod:`gluonbench.check.side` process: its own process group, JSON lines both ways."""

    def __init__(self, name: str, tree: Tree, setting: dict[str, Any], log_dir: Path, cwd: Path) -> None:
        from gluonbench.scratch import die_with_parent

        self.name, self.tree = name, tree
        paths = tree_paths(tree)
        env = dict(
            os.environ, PYTHONPATH=os.pathsep.join([*paths, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        )
        self.log_path = log_dir / f"{name}.log"
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gluonbench.check.side"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            start_new_session=True,
            preexec_fn=die_with_parent,
            env=env,
            cwd=cwd,
        )
        self.send(setting)
        self.ready: dict[str, Any] = {}

    def send(self, doc: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(doc) + "\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError):
            raise GluonbenchError(self._died("before its turn")) from None

    def receive(self, timeout_s: float, what: str) -> dict[str, Any]:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, timeout_s))
        if not ready:
            raise GluonbenchError(
                f"the {self.name} side stalled in {what} ({timeout_s:.0f} s without an answer); its log: {self.log_path}"
            )
        line = self.proc.stdout.readline()
        if not line:
            raise GluonbenchError(self._died(what))
        return json.loads(line)

    def _died(self, what: str) -> str:
        try:
            code: int | None = self.proc.wait(timeout=5)  # its output ended: it is exiting
        except subprocess.TimeoutExpired:
            code = None
        tail = ""
        try:
            text = self.log_path.read_text(errors="replace").strip().splitlines()
            tail = f": {text[-1]}" if text else ""
        except OSError:
            pass
        return f"the {self.name} side ({self.tree.label}) ended {what} (exit code {code}){tail}"

    def close(self) -> None:
        """Stop the side and everything it started (its whole process group), within a few seconds."""
        if self.proc.poll() is None:
            try:
                self.send({"cmd": "stop"})
                self.proc.wait(timeout=10)
            except (GluonbenchError, subprocess.TimeoutExpired):
                pass
        kill_group(self.proc.pid)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL
            pass
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass
        self._log.close()


@dataclass
class Rounds2:
    """Per round and probe, each side's seconds per sample (wall and CPU)."""

    wall: dict[str, dict[str, dict[int, float]]] = field(default_factory=lambda: {"baseline": {}, "candidate": {}})
    cpu: dict[str, dict[str, dict[int, float]]] = field(default_factory=lambda: {"baseline": {}, "candidate": {}})
    background: dict[str, Any] | None = None
    """other processes' CPU over the whole measurement (:class:`~gluonbench.monitor.load.BackgroundLoad`)"""

    def add(self, side: str, phase: str, number: int, report: Mapping[str, Any]) -> None:
        for kind, store in (("wall", self.wall), ("cpu", self.cpu)):
            for probe, value in (report.get(kind) or {}).items():
                if isinstance(value, int | float) and value > 0:
                    store[side].setdefault(f"{phase}:{probe}", {})[number] = float(value)


def snapshots(
    m: Rounds2, ready: Mapping[str, Mapping[str, Any]], budget_s: float, elapsed_s: float, identity: str
) -> tuple[Snapshot, Snapshot]:
    """The two sides as :class:`Snapshot` s whose reference is the baseline's full pipeline, round by round."""
    from gluonbench.diagnosis.probes import CHAIN
    from gluonbench.env import environment, utc_now

    snaps = []
    ref_w = m.wall["baseline"].get("gate:full", {})
    ref_c = m.cpu["baseline"].get("gate:full", {})
    sref_w = m.wall["baseline"].get("stages:full", {})
    sref_c = m.cpu["baseline"].get("stages:full", {})
    for side in ("baseline", "candidate"):
        w, c = m.wall[side], m.cpu[side]
        total = relative_figure(w.get("gate:full", {}), c.get("gate:full", {}), ref_w, ref_c, PAIRED_MIN_ROUNDS)
        stages: dict[str, Figure] = {}
        previous = None
        probes = [p for p in CHAIN if f"stages:{p.name}" in w]
        for p in probes:
            if previous is not None and p.substage:
                stages[p.substage] = relative_figure(
                    minus(w[f"stages:{previous}"], w[f"stages:{p.name}"]),
                    minus(c.get(f"stages:{previous}", {}), c.get(f"stages:{p.name}", {})),
                    sref_w,
                    sref_c,
                    STAGE_MIN_ROUNDS,
                )
            previous = p.name
        if previous is not None:
            stages["compute"] = relative_figure(
                w[f"stages:{previous}"], c.get(f"stages:{previous}", {}), sref_w, sref_c, 3
            )
        reference = relative_figure(ref_w, ref_c, ref_w, ref_c, PAIRED_MIN_ROUNDS)
        info = ready[side]
        snaps.append(
            Snapshot(
                identity=identity,
                pipeline=dict(info.get("stages") or {}),
                setting=dict(info.get("setting") or {}),
                cores=cores_here(),
                total=total,
                stages=stages,
                ceiling=Figure(),
                ruler=reference,
                budget_s=budget_s,
                elapsed_s=elapsed_s,
                rounds=total.rounds,
                env=environment(),
                started_utc=utc_now(),
                background=m.background,
            )
        )
    return snaps[0], snaps[1]


def check_against(
    target: str,
    ref: str,
    *,
    max_slowdown: float | str = 0.05,
    budget_s: float = 60.0,
    batch_size: int | None = None,
    num_workers: int = 0,
    ctx: Any = None,
    options: Mapping[str, Any] | None = None,
    data_dir: str | None = None,
    on_progress: Callable[[float, float], None] | None = None,
    cwd: str | Path | None = None,
) -> CheckResult:
    """Check the working tree's ``target`` against ``ref``'s, measured side by side (see the module docstring)."""
    t = parse_fraction(max_slowdown)
    budget_s = check_budget(budget_s)
    if not isinstance(target, str):
        raise GluonbenchError(
            f"{param('against', '--against')} measures a pipeline by its name (MODULE:FUNC, path/to/file.py:FUNC or a "
            "workload), imported in each tree; pass the name, not an object"
        )
    here = Path(cwd or os.getcwd()).resolve()
    candidate_root = repo_root(here) if not Path(ref).expanduser().is_dir() else root_or_here(here)
    tree = baseline_tree(ref, candidate_root)
    trees = {"baseline": tree, "candidate": Tree(candidate_root, "working tree")}
    setting = {
        "batch_size": batch_size,
        "num_workers": num_workers,
        "ctx": ctx,
        "options": dict(options or {}),
        "data_dir": data_dir,
        "round_s": ROUND_S,
    }
    from gluonbench.scratch import owned_tempdir

    log_dir = owned_tempdir("againstlog")
    sides: dict[str, Side] = {}
    try:
        for name in ("baseline", "candidate"):
            side_target = map_target(target, candidate_root, trees[name]) if name == "baseline" else target
            sides[name] = Side(name, trees[name], {**setting, "target": side_target}, log_dir, here)
        ready = {name: s.receive(START_S, "building its pipeline") for name, s in sides.items()}
        for name, info in ready.items():
            if "error" in info:
                raise GluonbenchError(f"the {name} side ({trees[name].label}): {info['error']}")
        _same_code_check(ready, trees, candidate_root)
        result = _measure(sides, ready, budget_s, on_progress)
    finally:
        for s in sides.values():
            s.close()
        shutil.rmtree(log_dir, ignore_errors=True)
        if tree.scratch is not None:
            shutil.rmtree(tree.scratch, ignore_errors=True)
    m, elapsed = result
    base, now = snapshots(m, ready, budget_s, elapsed, target)
    out = decide(now, base, t, baseline_path=tree.label, reference="baseline")
    return out


def root_or_here(here: Path) -> Path:
    """The git repository ``here`` is in, else ``here`` (a baseline given as another checkout's folder)."""
    proc = _git(here, "rev-parse", "--show-toplevel")
    return Path(proc.stdout.strip()) if proc.returncode == 0 else here


def _same_code_check(ready: Mapping[str, Mapping[str, Any]], trees: Mapping[str, Tree], candidate: Path) -> None:
    """Each side must run its own tree's code: a factory module of the candidate's repository that the baseline
    imported from elsewhere (an editable install shadowing the tree) would compare the candidate with itself."""
    cand = ready["candidate"].get("module_file")
    base = ready["baseline"].get("module_file")
    if not cand or not base:
        return
    try:
        Path(cand).resolve().relative_to(candidate)
    except ValueError:
        return  # the factory lives outside the repository (an installed package): the same code on both sides
    try:
        Path(base).resolve().relative_to(trees["baseline"].root.resolve())
    except ValueError:
        raise GluonbenchError(
            f"the baseline side imported its pipeline from {base}, not from the baseline's tree "
            f"({trees['baseline'].label}): an installed copy shadows it (pip install -e?); run from a plain checkout "
            "or make the factory's package importable from the repository's root or src/"
        ) from None


def _measure(
    sides: Mapping[str, Side],
    ready: Mapping[str, Any],
    budget_s: float,
    on_progress: Callable[[float, float], None] | None,
) -> tuple[Rounds2, float]:
    """Alternate the sides' rounds: the gate phase (full pipeline), then the stages, for the whole budget."""
    from gluonbench.monitor.load import LoadMeter

    m = Rounds2()
    meter = LoadMeter().start()  # the sides and their workers are this process's descendants: not background
    start = monotonic()
    gate_end = start + GATE_SHARE * budget_s
    end = start + budget_s
    number = 0
    phase = "gate"
    while True:
        now = monotonic()
        if phase == "gate" and now >= gate_end:
            for s in sides.values():
                s.send({"cmd": "next"})
                s.receive(TURN_GRACE_S, "ending its first phase")
            phase = "stages"
        if now >= end:
            break
        number += 1
        order = ("baseline", "candidate") if number % 2 else ("candidate", "baseline")
        for name in order:
            sides[name].send({"cmd": "go"})
            report = sides[name].receive(max(end - monotonic(), 0) + TURN_GRACE_S, f"its round {number}")
            m.add(name, phase, number, report)
        if on_progress is not None:
            on_progress(min(monotonic() - start, budget_s), budget_s)
    m.background = meter.stop().to_dict()
    return m, monotonic() - start
