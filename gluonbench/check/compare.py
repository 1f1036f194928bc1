"""``gluonbench compare RUN_A RUN_B``: two results of the same kind, row by row, with 95 % intervals.

Kinds and their rows (matched by setting; a row in only one of the two is listed, without a ratio):

* **sweep** (a ``gluonbench sweep`` folder): one row per loader setting (workers, batch size, thread
  pool); figures: each run's samples/s (several with ``--repeat``);
* **diagnosis** (``gluonbench diagnose --out``): one row per probe; figures: each block's samples/s;
* **io** (``gluonbench io``): one row per cell (mode, size, layout); figures: each record's samples/s;
* **tune** (the JSON file of ``gluonbench tune --json``): one row per measurement (phase and setting);
  figures: samples/s with the 95 % CI the tuner stored.

``ratio = B / A`` of the median samples/s with a 95 % percentile-bootstrap interval (each side
resampled with replacement, a fixed seed, :data:`BOOTSTRAP`) over the stored per-run or per-block
figures; for tune, :func:`~gluonbench.analysis.stats.ratio_ci` of the stored CIs. A row is flagged
``slower``/``faster`` when its interval excludes 1; with one figure a side there is no interval.
``fail_on_slowdown = t``: exit 1 when a row's slowdown (A / B) is beyond ``1 + t`` and its interval
excludes 1 (the rule of ``gluonbench check``).
"""

from __future__ import annotations

import html as html_lib
import json
import math
import random
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from gluonbench.analysis.stats import median, ratio_ci
from gluonbench.errors import GluonbenchError
from gluonbench.files import load_json
from gluonbench.names import arg, param
from gluonbench.report import versions
from gluonbench.report.exporters import EXPORTERS, Report, Table, TableSyntax, TextTable

BOOTSTRAP = 2000


@dataclass
class Identity:
    """What a result measured and where: the pipeline (factory, script or built-in name), the options and data
    that define it, and the machine. Two results of different pipelines are not compared (``force`` overrides)."""

    pipeline: str = "?"
    options: dict[str, Any] = field(default_factory=dict)
    data: str | None = None
    machine: str = "?"

    def key(self) -> tuple[str, str, str | None]:
        """What must match for two results to be the same pipeline (loader knobs may differ: that is compare's use)."""
        return (self.pipeline, json.dumps(self.options, sort_keys=True, default=str), self.data)

    def text(self) -> str:
        opts = ", ".join(f"{k}={v}" for k, v in sorted(self.options.items()))
        data = f", data {self.data}" if self.data else ""
        return f"{self.pipeline}" + (f" ({opts})" if opts else "") + data + f"; machine: {self.machine}"


@dataclass
class CompareRow:
    """One setting in both results: figures, B / A with its 95 % interval, flag."""

    key: str
    a: float
    b: float
    ratio: float
    ratio_ci: list[float]
    n_a: int
    n_b: int
    flag: str
    """``slower``, ``faster``, ``same`` (interval includes 1), ``no interval`` or ``only in A``/``only in B``"""


@dataclass
class Comparison:
    """The comparison of two results; ``to_dict()`` is JSON-serialisable."""

    kind: str
    run_a: str
    run_b: str
    unit: str
    rows: list[CompareRow] = field(default_factory=list)
    fail_on_slowdown: float | None = None
    failed: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    a: Identity = field(default_factory=Identity)
    """what A measured, and where"""
    b: Identity = field(default_factory=Identity)

    @property
    def exit_code(self) -> int:
        return 1 if self.failed else 0

    def to_dict(self) -> dict[str, Any]:
        from gluonbench.report.store import json_safe

        return json_safe(versions.stamp("compare", {**asdict(self), "exit_code": self.exit_code}))


def _machine(env: Any) -> str:
    if not isinstance(env, dict) or not env:
        return "?"
    cores = env.get("cores_logical")
    parts = [str(env.get("cpu") or "?"), f"{cores} cores" if cores else "", str(env.get("hostname") or "")]
    return ", ".join(p for p in parts if p)


