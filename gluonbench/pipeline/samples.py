"""Checks of what a user's dataset, transform and loss give, before anything is measured.

A dataset that returns ``None``, a string, or samples of varying shapes fails deep inside MXNet's
batchify with an error that blames the loader (or the model); ``loss=42`` fails in the first step and
blames the model. These checks name the real culprit in one line: ``dataset[i]``, the transform, the loss.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from gluonbench.errors import GluonbenchError


def _kind(value: Any) -> str:
    return type(value).__name__


def _shape(value: Any) -> tuple[int, ...] | None:
    shape = getattr(value, "shape", None)
    return tuple(int(s) for s in shape) if shape is not None else None


def check_pair(sample: Any, where: str, encoded: bool = False) -> None:
    """``sample`` is a (data, label) pair of numbers or arrays (not None, not text); ``encoded``: a raw sample
    that a decode stage turns into arrays, so its data may be bytes."""
    if not (isinstance(sample, tuple | list) and len(sample) == 2):
        raise GluonbenchError(f"{where} must be a (data, label) pair; got {_kind(sample)}")
    if encoded:
        return
    for part, value in zip(("data", "label"), sample, strict=True):
        if value is None or isinstance(value, str | bytes | dict):
            raise GluonbenchError(
                f"{where} gives {part} of type {_kind(value)}; it must be a number or an array "
                "(numpy or mx.nd): fix the dataset's __getitem__ (or the transform)"
            )
        if _shape(value) is None and not isinstance(value, int | float | list | tuple) and not hasattr(value, "item"):
            raise GluonbenchError(f"{where} gives {part} of type {_kind(value)}; it must be a number or an array")


def check_shapes(samples: dict[str, Any], stage: str) -> None:
    """Every sample's data has the shape of the first one (a batch stacks them); ``samples`` maps where -> pair."""
    shapes = {where: _shape(pair[0]) for where, pair in samples.items()}
    first_where, first = next(iter(shapes.items()))
    for where, shape in shapes.items():
        if shape != first:
            raise GluonbenchError(
                f"{where} has data of shape {shape} but {first_where} has {first}; samples of one batch must "
                f"have one shape: resize or pad them in {stage}"
            )


def check_loss(loss: Any) -> None:
    """``loss`` is None (the default) or callable as ``loss(output, label)``."""
    if loss is not None and not callable(loss):
        raise GluonbenchError(
            f"loss must be a Gluon loss such as gluon.loss.SoftmaxCrossEntropyLoss() (got {_kind(loss)} {loss!r})"
        )


def check_samples(dataset: Any, decode: Any = None, transform: Any = None) -> dict[str, Any]:
    """dataset[0], dataset[1] and dataset[-1], through decode and transform: pairs of one shape; where -> pair."""
    n = len(dataset)
    picks = sorted({0, min(1, n - 1), n - 1})
    out: dict[str, Any] = {}
    stage = "the dataset"
    for i in picks:
        where = f"dataset[{i}]"
        sample = dataset[i]
        check_pair(sample, where, encoded=decode is not None)
        for what, fn in (("decode", decode), ("transform", transform)):
            if fn is None:
                continue
            try:
                sample = fn(*sample)
            except Exception as exc:
                raise GluonbenchError(f"{what} failed on {where}: {type(exc).__name__}: {exc}") from exc
            where, stage = f"{what}(dataset[{i}])", f"the {what}"
            check_pair(sample, where)
        out[where] = sample
    check_shapes(out, stage)
    return out


def net_classes(net: Any, loss: Any) -> int | None:
    """How many classes ``net`` scores, where that is known: the units of its last ``Dense`` layer, when the loss
    reads labels as class indices (``SoftmaxCrossEntropyLoss`` with sparse labels, the default). Else None."""
    from gluonbench._mx import gluon

    if not (isinstance(loss, gluon.loss.SoftmaxCrossEntropyLoss) and getattr(loss, "_sparse_label", True)):
        return None
    last: Any = None
    stack = [net]
    while stack:  # depth first, in the order the children were added: the last Dense is the output layer
        block = stack.pop()
        if isinstance(block, gluon.nn.Dense):
            last = block
        stack.extend(reversed(list(getattr(block, "_children", {}).values())))
    units = getattr(last, "_units", None)
    return units if isinstance(units, int) and units > 0 else None


def _label_values(label: Any) -> list[float]:
    import numpy as np

    if hasattr(label, "asnumpy"):
        label = label.asnumpy()
    try:
        return [float(v) for v in np.asarray(label, dtype=np.float64).ravel()]
    except (TypeError, ValueError):
        return []


def check_labels(dataset: Any, net: Any, loss: Any, decode: Any = None, transform: Any = None) -> None:
    """Labels are class indices the net scores: 0 .. classes-1 (where :func:`net_classes` knows ``classes``).

    MXNet's softmax cross-entropy clips an index outside the classes, so such labels would train silently.
    Checked on the samples :func:`check_samples` reads, and on every label of a dataset that holds them in a
    ``_label`` array (MXNet's MNIST, CIFAR) or an ``ArrayDataset(data, label)``, when no decode or transform
    changes them.
    """
    classes = net_classes(net, loss)
    if classes is None:
        return
    found: list[tuple[str, float]] = []
    labels = getattr(dataset, "_label", None)
    columns = getattr(dataset, "_data", None)  # gluon.data.ArrayDataset(data, label)
    if labels is None and isinstance(columns, list | tuple) and len(columns) == 2:
        labels = columns[1]
    if labels is not None and decode is None and transform is None:
        values = _label_values(labels)
        if values:  # the extremes first (they name the range), then the first label that is not a whole number
            fractions = [v for v in values if v != int(v)] if all(map(math.isfinite, values)) else []
            found += [("the dataset's labels include", v) for v in (min(values), max(values), *fractions[:1])]
    found += [
        (f"{where} has label", v)
        for where, pair in check_samples(dataset, decode, transform).items()
        for v in _label_values(pair[1])
    ]
    for where, value in found:
        if not (math.isfinite(value) and 0 <= value < classes and value == int(value)):
            raise GluonbenchError(
                f"{where} {value:g}, outside the net's {classes} classes (its last Dense layer has "
                f"{classes} outputs, so labels must be whole numbers 0..{classes - 1}); fix the labels, or give a net "
                "with as many outputs as classes"
            )


def as_dataset(dataset: Any):
    """A user's dataset as a gluon ``Dataset``: one as it is, a sequence of (data, label) pairs wrapped."""
    from gluonbench._mx import gluon

    if isinstance(dataset, gluon.data.Dataset):
        return dataset
    if hasattr(dataset, "__getitem__") and hasattr(dataset, "__len__"):
        return gluon.data.SimpleDataset(dataset)
    raise GluonbenchError(
        f"dataset must be a gluon.data.Dataset (or a sequence of (data, label) pairs); got {type(dataset).__name__}"
    )


def checked_step(step: Any, net: Any) -> Callable[[Any, Any], Any]:
    """The model step, with a failure on the first batch turned into one clear error."""
    state = {"ok": False}

    def run(data: Any, label: Any) -> Any:
        if state["ok"]:
            return step(data, label)
        try:
            out = step(data, label)
            out.wait_to_read()
        except Exception as exc:
            first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
            raise GluonbenchError(
                f"the model step failed on a batch of shape {tuple(data.shape)} ({first}); "
                f"check that {type(net).__name__} accepts this input and returns (batch, classes)"
            ) from exc
        state["ok"] = True
        return out

    return run
