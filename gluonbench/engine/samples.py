"""Checks of what a user's dataset, transform and loss give, before anything is measured.

A dataset that returns ``None``, a string, or samples of varying shapes fails deep inside MXNet's
batchify with an error that blames the loader (or the model); ``loss=42`` fails in the first step and
blames the model. These checks name the real culprit in one line: ``dataset[i]``, the transform, the loss.
"""

from __future__ import annotations

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


def check_samples(dataset: Any, decode: Any = None, transform: Any = None) -> None:
    """dataset[0], dataset[1] and dataset[-1], through decode and transform: pairs of one shape."""
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
