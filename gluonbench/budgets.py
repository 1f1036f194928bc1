"""Every command's time budget, declared once: what it bounds, its range, and why its floor is what it is.

A budget is the wall-clock time a command may spend measuring. Each command (and the few calls that take a
budget of their own) reads its bounds here and checks a value with :func:`check_budget`, before any work starts,
so the range, the words of the error and its example are the same from the CLI (``--budget``), a TOML config
(``budget_s``) and Python (``budget_s=``).

=====================  =========  ==========  ===============================================================
budget                 at least   at most     why the floor
=====================  =========  ==========  ===============================================================
``diagnose``           2 s        1 week      a round of every probe, on the smallest pipeline
``sweep.diagnose``     2 s        1 week      the same, per worker count (``--diagnose-budget``)
``tune``               10 s       1 week      each setting is a fresh run of the pipeline or script
``head_to_head``       3 s        1 week      two settings in turn, a few rounds each
``check``              10 s       1 hour      the gate's rounds, paired with the ruler's
=====================  =========  ==========  ===============================================================
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gluonbench.errors import GluonbenchError
from gluonbench.names import flag_of, param, param_example

WEEK_S = 7 * 24 * 3600.0


@dataclass(frozen=True)
class Budget:
    """One command's budget: its parameter (``budget_s``; its flag from :mod:`gluonbench.names`), its range in
    seconds, why its floor, and the default the commands' flags show."""

    param: str
    minimum: float
    maximum: float = WEEK_S
    why: str = ""
    default: float = 60.0

    def check(self, value: Any) -> float:
        """``value`` as float seconds, or one :class:`~gluonbench.errors.GluonbenchError` naming the parameter,
        the range and an example."""
        name = param(self.param)
        eg = param_example(f"{self.param}={self.default:g}", f"{flag_of(self.param)} {self.default:g}")
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise GluonbenchError(f"{name} must be a number of seconds (got {value!r}); e.g. {eg}")
        if value < self.minimum:
            why = f": {self.why}" if self.why else ""
            raise GluonbenchError(f"{name} must be at least {self.minimum:g} seconds (got {value:g}){why}; e.g. {eg}")
        if value > self.maximum:
            raise GluonbenchError(f"{name} {value:g} s is outside {self.minimum:g}..{self.maximum:g} s; e.g. {eg}")
        return float(value)


BUDGETS: dict[str, Budget] = {
    "diagnose": Budget("budget_s", 2.0),
    "sweep.diagnose": Budget("diagnose_budget_s", 2.0, default=30.0),
    "tune": Budget("budget_s", 10.0, why="each setting is a fresh run"),
    "head_to_head": Budget("budget_s", 3.0),
    "check": Budget("budget_s", 10.0, 3600.0),
}
"""each command's budget (see the module's table)"""


def check_budget(value: Any, command: str) -> float:
    """``value`` checked against ``command``'s budget (:data:`BUDGETS`): float seconds, or one clear error."""
    return BUDGETS[command].check(value)
