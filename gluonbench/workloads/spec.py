"""A user's own training pipeline: :class:`PipelineSpec`, :func:`load_spec` and the ``pipeline`` workload.

A user module exposes a factory that returns the pipeline's parts::

    # mypkg/train.py
    import gluonbench
    from mxnet import gluon

    def make(classes: int = 10, **options) -> gluonbench.PipelineSpec:
        return gluonbench.PipelineSpec(
            dataset=gluon.data.vision.ImageFolderDataset("data/train"),
            transform=my_transform,            # (data, label) -> (data, label), run in the loader's workers
            net=lambda: my_net(classes),       # a Block, or a function that builds one
            loss=gluon.loss.SoftmaxCrossEntropyLoss(),
            batch_size=64,
            loader={"num_workers": 2},
        )

and every command takes it: ``gluonbench sweep|diagnose|tune|profile --pipeline mypkg.train:make
[--pipeline-option classes=5]``, or ``pipeline = "mypkg.train:make"`` in a TOML config. A dict with the
same fields works too. ``path/to/file.py:make`` imports a file. The working folder is put on
``sys.path`` (as ``python -m`` does), so ``mypkg.train`` is found from the folder you run in; the
sweep imports the factory again in each run's child process, which runs in the same folder.

Bad specs fail before any run, in one line: module not found, no such function, the factory raised
(its message), it returned the wrong thing, the decode/transform fails on ``dataset[0]``, or the first batch
the loader makes of the items is not ``(data, label)`` arrays of numbers. An item may be anything the transform
and the batchify turn into arrays (encoded image bytes decoded by the transform, token lists padded by a
``batchify_fn``, dicts): what is checked is the batch, as the model step receives it.
"""

from __future__ import annotations

import contextlib
import datetime
import importlib
import importlib.util
import logging
import math
import os
import re
import signal
import sys
import threading
import time
import tomllib
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from gluonbench.contexts import check_ctx
from gluonbench.errors import GluonbenchError
from gluonbench.knobs import check_loader, knob_default
from gluonbench.names import arg, param, param_example
from gluonbench.workloads.base import register

log = logging.getLogger(__name__)

# MXNet's default batchify of items of different shapes: numpy warns (two lines on stderr) before the KeyError it
# leads to, which gluonbench says in one line (check_first_batch before measuring, pipeline_fault mid-run)
warnings.filterwarnings(
    "ignore", message="Creating an ndarray from ragged nested sequences", module=r"mxnet\.gluon\.data\.dataloader"
)

MAX_INFO = 100
"""the most entries a spec's ``info`` may have (it is stored with every run)"""


