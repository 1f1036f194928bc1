"""How a message names an argument: the Python keyword when gluonbench is called from Python, the
command-line flag when the CLI called it ("raise budget_s" vs "raise --budget").

The library validates and words its messages with :func:`arg`; :mod:`gluonbench.cli` calls
:func:`use_flags` once at start-up. Library code never needs to know who called it.
"""

from __future__ import annotations

import os

ENV = "GLUONBENCH_MESSAGES"
"""``flags`` while the CLI is the caller: child processes (a sweep's runs) inherit it with the environment"""

_STATE = {"flags": os.environ.get(ENV) == "flags"}

FLAGS = {
    "budget_s": "--budget",
    "timeout_s": "--timeout",
    "diagnose_budget_s": "--diagnose-budget",
    "workload": "--dataset",
}
"""setting names whose flag is not ``--`` + the name with dashes"""


def use_flags(on: bool = True) -> None:
    """Name arguments as command-line flags from now on (the CLI); ``False``: as Python arguments."""
    _STATE["flags"] = on
    if on:
        os.environ[ENV] = "flags"  # a run's child process words its messages as its parent does
    else:
        os.environ.pop(ENV, None)


def arg(name: str, flag: str | None = None) -> str:
    """``name`` (a Python argument or setting) as the caller knows it: ``budget_s`` from Python, ``--budget``
    from the CLI (``flag``, else :data:`FLAGS`, else ``--`` + the name with dashes)."""
    if not _STATE["flags"]:
        return name
    return flag or FLAGS.get(name, "--" + name.replace("_", "-"))


def example(python: str, cli: str) -> str:
    """An example value in the caller's terms: ``budget_s=60`` from Python, ``--budget 60`` from the CLI."""
    return cli if _STATE["flags"] else python