def identity_of(path: str | Path, kind: str, data: Any) -> Identity:
    """The :class:`Identity` of a result: from a run folder's settings (``sweep.json``), else its records."""
    from gluonbench.report.store import RunStore

    path = Path(path)
    if kind == "tune" and path.is_file():
        return Identity(str(data.get("label") or "?"), {}, None, _machine(data.get("env")))
    try:
        saved = RunStore(path).read_settings()
    except GluonbenchError:
        saved = {}
    settings = saved.get("settings") if isinstance(saved.get("settings"), dict) else {}
    env = saved.get("env") or next((r.get("env") for r in data if isinstance(r, dict) and r.get("env")), None)
    if kind == "io":
        name = f"io {settings.get('stage', '?')}" + (f" {settings['s3_uri']}" if settings.get("s3_uri") else "")
        return Identity(name, {}, settings.get("data_dir"), _machine(env))
    pipeline = settings.get("pipeline") or settings.get("workload")
    if not pipeline:  # a folder without settings: the records' own spec
        spec = next((r.get("spec") for r in data if isinstance(r, dict) and isinstance(r.get("spec"), dict)), {})
        pipeline, settings = spec.get("pipeline") or spec.get("workload"), spec
    options = settings.get("pipeline_options") if settings.get("pipeline") else settings.get("options")
    options = {k: v for k, v in (options or {}).items() if k != "hash_rate"}  # a calibration, not the pipeline
    return Identity(str(pipeline or "?"), options, settings.get("data_dir"), _machine(env))


# -- reading ---------------------------------------------------------------------------------------


def _records(path: Path) -> list[dict[str, Any]]:
    from gluonbench.report.store import RunStore

    store = RunStore(path)
    if not store.has():
        raise GluonbenchError(
            f"{path} has no runs.jsonl; pass a run folder made by gluonbench sweep, diagnose --out or io"
        )
    return store.require_records()


TUNE_MAX_BYTES = 16 << 20
"""A tune --json file is tens of KB; a larger file is refused before it is read."""


def kind_of(path: str | Path) -> tuple[str, Any]:
    """``(kind, data)`` of a result: a run folder's records, or a tune JSON file's content."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        doc = load_json(path, "", TUNE_MAX_BYTES, "pass a run folder or a gluonbench tune --json file")
        if isinstance(doc, dict) and "evidence" in doc and "dataloader" in doc:
            return "tune", versions.upgrade("tune", doc, str(path))
        raise GluonbenchError(f"{path} is not a gluonbench tune --json file; pass a run folder or a tune result")
    if not path.is_dir():
        raise GluonbenchError(f"{path}: no such folder or file; pass a run folder made by gluonbench")
    records = _records(path)
    kinds = {r.get("kind", "run") for r in records}
    for kind, name in (("diagnosis", "diagnosis"), ("io", "io"), ("run", "sweep")):
        if kind in kinds:
            return name, records
    raise GluonbenchError(
        f"{path} holds {', '.join(sorted(map(str, kinds)))} records; compare takes sweep, diagnosis, io or tune results"
    )


def _figure(value: Any, path: str | Path, what: str) -> float:
    """A stored samples/s figure, or one line naming the bad record: NaN, infinite, zero or negative figures are
    not results (a hand-edited or broken record)."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        x = math.nan
    if isinstance(value, bool) or not math.isfinite(x) or x <= 0:
        raise GluonbenchError(
            f"{path}: {what} has samples/s {value!r}, not a positive finite figure; "
            "the record is damaged: remeasure it or remove it"
        )
    return x


