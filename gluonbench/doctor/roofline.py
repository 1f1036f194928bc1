"""Each measured stage against this machine's ceiling: "reading 38 MB/s = 9 % of this disk's 420 MB/s".

A stage near its ceiling (>= :data:`NEAR` of it) is hardware-bound: only more or faster hardware
helps. A stage far from it is software-bound: settings (workers, packing, a vectorised transform)
can still win. The advice of each :class:`RooflineLine` says which, so the recommendation changes
with the distance. The inputs are a diagnosis, a sweep summary or a tune result (duck-typed, as
their JSON) and :class:`~gluonbench.doctor.ceilings.Ceilings`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from gluonbench.doctor.ceilings import Ceilings
from gluonbench.names import arg

NEAR = 0.7
"""a stage at or above this fraction of its ceiling is hardware-bound"""
CACHE_READ_FLOOR = 1e6
"""bytes/s read from the device below which the data is taken to come from the page cache"""
VERDICT_STAGE = {"preprocessing": "decode", "disk_io": "read", "gpu_io": "copy"}
IMAGE_DATASETS = ("ImageFolderDataset", "ImageRecordDataset", "ImageListDataset")
"""gluon's data sets that decode images in ``dataset[i]`` (``mx.image.imread``/``imdecode``)"""
ENCODED = ("bytes", "bytearray", "memoryview")
"""data of these types is encoded (images a transform decodes with ``mx.image.imdecode``)"""


def decoded_images(pipeline: dict[str, Any], setting: dict[str, Any]) -> str | None:
    """Where the pipeline decodes images (so the decode ceiling applies), in words; None where it does not: a
    decode stage, one of gluon's image data sets (it decodes in ``dataset[i]``), or encoded bytes that the
    transform decodes."""
    read = str(pipeline.get("read", ""))
    if pipeline.get("decode", "none") not in ("none", "", None) and not str(pipeline["decode"]).startswith("stand-in"):
        return "decode + transform"
    for name in (read, str(setting.get("dataset_type", ""))):
        if name in IMAGE_DATASETS:
            return f"decode + transform ({name} decodes in dataset[i])"
    if str(setting.get("sample_type", "")) in ENCODED:
        return "decode + transform (dataset[i] gives encoded bytes)"
    return None


@dataclass
class RooflineLine:
    """One stage against its ceiling; ``fraction`` is None where no ceiling applies."""

    stage: str
    measured: float | None
    unit: str
    ceiling: float | None
    fraction: float | None
    bound: str
    """hardware (near the ceiling), software (far from it) or none (no ceiling applies)"""
    text: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _pct(f: float) -> str:
    return f"{f * 100:.0f} %"


def _num(x: float) -> str:
    return f"{x / 1000:.1f}k" if x >= 10_000 else f"{x:.0f}" if x >= 10 else f"{x:.2g}"


def decode_line(
    rate: float,
    workers: int,
    cores: int,
    ceilings: Ceilings | None,
    what: str = "decode + transform",
    cpu_used: float | None = None,
) -> RooflineLine:
    """Images/s of the loader against one core's decode rate x the cores its workers can use.

    ``cpu_used``: the cores the run's processes really got (psutil); when other programs left it
    much less than it could use, the rate is also set against the cores it got, and that decides.
    """
    dec = ceilings.decode if ceilings else None
    if dec is None or dec.value is None:
        why = dec.note if dec is not None else "no decode ceiling measured for this data folder (gluonbench doctor)"
        return RooflineLine(
            "decode",
            rate,
            "img/s",
            None,
            None,
            "none",
            f"{what} {_num(rate)} samples/s: no decode ceiling applies ({why})",
        )
    used = max(1, min(max(workers, 1), cores))
    ceiling = dec.value * used
    f = rate / ceiling
    where = f"over {workers} worker(s)" if workers > 0 else "in the main process (0 workers)"
    head = f"{what} {_num(rate)} img/s {where} = {_pct(f)} of {used} core(s)' decode ceiling ({_num(ceiling)} img/s)"
    if f > 1.1:
        head += (
            "; above 100 %: the ceiling was measured on other images or on a busier machine "
            "(gluonbench doctor --data-dir DIR --refresh)"
        )
    if cpu_used is not None and 0 < cpu_used < 0.8 * used:
        f = rate / (dec.value * cpu_used)
        head += (
            f"; but the run got only {cpu_used:.1f} of its {used} core(s) (other programs kept the CPU busy): "
            f"per core it got, {_pct(f)} of the ceiling"
        )
    if f >= NEAR:
        return RooflineLine(
            "decode",
            rate,
            "img/s",
            ceiling,
            f,
            "hardware",
            f"{head} (CPU-bound: more cores, smaller stored images, or GPU decode)",
        )
    return RooflineLine(
        "decode",
        rate,
        "img/s",
        ceiling,
        f,
        "software",
        f"{head} (software-bound: the decoder could go {1 / f:.1f}x faster on these cores; raise "
        "num_workers toward the cores, vectorise the transform, check the worker hand-off)",
    )