@dataclass(frozen=True)
class PipelineSpec:
    """One training pipeline, as a user describes it: the stages before the loader, the model and the setting.

    ``dataset[i]`` returns a raw ``(data, label)`` sample (the read stage); ``decode`` (optional) turns a
    raw record into an array, ``transform`` is the per-sample preprocessing; both take and return
    ``(data, label)`` and run in the loader's workers. ``net`` and ``loss`` are gluon Blocks or functions
    of no argument that build one (a function is called once per run). ``loader`` holds the DataLoader
    knobs of :data:`gluonbench.knobs.KNOBS` other than ``batch_size`` (e.g. ``{"num_workers": 2}``; a
    ``batch_size`` there is refused: ``batch_size`` is the spec's own field, the batch size of every command
    unless the command's ``--batch-size`` is given);
    ``test_dataset`` (optional) is evaluated after training, with the same decode and transform.

    The source stage: a data set in memory needs nothing more. A source the factory opened says so with
    ``info`` (what it reports, stored with each run: ``mode``, ``uri``, start-up seconds...; at most
    :data:`MAX_INFO` entries with text keys) and ``close`` (a function of no argument that releases it: a
    file cache, producer processes; called once when the run is done). A stream (Pipe mode) has no
    ``dataset[i]``: it gives ``batches(batch_size, workers, epoch)`` instead of ``dataset``, an iterable of
    ready ``(data, label)`` batches per epoch (its decode and transform already applied, in ``workers``
    threads); the probes that need ``dataset[i]`` do not apply to it.
    """

    dataset: Any = None
    net: Any = None
    transform: Callable[..., Any] | None = None
    decode: Callable[..., Any] | None = None
    loss: Any = None
    """None: ``gluon.loss.SoftmaxCrossEntropyLoss()``"""
    batch_size: int = knob_default("batch_size")
    ctx: str = "cpu"
    loader: Mapping[str, Any] = field(default_factory=dict)
    test_dataset: Any = None
    classes: int | None = None
    learning_rate: float = 0.1
    init: Any = None
    """an ``mx.init`` Initializer (None: the seed's Xavier, magnitude 2.24)"""
    name: str = "pipeline"
    batches: Callable[[int, int, int], Any] | None = None
    """a stream's batches: ``batches(batch_size, workers, epoch)`` -> iterable of ``(data, label)`` (no dataset)"""
    info: Mapping[str, Any] = field(default_factory=dict)
    """what the source reports (``mode``, ``uri``, start-up figures), stored with each run"""
    close: Callable[[], None] | None = None
    """releases what the factory opened (a source's cache, producer processes); None: nothing to release"""
    batchify_fn: Callable[[list[Any]], Any] | None = None
    """the DataLoader's ``batchify_fn``: a batch's items (after decode and transform) -> ``(data, label)`` arrays,
    e.g. token lists padded to one length (None: MXNet's default, which stacks arrays of one shape); module-level,
    so the loader's workers can pickle it"""

    def __post_init__(self) -> None:
        if isinstance(self.loader, Mapping) and "batch_size" in self.loader:
            raise GluonbenchError(
                f"PipelineSpec(loader={{'batch_size': {self.loader['batch_size']!r}}}): the batch size is the spec's "
                f"own batch_size, not a loader knob; write PipelineSpec(batch_size={self.loader['batch_size']!r}) "
                "and leave it out of loader"
            )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], what: str = "the pipeline") -> PipelineSpec:
        """A spec from a dict of the same fields; unknown or missing fields named in one line."""
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise GluonbenchError(f"{what} has unknown field(s) {', '.join(unknown)}; known: {', '.join(known)}")
        missing = [k for k in ("dataset", "net") if k not in data and not (k == "dataset" and "batches" in data)]
        if missing:
            raise GluonbenchError(
                f"{what} lacks {', '.join(missing)}; a PipelineSpec needs dataset= (or a stream's batches=) and net="
            )
        return cls(**data)

    def loader_setting(self) -> dict[str, Any]:
        """The loader knobs, checked, with ``batch_size``."""
        return {"batch_size": self.batch_size, **check_loader(self.loader, "loader.")}

    def make_net(self) -> Any:
        return _build(self.net)

    def initializer(self) -> Any:
        """The net's initializer: the spec's ``init``, else the seed's Xavier (magnitude 2.24)."""
        if self.init is not None:
            return self.init
        from gluonbench.workloads.mnist import seed_init

        return seed_init()

    def make_loss(self) -> Any:
        if self.loss is None:
            from gluonbench._mx import gluon

            return gluon.loss.SoftmaxCrossEntropyLoss()
        return _build(self.loss)

    def check(self, what: str = "the pipeline") -> PipelineSpec:
        """Raise :class:`GluonbenchError` in one line when a part is unusable; return self.

        Makes the loader's first batch here (:func:`check_first_batch`, no workers), so a broken transform or an
        item the loader cannot batch fails here, not in a loader worker minutes later.
        """
        if isinstance(self.batch_size, bool) or not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise GluonbenchError(f"{what}: batch_size must be a whole number of at least 1 (got {self.batch_size!r})")
        check_ctx(self.ctx, f"{what}: ctx")
        check_learning_rate(self.learning_rate, what)
        self.loader_setting()
        for name in ("transform", "decode"):
            fn = getattr(self, name)
            if fn is not None and not callable(fn):
                raise GluonbenchError(f"{what}: {name} must be a function of (data, label) (got {type(fn).__name__})")
        if self.net is None or not callable(self.net):
            raise GluonbenchError(f"{what}: net must be a gluon Block or a function that builds one (got {self.net!r})")
        self._check_source(what)
        if self.batches is not None:
            return self  # a stream: no dataset[i] to read here; its first batch is read by the run
        if not (hasattr(self.dataset, "__getitem__") and hasattr(self.dataset, "__len__")):
            raise GluonbenchError(
                f"{what}: dataset must support len() and dataset[i] (got {type(self.dataset).__name__}); "
                "e.g. a gluon.data.Dataset"
            )
        if dataset_size(self.dataset, what) == 0:
            raise GluonbenchError(f"{what}: dataset is empty; give it samples")
        if self.batchify_fn is not None and not callable(self.batchify_fn):
            raise GluonbenchError(
                f"{what}: batchify_fn must be a function of a list of items (got {type(self.batchify_fn).__name__})"
            )
        check_first_batch(self.dataset, self.decode, self.transform, self.batch_size, self.batchify_fn, what)
        return self

    def _check_source(self, what: str) -> None:
        """The source fields: one of ``dataset`` and ``batches``; ``info`` a small table; ``close`` a function."""
        if (self.dataset is None) == (self.batches is None):
            raise GluonbenchError(
                f"{what}: give dataset= (random access, dataset[i]) or batches= (a stream of batches), "
                f"not {'both' if self.dataset is not None else 'neither'}"
            )
        if self.batches is not None and not callable(self.batches):
            raise GluonbenchError(
                f"{what}: batches must be a function (batch_size, workers, epoch) -> batches "
                f"(got {type(self.batches).__name__})"
            )
        if not isinstance(self.info, Mapping) or not all(isinstance(k, str) for k in self.info):
            raise GluonbenchError(f"{what}: info must be a dict with text keys (got {_short(self.info)})")
        if len(self.info) > MAX_INFO:
            raise GluonbenchError(f"{what}: info has {len(self.info)} entries; keep it to {MAX_INFO} at most")
        if self.close is not None and not callable(self.close):
            raise GluonbenchError(f"{what}: close must be a function of no argument (got {type(self.close).__name__})")


