"""``gluonbench io``: the input-mode benchmark, each cell the pipeline with its *source* stage swapped.

* :mod:`gluonbench.iobench.cell`: one cell (:class:`~gluonbench.iobench.cell.IoCell` in,
  :class:`~gluonbench.iobench.cell.IoResult` out), measured by :func:`gluonbench.engine.measure.measure`;
  and the page-cache helpers (warm, evict, residency) that the io benchmarks in ``benchmarks/`` use too.

* :mod:`gluonbench.iobench.run`: the matrix: the data sets staged (JPEG folders, RecordIO shards, an S3
  upload) and one cell per data set and input mode.

Validation, the run folder and its reports are :func:`gluonbench.api.io_benchmark`'s; the report is
:mod:`gluonbench.report.iobench`.
"""