def read_line(device_bytes_per_s: float | None, ceilings: Ceilings | None, during: str) -> RooflineLine | None:
    """Bytes/s the pipeline read from storage (psutil) against the data folder's sequential read ceiling."""
    rd = ceilings.read if ceilings else None
    if device_bytes_per_s is None or not math.isfinite(device_bytes_per_s):
        return None
    mb = device_bytes_per_s / 1e6
    if rd is None or rd.value is None:
        why = rd.note if rd is not None else "no read ceiling measured for this data folder (gluonbench doctor)"
        return RooflineLine(
            "read",
            mb,
            "MB/s",
            None,
            None,
            "none",
            f"reading {mb:.1f} MB/s from storage during `{during}`: no read ceiling ({why})",
        )
    if device_bytes_per_s < CACHE_READ_FLOOR:
        return RooflineLine(
            "read",
            mb,
            "MB/s",
            rd.value,
            mb / rd.value,
            "none",
            f"reading {mb:.1f} MB/s from storage during `{during}` against this disk's "
            f"{_num(rd.value)} MB/s: the data came from the page cache, so the disk does not bind "
            "here (it will when the data set outgrows RAM)",
        )
    f = mb / rd.value
    head = f"reading {mb:.0f} MB/s = {_pct(f)} of this disk's {_num(rd.value)} MB/s (during `{during}`)"
    if f >= NEAR:
        return RooflineLine(
            "read",
            mb,
            "MB/s",
            rd.value,
            f,
            "hardware",
            f"{head} (disk-bound: a faster disk, fewer bytes per sample, or the data in RAM)",
        )
    return RooflineLine(
        "read",
        mb,
        "MB/s",
        rd.value,
        f,
        "software",
        f"{head} (latency-bound: more workers or larger sequential reads (gluonbench pack), not a faster disk)",
    )


def copy_line(
    copy_s_per_sample: float | None, sample_bytes: int | None, ceilings: Ceilings | None, ctx: str
) -> RooflineLine:
    """Host-to-device bytes/s against the pinned H2D ceiling (GPU only)."""
    if not ctx.startswith("gpu"):
        return RooflineLine("copy", None, "GB/s", None, None, "none", "copy: CPU context, nothing crosses PCIe")
    pinned = ceilings.h2d_pinned if ceilings else None
    if not copy_s_per_sample or not sample_bytes or pinned is None or pinned.value is None:
        return RooflineLine(
            "copy",
            None,
            "GB/s",
            None,
            None,
            "none",
            "copy: no H2D ceiling or copy time to compare (gluonbench doctor --ctx gpu)",
        )
    gbs = sample_bytes / copy_s_per_sample / 1e9
    f = gbs / pinned.value
    head = f"copy {gbs:.2f} GB/s = {_pct(f)} of pinned H2D ({pinned.value:.1f} GB/s)"
    if f >= NEAR:
        return RooflineLine(
            "copy",
            gbs,
            "GB/s",
            pinned.value,
            f,
            "hardware",
            f"{head} (PCIe-bound: send uint8 and convert on the GPU, or smaller batches per step)",
        )
    return RooflineLine(
        "copy",
        gbs,
        "GB/s",
        pinned.value,
        f,
        "software",
        f"{head} (software-bound: DataLoader(pin_memory=True) and overlap the copy with compute)",
    )


def _get(obj: Any, key: str, default: Any = None) -> Any:
    return obj.get(key, default) if isinstance(obj, dict) else getattr(obj, key, default)


