"""Evidence (what psutil saw during each probe) and recommendations tied to the verdict and its numbers.

Pure functions of a :class:`~gluonbench.diagnosis.verdict.Verdict`, the probes'
results (as dicts) and a :class:`Setting` describing the pipeline, so a stored
diagnosis can be re-explained without running anything.

Recommendations are records (:class:`Recommendation`: the stage and sub-stage
they are about, whether they state a finding or a fix, the knob a fix turns);
:func:`render` is the one place they become text.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from gluonbench.diagnosis.verdict import READ_WORK, Verdict, headline_of
from gluonbench.names import arg, example
from gluonbench.report.exporters import stage_label as label_of

SUBSTAGE_TEXT = {
    "preprocessing": "preprocessing (decode + transform)",
    "read": "reading (dataset[i])",
    "loader": "loader (batchify, worker hand-off)",
    "copy": "host-to-device copy",
    "compute": "model compute",
}


@dataclass(frozen=True)
class Recommendation:
    """One line of advice: a finding (what costs the time) or a fix (what to change)."""

    stage: str
    """the headline stage it is about (preprocessing, disk_io, gpu_io) or ``inconclusive``/``overlap``"""
    kind: str
    """``finding`` or ``fix``"""
    text: str
    substage: str | None = None
    """the sub-stage it is about (read, loader, copy, compute, preprocessing)"""
    knob: str | None = None
    """what a fix changes, e.g. ``num_workers``, ``batch_size``, ``thread_pool``, ``data format``"""
    secondary: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def render(recs: list[Recommendation]) -> list[str]:
    """The text of each recommendation (a secondary stage's finding is prefixed ``Secondary:``)."""
    return [f"Secondary: {r.text}" if r.secondary and r.kind == "finding" else r.text for r in recs]


def substage_name(sub: str, setting: Setting, read: Mapping[str, Any] | None = None) -> str:
    """A sub-stage's name for users; ``read``: the read sub-stage as its evidence named it (``Verdict.read``)."""
    if sub == "read" and read and read.get("kind") not in (None, "unknown", "none"):
        return str(read.get("name") or SUBSTAGE_TEXT["read"])
    if sub == "compute" and not setting.on_gpu:
        return "model compute (CPU)"
    if sub == "compute":
        return "model compute (GPU)"
    return SUBSTAGE_TEXT.get(sub, sub)


LOW_READ_BYTES_PER_S = 1e6
"""below this, the 'disk' stage read from memory or the page cache"""


@dataclass(frozen=True)
class Setting:
    """The pipeline being diagnosed, as far as advice depends on it."""

    batch_size: int
    num_workers: int
    cores: int
    ctx: str
    thread_pool: bool = False
    transform: bool = True
    hybridized: bool | None = None
    budget_s: float = 60.0
    sample_type: str = ""
    """the type of dataset[i]'s data, e.g. ``bytes`` (encoded images a transform decodes) or ``NDArray``"""
    dataset_type: str = ""
    """the class of the data set under any wrappers (``transform_first``, ``take``), e.g. ``ImageFolderDataset``"""

    @property
    def on_gpu(self) -> bool:
        return self.ctx.startswith("gpu")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _pct(x: float) -> str:
    return f"{x * 100:.0f} %" if math.isfinite(x) else "?"


def _cores(system: Mapping[str, Any]) -> str:
    per = system.get("per_core_pct") or []
    if not per:
        return "?"
    if len(per) == 2 and min(per) >= 90:  # a sampled figure a little over 100 % is the sampler's rounding
        return "both cores fully busy" if min(per) >= 99.5 else f"both cores at {min(per):.0f} % or more"
    if len(per) <= 8:
        return "cores at " + ", ".join(f"{c:.0f}" for c in per) + " %"
    busy = sum(1 for c in per if c >= 90)
    return f"{busy} of {len(per)} cores at 90 % or more (mean {sum(per) / len(per):.0f} %)"


def _bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} GB"


def own_busy_pct(system: Mapping[str, Any], setting: Setting) -> float:
    """How busy this run's own processes kept the cores they could use (main + workers), in %.

    Low while reads dominate means the reads wait (latency, a network file system); high means
    ``dataset[i]`` itself computes (Python, unpickling). Other programs on the machine do not count.
    """
    if "cpu_util_pct" not in system:
        return math.nan
    usable = min(setting.cores, setting.num_workers + 1)
    return float(system["cpu_util_pct"]) * setting.cores / max(usable, 1)


def other_load_pct(system: Mapping[str, Any]) -> float:
    """Machine-wide busy % not explained by the measured process tree (other programs)."""
    per = system.get("per_core_pct") or []
    if not per:
        return math.nan
    return max(0.0, sum(per) / len(per) - float(system.get("cpu_util_pct", 0.0)))


