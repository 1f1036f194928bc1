"""Where a data set lives: a local folder or an S3 prefix, behind one small interface.

A :class:`Store` lists objects (keys relative to its root, ``/``-separated, in
sorted order) and reads them whole or by byte range. Folders appear in a listing
as *markers* (a key ending in ``/`` of size 0), as S3 consoles create them, so
"a class folder with no images" is found the same way locally and on S3.
Input modes (:mod:`gluonbench.sources`) and the data formats (images, RecordIO) sit on
top of a store; the store knows nothing about modes.
"""

from __future__ import annotations

import logging
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

from gluonbench.errors import DataError
from gluonbench.names import param

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ObjectInfo:
    """One object of a store: ``key`` relative to the store's root; ``size`` in bytes."""

    key: str
    size: int

    @property
    def is_folder(self) -> bool:
        return self.key.endswith("/")


def safe_key(key: str, where: str) -> str:
    """Return ``key`` if it stays inside its root, else raise :class:`DataError`.

    Rejects absolute keys, ``..`` components and backslashes: such a key in a
    manifest or an S3 listing would otherwise read or write outside the folder.
    """
    parts = key.split("/")
    if not key or key.startswith("/") or "\\" in key or ".." in parts or any(p in ("", ".") for p in parts[:-1]):
        raise DataError(
            f"{where}: entry {key!r} escapes its root (absolute path, '..' or empty component); "
            "fix or regenerate the data set"
        )
    return key


class Store(ABC):
    """A read-only view of a data set's objects."""

    uri: str
    is_local: bool = False
    """True when objects are files on this machine (:meth:`local_path` gives them)."""

    @abstractmethod
    def list(self) -> list[ObjectInfo]:
        """All objects and folder markers under the root, sorted by key."""

    @abstractmethod
    def get(self, key: str) -> bytes:
        """The whole object."""

    @abstractmethod
    def get_range(self, key: str, start: int, end: int) -> bytes:
        """Bytes ``[start, end)`` of the object."""

    def local_path(self, key: str) -> Path | None:
        """The object's file when the store is local (lets a reader splice or mmap it), else None."""
        return None

    def describe(self, key: str) -> str:
        return f"{self.uri.rstrip('/')}/{key}"

    def fork_safe(self) -> Store:
        """A copy safe to use in a forked process (S3 clients are not)."""
        return self


class LocalStore(Store):
    """A folder on a local file system."""

    is_local = True

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.uri = str(self.root)

    def _path(self, key: str) -> Path:
        return self.root / safe_key(key, str(self.root))

    def list(self) -> list[ObjectInfo]:
        if not self.root.exists():
            raise DataError(f"source {self.root} does not exist; check the path")
        if not self.root.is_dir():
            raise DataError(f"source {self.root} is not a folder; pass the folder that holds the data set")
        out: list[ObjectInfo] = []

        def onerror(exc: OSError) -> None:
            raise DataError(f"cannot list {exc.filename}: {exc.strerror}; check its permissions") from exc

        for dirpath, dirnames, filenames in os.walk(self.root, onerror=onerror):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            rel = os.path.relpath(dirpath, self.root)
            prefix = "" if rel == "." else rel.replace(os.sep, "/") + "/"
            if prefix:
                out.append(ObjectInfo(prefix, 0))
            for name in sorted(filenames):
                if name.startswith("."):
                    continue
                path = os.path.join(dirpath, name)
                try:
                    size = os.stat(path).st_size
                except OSError as exc:
                    raise DataError(f"cannot read {path}: {exc.strerror}; fix or remove the file") from exc
                out.append(ObjectInfo(prefix + name, size))
        out.sort(key=lambda o: o.key)
        return out

    def get(self, key: str) -> bytes:
        path = self._path(key)
        try:
            with open(path, "rb") as f:
                return f.read()
        except OSError as exc:
            raise DataError(f"cannot read {path}: {exc.strerror}; fix or remove the file") from exc

    def get_range(self, key: str, start: int, end: int) -> bytes:
        path = self._path(key)
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as exc:
            raise DataError(f"cannot read {path}: {exc.strerror}; fix or remove the file") from exc
        try:
            data = os.pread(fd, end - start, start)
            while len(data) < end - start:
                more = os.pread(fd, end - start - len(data), start + len(data))
                if not more:
                    break
                data += more
            return data
        finally:
            os.close(fd)

    def local_path(self, key: str) -> Path | None:
        return self._path(key)


def is_s3(uri: str) -> bool:
    return str(uri).startswith("s3://")


def open_store(uri: str | Path, endpoint_url: str | None = None) -> Store:
    """A :class:`Store` for a local folder or ``s3://bucket/prefix`` (``endpoint_url`` for MinIO, moto, ...)."""
    text = str(uri)
    if is_s3(text):
        from gluonbench.data.s3 import S3Store

        return S3Store(text, endpoint_url=endpoint_url)
    if endpoint_url:
        raise DataError(
            f"{param('endpoint_url')} is for s3:// sources, but the source is {text!r}; drop {param('endpoint_url')}"
        )
    return LocalStore(text)
