"""The ``gluonbench io`` matrix: its data sets staged (generated, packed, uploaded) and every cell run.

:func:`stage_io_datasets` makes (or reuses) the JPEG folders and RecordIO shards of each size, and
uploads them to S3 when asked; :func:`run_cells` runs one :func:`~gluonbench.iobench.cell.run_cell` per
data set and input mode and appends each result to the run folder. The run folder, validation and reports
are :func:`gluonbench.api.io_benchmark`'s.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from gluonbench.config import IoSettings
from gluonbench.env import command_line
from gluonbench.errors import GluonbenchError
from gluonbench.files import atomic_write_text
from gluonbench.iobench.cell import IoCell, run_cell
from gluonbench.report.store import RunStore


@dataclass
class StagedDataSet:
    """One benchmark data set, ready to read: where it is and what it holds."""

    size: str
    layout: str
    uri: str
    store: str
    data_bytes: int
    objects: int
    local_path: str | None
    prepare_s: float = 0.0
    pack_mb_per_s: float | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def _marker_matches(marker: Path, params: dict) -> bool:
    try:
        return json.loads(marker.read_text()) == params
    except (OSError, ValueError):
        return False


def stage_io_datasets(settings: IoSettings, work: Path) -> list[StagedDataSet]:
    """Generate (or reuse) the JPEG folders, pack them, and upload both to S3 when ``s3_uri`` is set."""
    from gluonbench.data import vision
    from gluonbench.data.images import image_folder, make_jpeg_folder
    from gluonbench.data.recordio import load_manifest, pack
    from gluonbench.data.store import LocalStore

    staged: list[StagedDataSet] = []
    # the JPEGs show MNIST digits when a copy is at hand (else drawn strokes)
    mnist_dir = settings.mnist_dir or vision.find_local("mnist")
    for size in ["src"] if settings.src else list(settings.sizes):
        t0 = time.perf_counter()
        if settings.src:
            files = Path(settings.src)
        else:
            files = work / f"{size}-files"
            marker = work / f".{size}-files.json"
            params = {"bytes": settings.size_bytes(size), "file_size": settings.file_size, "seed": settings.seed}
            if not _marker_matches(marker, params):
                shutil.rmtree(files, ignore_errors=True)
                make_jpeg_folder(files, params["bytes"], settings.file_size, mnist_dir, settings.seed)
                atomic_write_text(marker, json.dumps(params))
        folder = image_folder(LocalStore(files).list(), str(files))
        if "files" in settings.layouts:
            staged.append(
                StagedDataSet(
                    size,
                    "files",
                    str(files),
                    "local",
                    folder.total_bytes,
                    len(folder.items),
                    str(files),
                    time.perf_counter() - t0,
                )
            )
        if "shards" in settings.layouts:
            t1 = time.perf_counter()
            shards = work / f"{size}-shards"
            shard_bytes = settings.shard_bytes(folder.total_bytes)
            rate = None
            try:
                manifest = load_manifest(shards)
                reuse = manifest.shard_size == shard_bytes and manifest.records == len(folder.items)
            except GluonbenchError:
                reuse = False
            if not reuse:
                shutil.rmtree(shards, ignore_errors=True)
                packed = pack(files, shards, shard_bytes, shuffle=True, seed=settings.seed, name=size)
                manifest, rate = packed.manifest, packed.mb_per_s
            staged.append(
                StagedDataSet(
                    size,
                    "shards",
                    str(shards),
                    "local",
                    manifest.bytes,
                    len(manifest.shards),
                    str(shards),
                    time.perf_counter() - t1,
                    rate,
                )
            )
    if settings.s3_uri:
        staged = [_upload(d, settings) for d in staged]
    return staged


def _upload(ds: StagedDataSet, settings: IoSettings) -> StagedDataSet:
    from concurrent.futures import ThreadPoolExecutor

    from gluonbench.data.s3 import S3Store
    from gluonbench.data.store import LocalStore

    t0 = time.perf_counter()
    uri = f"{settings.s3_uri.rstrip('/')}/{ds.size}-{ds.layout}"
    target = S3Store(uri, settings.endpoint_url)
    target.ensure_bucket()
    have = {o.key: o.size for o in target.list() if not o.is_folder}
    local = LocalStore(ds.local_path)
    todo = [o for o in local.list() if not o.is_folder and have.get(o.key) != o.size]
    with ThreadPoolExecutor(8, thread_name_prefix="gluonbench-upload") as pool:
        list(pool.map(lambda o: target.put(o.key, local.get(o.key)), todo))
    return replace(ds, uri=uri, store="s3", local_path=None, prepare_s=ds.prepare_s + time.perf_counter() - t0)


def run_cells(
    settings: IoSettings,
    staged: list[StagedDataSet],
    store: RunStore,
    cache_root: Path,
    on_result: Callable[[Any], None] | None = None,
) -> None:
    """One cell per staged data set and input mode, each appended to ``store`` as it finishes.

    ``cache_root`` (File mode's local copy) is emptied before and after each cell.
    """
    for ds in staged:
        for mode in settings.modes:
            cell = IoCell(mode, ds.size, ds.layout, ds.uri, ds.store, ds.data_bytes, ds.objects, ds.local_path)
            shutil.rmtree(cache_root, ignore_errors=True)
            result = run_cell(
                cell,
                epochs=settings.epochs,
                batch_size=settings.batch_size,
                threads=settings.threads,
                stage=settings.stage,
                page_cache=settings.page_cache,
                drop_caches=settings.drop_caches,
                shuffle=settings.shuffle,
                seed=settings.seed,
                endpoint_url=settings.endpoint_url,
                cache_dir=str(cache_root),
                timeout_s=settings.timeout_s,
                preset=settings.preset,
                image_size=settings.image_size,
                emulate_step_ms=settings.emulate_step_ms,
            )
            shutil.rmtree(cache_root, ignore_errors=True)
            result.command = command_line()
            store.append(result)
            if on_result is not None:
                on_result(result)