def evidence(probes: Mapping[str, Mapping[str, Any]], setting: Setting) -> list[str]:
    """One line per probe: per-core CPU, this run's CPU use, iowait, read bytes/s, memory (PSS)."""
    out = []
    for name, p in probes.items():
        if p.get("same_as"):
            continue
        s = p.get("system") or {}
        if not s:
            continue
        # busy cores cannot exceed the cores: a sampled sum above them is the sampler's timing, capped
        used = min(float(s.get("cpu_util_pct", 0.0)) / 100 * setting.cores, float(setting.cores))
        mib = 2**20
        out.append(
            f"during `{name}`: {_cores(s)}; this run's processes used {used:.1f} of {setting.cores} cores; "
            f"iowait {float(s.get('iowait_pct', 0.0)):.1f} %; read {_bytes(float(s.get('read_bytes_per_s', 0.0)))}/s "
            f"from storage; memory (PSS) main {s.get('peak_mem_main_bytes', 0) / mib:.0f} MiB, workers "
            f"{s.get('peak_mem_workers_bytes', 0) / mib:.0f} MiB in {s.get('peak_processes', 0)} process(es)"
        )
    others = [other_load_pct(p.get("system") or {}) for p in probes.values() if not p.get("same_as")]
    others = [o for o in others if math.isfinite(o)]
    if others and max(others) >= 15:
        out.append(
            f"other programs kept the CPU {max(others):.0f} % busy during some probes; "
            "the figures are noisier than on a quiet machine"
        )
    return out


def _step_ms(v: Verdict, stage: str, setting: Setting) -> float:
    return v.stage_s[stage] * setting.batch_size * 1000


def _sub_ms(v: Verdict, sub: str, setting: Setting) -> float:
    return v.substage_s.get(sub, 0.0) * setting.batch_size * 1000


def _split_text(v: Verdict, head: str, setting: Setting) -> str:
    """``reading 3 %, loader 20 %`` for a headline made of several sub-stages (measured ones only)."""
    subs = [k for k, h in headline_of(v.read).items() if h == head and v.measured.get(k, False)]
    if len(subs) < 2 or not v.substages:
        return ""
    parts = [f"{substage_name(k, setting, v.read)} {_pct(v.substages.get(k, 0.0))}" for k in subs]
    return " (" + ", ".join(parts) + ")"


Rec = Recommendation


def _fix(head: str, text: str, knob: str) -> Recommendation:
    """A fix of the headline stage ``head`` (its sub-stage too) that changes ``knob``."""
    return Recommendation(head, "fix", text, head, knob)


def speedup_text(v: Any, key: str, digits: int = 2) -> str:
    """``1.27x [1.21, 1.33]``: a speed-up with its 95 % interval (``digits`` decimals).

    ``v`` is a :class:`Verdict` or a diagnosis (one read back from JSON may hold None for a figure).
    """

    def number(x: Any) -> bool:
        return isinstance(x, int | float) and math.isfinite(x)

    r = (v.speedups or {}).get(key)
    if not number(r):
        return "?"
    ci = (v.speedup_ci or {}).get(key)
    f = f".{digits}f"
    if ci and len(ci) == 2 and all(number(x) for x in ci):
        return f"{r:{f}}x [{ci[0]:{f}}, {ci[1]:{f}}]"
    return f"{r:{f}}x"


def removed_words(read: Mapping[str, Any] | None) -> dict[str, str]:
    """What removing each input stage removes, in words (``Verdict.read`` decides): where the read is CPU work
    inside ``dataset[i]`` it goes with preprocessing, and removing the rest removes the loader only."""
    if (read or {}).get("headline") == "preprocessing":
        return {"preprocessing": "preprocessing (the work inside dataset[i] included)", "disk_io": "the loader"}
    return {"preprocessing": "preprocessing", "disk_io": "reading and the loader"}


def named_read(read: Mapping[str, Any] | None, headline: str) -> bool:
    """Whether ``read`` (``Verdict.read``) was named by its evidence and counts under ``headline``."""
    return (read or {}).get("kind") not in (None, "unknown", "none") and (read or {}).get("headline") == headline


def stage_label(stage: str, setting: Setting | None) -> str:
    """The short label of a headline stage: on a CPU context ``gpu_io`` is ``model compute (CPU)``."""
    return label_of(stage, setting.ctx if setting is not None else None)


def removal_text(v: Any, key: str, digits: int = 2) -> str:
    """A speed-up as :func:`speedup_text`, or in words when removing the stage made training slower (< 1x).

    A ratio under 1 is not a speed-up: within the noise of none when its interval holds 1, else the probe
    without the stage ran slower (its stand-in cost more, or it ran under more contention)."""
    r = (v.speedups or {}).get(key)
    if not (isinstance(r, int | float) and math.isfinite(r) and r < 1):
        return speedup_text(v, key, digits)
    ci = (v.speedup_ci or {}).get(key) or []
    within = len(ci) == 2 and all(isinstance(x, int | float) for x in ci) and ci[0] <= 1.0 <= ci[1]
    why = (
        "within the noise of no change"
        if within
        else "beyond the noise: the probe without it ran slower (its stand-in, or contention for the cores)"
    )
    return f"no speed-up ({speedup_text(v, key, digits)}, {why})"


