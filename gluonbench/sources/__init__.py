"""Input modes: how training data arrives (File, FastFile, Pipe), over a local folder or S3.

Kept import-light (modules load on use), so ``gluonbench.data`` can use the
stores without an import cycle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gluonbench.errors import GluonbenchError
from gluonbench.names import param

if TYPE_CHECKING:
    from gluonbench.sources.base import Source

MODES = ("file", "fastfile", "pipe")

__all__ = ["MODES", "make_source"]


def make_source(mode: str, uri: str, endpoint_url: str | None = None, **options: Any) -> Source:
    """The :class:`Source` for ``mode`` (file, fastfile or pipe) over ``uri`` (a folder or s3://bucket/prefix)."""
    if mode == "file":
        from gluonbench.sources.file import FileSource

        return FileSource(uri, endpoint_url, **options)
    if mode == "fastfile":
        from gluonbench.sources.fastfile import FastFileSource

        return FastFileSource(uri, endpoint_url, **options)
    if mode == "pipe":
        from gluonbench.sources.pipe import PipeSource

        return PipeSource(uri, endpoint_url, **options)
    raise GluonbenchError(f"unknown {param('mode', '--source')} {mode!r}; choose one of {', '.join(MODES)}")
