"""Scratch folders and helper processes that do not outlive a ``kill -9`` of their owner.

A ``finally`` cannot run after SIGKILL, so three things make sure nothing is left behind:

* :func:`owned_tempdir` names every temporary folder after its owner, ``gluonbench-KIND-PID.START-XXXX``
  (``START``: the owner's start time in clock ticks, so a reused pid is not mistaken for the owner);
  :func:`sweep_stale` removes the folders whose owner is gone. It runs whenever gluonbench starts a
  command and whenever a new scratch folder is made, so the next gluonbench run cleans up after a
  killed one. Only plain folders owned by this user are removed, never a symlink or another user's folder.
* :func:`die_with_parent` (a ``preexec_fn``) makes a helper process (a pipe producer) die with its parent.
* :func:`kill_marked` kills every process carrying a marker in its environment: a profiled program's
  grandchild that called ``setsid()`` leaves the process group but keeps the marker.
"""

from __future__ import annotations

import ctypes
import logging
import os
import re
import shutil
import signal
import stat
import tempfile
from pathlib import Path

log = logging.getLogger(__name__)

PR_SET_PDEATHSIG = 1
PREFIX = "gluonbench-"
_OWNED = re.compile(r"^gluonbench-([a-z]+)-(\d+)\.(\d+)-")
MARKER_ENV = "GLUONBENCH_TREE"


def _start_ticks(pid: int) -> int | None:
    """The start time of process ``pid`` (clock ticks since boot), or None if it is gone (or a zombie)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    try:
        # the command name (field 2) may hold spaces and ')': the fields after the last ')' are plain
        fields = raw[raw.rindex(b")") + 2 :].split()
        return None if fields[0] in (b"Z", b"X") else int(fields[19])
    except (ValueError, IndexError):
        return None


def owner_tag(pid: int | None = None) -> str:
    """``PID.START`` for ``pid`` (default: this process), the owner part of a scratch folder's name."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}.{_start_ticks(pid) or 0}"


def owned_tempdir(kind: str, root: str | Path | None = None) -> Path:
    """A new private folder ``gluonbench-KIND-PID.START-XXXX`` under the temp folder; stale ones are swept first."""
    if not re.fullmatch(r"[a-z]+", kind):
        raise ValueError(f"scratch kind {kind!r}: lower-case letters only")
    sweep_stale(root)
    return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-{owner_tag()}-", dir=root))


def _owner_alive(pid: int, start: int) -> bool:
    ticks = _start_ticks(pid)
    return ticks is not None and (start == 0 or ticks == start)


def owner_alive(name: str) -> bool:
    """Whether the process that made scratch folder ``name`` (``gluonbench-KIND-PID.START-...``) still runs; False
    for any other name."""
    m = _OWNED.match(name)
    return m is not None and _owner_alive(int(m.group(2)), int(m.group(3)))


def sweep_stale(root: str | Path | None = None) -> list[Path]:
    """Remove the scratch folders under ``root`` (default: the temp folder) whose owner process is gone."""
    base = Path(root) if root is not None else Path(tempfile.gettempdir())
    removed: list[Path] = []
    try:
        names = os.listdir(base)
    except OSError:
        return removed
    me = os.geteuid()
    for name in names:
        m = _OWNED.match(name)
        if m is None:
            continue
        path = base / name
        try:
            st = path.lstat()
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != me:  # never a symlink, never another user's folder
            continue
        if _owner_alive(int(m.group(2)), int(m.group(3))):
            continue
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            removed.append(path)
    if removed:
        log.info("removed %d scratch folder(s) left by killed gluonbench runs", len(removed))
    return removed


def own_multiprocessing_tempdir() -> Path | None:
    """Make this process's :mod:`multiprocessing` temp folder an owned scratch folder (``gluonbench-mp-...``).

    A DataLoader worker that hands a batch over passes its file descriptor through multiprocessing's resource
    sharer, which listens on a socket in the process's temp folder: made on first use, ``/tmp/pymp-XXXX``, and
    removed only by that process's normal exit. Loader workers are stopped with SIGTERM (``Pool.terminate()``),
    so every worker that sent a batch left one ``pymp-*`` folder behind (two per ``gluonbench tune``). Set here,
    before the workers fork, the folder is inherited: the workers' sockets go into this one, which this process
    removes at exit and :func:`sweep_stale` removes after a ``kill -9``. Idempotent; returns the folder, or None
    when none can be made here (a full or read-only temp folder: multiprocessing's own default is left as it is).
    """
    from multiprocessing import process, util

    config = process.current_process()._config
    current = config.get("tempdir")
    m = _OWNED.match(Path(current).name) if current else None
    if current and m is not None and m.group(1) == "mp" and f"{m.group(2)}.{m.group(3)}" == owner_tag():
        return Path(current)  # made by this process (a forked child makes its own)
    root = tempfile.gettempdir()
    try:
        path = owned_tempdir("mp", root=root if sockets_fit(root) else SHORT_ROOT)
    except OSError as exc:
        log.warning("no scratch folder for the loader workers' sockets (%s); they use multiprocessing's own", exc)
        return None
    config["tempdir"] = str(path)
    # removed at this process's exit like multiprocessing's own folder (a forked worker clears the registry)
    util.Finalize(None, shutil.rmtree, args=(str(path),), kwargs={"ignore_errors": True}, exitpriority=-100)
    return path


