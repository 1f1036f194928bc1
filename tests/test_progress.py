"""Progress everywhere (issue #22): a first line saying what runs before the slow imports, one plain line
per finished run without a terminal (never twice), a bar with the time left on a terminal, no "s/s"."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import time

from conftest import REPO

from gluonbench.console import PLAIN_EVERY_S, Progress, duration


def _lines_with_times(proc: subprocess.Popen, stream) -> list[tuple[float, str]]:
    t0 = time.monotonic()
    out: list[tuple[float, str]] = []
    for line in stream:
        out.append((time.monotonic() - t0, line.rstrip("\n")))
    return out


def test_a_sweep_without_a_terminal_says_what_runs_first_then_one_line_per_run(tmp_path, mnist_dir, no_leaks):
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("GLUONBENCH_PROGRESS", None)
    cmd = [sys.executable, "-m", "gluonbench", "sweep", "--workers", "0,1", "--max-batches", "5"]
    cmd += ["--data-dir", str(mnist_dir), "--out", str(tmp_path / "out")]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
    stdout: list[str] = []
    reader = threading.Thread(target=lambda: stdout.extend(proc.stdout), daemon=True)
    reader.start()
    err = _lines_with_times(proc, proc.stderr)
    assert proc.wait(timeout=600) == 0, err
    reader.join(timeout=10)
    started = err[0][0]  # seconds from reading the first stderr line, relative to the run lines
    first = err[0][1]
    # the first line: what runs (2 runs of mnist, the worker counts) and what is known of the time
    assert first.startswith("sweep: 2 run(s) (workers 0, 1 x 1 repeat(s)) of mnist"), first
    assert "time left" in first
    run_lines = [(t, line) for t, line in err if ": train duration" in line]
    assert [line.split(":")[0] for _, line in run_lines] == ["0 workers", "1 worker"], err
    # it comes before the first run finishes (MXNet's import alone takes seconds):
    # asserted on order, not on a quiet machine's timing
    assert started < run_lines[0][0], err
    assert "[1/2," in run_lines[0][1] and "left]" in run_lines[0][1], run_lines[0]
    assert "[2/2," in run_lines[1][1], run_lines[1]
    # each run's line once, in all the output together
    everything = "".join(stdout) + "\n".join(line for _, line in err)
    assert everything.count("0 workers: train duration") == 1
    assert everything.count("1 worker: train duration") == 1
    assert "Best worker count" in "".join(stdout)
    assert "\r" not in everything, "no bar drawing without a terminal"


def test_plain_lines_per_unit_with_the_time_left():
    buf = io.StringIO()
    p = Progress("io", 3, "cell", stream=buf)
    assert not p.tty
    p.start("3 cells")
    p.finished("file small files: 100 MB/s")
    p.finished("file small shards: 200 MB/s")
    p.finished("pipe small shards: 150 MB/s")
    lines = buf.getvalue().splitlines()
    assert lines[0] == "io: 3 cells"
    assert lines[1].startswith("file small files: 100 MB/s [1/3,") and "left]" in lines[1]
    assert lines[3].startswith("pipe small shards: 150 MB/s [3/3,") and "left" not in lines[3]


def test_a_budget_without_a_terminal_prints_a_line_at_most_every_few_seconds(monkeypatch):
    import gluonbench.console as console

    clock = [100.0]
    monkeypatch.setattr(console, "perf_counter", lambda: clock[0])
    buf = io.StringIO()
    p = Progress("diagnose", 60, "s", timed=True, stream=buf)
    p.start("timing mnist within a 60 s budget")
    for second in range(1, 61):
        clock[0] = 100.0 + second
        p.advance(float(second), 60.0)
    lines = buf.getvalue().splitlines()
    assert len(lines) == 1 + int(60 // PLAIN_EVERY_S), lines
    assert lines[1] == "diagnose: 10 s of 60 s, about 50 s left", lines


def test_the_bar_on_a_terminal_counts_seconds_not_seconds_per_second(monkeypatch):
    monkeypatch.setenv("GLUONBENCH_PROGRESS", "1")
    buf = io.StringIO()
    p = Progress("tune", 30, "s", timed=True, stream=buf)
    p.start("searching within a 30 s budget")
    p.advance(12.0, 30.0, "best 2300/s at 1 worker")
    p.close()
    text = buf.getvalue()
    assert "12/30 s" in text and "best 2300/s at 1 worker" in text, text
    assert "s/s" not in text and "it/s" not in text, text


def test_durations_read_as_people_say_them():
    assert [duration(s) for s in (5, 89, 150, 7200)] == ["5 s", "89 s", "2.5 min", "2.0 h"]


def test_a_bar_of_steps_under_lines_of_runs_on_a_terminal(monkeypatch):
    monkeypatch.setenv("GLUONBENCH_PROGRESS", "1")
    buf = io.StringIO()
    p = Progress("sweep", 2, "run", stream=buf)
    p.steps(10, 40)
    p.steps(25, 40)
    p.finished("0 workers: train duration 1.0 s")
    p.close()
    text = buf.getvalue()
    assert "25/40" in text and "step" in text, text
    assert "0 workers: train duration 1.0 s [1/2," in text, text


def test_steps_print_nothing_without_a_terminal(monkeypatch):
    monkeypatch.delenv("GLUONBENCH_PROGRESS", raising=False)
    buf = io.StringIO()
    p = Progress("sweep", 2, "run", stream=buf)
    p.steps(10, 40)
    p.finished("0 workers: train duration 1.0 s")
    assert buf.getvalue().count("\n") == 1, buf.getvalue()  # the run's line only, no bar
    assert buf.getvalue().startswith("0 workers: train duration 1.0 s [1/2,")