def check_learning_rate(lr: Any, what: str) -> float:
    """``lr`` as a float: a finite number above 0, else one line naming it."""
    if isinstance(lr, bool) or not isinstance(lr, int | float) or not (math.isfinite(lr) and lr > 0):
        raise GluonbenchError(
            f"{what}: learning_rate must be a number above 0 (got {_short(lr)}); e.g. learning_rate=0.1"
        )
    return float(lr)


def dataset_size(dataset: Any, what: str) -> int:
    """``len(dataset)``; one line naming the data set's ``__len__`` when it raises or returns no whole number."""
    try:
        size = len(dataset)
    except Exception as exc:
        raise GluonbenchError(
            f"{what}: len(dataset) raised {type(exc).__name__}: {exc}"[:300]
            + "; fix the dataset's __len__ (it must return the number of samples)"
        ) from None
    return size


def apply_sample(fn: Callable[..., Any], item: Any) -> Any:
    """``fn`` on one item as ``dataset.transform(fn)`` applies it: a tuple's parts as arguments, anything else
    (bytes, a dict, a token list) as the one argument."""
    return fn(*item) if isinstance(item, tuple) else fn(item)


FIRST_BATCH_MAX = 16
"""the most items :func:`check_first_batch` batches (the batch's first ones and the data set's last)"""


def first_batch_indices(n: int, batch_size: int) -> list[int]:
    """The items :func:`check_first_batch` batches, in order: the first ``min(batch_size, 16) - 1`` and the last."""
    size = max(1, min(int(batch_size), n, FIRST_BATCH_MAX))
    return sorted({*range(size - 1), n - 1})


def check_first_batch(
    dataset: Any,
    decode: Callable[..., Any] | None = None,
    transform: Callable[..., Any] | None = None,
    batch_size: int = 64,
    batchify_fn: Callable[[list[Any]], Any] | None = None,
    what: str = "the pipeline",
) -> tuple[Any, Any]:
    """The first batch the loader makes, checked: ``(data, label)`` arrays of numbers with one batch dimension.

    Any item is accepted that decode, transform and the batchify turn into arrays. Batched as the DataLoader
    does (``batchify_fn``, else MXNet's default, which stacks arrays of one shape), from the first
    ``min(batch_size, 16) - 1`` items and the data set's last, in this process. One line names the problem and
    its fix: ``dataset[i]`` or the decode/transform raising, items the batchify cannot batch (shapes that differ,
    text), a batch that is not two arrays of numbers.
    """
    from gluonbench._mx import gluon

    n = len(dataset)
    picks = first_batch_indices(n, batch_size)
    items, shapes = [], {}
    for i in picks:
        try:
            item = dataset[i]
        except GluonbenchError:
            raise  # gluonbench's own (the deadline's stall in read, a source's one line): not a bad item
        except Exception as exc:
            raise GluonbenchError(f"{what}: dataset[{i}] raised {type(exc).__name__}: {exc}"[:400]) from None
        for name, fn in (("decode", decode), ("transform", transform)):
            if fn is None:
                continue
            try:
                item = apply_sample(fn, item)
            except Exception as exc:
                raise GluonbenchError(
                    f"{what}: {name} fails on dataset[{i}]: {type(exc).__name__}: {exc}"[:400]
                ) from None
        items.append(item)
        first = item[0] if isinstance(item, tuple | list) and item else item
        shapes[i] = tuple(getattr(first, "shape", ()) or ())
    stage = "the transform" if transform is not None or decode is not None else "the dataset's __getitem__"
    fix = (
        "fix batchify_fn"
        if batchify_fn is not None
        else f"return arrays of one shape from {stage}, or give the spec a batchify_fn (e.g. one that pads)"
    )
    try:
        batch = (batchify_fn or gluon.data.dataloader.default_batchify_fn)(items)
    except Exception as exc:
        first_line = str(exc).strip().splitlines()[0][:160] if str(exc).strip() else type(exc).__name__
        differ = [i for i in picks if shapes[i] != shapes[picks[0]]]
        if batchify_fn is None and differ:
            raise GluonbenchError(
                f"{what}: dataset[{differ[0]}] gives data of shape {shapes[differ[0]]} but dataset[{picks[0]}] gives "
                f"{shapes[picks[0]]}; the loader stacks one batch's items: {fix}"
            ) from None
        part = _unbatchable_part(items) if batchify_fn is None else None
        if part is not None:
            j, name = part
            raise GluonbenchError(
                f"{what}: the loader cannot batch the {name} of dataset[{picks[0]}..{picks[-1]}] "
                f"(dataset[{picks[0]}] gives {name} of type {type(items[0][j]).__name__} after {stage}): {fix}"
            ) from None
        given = (
            "" if batchify_fn is not None else f"dataset[{picks[0]}] gives {type(items[0]).__name__} after {stage}; "
        )
        raise GluonbenchError(
            f"{what}: the loader cannot batch the items of dataset[{picks[0]}..{picks[-1]}] "
            f"({given}{type(exc).__name__}: {first_line}); {fix}"
        ) from None
    _check_batch(batch, what, fix)
    return batch[0], batch[1]