ENGINE_QUEUE_MARGIN = 0.10
"""on a CPU context, a loop wait more than this share of the step above what the input pipeline alone
costs (``loader_only`` over ``full``) is MXNet's engine queue, not the input"""


def engine_queue_wait(wait_frac: float, probes: Mapping[str, Any], setting: Setting | None) -> str | None:
    """Why the loop's wait for the next batch is no wait (None when it means what it says).

    On a CPU context MXNet's one engine queue runs the model's operators and the loader's NDArray work
    together, so time blocked in ``next(loader)`` includes the previous step's compute; a wait that exceeds
    what the input pipeline alone (``loader_only``) takes by more than :data:`ENGINE_QUEUE_MARGIN` of the
    step says nothing about the input."""
    if setting is None or setting.on_gpu or not (isinstance(wait_frac, int | float) and math.isfinite(wait_frac)):
        return None

    def get(p: Any, key: str) -> Any:
        return p.get(key) if isinstance(p, Mapping) else getattr(p, key, None)

    lo, full = probes.get("loader_only"), probes.get("full")
    if lo is None or full is None or get(lo, "same_as"):
        return None
    lo_s, full_s = get(lo, "step_s"), get(full, "step_s")
    if not all(isinstance(x, int | float) and math.isfinite(x) and x > 0 for x in (lo_s, full_s)):
        return None
    alone = lo_s / full_s
    if wait_frac - alone <= ENGINE_QUEUE_MARGIN:
        return None
    return (
        f"the loop's time blocked in next(loader) ({_pct(wait_frac)} of the step) is not shown as a wait: on a CPU "
        "context MXNet's one engine queue runs the step and the loader's NDArray work together, so it includes "
        f"the previous step's compute; the input pipeline alone (`loader_only`) takes {_pct(alone)} of the step"
    )


def perfect_input_text(v: Verdict, digits: int = 2) -> str:
    """The seed's test in the words a user acts on."""
    return (
        f"with a perfect input pipeline (one batch reused) training would be {speedup_text(v, 'input', digits)} faster"
    )


def _preprocessing(
    v: Verdict, probes: Mapping[str, Mapping[str, Any]], setting: Setting, secondary: bool = False
) -> list[Rec]:
    s = setting
    full = probes["full"].get("system") or {}
    where = (
        "in the main process, between training steps (num_workers=0)"
        if s.num_workers == 0
        else f"in {s.num_workers} worker {'threads' if s.thread_pool else 'processes'}"
    )
    head = "preprocessing"
    inside = inside_dataset(v)
    gain = (
        _gain_text(v.read.get("speedup"))
        if inside and v.measured.get("preprocessing")
        else speedup_text(v, "read" if inside else "preprocessing")
    )
    what = (
        f"removing it, with the work inside dataset[i] ({READ_WORK}: {v.read.get('why', '')}), makes it"
        if inside and v.measured.get("preprocessing")
        else f"removing the work inside dataset[i] ({READ_WORK}: {v.read.get('why', '')}) makes it"
        if inside
        else "removing preprocessing makes it"
    )
    out = [
        Rec(
            head,
            "finding",
            ("" if secondary else f"{perfect_input_text(v)[0].upper()}{perfect_input_text(v)[1:]}; ")
            + f"{(what[0].upper() + what[1:]) if secondary else what} {gain} "
            f"faster; its removal saves {_pct(v.shares['preprocessing'])} of the step{_split_text(v, head, s)} "
            f"({_step_ms(v, 'preprocessing', s):.1f} ms a batch of {s.batch_size}, "
            f"{v.stage_s['preprocessing'] * 1e6:.0f} us a sample); decode and the transform run {where}, "
            f"with {_cores(full)} during `full`.",
            substage="read" if inside and v.top_substage(head) == "read" else head,
        )
    ]
    if inside:  # its own fixes name the workers and thread_pool for the decoder
        out += _inside_fixes(s)
    elif s.num_workers < s.cores:
        target = s.cores if s.num_workers == 0 else min(s.cores, max(2 * s.num_workers, s.num_workers + 1))
        out.append(
            _fix(
                head,
                f"Raise num_workers from {s.num_workers} toward the {s.cores} cores (DataLoader(num_workers={target})): "
                f"the transform then runs in parallel with training; `gluonbench sweep --workers 0..{s.cores}` "
                "finds the best count.",
                "num_workers",
            )
        )
    else:
        out.append(
            _fix(
                head,
                f"num_workers={s.num_workers} already covers the {s.cores} cores; more workers only add context "
                "switches: make the transform cheaper instead.",
                "transform",
            )
        )
    out.append(
        _fix(
            head,
            "Make the transform batch-level (vectorised): batchify raw samples and transform the whole batch "
            "in one call, e.g. nd.transpose(batch.astype('float32'), (0, 3, 1, 2)) / 255 on the (B, H, W, C) batch, "
            f"instead of {s.batch_size} per-sample calls; this removes the per-sample overhead.",
            "transform",
        )
    )
    if not s.thread_pool and not inside:
        out.append(
            _fix(
                head,
                "Try DataLoader(thread_pool=True) when the transform is NumPy/OpenCV/NDArray code that releases the "
                "GIL: threads start at once and skip the copy through shared memory.",
                "thread_pool",
            )
        )
    if s.on_gpu:
        out.append(
            _fix(
                head,
                "Move augmentation to the GPU: copy the raw uint8 batch with as_in_context(ctx) and run the "
                "transform there, on the whole batch.",
                "transform",
            )
        )
    out.append(
        _fix(
            head,
            "If the transform is deterministic (no random augmentation), apply it once up front and train on the "
            "stored result (e.g. gluon.data.ArrayDataset of ready arrays).",
            "data format",
        )
    )
    return out


