"""Helpers of the fault tests: a command run inside a private mount namespace with a small tmpfs."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys

import pytest
from conftest import REPO


def mount_ns_available() -> str | None:
    """None when ``unshare -m`` plus a tmpfs mount work here, else why not."""
    if shutil.which("unshare") is None:
        return "unshare is not installed"
    probe = subprocess.run(
        ["unshare", "-m", "sh", "-c", "mount -t tmpfs -o size=64k tmpfs /mnt"], capture_output=True, text=True
    )
    if probe.returncode != 0:
        return f"cannot mount a tmpfs in a private mount namespace: {probe.stderr.strip()} (needs root/CAP_SYS_ADMIN)"
    return None


def need_mount_ns() -> None:
    why = mount_ns_available()
    if why:
        pytest.skip(why)


def run_in_tmpfs(
    mounts: dict[str, str],
    args: list[str],
    env: dict[str, str] | None = None,
    timeout: float = 300,
    before: str = "",
    after: str = "",
) -> subprocess.CompletedProcess:
    """``python -m gluonbench ARGS`` with a fresh tmpfs of the given size on each mount point (``{"/dev/shm": "64k"}``).

    ``before`` runs in the namespace after mounting (e.g. filling a disk), ``after`` once gluonbench has
    exited (e.g. copying files out of the tmpfs, which goes with the namespace); gluonbench's exit code is kept.
    """
    need_mount_ns()
    script = "set -e; " + "".join(
        f"mkdir -p {shlex.quote(point)}; mount -t tmpfs -o size={size} tmpfs {shlex.quote(point)}; "
        for point, size in mounts.items()
    )
    script += "\n" + (before + "\n" if before else "")
    script += "set +e\n" + shlex.join([sys.executable, "-m", "gluonbench", *args]) + "\nrc=$?\n"
    script += (after + "\n" if after else "") + "exit $rc"
    full_env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
    return subprocess.run(
        ["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=timeout, env=full_env, cwd=REPO
    )
