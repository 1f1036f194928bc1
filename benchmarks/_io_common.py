"""Shared by the input-mode benchmarks: data sets made once (reused from --work-dir), medians, a table."""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
from pathlib import Path

from gluonbench.data.images import make_jpeg_folder
from gluonbench.data.recordio import load_manifest, pack
from gluonbench.errors import GluonbenchError
from gluonbench.files import atomic_write_text
from gluonbench.units import parse_size


def mnist_dir() -> str | None:
    from gluonbench.data import vision

    folder = vision.find_local("mnist")
    if folder is not None:
        return str(folder)
    here = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "mnist"
    return str(here) if here.is_dir() else None


def jpeg_and_shards(work: Path, total_bytes: int, file_bytes: int, shard_bytes: int) -> tuple[Path, Path]:
    """``work/jpeg-<total>`` (~file_bytes JPEGs) and ``work/shards-<total>-<shard>`` (packed), made if missing."""
    files = work / f"jpeg-{total_bytes}-{file_bytes}"
    marker = work / f".{files.name}.done"
    if not marker.exists():
        make_jpeg_folder(files, total_bytes, file_bytes, mnist_dir())
        marker.write_text("ok")
    shards = work / f"shards-{total_bytes}-{file_bytes}-{shard_bytes}"
    try:
        load_manifest(shards)
    except GluonbenchError:
        pack(files, shards, shard_bytes, shuffle=True, seed=0)
    return files, shards


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def table(header: list[str], rows: list[list[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def finish(result: dict, json_path: str | None, ok: bool, check: bool, tmp=None) -> int:
    """Write the JSON (atomically), say whether the target was met, remove the temporary data."""
    if json_path:
        atomic_write_text(json_path, json.dumps(result, indent=2) + "\n")
    print(f"\ntarget {'met' if ok else 'NOT met'}", file=sys.stderr)
    if tmp is not None:
        tmp.cleanup()
    return 1 if check and not ok else 0


def add_data_args(ap, size_help: str) -> None:
    """The options every io benchmark shares: the generated data set and where the figures go."""
    ap.add_argument("--size", default="200MB", help=f"{size_help} (default 200MB)")
    ap.add_argument("--file-size", default="40KB", help="JPEG size (default 40KB)")
    ap.add_argument(
        "--shard-size", default="40MB", help="shard size (default 40MB: several shards; 150MB is the real default)"
    )
    ap.add_argument("--work-dir", help="keep the generated data here (default: a temporary folder)")
    ap.add_argument("--json", help="also write the figures as JSON to this file")
    ap.add_argument("--check", action="store_true", help="exit 1 when the target is not met")


def bench_data(args):
    """From ``add_data_args``' options: ``(tmp, work, files, shards)``: the working folder (``tmp`` is
    the temporary folder to remove via :func:`finish`, None with ``--work-dir``) and the generated data."""
    tmp = None if args.work_dir else tempfile.TemporaryDirectory(prefix="gluonbench-bench-")
    work = Path(args.work_dir or tmp.name)
    work.mkdir(parents=True, exist_ok=True)
    files, shards = jpeg_and_shards(
        work, parse_size(args.size), parse_size(args.file_size), parse_size(args.shard_size)
    )
    return tmp, work, files, shards