INSIDE_MIN_SHARE = 0.05
"""the read stage's share of the step before work inside dataset[i] gets its own fixes (TF's 'moderately
input-bound' line): under it, or with a 95 % interval reaching down to :data:`INSIDE_MIN_LOW`, an in-memory
data set's indexing on a busy machine would be sent to RecordIO"""
INSIDE_MIN_LOW = 0.01


def inside_dataset(v: Verdict) -> bool:
    """The read's evidence shows CPU work inside dataset[i] (it counts as preprocessing), and it costs time told
    apart from none: a share of at least :data:`INSIDE_MIN_SHARE` whose interval stays above :data:`INSIDE_MIN_LOW`."""
    share = v.substages.get("read", 0.0)
    ci = v.substage_ci.get("read") or []
    told_apart = len(ci) != 2 or not isinstance(ci[0], int | float) or ci[0] > INSIDE_MIN_LOW
    return (v.read or {}).get("headline") == "preprocessing" and share >= INSIDE_MIN_SHARE and told_apart


def _gain_text(g: Any) -> str:
    if not g or len(g) != 3 or not all(isinstance(x, int | float) and math.isfinite(x) for x in g):
        return "?"
    return f"{g[0]:.2f}x [{g[1]:.2f}, {g[2]:.2f}]"


def _inside_fixes(s: Setting) -> list[Rec]:
    """Fixes for decode and transform work that runs inside dataset[i] (where the probes cannot separate it)."""
    head, sub = "preprocessing", "read"
    out = [
        Rec(
            head,
            "fix",
            "Keep dataset[i] to reading and move the per-sample work out of it: give the transform to "
            "dataset.transform_first(fn) (or the DataLoader's dataset) instead of the data set's own transform= "
            "(e.g. gluon.data.vision.MNIST(train=True).transform_first(fn)), so it runs in the workers as a separate, "
            "measurable stage.",
            sub,
            "transform",
        ),
        Rec(
            head,
            "fix",
            "Decode in the workers: with num_workers > 0 every worker decodes its own samples in parallel "
            f"(now {s.num_workers}; `gluonbench sweep --workers 0..{s.cores}` finds the best count).",
            sub,
            "num_workers",
        ),
        Rec(
            head,
            "fix",
            "Pack the images into RecordIO (`gluonbench pack`, im2rec.py) and read them with "
            "gluon.data.vision.ImageRecordDataset, decoding on the fly: one file read sequentially, the same decode.",
            sub,
            "data format",
        ),
    ]
    if not s.thread_pool:
        out.append(
            Rec(
                head,
                "fix",
                "Try DataLoader(thread_pool=True) with a decoder that releases the GIL (mx.image.imdecode, OpenCV): "
                "threads decode in parallel without copying samples through shared memory.",
                sub,
                "thread_pool",
            )
        )
    out.append(
        Rec(
            head,
            "finding",
            "How fast one core decodes these images: `gluonbench doctor --data-dir DIR` measures the decode ceiling; "
            "the roofline sets the loader against it.",
            sub,
        )
    )
    return out


