"""FastFile mode: no copy. List the objects first (timed), then read each sample or shard on demand.

Local stores are read with ``pread``; S3 with byte-range GETs. Sequential reads
(:meth:`Source.stream`) fetch shards in ``chunk_bytes`` ranges with bounded
read-ahead; random reads (a ``Dataset``) fetch exactly one sample's range. A
byte-bounded LRU cache (``cache_bytes``) keeps recent ranges, as the page cache
under SageMaker's FastFile mount does: a data set smaller than the cache is
served from memory from its second epoch on.
"""

from __future__ import annotations

from time import perf_counter

from gluonbench.sources.base import DataSet, LRUCache, OpenStats, Source

DEFAULT_CACHE = 64 << 20


class FastFileSource(Source):
    mode = "fastfile"

    def __init__(self, uri: str, endpoint_url: str | None = None, cache_bytes: int = DEFAULT_CACHE, **kw) -> None:
        super().__init__(uri, endpoint_url, **kw)
        self.cache = LRUCache(cache_bytes)

    def __getstate__(self) -> dict:
        # a forked or pickled copy (DataLoader workers) gets its own store client and an empty cache
        state = dict(self.__dict__)
        state["store"] = self.store.fork_safe()
        state["cache"] = LRUCache(self.cache.max_bytes)
        return state

    def open(self) -> OpenStats:
        t0 = perf_counter()
        listing = self.store.list()
        t1 = perf_counter()
        self.dataset = DataSet.discover(self.store, listing)
        t2 = perf_counter()
        self.stats = OpenStats(
            mode=self.mode,
            uri=self.uri,
            kind=self.dataset.kind,
            list_s=t1 - t0,
            index_s=t2 - t1,
            startup_s=t2 - t0,
            objects=sum(1 for o in listing if not o.is_folder),
            samples=len(self.dataset.samples),
            data_bytes=self.dataset.data_bytes,
        )
        return self.stats

    def fetch(self, key: str, start: int, end: int) -> bytes:
        unit = (key, start, end)
        data = self.cache.get(unit)
        if data is None:
            data = self.store.get_range(key, start, end)
            self.cache.put(unit, data)
        return data