def _figures(
    kind: str, data: Any, path: str | Path = "?"
) -> dict[str, list[float]] | dict[str, tuple[float, tuple[float, float]]]:
    out: dict[str, Any] = {}
    if kind == "sweep":
        runs: dict[str, list[dict[str, Any]]] = {}
        for r in data:
            if r.get("kind", "run") != "run" or r.get("status") != "ok" or "samples_per_s" not in r:
                continue
            s = r.get("spec") or {}
            key = f"workers={s.get('workers')} batch={s.get('batch_size')}" + (
                " thread_pool" if s.get("thread_pool") else ""
            )
            _figure(r["samples_per_s"], path, f"the run at {key}")
            runs.setdefault(key, []).append(r)
        for key, rows in runs.items():
            if len(rows) == 1:  # a single run: judged by the spread of its blocks of steps, where it kept them
                blocks = (rows[0].get("steady") or {}).get("block_samples_per_s") or []
                if len(blocks) >= 2:
                    out[key] = BlockFigures(_figure(b, path, f"a block of the run at {key}") for b in blocks)
                    continue
            out[key] = [float(r["samples_per_s"]) for r in rows]
    elif kind == "diagnosis":
        for r in data:
            if r.get("kind") != "diagnosis":
                continue
            probes = (r.get("diagnosis") or {}).get("probes") or r.get("probes") or {}
            for name, p in probes.items():
                if p.get("same_as"):
                    continue
                blocks = [1.0 / _figure(b, path, f"a block of probe {name}") for b in p.get("blocks") or []]
                if blocks:
                    out.setdefault(name, []).extend(blocks)
    elif kind == "io":
        for r in data:
            if r.get("kind") != "io" or r.get("status") != "ok" or "samples_per_s" not in r:
                continue
            c = r.get("cell") or {}
            key = f"{c.get('mode')} {c.get('size')} {c.get('layout')}"
            out.setdefault(key, []).append(_figure(r["samples_per_s"], path, f"the cell {key}"))
    else:  # tune: the stored estimate and its CI
        for e in data.get("evidence") or []:
            if e.get("status", "ok") != "ok" or "samples_per_s" not in e:
                continue
            ci = e.get("ci") or [math.nan, math.nan]
            key = f"{e.get('phase')}: {e.get('label')}"
            value = _figure(e["samples_per_s"], path, f"the measurement {key}")
            out[key] = (value, (float(ci[0] or math.nan), float(ci[1] or math.nan)))
    return out


class BlockFigures(list):
    """The per-block samples/s of one run (a list of floats, marked so the comparison can say it used them)."""


def _article(kind: str) -> str:
    return f"an {kind}" if kind[0] in "aeio" else f"a {kind}"


# -- comparing -------------------------------------------------------------------------------------


def bootstrap_ratio(
    a: list[float], b: list[float], n: int = BOOTSTRAP, seed: int = 0
) -> tuple[float, tuple[float, float]]:
    """``median(b) / median(a)`` and its 95 % percentile-bootstrap interval (NaN interval with one figure a side)."""
    r = median(b) / median(a) if a and b and median(a) > 0 else math.nan
    if len(a) < 2 or len(b) < 2 or not math.isfinite(r):
        return r, (math.nan, math.nan)
    rng = random.Random(seed)
    ratios = sorted(median(rng.choices(b, k=len(b))) / max(median(rng.choices(a, k=len(a))), 1e-300) for _ in range(n))
    return r, (ratios[int(0.025 * n)], ratios[min(n - 1, int(0.975 * n))])