def _disk(v: Verdict, probes: Mapping[str, Mapping[str, Any]], setting: Setting, secondary: bool = False) -> list[Rec]:
    s = setting
    head = "disk_io"
    sysd = probes.get("no_preprocess", {}).get("system") or probes["full"].get("system") or {}
    read = float(sysd.get("read_bytes_per_s", 0.0))
    iowait = float(sysd.get("iowait_pct", 0.0))
    mean_busy = own_busy_pct(sysd, s)
    top = v.top_substage(head) or "read"
    split = _split_text(v, head, s)
    out = [
        Rec(
            head,
            "finding",
            ("" if secondary else f"{perfect_input_text(v)[0].upper()}{perfect_input_text(v)[1:]}; ")
            + f"{'r' if not secondary else 'R'}emoving {removed_words(v.read)['disk_io']}"
            + (" (after preprocessing) makes it a further" if v.measured.get("preprocessing") else " makes it")
            + f" {speedup_text(v, 'disk_io')} faster; {'its' if (v.read or {}).get('headline') == 'preprocessing' else 'their'}"
            f" removal saves {_pct(v.shares['disk_io'])} of the step{split} "
            f"({_step_ms(v, 'disk_io', s):.1f} ms a batch, {v.stage_s['disk_io'] * 1e6:.0f} us a sample); during "
            f"`no_preprocess` the run read {_bytes(read)}/s from storage, iowait {iowait:.1f} % (machine-wide), "
            f"{_cores(sysd)}" + (f"; {v.read['why']}" if named_read(v.read, "disk_io") else "") + ".",
            substage=top,
        )
    ]
    if top == "loader":
        out += _loader_fixes(v, s)
    else:
        out += _read_fixes(v, s, read, iowait, mean_busy)
    return out


def _loader_fixes(v: Verdict, s: Setting) -> list[Rec]:
    head, sub = "disk_io", "loader"
    out = [
        Rec(
            head,
            "finding",
            f"The loader itself costs most of it: {_sub_ms(v, sub, s):.1f} ms a batch of {s.batch_size} go to "
            "batchify (stacking the samples into one batch)"
            + (" and the hand-off of batches from the workers through shared memory" if s.num_workers else "")
            + f", while dataset[i] costs {_sub_ms(v, 'read', s):.1f} ms: reading is not the problem.",
            sub,
        ),
        Rec(
            head,
            "fix",
            "Batch whole arrays at once: index the data set by batch (one slice of a contiguous array per batch, "
            "e.g. a gluon.data.BatchSampler feeding a Dataset that returns whole batches) instead of stacking "
            f"{s.batch_size} separate samples, or give the DataLoader a cheaper batchify_fn.",
            sub,
            "batchify_fn",
        ),
    ]
    if s.num_workers and not s.thread_pool:
        out.append(
            Rec(
                head,
                "fix",
                "Try DataLoader(thread_pool=True): worker threads hand batches over without the copy through "
                "shared memory that worker processes need.",
                sub,
                "thread_pool",
            )
        )
    if s.num_workers < s.cores:
        out.append(
            Rec(
                head,
                "fix",
                f"Raise num_workers (now {s.num_workers}) so batching runs in parallel with the step "
                f"(DataLoader(num_workers={max(1, min(s.cores, 2 * s.num_workers or 1))})).",
                sub,
                "num_workers",
            )
        )
    out.append(
        Rec(
            head,
            "fix",
            f"A larger batch (now {s.batch_size}) spreads the loader's fixed per-batch cost over more samples.",
            sub,
            "batch_size",
        )
    )
    return out


def _read_fixes(v: Verdict, s: Setting, read: float, iowait: float, mean_busy: float) -> list[Rec]:
    """Fixes for the read sub-stage, by what its evidence shows (``v.read``; without it, the probes' psutil
    figures): storage, file-system work, waiting on latency."""
    kind = (v.read or {}).get("kind", "unknown")
    if kind in ("storage", "file_system", "waiting"):
        return _read_fixes_by_evidence(v, s, kind)
    head, sub = "disk_io", "read"
    out: list[Rec] = []
    if read < LOW_READ_BYTES_PER_S:
        out.append(
            Rec(
                head,
                "finding",
                f"Little was read from the device ({_bytes(read)}/s): samples come from memory or the page cache, or "
                "wait on latency (a network file system). "
                + (
                    "This run's processes were mostly idle, so reads wait on latency: more workers than cores "
                    "overlap the waits "
                    f"(e.g. num_workers={max(2 * s.cores, s.num_workers * 2, 4)}, or thread_pool=True with many "
                    "threads)."
                    if math.isfinite(mean_busy) and mean_busy < 60
                    else "The cost is per-sample dataset[i] in Python: more workers, or read whole batches at once "
                    "(one slice of a contiguous array per batch)."
                ),
                sub,
                "num_workers",
            )
        )
    else:
        parallel = (
            f"read in parallel with more workers (now {s.num_workers}; e.g. "
            f"num_workers={max(2 * max(s.num_workers, 1), s.cores)}, "
            "more than the cores when iowait is high), until the device saturates"
            if s.num_workers < 2 * s.cores
            else "larger sequential reads help more than more workers now"
        )
        out.append(
            Rec(
                head,
                "fix",
                f"The device delivered {_bytes(read)}/s with iowait {iowait:.1f} %: the reads themselves are the "
                f"limit; {parallel}.",
                sub,
                "num_workers",
            )
        )
    # file-format advice only where files are really read (from storage, or with a latency to hide)
    if read >= LOW_READ_BYTES_PER_S or (math.isfinite(mean_busy) and mean_busy < 60):
        out += [_pack_fix(head, sub), _local_fix(head, sub)]
    out.append(
        Rec(
            head,
            "fix",
            "Prefetch so reads overlap compute: with num_workers=0 nothing is read ahead; with workers the "
            "DataLoader prefetches 2 x num_workers batches, raise it with DataLoader(prefetch=...)."
            if s.num_workers == 0
            else "Prefetch more so reads overlap compute: DataLoader(prefetch=...) above the default "
            f"2 x num_workers = {2 * s.num_workers} batches.",
            sub,
            "prefetch",
        )
    )
    return out


