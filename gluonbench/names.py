"""How a message names an argument: the Python keyword when gluonbench is called from Python, the
command-line flag when the CLI called it ("raise budget_s" vs "raise --budget").

An error carries its parameters. The library raises :class:`gluonbench.errors.GluonbenchError` with a message
that names each parameter with :func:`param` (and each example with :func:`param_example`); the error keeps
that raw text and the names (``exc.params``: ``("budget_s",)``), ``str(exc)`` words it for the process's
audience, and the CLI words it with the flags (:meth:`gluonbench.errors.GluonbenchError.worded`). The flag of a
parameter is declared once, here (:func:`flag_of`: :data:`FLAGS`, else ``--`` + the name with dashes) or where
the parameter is named (``param("save", "--save-baseline")``).

Text that is not an error (advice, a report's line, a log line) is worded as it is built, with :func:`arg` and
:func:`example`, for the audience of the process: the CLI calls :func:`use_flags` once at start-up, and a run's
child process inherits it (:data:`ENV`). Library code never needs to know who called it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

ENV = "GLUONBENCH_MESSAGES"
"""``flags`` while the CLI is the caller: child processes (a sweep's runs) inherit it with the environment"""

_STATE = {"flags": os.environ.get(ENV) == "flags"}

FLAGS = {
    "budget_s": "--budget",
    "diagnose_budget_s": "--diagnose-budget",
    "workload": "--dataset",
}
"""setting names whose flag is not ``--`` + the name with dashes; a declared setting's
(:data:`gluonbench.settings.SETTINGS`) is added from its declaration"""

_OPEN, _SEP, _CLOSE = "\u27e6", "\u2016", "\u27e7"  # ⟦name‖flag⟧: a parameter
_EX_OPEN, _EX_CLOSE = "\u27ea", "\u27eb"  # ⟪python‖cli⟫: an example in the caller's terms
_PARAM = re.compile(f"{_OPEN}([^{_SEP}{_CLOSE}]*)(?:{_SEP}([^{_CLOSE}]*))?{_CLOSE}")
_EXAMPLE = re.compile(f"{_EX_OPEN}([^{_SEP}{_EX_CLOSE}]*){_SEP}([^{_EX_CLOSE}]*){_EX_CLOSE}")
MARKS = (_OPEN, _SEP, _CLOSE, _EX_OPEN, _EX_CLOSE)
"""the characters of a raw message's markers: none of them is ever in text a person reads"""
_MARKED = re.compile(f"[{''.join(MARKS)}]")
_UNMARK = {ord(c): None for c in MARKS}


def use_flags(on: bool = True) -> None:
    """Name arguments as command-line flags from now on (the CLI); ``False``: as Python arguments."""
    _STATE["flags"] = on
    if on:
        os.environ[ENV] = "flags"  # a run's child process words its messages as its parent does
    else:
        os.environ.pop(ENV, None)


def flag_of(name: str, flag: str | None = None) -> str:
    """The command-line flag of parameter ``name``: ``flag`` if given, else :data:`FLAGS`, else ``--`` + the
    name with dashes."""
    return flag or FLAGS.get(name, "--" + name.replace("_", "-"))


def param(name: str, flag: str | None = None) -> str:
    """Parameter ``name`` (a Python argument or setting) in an error's message, worded when the error is shown:
    ``budget_s`` to a Python caller, ``--budget`` (``flag``, else :func:`flag_of`) on the command line."""
    return f"{_OPEN}{name}{_SEP}{flag}{_CLOSE}" if flag else f"{_OPEN}{name}{_CLOSE}"


def param_example(python: str, cli: str) -> str:
    """An example value in an error's message, worded when the error is shown: ``budget_s=60`` to a Python
    caller, ``--budget 60`` on the command line."""
    return f"{_EX_OPEN}{python}{_SEP}{cli}{_EX_CLOSE}"


def render(text: str, flags: bool | None = None, names: Mapping[str, str] | None = None) -> str:
    """``text`` with each :func:`param` and :func:`param_example` worded: as flags (``flags=True``), as Python
    arguments (``False``) or for this process's audience (``None``); ``names`` words the parameters it holds its
    own way (a pytest option's name for ``budget_s``)."""
    if flags is None:
        flags = _STATE["flags"]
    names = names or {}

    def word(m: re.Match[str]) -> str:
        return names.get(m[1]) or (flag_of(m[1], m[2]) if flags else m[1])

    if _OPEN in text:
        text = _PARAM.sub(word, text)
    if _EX_OPEN in text:
        text = _EXAMPLE.sub(lambda m: _renamed(m[2], names) if flags else m[1], text)
    return text.translate(_UNMARK) if _MARKED.search(text) else text  # a marker cut short (a truncated message)


def _renamed(cli: str, names: Mapping[str, str]) -> str:
    """An example's command line with the flag of each parameter in ``names`` worded as ``names`` says."""
    for name, word in names.items():
        cli = re.sub(f"(?<![\\w-]){re.escape(flag_of(name))}(?![\\w-])", word, cli)
    return cli


def params(text: str) -> tuple[str, ...]:
    """The parameters that ``text`` names with :func:`param`, each once, in order."""
    return tuple(dict.fromkeys(m[1] for m in _PARAM.finditer(text)))


def arg(name: str, flag: str | None = None) -> str:
    """``name`` (a Python argument or setting) as this process's caller knows it, now: ``budget_s`` from Python,
    ``--budget`` from the CLI (``flag``, else :func:`flag_of`). An error's message uses :func:`param`."""
    return flag_of(name, flag) if _STATE["flags"] else name


def example(python: str, cli: str) -> str:
    """An example value in this process's caller's terms, now: ``budget_s=60`` from Python, ``--budget 60``
    from the CLI. An error's message uses :func:`param_example`."""
    return cli if _STATE["flags"] else python
