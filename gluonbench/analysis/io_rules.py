"""Which input mode and file layout to use, drawn from measured cells with seed 004's rules.

Seed 004 (*Choose the best data source for a SageMaker training job*):

* a data set under 50-100 GB -> File mode (simple; the copy is the price, about
  200 MB/s there, i.e. about 5 minutes for 50 GB, repeated after every restart);
* many small files (< 50 MB each) -> serialise them into ~150 MB containers
  (RecordIO for MXNet) read sequentially, shuffling shard order plus a local buffer;
* large files (> 50 MB, ideally 150 MB) -> FastFile: no copy, streams on demand;
* Pipe mode -> largely superseded by FastFile.

Each line of advice quotes the numbers it rests on; a rule whose cells were not
measured is skipped, and a rule the numbers contradict says so. Rates are only
extrapolated to the kind of store they were measured on: a copy from a local
folder (page cache) says nothing about S3 downloads, so local cells quote seed
004's published figures, named as such, and the command that measures S3.

With emulated compute (``gluonbench io --emulate-step-ms``), the first line of advice says which
cells keep the accelerator fed: accelerator utilisation at or above DLIO's 90 % pass line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from gluonbench.names import arg
from gluonbench.units import format_size

FILE_MODE_LIMIT_BYTES = (50e9, 100e9)
SEED004_FILE_MODE = (
    "File mode downloads at about 200 MB/s for large files (about 5 minutes for 50 GB), repeated after every "
    "spot interruption; below 50-100 GB File mode is the simple choice"
)
"""Seed 004's published File-mode figures, quoted as such (never presented as a measurement)."""
MEASURE_S3 = (
    "To measure S3 itself: gluonbench io --s3-uri s3://BUCKET/PREFIX (AWS credentials from the usual boto3 "
    "chain; add --endpoint-url URL for MinIO or another S3-compatible server)."
)
PACK_GAIN = 1.5
"""Shards must give at least this many times the samples/s of separate files for "pack" to be advised."""
FASTFILE_PAR = 0.8
"""FastFile at this share of File mode's epoch throughput (or more) counts as keeping up."""


@dataclass
class Advice:
    rule: str
    text: str


def _get(rows: list[dict[str, Any]], mode: str, size: str, layout: str) -> dict[str, Any] | None:
    for r in rows:
        c = r["cell"]
        if (c["mode"], c["size"], c["layout"]) == (mode, size, layout) and r.get("status") == "ok":
            return r
    return None


def _largest(rows: list[dict[str, Any]]) -> str | None:
    sizes = {r["cell"]["size"]: r["cell"]["data_bytes"] for r in rows if r.get("status") == "ok"}
    return max(sizes, key=sizes.get) if sizes else None


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


def _cell(r: dict[str, Any]) -> str:
    c = r["cell"]
    return f"{c['mode']}/{c['size']}/{c['layout']}"


def keeps_fed(rows: list[dict[str, Any]]) -> Advice | None:
    """Which ok cells keep the (emulated) accelerator fed: AU >= the pass line; None without emulation."""
    emulated = [r for r in rows if r.get("status") == "ok" and r.get("emulated")]
    if not emulated:
        return None
    e = emulated[0]["emulated"]
    ranked = sorted(emulated, key=lambda r: -r["emulated"]["au"])
    fed = [r for r in ranked if r["emulated"]["passes"]]
    starved = [r for r in ranked if not r["emulated"]["passes"]]

    def listing(rs: list[dict[str, Any]]) -> str:
        return ", ".join(f"{_cell(r)} ({r['emulated']['au']:.0%})" for r in rs)

    text = f"With {e['text']}: "
    if fed and not starved:
        text += f"every cell keeps the accelerator fed (AU >= {e['pass_line']:.0%}, DLIO's pass line): {listing(fed)}."
    elif fed:
        text += (
            f"{len(fed)} of {len(emulated)} cells keep the accelerator fed (AU >= {e['pass_line']:.0%}, DLIO's pass "
            f"line): {listing(fed)}; below it, the accelerator waits for input: {listing(starved)}."
        )
    else:
        best = ranked[0]
        text += (
            f"no cell keeps the accelerator fed (AU >= {e['pass_line']:.0%}, DLIO's pass line): {listing(starved)}; "
            f"the best, {_cell(best)}, delivers {best['samples_per_s']:.0f} samples/s; for this accelerator try more "
            f"reader threads ({arg('threads')}), packed shards or a faster store."
        )
    text += (
        " The rates compared below include the step: a mode or layout that looks no faster may only be hidden "
        f"behind it; run without {arg('emulate_step_ms')} for the input pipeline's own speed."
    )
    return Advice("au", text)