def _pack_fix(head: str, sub: str) -> Rec:
    """Pack small files into RecordIO: reads few, large and sequential."""
    return Rec(
        head,
        "fix",
        "Pack small files into RecordIO (`gluonbench pack`, im2rec.py or mx.recordio.MXIndexedRecordIO, read "
        "with gluon.data.vision.ImageRecordDataset) so reads are few, large and sequential.",
        sub,
        "data format",
    )


def _local_fix(head: str, sub: str) -> Rec:
    """Read the data from local disk or memory, not a network file system or object store."""
    return Rec(
        head,
        "fix",
        "Copy the data set to local disk (NVMe / instance store) or into memory instead of reading from a "
        "network file system or object store.",
        sub,
        "data location",
    )


def _read_fixes_by_evidence(v: Verdict, s: Setting, kind: str) -> list[Rec]:
    head, sub = "disk_io", "read"
    many = max(2 * s.cores, s.num_workers * 2, 4)
    pack, local = _pack_fix(head, sub), _local_fix(head, sub)
    if kind == "file_system":
        return [
            Rec(
                head,
                "finding",
                "dataset[i] spends its time in the kernel, opening and reading files (file-system work, not "
                "storage: nothing waits on the device): many small files cost a system call each.",
                sub,
            ),
            pack,
            Rec(
                head,
                "fix",
                f"Or spread the opens over more workers (now {s.num_workers}; "
                f"DataLoader(num_workers={max(s.cores, s.num_workers + 1)})).",
                sub,
                "num_workers",
            ),
        ]
    if kind == "waiting":
        return [
            Rec(
                head,
                "fix",
                "dataset[i] waits with the CPU idle (latency): more workers than cores overlap the waits "
                f"(e.g. num_workers={many}, or thread_pool=True with many threads).",
                sub,
                "num_workers",
            ),
            local,
            pack,
        ]
    parallel = (
        f"read in parallel with more workers (now {s.num_workers}; e.g. num_workers={max(2 * max(s.num_workers, 1), s.cores)}), "
        "until the device saturates"
        if s.num_workers < 2 * s.cores
        else "larger sequential reads help more than more workers now"
    )
    return [
        Rec(head, "fix", f"The reads from storage are the limit: {parallel}.", sub, "num_workers"),
        pack,
        local,
    ]


def _device(
    v: Verdict, probes: Mapping[str, Mapping[str, Any]], setting: Setting, secondary: bool = False
) -> list[Rec]:
    s = setting
    head = "gpu_io"
    cached = probes["cached_batch"]
    rate = float(cached.get("samples_per_s", math.nan))
    sysd = cached.get("system") or {}
    top = v.top_substage(head) or "compute"
    split = _split_text(v, head, s)
    what = "copy and model step" if s.on_gpu else "model step (CPU compute; nothing is copied on a CPU context)"
    why = (
        f"{v.bound['text'][0].upper()}{v.bound['text'][1:]} (one reused batch alone: {speedup_text(v, 'input')})"
        if v.bound
        else f"Reusing one batch gains nothing beyond the noise or the input_gain line: {perfect_input_text(v)}"
    )
    out = [
        Rec(
            head,
            "finding",
            f"{why}. "
            f"The {what} sets the pace"
            f"{split} ({_step_ms(v, 'gpu_io', s):.1f} ms a batch; {rate:.0f} samples/s with one cached batch and "
            f"{_cores(sysd)}): the input pipeline keeps up and training runs at the "
            f"{'device' if s.on_gpu else 'CPU'}'s peak for batch size {s.batch_size}.",
            substage=top,
        )
    ]
    if top == "copy":
        out.append(
            Rec(
                head,
                "fix",
                f"The host-to-device copy costs {_sub_ms(v, 'copy', s):.1f} ms a batch: use DataLoader(pin_memory=True) "
                "and copy uint8 batches, converting to float32 on the device (4x fewer bytes to copy).",
                "copy",
                "pin_memory",
            )
        )
    out.append(
        Rec(
            head,
            "fix",
            f"Raise the batch size (now {s.batch_size}; try {2 * s.batch_size} and {4 * s.batch_size}, scaling the "
            f"learning rate): throughput rises until the {'device' if s.on_gpu else 'CPU'} saturates.",
            "compute",
            "batch_size",
        )
    )
    if s.on_gpu and top != "copy":
        out.append(
            Rec(
                head,
                "fix",
                "Use DataLoader(pin_memory=True): page-locked batches copy to the GPU faster and asynchronously.",
                "copy",
                "pin_memory",
            )
        )
    if s.hybridized is False:
        out.append(
            Rec(
                head,
                "fix",
                "hybridize() the net (static_alloc=True, static_shape=True): less Python overhead per step.",
                "compute",
                "hybridize",
            )
        )
    out.append(
        Rec(
            head,
            "fix",
            "Add devices: split each batch over GPUs (gluon.utils.split_and_load) or train data-parallel over "
            "machines (KVStore / Horovod)."
            if s.on_gpu
            else "Add machines: train data-parallel over several hosts (KVStore / Horovod), each with its own cores.",
            "compute",
            "devices",
        )
    )
    used = float(sysd.get("cpu_util_pct", math.nan)) / 100 * s.cores
    if not s.on_gpu and math.isfinite(used) and s.cores > 1 and used < 0.75 * s.cores:
        out.append(
            Rec(
                head,
                "fix",
                f"During `cached_batch` this run used {used:.1f} of {s.cores} cores: MXNet's CPU operators may not "
                f"use every core by default; try OMP_NUM_THREADS={s.cores} in the environment.",
                "compute",
                "OMP_NUM_THREADS",
            )
        )
    if not s.on_gpu:
        other = other_load_pct(sysd)
        out.append(
            Rec(
                head,
                "fix",
                "On a CPU context this is CPU compute: more or faster cores, an MKL-DNN (oneDNN) build of MXNet, or "
                "cores kept free of other work speed it up"
                + (f" (other programs kept the CPU {other:.0f} % busy during `cached_batch`)." if other >= 15 else "."),
                "compute",
                "hardware",
            )
        )
    return out


