"""MXNet's shipped ``dmlc_tracker`` (ssh submitter) on Python 3.11: ``python -m gluonbench.distributed.tracker``.

Usage: ``--num-workers N --num-servers M --host-file FILE [--host-ip IP] -- COMMAND...``.

``dmlc_tracker.tracker`` calls ``Thread.isAlive()``, which Python 3.9 removed (it is
``is_alive()``); :func:`apply_compat` restores that one alias, nothing else of the tracker is
changed. The tracker then runs the scheduler here and ``ssh``es into the hosts of FILE (round
robin: servers first, then workers) with ``DMLC_*`` exported, as ``tools/launch.py --launcher ssh``
does. This process dies with its launcher (``PR_SET_PDEATHSIG``); its ssh clients and the
scheduler are in its process group, which the launcher kills.
"""

from __future__ import annotations

import logging
import sys
import threading
import warnings


def apply_compat() -> None:
    """Python >= 3.9: give ``threading.Thread`` back the ``isAlive`` alias dmlc_tracker calls.

    Also silences the deprecation warning of ``setDaemon``, which the tracker calls and 3.11 still has.
    """
    warnings.filterwarnings("ignore", "setDaemon", DeprecationWarning)  # still works in 3.11/3.12
    if not hasattr(threading.Thread, "isAlive"):
        threading.Thread.isAlive = threading.Thread.is_alive  # type: ignore[attr-defined]


def main(argv: list[str]) -> int:
    from gluonbench.distributed.node import set_pdeathsig

    set_pdeathsig()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s tracker %(levelname)s %(message)s")
    if "--" not in argv:
        print("usage: python -m gluonbench.distributed.tracker OPTIONS -- COMMAND...", file=sys.stderr)
        return 2
    cut = argv.index("--")
    options, command = argv[:cut], argv[cut + 1 :]
    apply_compat()
    from dmlc_tracker import opts, ssh

    args = opts.get_opts(["--cluster", "ssh", *options, *command])
    args.command = command
    ssh.submit(args)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
