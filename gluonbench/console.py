"""Progress on the console for the CLI: a bar with ETA on a terminal, plain lines otherwise.

Every long command says what is about to run and roughly how long it takes in its first line (printed
before MXNet is imported, so within a second or two of the start), then:

- on a terminal (stderr is a TTY, or ``GLUONBENCH_PROGRESS=1``): a tqdm bar with the time left;
- otherwise (CI logs, ``nohup``, pipes): one plain line per finished run, round or cell, and for
  commands that run to a time budget one line every :data:`PLAIN_EVERY_S` seconds at most.

Library code never prints; only the command line (:mod:`gluonbench.cli`, :mod:`gluonbench.commands`) uses this module.
"""

from __future__ import annotations

import math
import os
import sys
from time import perf_counter
from typing import Any, TextIO

PLAIN_EVERY_S = 10.0
"""without a terminal, a budgeted command prints its progress at most this often"""


def is_tty(stream: TextIO | None = None) -> bool:
    """Whether progress is drawn as a bar: ``stream`` (stderr) is a terminal or ``GLUONBENCH_PROGRESS=1``."""
    stream = stream or sys.stderr
    if os.environ.get("GLUONBENCH_PROGRESS") == "1":
        return True
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def duration(seconds: float) -> str:
    """``45 s``, ``3.5 min``, ``1.2 h``."""
    if not math.isfinite(seconds) or seconds < 0:
        return "?"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.1f} min"
    return f"{seconds / 3600:.1f} h"


class Progress:
    """One command's progress (see the module docstring).

    ``total`` is the planned number of ``unit`` (runs, cells, or seconds of a budget); ``None`` when
    unknown. ``timed`` marks a budget in seconds: the bar shows seconds done and left, never a rate.
    """

    def __init__(
        self, desc: str, total: float | None, unit: str, *, timed: bool = False, stream: TextIO | None = None
    ) -> None:
        self.desc, self.total, self.unit, self.timed = desc, total, unit, timed
        self.stream = stream or sys.stderr
        self.tty = is_tty(self.stream)
        self.done = 0.0
        self.t0 = perf_counter()
        self._last_plain = -math.inf
        self._bar: Any = None
        self._own_bar = True

    # -- lines ---------------------------------------------------------------------------------
    def say(self, line: str) -> None:
        """A line that stays (above the bar on a terminal)."""
        if self._bar is not None:
            self._bar.write(line, file=self.stream)
        else:
            print(line, file=self.stream, flush=True)

    def start(self, line: str) -> None:
        """The first line: what is about to run and roughly how long it takes."""
        self.t0 = self._last_plain = perf_counter()
        self.say(f"{self.desc}: {line}")

    def eta(self) -> float:
        """Seconds left, from the pace so far (NaN before the first unit or without a total)."""
        if self.total is None or self.done <= 0:
            return math.nan
        if self.timed:
            return max(self.total - self.done, 0.0)
        return (perf_counter() - self.t0) / self.done * max(self.total - self.done, 0)

    def finished(self, line: str, count: float = 1) -> None:
        """One unit (a run, a cell) finished: its line, with the count and the time left."""
        self.done += count
        where = (
            f"[{self.done:.0f}/{self.total:.0f}, {duration(perf_counter() - self.t0)} so far"
            + (f", about {duration(self.eta())} left]" if self.done < self.total else "]")
            if self.total
            else f"[{self.done:.0f} done, {duration(perf_counter() - self.t0)} so far]"
        )
        self.say(f"{line} {where}")
        if self._bar is not None and self._own_bar:
            self._bar.update(count)

    # -- the bar -------------------------------------------------------------------------------
    def bar(self, total: float | None = None) -> Any:
        """The tqdm bar on a terminal (made on first use), else None."""
        if total is not None:
            self.total = total
        if not self.tty:
            return None
        if self._bar is None:
            from tqdm import tqdm

            fmt = (
                "{desc}: {percentage:3.0f}%|{bar}| {n:.0f}/{total:.0f} s [{elapsed}<{remaining}]{postfix}"
                if self.timed
                else None
            )
            self._bar = tqdm(
                total=self.total,
                desc=self.desc,
                unit=self.unit,
                file=self.stream,
                dynamic_ncols=True,
                leave=False,
                bar_format=fmt,
                initial=self.done,
            )
        elif total is not None:
            self._bar.total = total
        return self._bar

    def advance(self, done: float, total: float | None = None, note: str = "") -> None:
        """Progress within the work (steps, seconds of a budget): the bar on a terminal; without one, a
        plain line at most every :data:`PLAIN_EVERY_S` seconds for timed work (per-unit lines say the rest).
        A stop asked for by a signal that the work's code swallowed is raised here again."""
        from gluonbench.interrupts import raise_if_pending

        raise_if_pending()
        if total is not None:
            self.total = total
        bar = self.bar()
        if bar is not None:
            step = done - bar.n
            if step > 0:
                bar.update(step)
            if note:
                bar.set_postfix_str(note, refresh=True)
            return
        if not self.timed:
            return
        self.done = done
        now = perf_counter()
        if now - self._last_plain >= PLAIN_EVERY_S:
            self._last_plain = now
            left = f", about {duration(self.eta())} left" if self.total else ""
            self.say(
                f"{self.desc}: {duration(done)} of {duration(self.total or math.nan)}{left}"
                + (f"; {note}" if note else "")
            )

    def steps(self, done: float, total: float | None, unit: str = "step") -> None:
        """Progress counted in other units than the lines (a sweep's training steps, while its lines count
        runs): on a terminal a bar of them (with the time left), the lines written above it; without one,
        nothing (each finished unit's line says the time left)."""
        if not self.tty:
            return
        if self._bar is None:
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=self.desc, unit=unit, file=self.stream, dynamic_ncols=True, leave=False)
            self._own_bar = False
        step = done - self._bar.n
        if step > 0:
            self._bar.update(step)

    def close(self) -> None:
        """Remove the bar (on a terminal); the lines stay."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None