def compare_runs(
    run_a: str | Path, run_b: str | Path, fail_on_slowdown: float | str | None = None, force: bool = False
) -> Comparison:
    """Compare two results of the same kind (see the module docstring); refuses mismatched kinds in one line, and
    results of different pipelines (factory or script, its options or data; loader knobs may differ) unless
    ``force``."""
    from gluonbench.check.gate import parse_fraction

    t = None if fail_on_slowdown is None else parse_fraction(fail_on_slowdown, f"{arg('fail_on_slowdown')}")
    kind_a, data_a = kind_of(run_a)
    kind_b, data_b = kind_of(run_b)
    if kind_a != kind_b:
        raise GluonbenchError(
            f"{run_a} holds {_article(kind_a)} result and {run_b} {_article(kind_b)} one; "
            "compare two results of the same kind"
        )
    id_a, id_b = identity_of(run_a, kind_a, data_a), identity_of(run_b, kind_b, data_b)
    if id_a.key() != id_b.key() and not force:
        raise GluonbenchError(
            f"{run_a} measured {id_a.text().split('; machine')[0]} and {run_b} "
            f"{id_b.text().split('; machine')[0]}: different pipelines; compare results of one pipeline "
            f"(loader settings may differ), or pass {param('force', '--force')} to compare them anyway"
        )
    fa, fb = _figures(kind_a, data_a, run_a), _figures(kind_b, data_b, run_b)
    if not fa or not fb:
        empty = run_a if not fa else run_b
        raise GluonbenchError(f"{empty} holds no finished {kind_a} figures to compare")
    cmp = Comparison(kind_a, str(run_a), str(run_b), "samples/s", fail_on_slowdown=t, a=id_a, b=id_b)
    if id_a.key() != id_b.key():
        cmp.notes.append("A and B are different pipelines (compared with --force): a difference is not a regression")
    if id_a.machine != id_b.machine:
        cmp.notes.append("A and B ran on different machines: a difference may be the machine's, not the code's")
    for key in list(fa) + [k for k in fb if k not in fa]:
        if key not in fb or key not in fa:
            side = fa if key in fa else fb
            v = side[key]
            value = v[0] if isinstance(v, tuple) else median(v)
            n = 1 if isinstance(v, tuple) else len(v)
            only = "only in A" if key in fa else "only in B"
            cmp.rows.append(
                CompareRow(
                    key,
                    value if key in fa else math.nan,
                    value if key in fb else math.nan,
                    math.nan,
                    [math.nan, math.nan],
                    n if key in fa else 0,
                    n if key in fb else 0,
                    only,
                )
            )
            continue
        va, vb = fa[key], fb[key]
        if kind_a == "tune":
            r, ci = ratio_ci(vb[0], vb[1], va[0], va[1])
            a, b, na, nb = va[0], vb[0], 1, 1
        else:
            r, ci = bootstrap_ratio(va, vb)
            a, b, na, nb = median(va), median(vb), len(va), len(vb)
        if not all(math.isfinite(x) for x in ci):
            flag = "no interval"
        elif ci[1] < 1:
            flag = "slower"
        elif ci[0] > 1:
            flag = "faster"
        else:
            flag = "same"
        row = CompareRow(key, a, b, r, list(ci), na, nb, flag)
        cmp.rows.append(row)
        if t is not None and flag == "slower" and r > 0 and 1 / r > 1 + t:
            cmp.failed.append(key)
    if any(r.flag == "no interval" for r in cmp.rows):
        cmp.notes.append("rows with one figure a side have no interval (sweep: --repeat 3 gives one)")
    if any(isinstance(v, BlockFigures) for side in (fa, fb) for v in side.values()):
        cmp.notes.append(
            "a single run a side is judged by the spread of its blocks of steps (within one run: the run-to-run "
            "noise is not in it; --repeat 3 measures that)"
        )
    return cmp


# -- rendering -------------------------------------------------------------------------------------


def _cells(row: CompareRow) -> tuple[str, ...]:
    def num(v: float) -> str:
        return f"{v:,.1f}" if math.isfinite(v) else "-"

    lo, hi = row.ratio_ci
    ratio = "-" if not math.isfinite(row.ratio) else f"{row.ratio:.3f}"
    if math.isfinite(lo) and math.isfinite(hi):
        ratio += f" ({lo:.3f}..{hi:.3f})"
    return (row.key, f"{num(row.a)} (n={row.n_a})", f"{num(row.b)} (n={row.n_b})", ratio, row.flag)


HEADER = ("row", "A samples/s", "B samples/s", "B / A (95 % CI)", "flag")