RULES = {"preprocessing": _preprocessing, "disk_io": _disk, "gpu_io": _device}


def advise(v: Verdict, probes: Mapping[str, Mapping[str, Any]], setting: Setting) -> list[Recommendation]:
    """Recommendations for the verdict, then for each secondary stage; each cites the numbers behind it."""
    out: list[Recommendation] = []
    if v.verdict == "inconclusive" and v.reuse == "at_line":
        return _at_line(v, setting)
    if v.verdict == "inconclusive":
        rel = max(float(p.get("rel_half_width", 0.0) or 0.0) for p in probes.values())
        others = [other_load_pct(p.get("system") or {}) for p in probes.values()]
        other = max((o for o in others if math.isfinite(o)), default=math.nan)
        twice = 2 * setting.budget_s
        budget = f"Raise {arg('budget_s')} (e.g. {example(f'budget_s={twice:g}', f'--budget {twice:g}')})"
        if v.reuse == "short":  # too few blocks: long steps in a short budget (a larger batch would give fewer)
            text = f"Inconclusive: after {setting.budget_s:g} s a probe still has too few blocks of steps to compare. "
            text += f"{budget}."
        else:
            text = (
                f"Inconclusive: after {setting.budget_s:g} s the noise (95 % CI up to +-{rel * 100:.0f} % of a probe's "
                f"median) still exceeds the differences between the probes. {budget}, close other programs"
                + (f" (they kept the CPU {other:.0f} % busy)" if math.isfinite(other) and other >= 10 else "")
                + f", or raise the batch size (now {setting.batch_size}) so each step is longer than the noise."
            )
        out.append(Rec("inconclusive", "fix", text, knob="budget"))
        return out
    out += RULES[v.verdict](v, probes, setting)
    for stage in v.secondary:
        recs = RULES[stage](v, probes, setting, secondary=True)
        # a secondary stage gets its cost and its two main fixes
        out += [replace(r, secondary=True) for r in recs[:3]]
    out += _overlap(v, probes, setting)
    return out


def _at_line(v: Verdict, setting: Setting) -> list[Rec]:
    """An inconclusive verdict at the line: a gain beyond the noise whose CI crosses the input_gain line."""
    hi = (v.speedup_ci.get("input") or [math.nan, math.nan])[1]
    most = max(("preprocessing", "disk_io"), key=lambda k: v.stage_s.get(k, 0.0))
    words = removed_words(getattr(v, "read", None))
    both = "; ".join(f"removing {words[k]}: {speedup_text(v, k)}" for k in ("preprocessing", "disk_io"))
    beyond = [k for k in words if (v.speedup_ci.get(k) or [math.nan])[0] > 1]  # its interval clear of no change
    if v.established.get(most):
        where = f"most of it in {words[most]} (removing it: {speedup_text(v, most)})"
    elif beyond:  # a stage gains beyond the noise, but its time is not clearly the larger: name both, rank neither
        where = f"neither input stage clearly costs the most ({both})"
    else:  # neither input stage alone gains beyond the noise: name both, claim neither
        where = f"no input stage alone gains beyond the noise ({both})"
    budget = setting.budget_s
    return [
        Rec(
            "inconclusive",
            "finding",
            f"At the line: {perfect_input_text(v, 3)}, beyond the noise but across the input_gain line, so whether the "
            f"input pipeline limits training is too close to call; it costs at most {1 - 1 / hi:.0%} of the step: "
            f"{where}. Fixing the input pipeline gains that much at most.",
            substage=v.top_substage(most) if v.established.get(most) else None,
        ),
        Rec(
            "inconclusive",
            "fix",
            f"To tell which side of the line it falls on, raise {arg('budget_s')} (e.g. "
            f"{example(f'budget_s={2 * budget:g}', f'--budget {2 * budget:g}')}) on a quiet machine.",
            knob="budget",
        ),
    ]


