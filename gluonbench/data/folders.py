""":func:`atomic_folder`: a generated data set folder, built once into a temporary sibling and renamed into place."""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gluonbench.errors import GluonbenchError

log = logging.getLogger(__name__)


def atomic_folder(target: Path, build: Callable[[Path], Any], done: Callable[[Path], bool], what: str) -> Path:
    """``target``, built by ``build(tmp)`` into a temporary sibling renamed into place unless ``done(target)``.

    A concurrent writer that finished first wins (its copy is kept); a failed build leaves nothing behind.
    ``what`` names the data set and the fix in the error when the parent folder is not writable.
    """
    if done(target):
        return target
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))
    except OSError as exc:
        raise GluonbenchError(f"cannot write {what.format(parent=target.parent, reason=exc.strerror)}") from exc
    try:
        t0 = time.perf_counter()
        build(tmp)
        try:
            os.rename(tmp, target)
        except OSError:
            if not done(target):  # not a concurrent writer's finished copy
                raise
        log.info("wrote %s in %.1f s", target, time.perf_counter() - t0)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target