def _unbatchable_part(items: list[Any]) -> tuple[int, str] | None:
    """Which part of pair items (0: data, 1: label) MXNet's default batchify refuses, where that is one part."""
    from gluonbench._mx import gluon

    if not all(isinstance(it, tuple | list) and len(it) == 2 for it in items):
        return None
    for j, name in enumerate(("data", "label")):
        try:
            gluon.data.dataloader.default_batchify_fn([it[j] for it in items])
        except Exception:
            return j, name
    return None


def _check_batch(batch: Any, what: str, fix: str) -> None:
    """``batch`` is ``(data, label)``: two arrays (mx.nd or numpy) of numbers with one batch dimension."""
    import numpy as np

    if not (isinstance(batch, tuple | list) and len(batch) >= 2):
        raise GluonbenchError(f"{what}: the loader's first batch is {_short(batch)}, not (data, label); {fix}")
    shapes = []
    for part, value in zip(("data", "label"), batch[:2], strict=True):
        dtype = getattr(value, "dtype", None)
        shape = getattr(value, "shape", None)
        numeric = dtype is not None and np.issubdtype(np.dtype(dtype), np.number)
        if shape is None or not numeric or len(shape) == 0:
            kind = type(value).__name__ + (f" of {np.dtype(dtype)}" if dtype is not None else "")
            raise GluonbenchError(
                f"{what}: the loader's first batch has {part} of type {kind}; the model step needs an array of "
                f"numbers (mx.nd or numpy) with the batch as its first dimension: {fix}"
            )
        shapes.append(tuple(int(s) for s in shape))
    if shapes[0][0] != shapes[1][0]:
        raise GluonbenchError(
            f"{what}: the loader's first batch has data of shape {shapes[0]} but label of shape {shapes[1]}; "
            f"both need the batch as their first dimension: {fix}"
        )


_NOT_IN_GRAPH = "not in a computational graph"
"""MXNet's ``backward`` of a loss with no recorded path back to the net"""
_STALE_GRAD = re.compile(r"Gradient of Parameter `([^`]+)`.*has not been updated by backward", re.S)
"""MXNet's ``Trainer.step`` when a parameter got no gradient from ``backward``"""


def loss_fault(exc: BaseException, name: str = "") -> tuple[str, str] | None:
    """What is wrong with the loss (``name``: its class) and its fix, when ``exc`` is MXNet's error for a loss not
    connected to the net (backward finds no recorded graph, or a parameter got no gradient); None for any other
    error."""
    text = str(exc)
    loss = f"the loss {name}" if name else "the loss"
    if _NOT_IN_GRAPH in text and "differentiate" in text:
        return (
            f"{loss} is not connected to the graph: its value does not depend on the net's output, so backward has "
            "nothing to differentiate (a loss that returns a constant, or reads only the label)",
            "make the loss a function of the net's output, its first argument (e.g. "
            "gluon.loss.SoftmaxCrossEntropyLoss())",
        )
    stale = _STALE_GRAD.search(text)
    if stale is not None:
        return (
            f"the net's parameter {stale.group(1)} gets no gradient from {loss}, which does not depend on it (a "
            "block the forward never uses, or a loss that ignores the net's output)",
            "make the loss a function of the net's output and use every block in forward (or set grad_req='null' on "
            "the parameters left out)",
        )
    return None


def loss_error(exc: BaseException, what: str, name: str = "") -> GluonbenchError | None:
    """The one line for a loss not connected to the graph (:func:`loss_fault`), naming it and the fix; else None."""
    found = loss_fault(exc, name)
    return None if found is None else GluonbenchError(f"{what}: {found[0]}; {found[1]}")


