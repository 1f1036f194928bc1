"""The training step as a pipeline of named stages, and the stand-ins that measurements swap in.

    source -> read (dataset[i]) -> decode -> transform -> loader (workers, batchify) -> copy -> step

Every measurement is a :class:`Pipeline` with some stages swapped (``pipeline.swap(...)``) and run by
:func:`gluonbench.engine.measure.measure`.
"""

from gluonbench.pipeline.build import build_pipeline
from gluonbench.pipeline.pipeline import Pipeline, Running
from gluonbench.pipeline.stages import (
    STAGES,
    CachedSample,
    Compose,
    DeviceBatch,
    EmulatedStep,
    HostBatch,
    Loader,
    ReadySample,
    Stream,
)

__all__ = [
    "STAGES",
    "CachedSample",
    "Compose",
    "DeviceBatch",
    "EmulatedStep",
    "HostBatch",
    "Loader",
    "Pipeline",
    "ReadySample",
    "Running",
    "Stream",
    "build_pipeline",
]
