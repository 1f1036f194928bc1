"""``gluonbench diagnose``: which stage of a training pipeline limits its speed, all in this package.

The diagnosis swaps stages of the pipeline for ready-made stand-ins (DESIGN.md: every measurement
is a pipeline with some stages swapped) and reads the verdict from how much faster training runs
without each stage. One module per step, in the order the command runs them:

* :mod:`~gluonbench.diagnosis.probes`: the probes, one declaration each (the stages it swaps, the
  sub-stage its difference measures, the seed's verdict that sub-stage belongs to);
* :mod:`~gluonbench.diagnosis.measure`: the probes built from a pipeline and run by
  :func:`gluonbench.engine.measure.measure` in interleaved rounds (``ProbeResult``, ``ProbeSet``);
* :mod:`~gluonbench.diagnosis.verdict`: from probe timings to the verdict, speed-ups, shares and
  their intervals (``Thresholds``: every threshold, documented and configurable);
* :mod:`~gluonbench.diagnosis.recommend`: evidence and recommendations as records, rendered in one place;
* :mod:`~gluonbench.diagnosis.run`: :func:`~gluonbench.diagnosis.run.diagnose` (any Gluon pipeline),
  ``diagnose_workload`` (a registered one), ``reassess`` (a stored diagnosis under the current rule)
  and the ``Diagnosis`` record;
* :mod:`~gluonbench.diagnosis.report`: the diagnosis as text and its run folder's report.

Layers: this package sits above ``engine``, ``pipeline``, ``workloads``, ``report`` and ``analysis``
(what it measures with and renders through) and below ``config``, the commands that use it
(``tune``, ``check``, ``doctor``, ``distributed``) and ``api``.
"""