def check_first_step(spec: PipelineSpec, what: str = "the pipeline", batch: tuple[Any, Any] | None = None) -> None:
    """One training step of a fresh net on the checked first batch, on the CPU, as the measured step runs it (forward
    and loss recorded, backward, an SGD update): a loss not connected to the graph (:func:`loss_fault`) is one line
    here, before anything is measured. Only where ``net`` builds a fresh net (a function): a Block the spec holds is
    the run's own and is left untouched; any other failure is left to the run, which names its stage. ``batch``: the
    first batch :func:`check_first_batch` made (None: made here).
    """
    from gluonbench._mx import autograd, gluon, mx

    if spec.batches is not None or spec.dataset is None or isinstance(spec.net, gluon.Block):
        return
    loss: Any = None
    try:
        data, label = batch or check_first_batch(
            spec.dataset, spec.decode, spec.transform, spec.batch_size, spec.batchify_fn, what
        )
        net, loss = spec.make_net(), spec.make_loss()
        if not isinstance(net, gluon.Block) or not callable(loss):
            return  # said by the run's own checks
        data, label = (mx.nd.array(x) if not hasattr(x, "as_in_context") else x for x in (data, label))
        for p in net.collect_params().values():
            if p._data is None and not p._deferred_init:  # not set up by the factory: as the run initialises it
                p.initialize(None, ctx=mx.cpu(), default_init=mx.init.Xavier(magnitude=2.24))
        trainer = gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.0})
        with autograd.record():
            value = loss(net(data.as_in_context(mx.cpu())), label.as_in_context(mx.cpu()))
        value.backward()
        unused = [name for name, p in net.collect_params().items() if p._data is None]
        if unused:  # still no shape after a forward pass: a block the forward never calls
            raise GluonbenchError(
                f"{what}: the net's parameter {unused[0]} is never used by its forward, so it gets no gradient and "
                "cannot be trained; use every block in forward, or leave the unused ones out of the net"
            )
        trainer.step(int(data.shape[0]))
        mx.nd.waitall()
    except GluonbenchError:
        raise
    except Exception as exc:
        wrong = loss_error(exc, what, type(loss).__name__ if loss is not None else "")
        if wrong is not None:
            raise wrong from None
        log.info("%s: the check's training step on the first batch failed (%r); the run will say where", what, exc)


def _build(part: Any) -> Any:
    """A Block as is; a function of no argument called to build one."""
    from gluonbench._mx import gluon

    if isinstance(part, gluon.Block):
        return part
    return part()


def _short(x: Any) -> str:
    shape = getattr(x, "shape", None)
    if shape is not None:  # an array: its kind and shape (its repr spans lines)
        return f"{type(x).__name__} of shape {tuple(shape)}"
    text = " ".join(f"{type(x).__name__} {x!r}".split())
    return text if len(text) <= 80 else text[:77] + "..."


# -- loading a user's factory --------------------------------------------------------------------


def split_target(target: str, what: str | None = None) -> tuple[str, str]:
    """``"pkg.mod:func"`` or ``"path/file.py:func"`` -> (module or file, function)."""
    what = what or param("pipeline")  # the argument as the caller knows it
    if not isinstance(target, str) or not target.strip():
        raise GluonbenchError(f"{what} must name a factory, e.g. {what} mypkg.train:make")
    where, sep, func = target.strip().rpartition(":")
    if not sep or not where or not func:
        raise GluonbenchError(
            f"{what} {target!r}: write MODULE:FUNCTION or path/to/file.py:FUNCTION, e.g. mypkg.train:make"
        )
    return where, func


def is_file_target(where: str) -> bool:
    return where.endswith(".py") or "/" in where or os.sep in where


def absolute_target(target: str, what: str | None = None) -> str:
    """``target`` with a file path made absolute (so a child process in another folder finds it)."""
    what = what or arg("pipeline")  # the argument as the caller knows it
    where, func = split_target(target, what)
    if is_file_target(where):
        return f"{Path(where).resolve()}:{func}"
    return target.strip()


class UserCodeTimeoutError(GluonbenchError):
    """A factory's import or call did not return within the command's deadline (:func:`limit_user_code`)."""


def exit_error(what: str, target: str, doing: str, exc: SystemExit) -> GluonbenchError:
    """The one line for user code that called ``sys.exit`` (or ``exit()``): never a silent pass with its code."""
    return GluonbenchError(
        f"{what} {target}: {doing} called sys.exit({exc.code!r}); the module and its function must return the "
        "pipeline, not end the program (guard the script part with if __name__ == '__main__':)"
    )


def import_factory(target: str, what: str | None = None) -> Callable[..., Any]:
    """The factory ``target`` names; one line when the module or the function is missing."""
    what = what or arg("pipeline")  # the argument as the caller knows it
    where, func = split_target(target, what)
    if is_file_target(where):
        module = _import_file(Path(where), what, target)
    else:
        cwd = os.getcwd()
        if cwd not in sys.path and "" not in sys.path:
            sys.path.insert(0, cwd)  # as `python -m` does: a module in the working folder is found
        try:
            module = importlib.import_module(where)
        except ModuleNotFoundError as exc:
            if exc.name and (where == exc.name or where.startswith(exc.name + ".")):
                raise GluonbenchError(
                    f"{what} {target}: module {where!r} not found (searched the working folder {cwd} and sys.path); "
                    "run from the folder that holds it, add it to PYTHONPATH, or give path/to/file.py:FUNCTION"
                ) from None
            raise GluonbenchError(f"{what} {target}: importing {where} failed: {exc}") from None
        except SystemExit as exc:
            raise exit_error(what, target, f"importing {where}", exc) from None
        except UserCodeTimeoutError:
            raise
        except Exception as exc:
            raise GluonbenchError(f"{what} {target}: importing {where} raised {type(exc).__name__}: {exc}") from None
    factory = getattr(module, func, None)
    if factory is None:
        raise GluonbenchError(f"{what} {target}: {where} has no function {func!r}")
    if not callable(factory):
        raise GluonbenchError(f"{what} {target}: {func} is a {type(factory).__name__}, not a function")
    return factory