def _verdict(cmp: Comparison) -> str:
    from gluonbench.check.gate import threshold_text

    if cmp.fail_on_slowdown is None:
        from gluonbench.units import count

        return f"{count(sum(r.flag == 'slower' for r in cmp.rows), 'row')} significantly slower in B"
    if cmp.failed:
        return f"FAIL: slower by more than {threshold_text(cmp.fail_on_slowdown)} in B: {', '.join(cmp.failed)}"
    return f"ok: no row significantly slower by more than {threshold_text(cmp.fail_on_slowdown)}"


class ComparisonReport(Report):
    """A comparison as a report, so its Markdown, JSON and HTML go through the exporters every report uses."""

    kind = "compare"
    files: ClassVar[dict[str, str]] = {}  # written where --markdown, --json and --html say, not in a run folder

    def __init__(self, cmp: Comparison) -> None:
        self.summary = cmp

    @classmethod
    def from_records(cls, records: list[dict[str, Any]], settings: dict[str, Any]) -> Report:
        raise GluonbenchError("a comparison is made from two results (compare_runs), not from one run folder")

    def table(self) -> Table:
        cmp: Comparison = self.summary
        return Table(list(HEADER), [list(_cells(r)) for r in cmp.rows], align="lrrrl")

    def document(self, tables: TableSyntax) -> str:
        cmp: Comparison = self.summary
        lines = [
            f"### gluonbench compare ({cmp.kind})",
            "",
            f"A = `{cmp.run_a}`: {cmp.a.text()}  ",
            f"B = `{cmp.run_b}`: {cmp.b.text()}",
            "",
            tables.render(self.table()).rstrip("\n"),
            "",
            f"**{_verdict(cmp)}**",
        ]
        lines += [f"- note: {n}" for n in cmp.notes]
        return "\n".join(lines) + "\n"

    def html_title(self) -> str:
        return f"gluonbench compare ({self.summary.kind})"

    def html_subtitle(self) -> str:
        cmp: Comparison = self.summary
        return f"A = {cmp.run_a}: {cmp.a.text()}; B = {cmp.run_b}: {cmp.b.text()}"

    def html_body(self) -> str:
        """The table with slower rows red and faster rows green, the verdict and the notes (escaped)."""
        cmp: Comparison = self.summary
        e = html_lib.escape
        colour = {"slower": "#fdd", "faster": "#dfd"}
        rows = "\n".join(
            f'<tr style="background:{colour.get(r.flag, "#fff")}">'
            + "".join(f"<td>{e(c)}</td>" for c in _cells(r))
            + "</tr>"
            for r in cmp.rows
        )
        head = "".join(f"<th>{e(h)}</th>" for h in HEADER)
        notes = "".join(f"<p>note: {e(n)}</p>" for n in cmp.notes)
        return (
            f"<table><thead><tr>{head}</tr></thead><tbody>\n{rows}\n</tbody></table>\n"
            f"<p><strong>{e(_verdict(cmp))}</strong></p>\n{notes}"
        )


def to_text(cmp: Comparison) -> str:
    """The comparison for a terminal: who A and B are, the table, the verdict and the notes."""
    lines = [f"{cmp.kind}: A = {cmp.run_a}: {cmp.a.text()}", f"{' ' * len(cmp.kind)}  B = {cmp.run_b}: {cmp.b.text()}"]
    lines.append(TextTable().render(ComparisonReport(cmp).table()).rstrip("\n"))
    lines.append(_verdict(cmp))
    lines += [f"note: {n}" for n in cmp.notes]
    return "\n".join(lines) + "\n"


def to_markdown(cmp: Comparison) -> str:
    """The ``--markdown`` file (the Markdown exporter)."""
    return EXPORTERS["markdown"].render(ComparisonReport(cmp))


def to_json(cmp: Comparison) -> str:
    """The ``--json`` file (the JSON exporter)."""
    return EXPORTERS["json"].render(ComparisonReport(cmp)) + "\n"


def to_html(cmp: Comparison) -> str:
    """The ``--html`` file: the one self-contained page every report uses (the HTML exporter; no network)."""
    return EXPORTERS["html"].render(ComparisonReport(cmp))
