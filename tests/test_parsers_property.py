"""Property-based tests (hypothesis) of every parser of user input (issue #21).

Any input gives a value or one :class:`GluonbenchError`, never another exception: ranges, sizes,
durations, ``--set``, ``--rule``, TOML configs, manifests, hostfiles, endpoint URLs. Examples are
few and generation is bounded so the file stays in the default suite (a few seconds).
"""

from __future__ import annotations

import json
import math
import string

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from gluonbench.errors import GluonbenchError  # noqa: E402

FAST = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# text that looks like the real thing more often than uniform noise does
_range_alphabet = "0123456789.,: -x" + "\u0663\xb2"  # Arabic-Indic three and superscript two are "digits" too
ranges = st.one_of(
    st.text(alphabet=_range_alphabet, max_size=30),
    st.builds(lambda a, b, c: f"{a}..{b}:{c}", st.integers(0, 10**14), st.integers(0, 10**14), st.integers(0, 10**6)),
    st.text(max_size=20),
)
sizes = st.one_of(
    st.builds(lambda n, u: f"{n}{u}", st.one_of(st.integers(-5, 10**30), st.floats(allow_nan=True)),
              st.sampled_from(["", "B", "KB", "MiB", "gb", "TiB", "x", " MB"])),
    st.text(max_size=20),
    st.integers(-(10**20), 10**20),
    st.booleans(),
)  # fmt: skip
numbers = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True), st.integers(-(10**30), 10**30), st.booleans(), st.text(max_size=12)
)
json_values = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(-(10**20), 10**20), st.floats(allow_nan=False), st.text(max_size=8)
    ),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


def _value_or_gluonbench_error(fn, *args, **kwargs):
    try:
        return fn(*args, **kwargs)
    except GluonbenchError as exc:
        text = str(exc)
        assert text and "\n" not in text, f"not one line: {text!r}"
        return exc


@FAST
@given(ranges)
def test_ranges(spec):
    from gluonbench.ranges import MAX_VALUE, MAX_VALUES, parse_int_list

    out = _value_or_gluonbench_error(parse_int_list, spec)
    if isinstance(out, list):
        assert out and len(out) <= MAX_VALUES and all(0 <= v <= MAX_VALUE for v in out)
        assert len(set(out)) == len(out)


@FAST
@given(sizes)
def test_sizes(text):
    from gluonbench.units import MAX_SIZE, parse_size

    out = _value_or_gluonbench_error(parse_size, text)
    if isinstance(out, int):
        assert 1 <= out <= MAX_SIZE


@FAST
@given(numbers)
def test_durations(value):
    from gluonbench.pipeline.emulate import step_ms
    from gluonbench.settings import check_duration
    from gluonbench.units import MAX_SECONDS

    out = _value_or_gluonbench_error(check_duration, value, "--timeout")
    if isinstance(out, float):
        assert math.isfinite(out) and 0 <= out <= MAX_SECONDS
    _value_or_gluonbench_error(step_ms, value)


@FAST
@given(st.lists(st.text(max_size=30), max_size=4))
def test_set_overrides_and_coerce(items):
    from gluonbench.config import SweepSettings, coerce, parse_overrides

    out = _value_or_gluonbench_error(parse_overrides, items)
    if isinstance(out, dict):
        settings = _value_or_gluonbench_error(coerce, SweepSettings(), out, "command line")
        if isinstance(settings, SweepSettings):
            _value_or_gluonbench_error(settings.check)


_keys = st.sampled_from(["batch_size", "workers", "timeout_s", "epochs", "seed", "devices", "name", "thread_pool",
                         "max_batches", "prefetch", "hosts", "port", "unknown_key"])  # fmt: skip


@FAST
@given(st.dictionaries(_keys, st.one_of(numbers, st.text(max_size=10)), max_size=4))
def test_set_typed_values(values):
    """``--set KEY=VALUE`` and TOML values of every type reach the checks as a value or one error."""
    from gluonbench.config import SweepSettings, coerce

    settings = _value_or_gluonbench_error(coerce, SweepSettings(), values, "--config c.toml")
    if isinstance(settings, SweepSettings):
        _value_or_gluonbench_error(settings.check)


