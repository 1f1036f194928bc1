"""The control channel between gluonbench and the script's process: one JSON object a line over a socket pair.

The parent sends the schedule (``{"op": "round", ...}``, ``{"op": "stop"}``); the script's process sends what
it found (``{"ev": "loader", ...}``, ``{"ev": "ready", ...}``, ``{"ev": "round", ...}``, ``{"ev": "error", ...}``).
The child's end is inherited as a file descriptor named by :data:`FD_ENV`. Nothing here imports MXNet.
"""

from __future__ import annotations

import json
import select
import socket
from typing import Any

FD_ENV = "GLUONBENCH_SCRIPT_FD"
"""the child's end of the socket pair (a file descriptor number)"""
FLAGS = "modes"
"""the shared file of loader modes in the run's folder: one byte per DataLoader (its number)"""
FORKED = "forked"
"""the file in the run's folder of every pid the script's processes forked (its loader workers), one per line: the
segments a worker made are removed at the end though the worker ended first"""
DIR_ENV = "GLUONBENCH_SCRIPT_DIR"
"""the run's private folder: the loaders' mode flags (a file every loader worker maps)"""
WORKERS_ENV = "GLUONBENCH_SCRIPT_WORKERS"
"""``N:W``: the N-th DataLoader the script makes is made with ``num_workers=W`` (gluonbench sweep -- CMD)"""
KNOBS_ENV = "GLUONBENCH_SCRIPT_KNOBS"
"""``N:{JSON}``: the N-th DataLoader the script makes is made with these loader knobs (``num_workers``,
``thread_pool``, ``prefetch``, ``pin_memory``), as if the script said so (gluonbench tune -- CMD)"""
TO_END_ENV = "GLUONBENCH_SCRIPT_TO_END"
"""``1``: count every training step and send the run's totals when the script ends (gluonbench sweep --to-end)"""
LOADER_ENV = "GLUONBENCH_SCRIPT_LOADER"
"""which DataLoader to diagnose (1 = the first one made), empty for the first followed by updates"""


class Channel:
    """One end of the socket pair: :meth:`send` a dict, :meth:`recv` the next one (None at end of file)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._buf = b""

    def send(self, message: dict[str, Any]) -> None:
        self.sock.sendall(json.dumps(message).encode() + b"\n")

    def ready(self, timeout: float) -> bool:
        """True when a line (or end of file) can be read within ``timeout`` seconds."""
        if b"\n" in self._buf:
            return True
        return bool(select.select([self.sock], [], [], max(timeout, 0.0))[0])

    def recv(self, timeout: float | None = None) -> dict[str, Any] | None:
        """The next message; None at end of file; raises :class:`TimeoutError` after ``timeout`` seconds."""
        while b"\n" not in self._buf:
            if timeout is not None and not select.select([self.sock], [], [], max(timeout, 0.0))[0]:
                raise TimeoutError
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
