"""``gluonbench sweep``'s runs: one run per loader setting, each in its own child process.

* :mod:`gluonbench.sweeprun.run`: one run (:class:`~gluonbench.sweeprun.run.RunSpec` in,
  :class:`~gluonbench.sweeprun.run.RunResult` out): the training pipeline measured by
  :func:`gluonbench.engine.measure.measure` in ``Epochs``, then its evaluation pass;
* :mod:`gluonbench.sweeprun.child`: that run in a child process (:func:`~gluonbench.sweeprun.child.run_isolated`,
  the parent's side, through :func:`gluonbench.engine.isolation.run_child`; ``main``, the child's).

The sweep over settings (resume, the run folder, its reports) is :mod:`gluonbench.sweeping` (its public entry
:func:`gluonbench.api.sweep`): it reads
:class:`gluonbench.config.SweepSettings` and passes the diagnosis in (``--diagnose``), both layers above this
package, which sits below the diagnosis and above the engine. The package is not called ``sweep``: importing
``gluonbench.sweep.*`` would bind the name ``gluonbench.sweep``, the public function, to the package.
"""