@FAST
@given(st.lists(st.text(alphabet=string.ascii_letters + string.digits + ".=-_ ", max_size=40), max_size=3)
       | st.lists(st.builds(lambda r, p, v: f"{r}.{p}={v}",
                            st.sampled_from(["CPUBottleneck", "StepOutlier", "BatchSize", "Nope"]),
                            st.sampled_from(["threshold", "patience", "stddev", "n_outliers", "x"]),
                            numbers), max_size=3))  # fmt: skip
def test_rules(items):
    from gluonbench.profiler.rules import RULES, parse_overrides

    out = _value_or_gluonbench_error(parse_overrides, items)
    if isinstance(out, dict):
        for rule, params in out.items():
            for value in RULES[rule](**params).params.values():
                if isinstance(value, float):
                    assert math.isfinite(value)


@FAST
@given(st.text(max_size=200) | st.builds(lambda d: "[sweep]\n" + "\n".join(f"{k} = {json.dumps(v)}" for k, v in d.items()),
                                         st.dictionaries(_keys, json_values, max_size=4)))  # fmt: skip
@example('[sweep]\ndevices = ""')  # found by this test: an empty required number passed as None
def test_toml_configs(tmp_path_factory, text):
    from gluonbench.config import SweepSettings, coerce, load_toml

    path = tmp_path_factory.mktemp("toml") / "c.toml"
    path.write_bytes(text.encode("utf-8", errors="replace"))
    table = _value_or_gluonbench_error(load_toml, path)
    if isinstance(table, dict):
        settings = _value_or_gluonbench_error(coerce, SweepSettings(), table, f"--config {path}")
        if isinstance(settings, SweepSettings):
            _value_or_gluonbench_error(settings.check)


_shard = st.fixed_dictionaries(
    {"rec": st.one_of(st.text(max_size=12), json_values), "idx": st.text(max_size=12),
     "records": json_values, "bytes": json_values, "sha256": st.text(max_size=8)}
)  # fmt: skip


@FAST
@given(st.one_of(
    st.text(max_size=60),
    json_values.map(json.dumps),
    st.builds(lambda shards, extra: json.dumps({"name": "n", "classes": ["a"], "records": 1, "bytes": 1,
                                                 "shard_size": 1, "format": extra, "shards": shards}),
              st.lists(_shard, max_size=3), st.sampled_from(["gluonbench-recordio-1", "x", 3])),
    st.integers(1, 5000).map(lambda n: "[" * n + "]" * n),
))  # fmt: skip
def test_manifests(text):
    from gluonbench.data.recordio import Manifest

    out = _value_or_gluonbench_error(Manifest.from_json, text, "manifest.json")
    if isinstance(out, Manifest):
        keys = [k for s in out.shards for k in (s.rec, s.idx)]
        assert len(keys) == len(set(keys))


@FAST
@given(
    st.binary(max_size=120)
    | st.lists(st.text(max_size=30), max_size=5).map(lambda ls: "\n".join(ls).encode("utf-8", "replace"))
)
def test_hostfiles(tmp_path_factory, raw):
    import re

    from gluonbench.distributed.settings import parse_hostfile

    path = tmp_path_factory.mktemp("hosts") / "hosts.txt"
    path.write_bytes(raw)
    out = _value_or_gluonbench_error(parse_hostfile, path)
    if isinstance(out, list):
        for host, port in out:
            # nothing a shell would act on reaches dmlc_tracker's ssh command line
            assert re.fullmatch(r"[A-Za-z0-9_.@-]+", host) and not host.startswith("-") and 0 < port < 65536


@FAST
@given(st.text(max_size=60) | st.builds(lambda s, u, h, p: f"{s}://{u}{h}{p}",
                                         st.sampled_from(["http", "https", "ftp", "HTTP"]),
                                         st.sampled_from(["", "user@", "user:pw@", ":@"]),
                                         st.text(max_size=15), st.sampled_from(["", ":0", ":9000", ":99999", ":x"])))  # fmt: skip
def test_endpoint_urls(url):
    from gluonbench.data.s3 import check_endpoint_url

    out = _value_or_gluonbench_error(check_endpoint_url, url)
    if isinstance(out, str):
        assert "@" not in out.split("/", 3)[2], "credentials never pass"