def _import_file(path: Path, what: str, target: str) -> Any:
    if not path.is_file():
        raise GluonbenchError(f"{what} {target}: file {path} not found; give path/to/file.py:FUNCTION")
    path = path.resolve()
    name = f"gluonbench_user_{path.stem}"
    if name in sys.modules and getattr(sys.modules[name], "__file__", None) == str(path):
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise GluonbenchError(f"{what} {target}: {path} cannot be imported as Python; give a .py file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # picklable functions (DataLoader workers) need the module registered
    folder = str(path.parent)
    if folder not in sys.path:
        sys.path.insert(0, folder)  # the file's own imports of its neighbours work, as with `python file.py`
    try:
        spec.loader.exec_module(module)
    except SystemExit as exc:
        del sys.modules[name]
        raise exit_error(what, target, f"importing {path.name}", exc) from None
    except UserCodeTimeoutError:
        del sys.modules[name]
        raise
    except Exception as exc:
        del sys.modules[name]
        raise GluonbenchError(f"{what} {target}: importing {path.name} raised {type(exc).__name__}: {exc}") from None
    return module


@contextlib.contextmanager
def same_working_folder(what: str) -> Iterator[None]:
    """Run user code (a factory's import and call) and give the process its working folder back if the code
    changed it (``os.chdir``): every relative path the command was given (``--out results``, ``--json c.json``)
    still means what it meant when the user typed it. A warning names the folder it had moved to."""
    before = os.getcwd()
    try:
        yield
    finally:
        try:
            after = os.getcwd()
        except OSError:
            after = None  # moved into a folder since removed
        if after != before:
            os.chdir(before)
            log.warning(
                "%s changed the working folder to %s; gluonbench changed it back to %s, so the command's relative "
                "paths keep their meaning (use absolute paths in the factory instead of os.chdir)",
                what,
                after or "a removed folder",
                before,
            )


_USER_CODE: dict[str, Any] = {"limit_s": None, "hard": False, "why": ""}
"""the deadline of user code in this process (:func:`limit_user_code`); none by default (library use)"""

USER_CODE_HARD_EXIT_S = 5.0
"""with ``hard``: seconds past the deadline after which a factory stuck in native code (no signal handler runs
there) ends the process with one line and exit 2"""


def limit_user_code(limit_s: float | None, why: str = "", hard: bool = False) -> None:
    """Give a factory's import and call ``limit_s`` seconds (None: no limit) in this process; ``why`` says where the
    limit comes from (``"the budget 60 s + 15 s grace"``). With ``hard`` (the CLI, which owns its process), a factory
    stuck in native code ends the process :data:`USER_CODE_HARD_EXIT_S` later, with one line and exit 2."""
    _USER_CODE.update(limit_s=limit_s, why=why, hard=hard)


@contextlib.contextmanager
def user_code_deadline(what: str, doing: list[str]) -> Iterator[None]:
    """Run a factory's import and call under the deadline :func:`limit_user_code` set: a real ``SIGALRM`` interrupts
    a blocking sleep, read or wait of the main thread and raises :class:`UserCodeTimeoutError` naming ``doing[0]``
    (what the user code was doing: importing it, or calling the factory). A caller's own alarm due sooner stays in
    charge; one due later is re-armed, less the time spent, on exit. Outside the main thread: no limit."""
    limit = _USER_CODE["limit_s"]
    if not limit or threading.current_thread() is not threading.main_thread():
        yield
        return
    outer_left, outer_interval = signal.getitimer(signal.ITIMER_REAL)
    if 0 < outer_left <= limit:
        yield
        return
    why = f" ({_USER_CODE['why']})" if _USER_CODE["why"] else ""

    def line() -> str:
        return (
            f"{what}: {doing[0]} did not return within {limit:g} s{why}; it blocks there (a sleep, a network "
            "read, a lock, input()): make the module's import and the factory return promptly (open slow resources "
            f"lazily, give network calls a timeout), or raise {arg('budget_s', '--budget')}"
        )

    def fire(signum: int, frame: Any) -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)
        raise UserCodeTimeoutError(line())

    backstop = None
    if _USER_CODE["hard"]:

        def stuck() -> None:  # the main thread never came back to Python (native code): end the process
            try:
                sys.stderr.write(f"gluonbench: error: {line()}\n")
                sys.stderr.flush()
            finally:
                os._exit(2)

        backstop = threading.Timer(limit + USER_CODE_HARD_EXIT_S, stuck)
        backstop.daemon = True
        backstop.start()
    previous = signal.signal(signal.SIGALRM, fire)
    t0 = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        if backstop is not None:
            backstop.cancel()
        signal.signal(signal.SIGALRM, previous)
        if outer_left > 0:
            signal.setitimer(signal.ITIMER_REAL, max(0.001, outer_left - (time.monotonic() - t0)), outer_interval)