def _overlap(v: Verdict, probes: Mapping[str, Mapping[str, Any]], s: Setting) -> list[Rec]:
    """Findings on how the input pipeline and the model share the machine (from ``v.overlap`` and the wait)."""
    out: list[Rec] = []
    if (
        math.isfinite(v.wait_frac)
        and math.isfinite(v.input_saved)
        and v.wait_frac - v.input_saved >= 0.10
        and engine_queue_wait(v.wait_frac, probes, s) is None
    ):
        out.append(
            Rec(
                "overlap",
                "finding",
                f"The loop waits for the next batch {_pct(v.wait_frac)} of the step, yet a perfect input pipeline "
                f"saves only {_pct(max(v.input_saved, 0.0))}: MXNet computes the previous step while the next batch "
                f"loads, so about {_pct(v.wait_frac - max(v.input_saved, 0.0))} of the step's wait overlaps compute "
                "(the wait alone overstates what the input costs).",
            )
        )
    o = v.overlap or {}
    if not o:
        return out
    full = probes.get("full", {})
    full_ms = float(full.get("step_s", math.nan)) * 1000
    lo_p, model_p = probes.get("loader_only", {}), probes.get(o.get("model_probe", "cached_batch"), {})
    loader_ms = float(lo_p.get("step_s", math.nan)) * 1000
    model_ms = float(model_p.get("step_s", math.nan)) * 1000
    alone = (
        f"the input pipeline alone (`loader_only`) takes {loader_ms:.1f} ms a batch and the model alone "
        f"(`{o.get('model_probe')}`) {model_ms:.1f} ms"
    )
    if o.get("contention"):
        lo, hi = o["full_vs_slower_ci"]
        if s.on_gpu:
            resource = "a shared resource: the CPU cores, Python's interpreter lock or host memory bandwidth"
        else:
            sysd = full.get("system") or {}
            used = float(sysd.get("cpu_util_pct", math.nan)) / 100 * s.cores
            per = sysd.get("per_core_pct") or []
            seen = f"during `full` {_cores(sysd)}" + (
                f", this run's processes used {used:.1f} of {s.cores} cores" if math.isfinite(used) else ""
            )
            if (per and min(per) >= 85) or (math.isfinite(used) and used >= 0.85 * s.cores):
                resource = (
                    f"the {s.cores} CPU cores (on a CPU context the loader and the model compute both run on them: "
                    f"{seen})"
                )
            else:
                resource = f"something other than idle cores ({seen}: the cores were not saturated): " + (
                    "with num_workers=0 the loader runs in the training loop's own thread, and an NDArray "
                    "transform queues in MXNet's engine beside the model's operators"
                    if s.num_workers == 0
                    else "the workers and MXNet's operator threads share the engine, memory bandwidth and the "
                    "hand-off through shared memory"
                )
        out.append(
            Rec(
                "overlap",
                "finding",
                f"Contention: {alone}; together (`full`) {full_ms:.1f} ms, {o['full_vs_slower']:.2f}x "
                f"[{lo:.2f}, {hi:.2f}] the slower of the two alone, where a loop that overlaps them would run at "
                f"the slower one's pace"
                + (
                    f"; it is about their sum ({loader_ms + model_ms:.1f} ms), so they do not overlap at all"
                    if o.get("serial")
                    else ""
                )
                + f": the two compete for {resource}."
                + ("" if o.get("balanced") else " Making either cheaper frees that resource for the other."),
            )
        )
    if o.get("balanced"):
        lo, hi = o["loader_vs_model_ci"]
        out.append(
            Rec(
                "overlap",
                "finding",
                f"Balanced: {alone}, within the noise of each other ({o['loader_vs_model']:.2f}x [{lo:.2f}, {hi:.2f}]): "
                "speeding up either alone gains little; both must get faster for training to.",
            )
        )
    return out


def recommend(v: Verdict, probes: Mapping[str, Mapping[str, Any]], setting: Setting) -> list[str]:
    """:func:`advise`, rendered to text."""
    return render(advise(v, probes, setting))
