"""The user's own training script as a pipeline: ``gluonbench diagnose -- python train.py ARGS``.

The script runs unmodified in its own interpreter (:mod:`gluonbench.script.boot` installs the hooks before
its first line). Two seams are hooked, as DESIGN.md's "The user's script is a pipeline too" says:

* ``gluon.data.DataLoader``: its dataset is wrapped at construction (:class:`~gluonbench.script.hooks.Switch`,
  so the loader's own workers can serve cached samples) and its iterator is wrapped (what it hands out);
* ``gluon.Trainer.step`` / ``update`` / ``allreduce_grads``: the step boundary.

The probes are stage swaps applied at those seams, in interleaved rounds inside the one process; the
parent (:mod:`gluonbench.script.run`) sends the schedule over a socket and reads the block timings back,
then reads them with the diagnosis's own verdict rule.
"""
