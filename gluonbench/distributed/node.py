"""One process of a distributed job: ``python -m gluonbench.distributed.node SPEC_B64``.

The role comes from ``DMLC_ROLE`` (set by the launcher or by MXNet's ``dmlc_tracker``):

* ``scheduler`` / ``server``: importing MXNet runs ps-lite's scheduler or server loop and exits;
* ``worker``: trains the run spec (``train_and_eval``, a ``dist_*`` kvstore) and prints its result
  as one line ``GLUONBENCH_RESULT {json}`` on stdout, which the launcher collects (also over ssh).

Every node dies with its launcher: the local launcher sets ``PR_SET_PDEATHSIG`` before ``exec``;
here the same is set for every child the node forks (DataLoader workers), and a watchdog thread
exits when the node's parent changes or, when stdout is a pipe or socket (an ssh session), when its
reader is gone.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import select
import stat
import sys
import threading
import time

RESULT_MARK = "GLUONBENCH_RESULT "
PR_SET_PDEATHSIG = 1


def _load_prctl():
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6", use_errno=True).prctl
    except (OSError, AttributeError):  # pragma: no cover - not Linux
        return None


# loaded once here, so a forked child (preexec_fn, after fork) only makes the call, no dlopen
_PRCTL = _load_prctl()


def set_pdeathsig(sig: int = 9) -> None:
    """Ask Linux to send ``sig`` (default SIGKILL) to this process when its parent dies (no-op elsewhere)."""
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, sig, 0, 0, 0)


def _orphan_watchdog(interval: float = 0.5) -> None:
    """Exit when this node is orphaned: its parent changed, or (over ssh) nobody reads its stdout any more."""
    parent = os.getppid()
    try:
        mode = os.fstat(1).st_mode
        piped = stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)
    except OSError:
        piped = False
    poller = None
    if piped:
        poller = select.poll()
        poller.register(1, 0)  # no events asked: POLLERR/POLLHUP still come when the reader is gone

    def watch() -> None:
        while True:
            time.sleep(interval)
            if os.getppid() != parent:
                os._exit(137)
            if poller is not None and any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poller.poll(0)):
                os._exit(137)

    threading.Thread(target=watch, name="gluonbench-orphan-watchdog", daemon=True).start()


def encode_spec(spec: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(spec).encode()).decode()


def decode_spec(text: str) -> dict:
    return json.loads(base64.urlsafe_b64decode(text.encode()).decode())


def main(argv: list[str]) -> int:
    role = os.environ.get("DMLC_ROLE", "")
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s {role} %(name)s %(levelname)s %(message)s")
    set_pdeathsig()
    os.register_at_fork(after_in_child=set_pdeathsig)
    _orphan_watchdog()
    if role in ("scheduler", "server"):
        import gluonbench._mx  # noqa: F401  (MXNet runs the ps-lite loop on import, then exits)

        return 0
    if role != "worker":
        print(f"gluonbench node: DMLC_ROLE={role!r}; the launcher sets scheduler, server or worker", file=sys.stderr)
        return 2
    from gluonbench.diagnosis.sweep import diagnose_run
    from gluonbench.env import FROM_ENV, handed_spec
    from gluonbench.sweeprun.run import RunSpec, train_or_fail

    # a local job hands the spec over in the environment; the ssh launcher's remote hosts get it on the command line
    spec = RunSpec.from_dict(json.loads(handed_spec(FROM_ENV)) if argv[0] == FROM_ENV else decode_spec(argv[0]))
    result, code = train_or_fail(spec, diagnose_run)  # --diagnose --diagnose-rank: that worker diagnoses
    from gluonbench.report.store import dumps

    sys.stdout.write(RESULT_MARK + dumps(result) + "\n")
    sys.stdout.flush()
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
