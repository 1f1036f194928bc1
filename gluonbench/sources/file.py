"""File mode: copy the whole data set into a local cache first (timed as start-up), then read locally.

As SageMaker's File mode does before a training script starts. The copy runs
``threads`` objects at a time; each file is written under a temporary name and
renamed, so an interrupted copy leaves no half-written file. A cache folder made
here is removed on :meth:`FileSource.close`; one passed as ``cache_dir`` is kept.
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from time import perf_counter
from typing import BinaryIO

from gluonbench.data.store import LocalStore, ObjectInfo
from gluonbench.errors import DataError
from gluonbench.files import atomic_writer
from gluonbench.names import arg, param
from gluonbench.scratch import owned_tempdir
from gluonbench.sources.base import DataSet, OpenStats, Source

log = logging.getLogger(__name__)


def check_writable(folder: Path, flag: str | None = None) -> None:
    """Create ``folder`` if needed and prove it takes a file; :class:`DataError` naming the fix if not."""
    flag = flag or arg("cache_dir")  # the argument as the caller knows it
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".gluonbench-probe-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise DataError(f"cannot write to the cache folder {folder}: {exc.strerror}; choose a writable {flag}") from exc


def disk_used(folder: Path) -> int:
    """Bytes of disk the files under ``folder`` occupy (allocated blocks)."""
    total = 0
    for dirpath, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
            except OSError:
                continue
    return total


def _copy(src: BinaryIO, dest: BinaryIO) -> None:
    """Copy an open file into another in the kernel (``sendfile``), or through a buffer where it cannot."""
    try:
        while os.sendfile(dest.fileno(), src.fileno(), None, 1 << 30) > 0:
            pass
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
            raise
        shutil.copyfileobj(src, dest, 1 << 20)


class FileSource(Source):
    mode = "file"

    def __init__(self, uri: str, endpoint_url: str | None = None, cache_dir: str | Path | None = None, **kw) -> None:
        super().__init__(uri, endpoint_url, **kw)
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self._made_cache: Path | None = None
        self.local: LocalStore | None = None

    def _copy_one(self, obj: ObjectInfo, root: Path) -> int:
        dest = root / obj.key
        dest.parent.mkdir(parents=True, exist_ok=True)
        src = self.store.local_path(obj.key)

        def failed(path: Path, exc: OSError) -> DataError:
            if src is not None and (not src.exists() or not os.access(src, os.R_OK)):
                return DataError(f"cannot read {src}: {exc.strerror}; fix or remove the file")
            return DataError(f"cannot write {path}: {exc.strerror}; choose a writable {param('cache_dir')}")

        # a cache that is deleted on close: no fsync, but never a half-written file under its real name
        with atomic_writer(dest, sync=False, error=failed) as f:
            if src is not None:
                with open(src, "rb") as r:
                    _copy(r, f)
            else:
                f.write(self.store.get(obj.key))
        return obj.size

    def open(self) -> OpenStats:
        t0 = perf_counter()
        listing = self.store.list()
        t1 = perf_counter()
        files = [o for o in listing if not o.is_folder]
        if not files:
            raise DataError(f"{self.uri} holds no objects; check the path or the S3 prefix")
        if self.cache_dir is not None:
            check_writable(self.cache_dir)
            root = self.cache_dir
        else:
            root = self._made_cache = owned_tempdir("file")
        try:
            with ThreadPoolExecutor(max(1, self.threads), thread_name_prefix="gluonbench-copy") as pool:
                copied = sum(pool.map(lambda o: self._copy_one(o, root), files))
            t2 = perf_counter()
            self.local = LocalStore(root)
            self.dataset = DataSet.discover(self.local)
        except BaseException:
            self.close()
            raise
        t3 = perf_counter()
        self.stats = OpenStats(
            mode=self.mode,
            uri=self.uri,
            kind=self.dataset.kind,
            list_s=t1 - t0,
            copy_s=t2 - t1,
            index_s=t3 - t2,
            startup_s=t3 - t0,
            objects=len(files),
            samples=len(self.dataset.samples),
            data_bytes=self.dataset.data_bytes,
            bytes_copied=copied,
            disk_used=disk_used(root),
            cache_dir=str(root),
        )
        return self.stats

    def fetch(self, key: str, start: int, end: int) -> bytes:
        if self.local is None:
            raise RuntimeError("FileSource.open() was not called")
        return self.local.get_range(key, start, end)

    def close(self) -> None:
        if self._made_cache is not None:
            shutil.rmtree(self._made_cache, ignore_errors=True)
            self._made_cache = None
        self.local = None
