"""Rank-strided shards of a data set: worker ``rank`` of ``count`` reads samples rank, rank+count, ...

This is how SageMaker's ``ShardedByS3Key`` hands objects to instances (object i to instance
i mod N), applied to a data set's samples; every sample belongs to exactly one worker.
"""

from __future__ import annotations

from typing import Any

from gluonbench.errors import GluonbenchError


def shard_indices(length: int, rank: int, count: int) -> range:
    """The indices worker ``rank`` of ``count`` owns in a data set of ``length`` samples."""
    if count < 1 or not 0 <= rank < count:
        raise GluonbenchError(f"shard {rank} of {count} does not exist; rank must lie in 0..{count - 1}")
    return range(rank, length, count)


def strided_shard(dataset: Any, rank: int, count: int) -> Any:
    """A gluon ``Dataset`` view of ``dataset`` holding only worker ``rank``'s samples (lazy, no copy).

    With ``count == 1`` the data set itself is returned.
    """
    indices = shard_indices(len(dataset), rank, count)
    if count == 1:
        return dataset
    if len(indices) == 0:
        raise GluonbenchError(f"shard {rank} of {count} is empty: the data set has only {len(dataset)} samples")
    return _shard_class()(dataset, indices)


_CLASS: list[type] = []


def _shard_class() -> type:
    """``StridedShard``, a gluon ``Dataset``; made on first use so importing this module needs no MXNet."""
    if not _CLASS:
        from gluonbench._mx import gluon

        class StridedShard(gluon.data.Dataset):
            """Samples ``indices`` (a strided range) of the wrapped data set."""

            def __init__(self, base: Any, indices: range) -> None:
                self._base = base
                self._indices = indices

            def __len__(self) -> int:
                return len(self._indices)

            def __getitem__(self, idx: int) -> Any:
                return self._base[self._indices[idx]]

        StridedShard.__module__ = __name__
        StridedShard.__qualname__ = "StridedShard"
        _CLASS.append(StridedShard)
    return _CLASS[0]


def __getattr__(name: str) -> Any:
    # lets pickle find the class by name (DataLoader workers started with spawn/forkserver)
    if name == "StridedShard":
        return _shard_class()
    raise AttributeError(name)
