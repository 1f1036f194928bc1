"""``gluonbench check --against REF -- python train.py ARGS``: the script as REF has it and as the working tree has
it, measured side by side in one job.

The two scripts run as :mod:`gluonbench.script.run` runs one (the hooks in place, each in its own process group,
ended with the check), each with its own tree first on ``PYTHONPATH`` and its own copy of the script: a script
inside the repository is run from REF's tree on the baseline side (the same path under the tree), a module
(``-m pkg.train``) is found through the tree's root (or its ``src/``) first, a script outside the repository is
the same file on both sides. Both start in the current folder, so the script's relative data paths and arguments
resolve against the candidate's folder.

The rounds alternate: one round in the baseline script, then one in the candidate's (the order swapped every
round), the idle script waiting in its loader for its next turn. For the first :data:`~gluonbench.check.gate.GATE_SHARE`
of the budget a round is the full pipeline alone (the verdict's figure, in many short rounds), then the probes
in turn (the stages). Every figure is taken over the
baseline script's full pipeline in the same round, as :mod:`gluonbench.check.against` does for a pipeline, and the
decision is :func:`gluonbench.check.gate.decide`'s. The figures are wall clock inside the scripts.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from time import perf_counter
from typing import Any

from gluonbench.check.against import Tree, baseline_tree, repo_root, root_or_here, tree_paths
from gluonbench.check.gate import (
    GATE_SHARE,
    CheckResult,
    check_budget,
    decide,
    parse_fraction,
)
from gluonbench.diagnosis.verdict import Thresholds
from gluonbench.errors import GluonbenchError
from gluonbench.script.check import script_identity, script_snapshot
from gluonbench.script.run import ScriptCommand, ScriptProcess, ScriptRounds, check_inputs, until_training

log = logging.getLogger(__name__)

SIDES = ("baseline", "candidate")


def map_script(command: ScriptCommand, here: Path, candidate: Path, tree: Tree) -> ScriptCommand:
    """The baseline's version of ``command``: a script inside the candidate's repository becomes the same path in
    the baseline's tree (one line when it is not there); a module or a script outside the repository is kept."""
    if command.module:
        return command
    path = (here / command.target).resolve()
    try:
        rel = path.relative_to(candidate)
    except ValueError:
        return command  # outside the repository: the same file on both sides
    mapped = tree.root / rel
    if not mapped.is_file():
        raise GluonbenchError(
            f"{rel} is not in the baseline's tree ({tree.label}): the script must exist in both; check a script "
            "that REF has too, or save a baseline with --save-baseline on the base branch"
        )
    return replace(command, target=str(mapped))


def check_script_against(
    cmd: list[str] | ScriptCommand,
    ref: str,
    *,
    max_slowdown: float | str = 0.05,
    budget_s: float = 60.0,
    loader: int | None = None,
    start_timeout_s: float = 120.0,
    on_progress: Callable[[float, float], None] | None = None,
    cwd: str | Path | None = None,
) -> CheckResult:
    """Check the working tree's training command against ``ref``'s, side by side (see the module docstring)."""
    from gluonbench.env import environment, utc_now
    from gluonbench.monitor.load import LoadMeter

    threshold = parse_fraction(max_slowdown)
    budget_s = check_budget(budget_s)
    command = check_inputs(cmd, budget_s, loader, start_timeout_s, "check")
    here = Path(cwd or os.getcwd()).resolve()
    candidate_root = repo_root(here) if not Path(ref).expanduser().is_dir() else root_or_here(here)
    tree = baseline_tree(ref, candidate_root)
    trees = {"baseline": tree, "candidate": Tree(candidate_root, "working tree")}
    procs: dict[str, ScriptProcess] = {}
    started = utc_now()
    try:
        commands = {"baseline": map_script(command, here, candidate_root, tree), "candidate": command}
        for name in SIDES:
            procs[name] = ScriptProcess(commands[name], loader, pythonpath=tuple(tree_paths(trees[name])))
            procs[name].start()
        found: dict[str, dict[str, Any]] = {}
        sides: dict[str, ScriptRounds] = {}
        for name in SIDES:
            with _naming(name, trees[name]):
                found[name], ready = until_training(procs[name], start_timeout_s)
                sides[name] = ScriptRounds(procs[name], found[name].get("loader") or {}, ready, budget_s, Thresholds())
        meter = LoadMeter().start()  # the scripts and their workers are this process's descendants: not background
        t0 = perf_counter()
        end = t0 + budget_s
        number = rounds = 0
        gate_end = t0 + GATE_SHARE * budget_s
        while perf_counter() < end:
            number += 1
            order = SIDES if number % 2 else SIDES[::-1]
            only = "full" if perf_counter() < gate_end else None  # first the verdict's figure alone, then the stages
            complete = True
            for name in order:
                with _naming(name, trees[name]):
                    complete = sides[name].run(number, end, only) and complete
            if not complete:
                log.info(
                    "round %d did not come back within the budget and its grace: the rounds before it count", number
                )
                break
            rounds = number
            if on_progress is not None:
                on_progress(min(perf_counter() - t0, budget_s), budget_s)
        elapsed = perf_counter() - t0
        background = meter.stop().to_dict()
    finally:
        for proc in procs.values():
            proc.stop()
        if tree.scratch is not None:
            shutil.rmtree(tree.scratch, ignore_errors=True)
    reference = sides["baseline"].records.get("full")
    if reference is None or not reference.per_round or not sides["candidate"].records["full"].per_round:
        raise GluonbenchError(
            f"no round of both scripts came back within the budget {budget_s:g} s: raise --budget (e.g. --budget "
            f"{max(60, int(2 * budget_s))})"
        )
    snaps = {
        name: script_snapshot(
            script_identity(command, loader),
            sides[name].records,
            found[name],
            sides[name].batch_size,
            dict(reference.per_round),
            budget_s=budget_s,
            elapsed_s=elapsed,
            rounds=rounds,
            started_utc=started,
            env=environment(),
            background=background,
        )
        for name in SIDES
    }
    result = decide(snaps["candidate"], snaps["baseline"], threshold, baseline_path=tree.label, reference="baseline")
    result.notes.append(
        "measured side by side: each figure is over the baseline script's full pipeline in the same round, timed by "
        "wall clock inside the scripts"
    )
    return result


@contextmanager
def _naming(name: str, tree: Tree) -> Iterator[None]:
    """Errors from one side's script name the side and its tree."""
    try:
        yield
    except GluonbenchError as exc:
        exc.prepend(f"the {name} side ({tree.label}): ")  # its type and what it carries (a stall's stage) kept
        raise exc from None