@contextlib.contextmanager
def fenced_user_code(what: str, doing: list[str]) -> Iterator[None]:
    """Where a factory is imported and called: under the command's deadline (:func:`user_code_deadline`), its
    working folder given back (:func:`same_working_folder`), and a child it forked (``os.fork()``) that returns here
    ended at once, so that it never runs the command a second time; a KeyboardInterrupt it raises itself is one
    line naming it (:func:`~gluonbench.userprocs.own_interrupt`), not a stop."""
    from gluonbench.userprocs import own_interrupt

    pid = os.getpid()
    try:
        with same_working_folder(what), user_code_deadline(what, doing), own_interrupt(what, doing):
            yield
    finally:
        if os.getpid() != pid:
            os._exit(0)


def load_spec(target: str, options: Mapping[str, Any] | None = None, what: str | None = None) -> PipelineSpec:
    """Import ``target`` (``"pkg.mod:func"`` or ``"path/file.py:func"``), call it with ``options`` and check
    what it returns (see :meth:`PipelineSpec.check`); raise :class:`GluonbenchError` in one line if anything
    is wrong."""
    what = what or arg("pipeline")  # the argument as the caller knows it
    options = dict(options or {})
    where, _ = split_target(target, what)
    doing = [f"importing {Path(where).name if is_file_target(where) else where}"]
    with fenced_user_code(f"{what} {target}", doing):
        factory = import_factory(target, what)
        check_factory_options(factory, options, f"{what} {target}")
        doing[0] = "the factory"
        try:
            made = factory(**options)
        except SystemExit as exc:
            raise exit_error(what, target, "the factory", exc) from None
        except UserCodeTimeoutError:
            raise
        except GluonbenchError as exc:  # already one line (e.g. a PipelineSpec refused its fields)
            raise GluonbenchError(f"{what} {target}: {exc.raw}"[:500]) from None
        except Exception as exc:
            raise GluonbenchError(f"{what} {target}: the factory raised {type(exc).__name__}: {exc}"[:500]) from None
    if isinstance(made, Mapping):
        made = PipelineSpec.from_dict(made, f"{what} {target}: the returned dict")
    if not isinstance(made, PipelineSpec):
        raise GluonbenchError(
            f"{what} {target}: the factory returned {type(made).__name__}, not a gluonbench.PipelineSpec "
            "(or a dict of its fields)"
        )
    return made.check(f"{what} {target}")


def factory_signature(factory: Callable[..., Any]) -> tuple[list[str], bool] | None:
    """The keyword names ``factory`` takes and whether it takes ``**options`` too (None: no signature to read)."""
    import inspect

    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):  # a builtin or an object without a readable signature
        return None
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    names = [p.name for p in params if p.kind in kinds]
    return names, any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)


def check_factory_options(factory: Callable[..., Any], options: Mapping[str, Any], what: str) -> list[str]:
    """Refuse an option ``factory``'s signature does not name (one line naming it and the names it takes); for a
    factory with ``**options``, return the options that only its ``**options`` takes (reported back, unchecked).
    A factory that refuses unknown ``**options`` itself says so with the attribute ``checks_options = True``
    (e.g. :func:`gluonbench.workloads.synthetic.make`): none are returned for it."""
    signature = factory_signature(factory)
    if signature is None or getattr(factory, "checks_options", False):
        return []
    names, var_keyword = signature
    unnamed = [k for k in options if k not in names]
    if unnamed and not var_keyword:
        takes = f"it takes {', '.join(names)}" if names else "it takes no option"
        raise GluonbenchError(
            f"{what}: the factory takes no option {', '.join(map(repr, unnamed))} ({takes}); "
            f"check the spelling of {param('pipeline_options', '--pipeline-option')}"
        )
    return unnamed


def unnamed_options(target: str, options: Mapping[str, Any] | None) -> list[str]:
    """The options of ``target`` that its factory's signature does not name and its ``**options`` takes."""
    if not options:
        return []
    return check_factory_options(import_factory(target), options, f"{arg('pipeline')} {target}")


def parse_option_value(text: str) -> Any:
    """A ``--pipeline-option`` value: a TOML value (``5``, ``0.5``, ``true``, ``"x"``, ``[1, 2]``), else the text."""
    try:
        value = tomllib.loads(f"v = {text}")["v"]
    except (tomllib.TOMLDecodeError, RecursionError):
        return text
    # a TOML date or time (``2026-01-01``) is not JSON, so it could not be kept in a record: the factory gets the text
    return text if isinstance(value, datetime.date | datetime.time) else value


def parse_pipeline_options(items: list[str] | None) -> dict[str, Any]:
    """``--pipeline-option key=value`` texts as keyword arguments for the factory."""
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise GluonbenchError(
                f"--pipeline-option {item!r}: write KEY=VALUE with KEY a Python name, e.g. --pipeline-option classes=5"
            )
        if key in out:
            raise GluonbenchError(
                f"--pipeline-option {key} is given twice ({key}={out[key]!r} and {item.strip()!r}); give each option "
                "once"
            )
        out[key] = parse_option_value(value.strip())
    return out