def for_diagnosis(d: Any, ceilings: Ceilings | None, sample_bytes: int | None = None) -> list[RooflineLine]:
    """Roofline lines of a :class:`~gluonbench.diagnosis.run.Diagnosis` (or its dict), with a closing line
    saying whether the verdict's stage is the one nearest its ceiling, and why not when it is not."""
    setting = _get(d, "setting") or {}
    probes = _get(d, "probes") or {}
    pipeline = _get(d, "pipeline") or {}
    workers, cores = int(setting.get("num_workers", 0)), int(setting.get("cores", 1) or 1)
    lines: list[RooflineLine] = []
    lo = probes.get("loader_only")
    rate = float(_get(lo, "samples_per_s") or math.nan) if lo is not None and not _get(lo, "same_as") else math.nan
    if not math.isfinite(rate) or rate <= 0:
        lines.append(
            RooflineLine(
                "decode",
                None,
                "img/s",
                None,
                None,
                "none",
                "loader: `loader_only` was not measured within the budget, so no stage can be set "
                f"against its ceiling (raise {arg('budget_s', '--budget')})",
            )
        )
    else:
        what = decoded_images(pipeline, setting)
        if what is None:
            lines.append(
                RooflineLine(
                    "decode",
                    rate,
                    "samples/s",
                    None,
                    None,
                    "none",
                    f"loader {_num(rate)} samples/s: no decode ceiling applies (the data set's "
                    "samples are not decoded images)",
                )
            )
        else:
            system = _get(lo, "system") or {}
            got = float(system["cpu_util_pct"]) / 100 * cores if "cpu_util_pct" in system else None
            lines.append(decode_line(rate, workers, cores, ceilings, what, cpu_used=got))
        rl = read_line((_get(lo, "system") or {}).get("read_bytes_per_s"), ceilings, "loader_only")
        if rl is not None:
            lines.append(rl)
    sub = (_get(d, "analysis") or {}).get("substage_s") or {}
    lines.append(copy_line(sub.get("copy"), sample_bytes, ceilings, str(setting.get("ctx", "cpu"))))
    lines.append(_verdict_line(str(_get(d, "verdict") or ""), lines))
    return lines


def _verdict_line(verdict: str, lines: list[RooflineLine]) -> RooflineLine:
    rated = [ln for ln in lines if ln.fraction is not None and math.isfinite(ln.fraction) and ln.bound != "none"]
    stage = VERDICT_STAGE.get(verdict)
    if verdict not in VERDICT_STAGE:
        text = f"the verdict is {verdict or 'missing'}: no stage to set against its ceiling"
    elif not rated:
        text = "no stage has a ceiling to compare with here, so the verdict rests on the shares alone"
    else:
        nearest = max(rated, key=lambda ln: ln.fraction or 0.0)
        mine = next((ln for ln in rated if ln.stage == stage), None)
        if verdict == "gpu_io" and mine is None and (nearest.fraction or 0.0) >= NEAR:
            text = (
                f"the verdict is the model step ({verdict}), which has no ceiling here, but {nearest.stage} is at "
                f"{_pct(nearest.fraction or 0.0)} of its ceiling: the input has little headroom left, so a faster "
                "step (GPU, bigger batch) would soon make the input the bottleneck"
            )
        elif verdict == "gpu_io" and mine is None:
            text = (
                f"the verdict is the model step ({verdict}), which has no ceiling here; the input stages are below "
                f"theirs (nearest: {nearest.stage} at {_pct(nearest.fraction or 0.0)}), consistent with the "
                "input keeping up"
            )
        elif mine is None:
            text = f"the verdict ({verdict}) has no measured ceiling; nearest its ceiling: {nearest.stage}"
        elif mine is nearest:
            text = (
                f"the verdict's stage ({stage}) is also the nearest its ceiling ({_pct(mine.fraction or 0.0)}): "
                f"{'hardware' if mine.bound == 'hardware' else 'software'}-bound"
            )
        else:
            text = (
                f"the verdict's stage ({stage}, {_pct(mine.fraction or 0.0)} of its ceiling) is not the nearest "
                f"its ceiling ({nearest.stage}, {_pct(nearest.fraction or 0.0)}): {stage} costs the most step time "
                f"yet is far from what the hardware allows, so settings can still speed it up; {nearest.stage} "
                "is close to its limit but is not what the step waits on"
            )
    return RooflineLine("verdict", None, "", None, None, "none", text)


def for_throughput(
    rate: float, workers: int, cores: int, ceilings: Ceilings | None, what: str, no_folder: str = ""
) -> list[RooflineLine]:
    """A sweep's best or a tune's recommended training samples/s against the decode ceiling of the cores it used.

    Training throughput includes the model step, so far from the ceiling means decode is not the limit
    (the step or the loader's other work is), not that the decoder could be pushed harder.
    """
    if no_folder:
        return [
            RooflineLine(
                "decode",
                rate,
                "samples/s",
                None,
                None,
                "none",
                f"{what} {_num(rate)} samples/s: no decode ceiling applies ({no_folder})",
            )
        ]
    line = decode_line(rate, workers, cores, ceilings, what)
    if line.bound == "software":
        head = line.text.split(" (software-bound")[0]
        line.text = (
            f"{head} (decode is not the limit: the model step or the loader's other work is; "
            "gluonbench diagnose says which)"
        )
    return [line]


def to_text(lines: list[RooflineLine]) -> str:
    """The lines as the reports print them, under a ``roofline`` heading."""
    from gluonbench.report.exporters import roofline_text

    return roofline_text([ln.text for ln in lines])