def _load_prctl():  # type: ignore[no-untyped-def]
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        return None


_PRCTL = _load_prctl()


def die_with_parent() -> None:
    """``preexec_fn``: the kernel sends this process SIGKILL when its parent dies (Linux; no-op elsewhere)."""
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)


def marked_pids(token: str) -> list[int]:
    """This user's processes whose environment holds ``GLUONBENCH_TREE=token`` (not this process)."""
    needle = f"{MARKER_ENV}={token}".encode()
    me, mine = os.getpid(), os.geteuid()
    found: list[int] = []
    for entry in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            if os.stat(f"/proc/{entry}").st_uid != mine:
                continue
            env = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if needle in env.split(b"\0"):
            found.append(int(entry))
    return found


def kill_marked(token: str) -> int:
    """SIGKILL every process carrying the marker ``token`` (see :func:`marked_pids`); how many were signalled."""
    n = 0
    for _ in range(3):  # a process may fork while we look: look again until none is left
        pids = marked_pids(token)
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
                n += 1
            except OSError:
                pass
    return n


SHM_DIR = Path("/dev/shm")
MX_SEGMENT_PATTERN = r"mx_([0-9a-f]+)_[0-9a-f]+"
"""the name of MXNet's shared-memory segment: ``mx_<pid hex>_<id hex>`` (also handed to profile's watchdog)"""
_MX_SEGMENT = re.compile(MX_SEGMENT_PATTERN)
SHORT_ROOT = "/tmp"
"""where a run's scratch goes when the folder it was given makes socket paths too long (swept at each start)"""
AF_UNIX_PATH_MAX = 107
"""the longest path a Unix socket can be bound to (``sun_path`` less its final NUL)"""
SOCKET_ROOM = 64
"""bytes a temp folder must leave for a DataLoader worker's socket, ``/gluonbench-mp-PID.START-XXXXXXXX/listener-XXXXXXXX``
(:func:`own_multiprocessing_tempdir`; pid and start time at their longest), within :data:`AF_UNIX_PATH_MAX`"""


def sockets_fit(root: str | Path) -> bool:
    """True when the loader workers of a process whose temp folder is ``root`` can bind their sockets under it."""
    return len(os.fsencode(str(root))) + SOCKET_ROOM <= AF_UNIX_PATH_MAX


def shm_entries() -> set[str]:
    """The names in ``/dev/shm`` (empty where it cannot be read)."""
    try:
        return set(os.listdir(SHM_DIR))
    except OSError:
        return set()


def mx_segment_owner(name: str) -> int | None:
    """The pid that made MXNet's shared-memory segment ``mx_<pid hex>_<id hex>`` (a loader worker's batch), or
    None for any other name."""
    m = _MX_SEGMENT.fullmatch(name)
    return int(m.group(1), 16) if m else None


def remove_mx_segments(pids: set[int], names: set[str] | None = None, keep_mapped: bool = False) -> list[str]:
    """Remove the MXNet segments among ``names`` (default: all of ``/dev/shm``) that one of ``pids`` made.

    ``keep_mapped``: leave those this process maps (a batch it still holds, which MXNet will free). Returns
    the names removed, sorted.
    """
    if not pids:
        return []
    names = shm_entries() if names is None else names
    ours = sorted(n for n in names if mx_segment_owner(n) in pids)
    if keep_mapped and ours:
        try:
            mapped = Path("/proc/self/maps").read_text()
        except OSError:
            return []
        ours = [n for n in ours if f"{SHM_DIR / n}" not in mapped]
    removed = []
    for name in ours:
        try:
            (SHM_DIR / name).unlink()
            removed.append(name)
        except OSError:
            pass
    return removed


def clean_shm(before: set[str], pids: set[int]) -> list[str]:
    """Remove the MXNet segments made since ``before`` (a :func:`shm_entries` listing) by one of ``pids``; their names."""
    return remove_mx_segments(pids, shm_entries() - before)
