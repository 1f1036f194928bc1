"""Checks of what a user's dataset, transform and loss give, before anything is measured.

An item the loader cannot batch (``None``, text, arrays of varying shapes) fails deep inside MXNet's
batchify with an error that blames the loader (or the model); ``loss=42`` fails in the first step and
blames the model. These checks name the real culprit in one line: ``dataset[i]``, the transform, the
batchify, the loss. Items are checked as the model step receives them: the loader's first batch, so any item
that the transform and the batchify turn into arrays (encoded bytes, token lists, dicts) is accepted.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from gluonbench.errors import GluonbenchError


def _kind(value: Any) -> str:
    return type(value).__name__


def check_loss(loss: Any) -> None:
    """``loss`` is None (the default) or callable as ``loss(output, label)``."""
    if loss is not None and not callable(loss):
        raise GluonbenchError(
            f"loss must be a Gluon loss such as gluon.loss.SoftmaxCrossEntropyLoss() (got {_kind(loss)} {loss!r})"
        )


def check_samples(
    dataset: Any,
    decode: Any = None,
    transform: Any = None,
    batch_size: int = 64,
    batchify_fn: Any = None,
    what: str = "the pipeline",
) -> dict[str, Any]:
    """The loader's first batch, checked (:func:`gluonbench.workloads.spec.check_first_batch`): any item that
    decode, transform and the batchify turn into ``(data, label)`` arrays is accepted; where -> (data, label)."""
    from gluonbench.workloads.spec import check_first_batch

    return {"the loader's first batch": check_first_batch(dataset, decode, transform, batch_size, batchify_fn, what)}


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


def check_labels(
    dataset: Any,
    net: Any,
    loss: Any,
    decode: Any = None,
    transform: Any = None,
    batch_size: int = 64,
    batchify_fn: Any = None,
) -> None:
    """Labels are class indices the net scores: 0 .. classes-1 (where :func:`net_classes` knows ``classes``).

    MXNet's softmax cross-entropy clips an index outside the classes, so such labels would train silently.
    Checked on the loader's first batch (:func:`check_samples`), and on every label of a dataset that holds them in a
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
    if labels is not None and decode is None and transform is None and batchify_fn is None:
        values = _label_values(labels)
        if values:  # the extremes first (they name the range), then the first label that is not a whole number
            fractions = [v for v in values if v != int(v)] if all(map(math.isfinite, values)) else []
            found += [("the dataset's labels include", v) for v in (min(values), max(values), *fractions[:1])]
    from gluonbench.workloads.spec import first_batch_indices

    picks = first_batch_indices(len(dataset), batch_size)
    for pair in check_samples(dataset, decode, transform, batch_size, batchify_fn).values():
        values = _label_values(pair[1])
        # one label per item, in the order batched: each named by its dataset[i]
        names = [f"dataset[{i}] has label" for i in picks] if len(values) == len(picks) else []
        found += list(zip(names or ["the loader's first batch has label"] * len(values), values, strict=True))
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
            from gluonbench.workloads.spec import loss_error

            wrong = loss_error(exc, "the model step failed on its first batch")  # a loss not connected to the graph
            if wrong is not None:
                raise wrong from exc
            first = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else type(exc).__name__
            raise GluonbenchError(
                f"the model step failed on a batch of shape {tuple(data.shape)} ({first}); "
                f"check that {type(net).__name__} accepts this input and returns (batch, classes)"
            ) from exc
        state["ok"] = True
        return out

    return run
