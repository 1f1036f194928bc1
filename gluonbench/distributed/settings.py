"""What a distributed sweep needs on this machine when it starts (the settings themselves are checked by
:func:`gluonbench.engine.scale.check_scale`, from ``SweepSettings.check()``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gluonbench.errors import GluonbenchError


def check_launch(s: Any) -> None:
    """What must hold on this machine when a distributed sweep starts (a config stays portable without it)."""
    if s.launcher == "ssh":
        path = Path(s.hostfile)
        if not path.is_file():
            raise GluonbenchError(f"--hostfile {s.hostfile} does not exist; write one host[:port] per line")
        hosts = [ln.split()[0] for ln in path.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
        if not hosts:
            raise GluonbenchError(f"--hostfile {s.hostfile} names no host; write one host[:port] per line")
