"""The commands of the ``gluonbench`` command line, one module each.

Each module declares its sub-parser (``add(sub)``, its flags, help and examples) and its ``cmd_*``
function (parse the flags into settings, call :mod:`gluonbench.api`, print). The options that several
commands share are declared once, in :mod:`gluonbench.commands.options`; :mod:`gluonbench.cli` builds the
parser from :data:`COMMANDS` and runs the chosen command.
"""

from __future__ import annotations

from types import ModuleType

from gluonbench.commands import (
    check,
    compare,
    diagnose,
    doctor,
    io,
    pack,
    profile,
    report,
    stream,
    sweep,
    tune,
    verify,
)

COMMANDS: tuple[ModuleType, ...] = (
    sweep,
    report,
    diagnose,
    pack,
    verify,
    stream,
    io,
    profile,
    tune,
    check,
    compare,
    doctor,
)
"""Every command's module, in the order ``gluonbench --help`` lists them."""