_KEPT: dict[str, Any] = {}
"""the spec :func:`check_pipeline` kept for this process's next :func:`take_spec` (one at most)"""


def _key(target: str, options: Mapping[str, Any] | None) -> str:
    return f"{absolute_target(target)} {sorted(dict(options or {}).items())!r}"


def _kept(key: str) -> PipelineSpec | None:
    """The kept spec if it is ``key``'s (no longer kept); another target's kept spec is released."""
    spec = _KEPT.pop("spec", None)
    kept = _KEPT.pop("key", None)
    if spec is not None and kept != key:
        release_spec(spec)
        return None
    return spec


def take_spec(target: str, options: Mapping[str, Any] | None = None) -> PipelineSpec:
    """The checked spec of ``target`` with ``options``: the one :func:`check_pipeline` kept (so the factory runs
    once in this process), else loaded now. The caller owns it: :func:`release_spec` when done."""
    return _kept(_key(target, options)) or load_spec(target, options)


def spec_batch_size(target: str, options: Mapping[str, Any] | None = None, keep: bool = True) -> int:
    """The ``batch_size`` of ``target``'s spec with ``options``: the kept spec's (see :func:`check_pipeline`), else
    the factory's, called now. With ``keep`` the spec is kept for this process's next check or :func:`take_spec`
    (the factory runs once per process); without, it is released (nothing is kept for ``target`` after this)."""
    key = _key(target, options)
    spec = _kept(key) or load_spec(target, options)
    if keep:
        _KEPT.update(key=key, spec=spec)
    else:
        release_spec(spec)
    return spec.batch_size


def release_spec(spec: PipelineSpec) -> None:
    """Release what ``spec``'s factory opened (its ``close``)."""
    if spec.close is not None:
        spec.close()


def check_pipeline(
    target: str,
    options: Mapping[str, Any] | None = None,
    ctx: str | None = None,
    pin_memory: bool = False,
    keep: bool = False,
    **setting: Any,
) -> dict[str, int]:
    """Load and check a user's pipeline factory here, before any child process imports it again (one line per
    mistake, see :func:`load_spec`); the split sizes of its data sets.

    ``ctx`` and ``setting`` (loader knobs, e.g. ``batch_size=64``) are what the command will run: where they
    differ from the spec's own, one warning says so (the command's flags decide, the spec's values are the
    defaults of :func:`gluonbench.build_pipeline` only). The factory is called once per process: with
    ``keep`` the checked spec is kept for the next check or :func:`take_spec` of the same target and options;
    without, it is released (its ``close``) once checked.
    """
    from gluonbench.knobs import unmet

    key = _key(target, options)
    reused = _kept(key)
    spec = reused or load_spec(target, options)
    if keep:
        _KEPT.update(key=key, spec=spec)
    if reused is not None:  # checked and warned about already
        return _sizes(spec, keep)
    with fenced_user_code(f"{arg('pipeline')} {target}", ["the first training step"]):
        check_first_step(spec, f"{arg('pipeline')} {target}")
    for note in unmet({"pin_memory": pin_memory}, on_gpu=str(ctx or "").startswith("gpu")):
        log.warning("%s: it is set but has no effect here", note)
    own = {**spec.loader_setting(), "ctx": spec.ctx}
    ran = {k: v for k, v in {**setting, "ctx": ctx}.items() if v is not None}
    differ = [f"{k}={own[k]!r} (runs at {ran[k]!r})" for k in ran if k in own and own[k] != ran[k]]
    if differ:
        log.warning(
            "the pipeline's spec says %s; the command's settings decide (leave %s out to run at the spec's "
            "batch size, give the other flags their values)",
            ", ".join(differ),
            arg("batch_size"),
        )
    passed = unnamed_options(target, options)
    if passed:
        from gluonbench.identity import options_text

        log.warning(
            "%s %s takes **options: %s passed to it unchecked (its signature names none of them, so a mistyped "
            "name is not caught)",
            arg("pipeline"),
            target,
            options_text({k: dict(options or {})[k] for k in passed}),
        )
    return _sizes(spec, keep)


def _sizes(spec: PipelineSpec, keep: bool) -> dict[str, int]:
    sizes = {"train": len(spec.dataset)} if spec.dataset is not None else {}
    if spec.test_dataset is not None:
        sizes["test"] = len(spec.test_dataset)
    if not keep:
        release_spec(spec)
    return sizes


@register("pipeline")
def pipeline_workload(
    data_dir: str | None = None,
    download: bool = True,
    pipeline: str | None = None,
    pipeline_options: Mapping[str, Any] | None = None,
    **unused: Any,
) -> PipelineSpec:
    """The workload of a user's pipeline factory (``--pipeline MODULE:FUNCTION``); imported in each run."""
    if not pipeline:
        raise GluonbenchError(
            "the pipeline workload needs "
            + param_example("pipeline='MODULE:FUNCTION' (e.g. 'mypkg.train:make')", "--pipeline mypkg.train:make")
        )
    return load_spec(pipeline, pipeline_options)
