"""``gluonbench io``: the input-mode benchmark, each cell the pipeline with its *source* stage swapped.

* :mod:`gluonbench.iobench.cell`: one cell (:class:`~gluonbench.iobench.cell.IoCell` in,
  :class:`~gluonbench.iobench.cell.IoResult` out), measured by :func:`gluonbench.engine.measure.measure`;
  and the page-cache helpers (warm, evict, residency) that the io benchmarks in ``benchmarks/`` use too.

The matrix over data sets and modes and its run folder are :func:`gluonbench.api.io_benchmark`; the
report is :mod:`gluonbench.report.iobench`.
"""