def recommend(rows: list[dict[str, Any]]) -> list[Advice]:
    """Advice lines from the ok cells of one ``gluonbench io`` run."""
    advice: list[Advice] = []
    size = _largest(rows)
    if size is None:
        return advice
    fed = keeps_fed(rows)
    if fed is not None:
        advice.append(fed)

    # start-up: what File mode's copy costs, measured; extrapolated only when the copy came from S3
    local = all(r["cell"].get("store", "local") != "s3" for r in rows)
    for layout in ("shards", "files"):
        f = _get(rows, "file", size, layout)
        if f is None or not f["open"].get("copy_s"):
            continue
        rate = f["open"]["bytes_copied"] / f["open"]["copy_s"]
        others = [
            f"{m} {r['startup_s']:.2f} s"
            for m in ("fastfile", "pipe")
            if (r := _get(rows, m, size, layout)) is not None
        ]
        lo, hi = (b / rate for b in FILE_MODE_LIMIT_BYTES)
        measured = (
            f"File mode copied the {size} set ({format_size(f['cell']['data_bytes'])}, {layout}) "
            + (
                "from a local folder "
                if f["cell"].get("store", "local") != "s3"
                else f"from {f['cell'].get('uri', 'S3')} "
            )
            + f"at {rate / 1e6:.0f} MB/s, so training began after {f['startup_s']:.2f} s"
            + (f" (vs {', '.join(others)})" if others else "")
        )
        if f["cell"].get("store", "local") != "s3":
            text = (
                f"{measured}. That is a copy between local files (mostly the page cache): it does not show how fast "
                "File mode downloads from S3, so it is not extrapolated to larger data sets. "
                f"Published figures (seed 004, not measured here): {SEED004_FILE_MODE}. {MEASURE_S3}"
            )
        else:
            text = (
                f"{measured}. At that rate 50 GB takes {_minutes(lo)} and 100 GB {_minutes(hi)} before the first "
                "step, again after every restart: below 50-100 GB File mode is the simple choice (seed 004), above "
                "it the copy dominates."
            )
        advice.append(Advice("file-mode", text))
        break

    # many small files -> pack into large shards
    gains = []
    for mode in ("file", "fastfile", "pipe"):
        small, big = _get(rows, mode, size, "files"), _get(rows, mode, size, "shards")
        if small and big and small["samples_per_s"] > 0:
            gains.append((big["samples_per_s"] / small["samples_per_s"], mode, small, big))
    if gains:
        gain, mode, small, big = max(gains, key=lambda g: g[0])
        listing = ", ".join(f"{m} {g:.1f}x" for g, m, _, _ in gains)
        per_file = format_size(small["cell"]["data_bytes"] / max(small["cell"]["objects"], 1))
        if gain >= PACK_GAIN:
            advice.append(
                Advice(
                    "pack",
                    f"Pack the many small files ({per_file} each) into ~150 MB RecordIO shards "
                    f"(gluonbench pack SRC OUT --shard-size 150MB): shards gave {gain:.1f}x the samples/s of "
                    f"separate files with {mode} ({big['samples_per_s']:.0f} vs {small['samples_per_s']:.0f}; "
                    f"all modes: {listing}).",
                )
            )
        else:
            advice.append(
                Advice(
                    "pack",
                    f"Packing into shards gained at most {gain:.1f}x here ({listing}): per-file cost is small on "
                    "this storage. It grows where each file is a request (S3, FastFile), which is why seed 004 "
                    "still packs files under 50 MB into ~150 MB shards; measure with --s3-uri to see it.",
                )
            )

    # large files -> FastFile keeps up without a copy
    ff, fm = _get(rows, "fastfile", size, "shards"), _get(rows, "file", size, "shards")
    if ff and fm and fm["read_mb_per_s"] > 0:
        share = ff["read_mb_per_s"] / fm["read_mb_per_s"]
        disk = format_size(fm["disk_used"])
        if share >= FASTFILE_PAR:
            advice.append(
                Advice(
                    "fastfile",
                    f"FastFile read the shards at {share:.0%} of File mode's rate ({ff['read_mb_per_s']:.0f} vs "
                    f"{fm['read_mb_per_s']:.0f} MB/s) with no copy and no local disk (File mode used {disk}), and "
                    f"started in {ff['startup_s']:.2f} s vs {fm['startup_s']:.2f} s: for files over 50 MB "
                    "(ideally ~150 MB shards) prefer FastFile (seed 004).",
                )
            )
        else:
            advice.append(
                Advice(
                    "fastfile",
                    f"FastFile read the shards at only {share:.0%} of File mode's rate ({ff['read_mb_per_s']:.0f} "
                    f"vs {fm['read_mb_per_s']:.0f} MB/s): on this storage the local copy pays for itself over "
                    f"{len(fm['epochs'])} epoch(s); weigh that against File mode's start-up and {disk} of disk.",
                )
            )

    # pipe: usually superseded by FastFile
    pp = _get(rows, "pipe", size, "shards")
    if pp and ff and ff["read_mb_per_s"] > 0:
        ratio = pp["read_mb_per_s"] / ff["read_mb_per_s"]
        verdict = (
            "no better than FastFile, which also allows random access: prefer FastFile (seed 004)"
            if ratio < 1.1
            else "faster than FastFile here: Pipe pays off for streaming sequential readers, at the cost of no "
            "random access and shuffling by object order only"
        )
        advice.append(
            Advice(
                "pipe",
                f"Pipe streamed the shards at {pp['read_mb_per_s']:.0f} MB/s vs FastFile's "
                f"{ff['read_mb_per_s']:.0f} MB/s ({ratio:.2f}x), {verdict}.",
            )
        )

    # what a local measurement can and cannot say
    if local:
        advice.append(
            Advice(
                "scope",
                "These cells read a local folder: they show this machine's per-file and per-record costs, the "
                "local copy into File mode's cache, and the CPU each mode spends; they do not show S3's request "
                "latency, per-GET overhead or network bandwidth, which decide between File, FastFile and Pipe "
                f"on SageMaker (seed 004). {MEASURE_S3}",
            )
        )

    # fastest end to end at the largest size
    ok = [r for r in rows if r.get("status") == "ok" and r["cell"]["size"] == size and not math.isnan(r["total_s"])]
    if ok:
        best = min(ok, key=lambda r: r["total_s"])
        c = best["cell"]
        advice.append(
            Advice(
                "fastest",
                f"Fastest end to end on the {size} set ({len(best['epochs'])} epoch(s), start-up included): "
                f"{c['mode']} over {c['layout']}, {best['total_s']:.2f} s.",
            )
        )
    return advice
