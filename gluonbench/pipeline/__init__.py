"""The training step as a pipeline of named stages, and the stand-ins that measurements swap in.

    source -> read (dataset[i]) -> decode -> transform -> loader (workers, batchify) -> copy -> step

Each stage is a declared object (:class:`Source`, the data set, decode/transform functions, :class:`Loader`
or :class:`Stream`, :class:`Copy`/:class:`Split`, the step) that a swap replaces by a stand-in.

Every measurement is a :class:`Pipeline` with some stages swapped (``pipeline.swap(...)``) and run by
:func:`gluonbench.engine.measure.measure`.
"""

from gluonbench.pipeline.build import build_pipeline
from gluonbench.pipeline.pipeline import Pipeline, Running
from gluonbench.pipeline.stages import (
    STAGES,
    CachedSample,
    Compose,
    Copy,
    DeviceBatch,
    EmulatedStep,
    HostBatch,
    Loader,
    NoCopy,
    ReadySample,
    Source,
    Split,
    Stream,
)

__all__ = [
    "STAGES",
    "CachedSample",
    "Compose",
    "Copy",
    "DeviceBatch",
    "EmulatedStep",
    "HostBatch",
    "Loader",
    "NoCopy",
    "Pipeline",
    "ReadySample",
    "Running",
    "Source",
    "Split",
    "Stream",
    "build_pipeline",
]
