"""gluonbench's profiler: step hooks for the training script (this module's functions), the
system sampler and the Debugger-layout writers (``session``), the rules and the HTML report.

Importing this package is cheap and never imports MXNet: a script calls
``gluonbench.profiler.wrap(loader)`` and ``with gluonbench.profiler.step(): ...``; both are
no-ops unless the script runs under ``gluonbench profile`` or ``gluonbench.profile()``.
"""

from gluonbench.profiler.hooks import enabled, epoch, phase, region, step, wrap

__all__ = ["enabled", "epoch", "phase", "region", "step", "wrap"]
