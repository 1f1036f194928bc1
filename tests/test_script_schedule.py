"""The round schedule gluonbench sends a running script (:class:`gluonbench.script.run.ScriptRounds`), on
constructed step estimates: no script, no MXNet step (milliseconds)."""

from types import SimpleNamespace

import pytest

from gluonbench.diagnosis.verdict import Thresholds
from gluonbench.script.run import FAST_BLOCKS, LOADER_ONLY_BATCHES, ScriptRounds


class _Channel:
    def __init__(self) -> None:
        self.sent: list[dict] = []

    def send(self, message: dict) -> None:
        self.sent.append(message)


def _schedule(step_s: dict[str, float], workers: int = 0) -> tuple[ScriptRounds, dict[str, tuple[float, int, int]]]:
    channel = _Channel()
    proc = SimpleNamespace(channel=channel, recv=lambda timeout: {"ev": "round", "results": {}, "systems": {}})
    info = {"transform": True, "num_workers": workers, "prefetch": 2 * workers}
    side = ScriptRounds(proc, info, {"samples": 64, "step_s": 0.01}, budget_s=40.0, thresholds=Thresholds())
    for name, s in step_s.items():
        side.records[name].est_step_s = s
    assert side.run(1, budget_end=1e12)
    (message,) = channel.sent
    return side, {name: (slice_s, k, skip) for name, slice_s, k, skip in message["plan"]}


def test_each_probe_runs_a_whole_slice_when_every_step_fits_in_one():
    side, plan = _schedule({"full": 0.02, "no_preprocess": 0.015, "no_read": 0.005, "cached_batch": 0.004})
    assert set(plan) == set(side.names)
    for name in ("full", "no_preprocess", "no_read", "cached_batch"):
        assert plan[name][0] == pytest.approx(side.slice_s)
        assert plan[name][1] * side.records[name].est_step_s >= side.plan.block_s  # a block lasts block_s


def test_a_slow_step_shortens_the_fast_probes_slices_to_a_few_blocks():
    # a storage-bound script: the full pipeline's one step (0.4 s) outlasts a slice (budget 40 s: 0.167 s), so the
    # round lasts that step; the fast probes (samples replayed, one batch replayed) then run FAST_BLOCKS blocks each instead of the whole slice
    side, plan = _schedule(
        {"full": 0.4, "no_preprocess": 0.34, "no_read": 0.005, "cached_batch": 0.004, "loader_only": 0.37}
    )
    assert side.records["full"].est_step_s > side.slice_s
    assert plan["full"] == (pytest.approx(side.slice_s), 1, 0)  # one step, counted (no worker: nothing prefetched)
    for name in ("no_read", "cached_batch"):
        slice_s, k, _ = plan[name]
        assert slice_s == pytest.approx(FAST_BLOCKS * k * side.records[name].est_step_s)
        assert slice_s < side.slice_s
    assert plan["loader_only"][1] <= LOADER_ONLY_BATCHES


def test_the_fast_slices_keep_their_length_when_no_step_outlasts_a_slice():
    # the same fast probes beside a full pipeline of 0.1 s a step (under the 0.167 s slice): unchanged
    _, slow = _schedule({"full": 0.4, "cached_batch": 0.004})
    side, fast = _schedule({"full": 0.1, "cached_batch": 0.004})
    assert fast["cached_batch"][0] == pytest.approx(side.slice_s)
    assert slow["cached_batch"][0] < side.slice_s


def test_a_fork_of_the_script_notes_its_pid_for_the_clean_up(tmp_path):
    """What a process forked from the script (a loader worker) runs first: its pid goes into the run's folder, so the
    shared-memory segments it made are removed at the end though it ended before the script was stopped."""
    import os

    from gluonbench.script.boot import note_fork
    from gluonbench.script.channel import FORKED

    path = tmp_path / FORKED
    pids = []
    for _ in range(2):
        pid = os.fork()
        if pid == 0:  # the child: what os.register_at_fork runs in it, then gone
            try:
                note_fork(str(path))()
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        pids.append(pid)
    assert path.read_text().split() == [str(p) for p in pids]
