"""Items that become arrays only in the transform or the batchify are accepted by every command: what is checked is
the loader's first batch (``(data, label)`` arrays of numbers), not ``dataset[i]``. Bad ones are refused in one
line that names the fix."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from gluonbench.errors import GluonbenchError
from gluonbench.workloads.spec import PipelineSpec, check_first_batch

# a user's module: three kinds of items, each with what turns it into arrays (module-level: workers pickle them)
ITEMS = """
import io
import numpy as np
import gluonbench
from mxnet import gluon, image, nd


def png(i):
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(np.full((8, 8, 3), 10 * (i % 5), dtype=np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


def decode_image(raw, label):  # encoded bytes decoded in the transform, as mx.image.imdecode users write it
    return image.imdecode(raw).transpose((2, 0, 1)).astype("float32") / 255, np.float32(label)


MAX_LEN = 6


def pad_tokens(items):  # token lists of varying length, padded to one length
    data = np.zeros((len(items), MAX_LEN), dtype=np.float32)
    for row, (tokens, _) in enumerate(items):
        data[row, : len(tokens)] = tokens
    return nd.array(data), nd.array([label for _, label in items])


def stack_dicts(items):  # dict items, stacked by the user's batchify
    return nd.array(np.stack([it["x"] for it in items])), nd.array([it["y"] for it in items])


def net():
    return gluon.nn.Dense(2)


def make(kind="bytes", batchify=True, samples=48):
    if kind == "bytes":
        dataset = gluon.data.SimpleDataset([(png(i), i % 2) for i in range(samples)])
        return gluonbench.PipelineSpec(dataset=dataset, transform=decode_image, net=net, batch_size=8)
    if kind == "tokens":
        dataset = gluon.data.SimpleDataset([([1 + i % 9] * (1 + i % 5), i % 2) for i in range(samples)])
        return gluonbench.PipelineSpec(dataset=dataset, net=net, batch_size=8, batchify_fn=pad_tokens if batchify else None)
    dataset = gluon.data.SimpleDataset([{"x": np.full((4,), i % 3, np.float32), "y": i % 2} for i in range(samples)])
    return gluonbench.PipelineSpec(dataset=dataset, net=net, batch_size=8, batchify_fn=stack_dicts if batchify else None)
"""

KINDS = ("bytes", "tokens", "dicts")


@pytest.fixture(scope="module")
def items(tmp_path_factory: pytest.TempPathFactory):
    folder = tmp_path_factory.mktemp("items")
    (folder / "items_pipeline.py").write_text(ITEMS)
    sys.path.insert(0, str(folder))
    try:
        import items_pipeline

        yield items_pipeline
    finally:
        sys.path.remove(str(folder))
        sys.modules.pop("items_pipeline", None)


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_of_item_is_accepted(items, kind: str) -> None:
    spec = items.make(kind)
    assert spec.check() is spec
    data, label = check_first_batch(spec.dataset, spec.decode, spec.transform, spec.batch_size, spec.batchify_fn)
    assert data.shape[0] == label.shape[0] == 8


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_trains_through_the_sweep_run_and_check(items, kind: str) -> None:
    """sweep and profile train through train_and_eval; check builds its target: both run the batchify."""
    from gluonbench.check.target import resolve_pipeline
    from gluonbench.sweeprun.run import RunSpec, train_and_eval

    result = train_and_eval(
        RunSpec(workload="pipeline", workers=0, batch_size=8, epochs=1, max_batches=3),
        workload=items.make(kind),
    )
    assert result.train_s > 0
    target = resolve_pipeline(items.make(kind), batch_size=8)
    target.close()


def test_diagnose_and_tune_take_a_batchify(items) -> None:
    import gluonbench

    spec = items.make("tokens")
    d = gluonbench.diagnose(
        spec.dataset, batch_size=8, budget_s=2.0, ctx="cpu", net=spec.make_net(), batchify_fn=spec.batchify_fn
    )
    assert d.probes  # measured, not refused
    # tune checks its inputs (the first batch through the batchify) before any measurement
    from gluonbench.tune.search import _check_inputs

    assert len(_check_inputs(spec.dataset, None, None, 8, 10, None, spec.batchify_fn)) == len(spec.dataset)
    with pytest.raises(GluonbenchError, match="give the spec a batchify_fn"):
        _check_inputs(spec.dataset, None, None, 8, 10, None, None)


@pytest.mark.parametrize(
    ("kind", "needle"),
    [
        (
            "tokens",
            r"dataset\[0\] gives data of type list after the dataset's __getitem__.*give the spec a batchify_fn",
        ),
        ("dicts", r"dataset\[0\] gives dict after the dataset's __getitem__.*give the spec a batchify_fn"),
    ],
)
def test_items_the_default_batchify_cannot_batch_are_one_line(items, kind: str, needle: str) -> None:
    with pytest.raises(GluonbenchError, match=needle) as err:
        items.make(kind, batchify=False).check()
    assert "\n" not in str(err.value)


def _bad_batchify(which: str):
    from gluonbench._mx import nd

    def fn(items):
        if which == "list":
            return [[1, 2]] * len(items)
        if which == "text":
            return np.array(["a"] * len(items)), nd.zeros((len(items),))
        if which == "short label":
            return nd.zeros((len(items), 4)), nd.zeros((1,))
        raise ValueError("cannot batch these")

    return fn


@pytest.mark.parametrize(
    ("which", "needle"),
    [
        ("list", r"first batch has data of type list.*fix batchify_fn"),
        ("text", r"first batch has data of type ndarray of <U1"),
        ("short label", r"data of shape \(8, 4\) but label of shape \(1,\)"),
        ("raises", r"cannot batch the items of dataset\[0\.\.47\] \(ValueError: cannot batch these\); fix batchify_fn"),
    ],
)
def test_a_batchify_that_gives_no_arrays_is_one_line(items, which: str, needle: str) -> None:
    dataset = items.make("dicts").dataset
    spec = PipelineSpec(dataset=dataset, net=items.net, batch_size=8, batchify_fn=_bad_batchify(which))
    with pytest.raises(GluonbenchError, match=needle) as err:
        spec.check()
    assert "\n" not in str(err.value)


def test_bytes_the_transform_does_not_decode_are_named(items) -> None:
    spec = PipelineSpec(dataset=items.make("bytes").dataset, net=items.net, batch_size=8)
    with pytest.raises(GluonbenchError, match=r"dataset\[0\] gives data of type bytes after the dataset's __getitem__"):
        spec.check()


def test_cli_accepts_a_batchify_and_refuses_a_bad_one_in_one_line(items, tmp_path: Path) -> None:
    target = f"{Path(items.__file__)}:make"
    base = [sys.executable, "-m", "gluonbench", "sweep", "--pipeline", target, "--workers", "0", "--max-batches", "3"]
    good = subprocess.run(
        [*base, "--pipeline-option", "kind=tokens", "--batch-size", "8", "--out", str(tmp_path / "good")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert good.returncode == 0, good.stderr[-2000:]
    bad = subprocess.run(
        [
            *base,
            "--pipeline-option",
            "kind=dicts",
            "--pipeline-option",
            "batchify=false",
            "--out",
            str(tmp_path / "bad"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert bad.returncode == 2, bad.stderr[-2000:]
    lines = [ln for ln in bad.stderr.strip().splitlines() if ln.strip()]
    assert len(lines) == 1 and "gives dict" in lines[0] and "Traceback" not in bad.stderr, bad.stderr
