"""The data-parallel step and the per-run scale-out plan: the pipeline replicated per device, with the
step's kvstore stage (the launcher that runs it per process and host is :mod:`gluonbench.distributed`).

:class:`DataParallelStep` is a ``Step`` for the one timer (``engine.loop.run_steps``): it splits
the batch over the contexts (``gluon.utils.split_and_load``) from where the loader put it (shared or
pinned memory, no host copy first), runs forward and backward per slice, then reduces the gradients
through the kvstore and updates:

* ``copy``    ``split_and_load`` of the host batch onto the contexts, waited for;
* the rest runs as users run it (issue #18, G3): ``trainer.step()`` right after backward, nothing waited
  for, so Gluon's overlap of backward with the gradient reduction is kept. The kvstore's cost is a
  probe (:meth:`DataParallelStep.comm_probe`): after training, the same step with the kvstore swapped
  out, in paired rounds; the median difference per step is the communication, with its 95 % interval.
* a ``dist_sync`` job keeps a waited split (backward waited for, then ``allreduce_grads()`` waited for:
  communication only); with ``dist_async``, where MXNet updates on the servers, ``trainer.step()``
  waited for. Every worker of a job would have to run the probe in step; that is not done.

Before its first step the data-parallel step settles the starting parameters (``_initialise``):
the first slice's forward pass initialises the net's deferred shapes, then, with a synchronous
kvstore, the Trainer initialises the kvstore (rank 0's values pushed, every worker pulls them) and
the pulls are waited for, so no worker pushes a gradient before its initial pulls were answered.
ps-lite's server handles queued requests newest first, so without that wait a pull sent just before
the first gradient pushes could be answered after the first gradient round: the worker then started
from the summed gradient, not from rank 0's weights (``param_init_s`` records the time it takes).

The local update is left asynchronous; ``run_steps``' barrier finishes it. The copy time is moved
from the loop's ``compute`` into its ``copy`` by :meth:`ScaleOut.finish`, so wait + copy + compute
is still the step's wall time, and ``kvstore`` is a part of ``compute``.

:class:`ScaleOut` is what a run needs to train data-parallel: the contexts, the kvstore (a
``dist_*`` store is created here, which connects this worker to the scheduler), this worker's rank
and the shard of the training set it reads. Without ``devices``/``gpus``/``kvstore`` it is the
plain single-device run, unchanged.
"""

from __future__ import annotations

import hashlib
import logging
import os
import socket
import time
from dataclasses import dataclass, field
from time import perf_counter
from typing import Any

from gluonbench.analysis.stats import PAIRED_MIN_ROUNDS, median, median_ci
from gluonbench.data.shard import strided_shard
from gluonbench.errors import GluonbenchError
from gluonbench.names import arg, example, param, param_example

log = logging.getLogger(__name__)

DIST_KVSTORES = ("dist_sync", "dist_device_sync", "dist_async")
LOCAL_KVSTORES = ("local", "device", "nccl")
KVSTORES = LOCAL_KVSTORES + DIST_KVSTORES
LAUNCHERS = ("local", "ssh")


def is_dist(kvstore: str | None) -> bool:
    """True for MXNet's distributed kvstore types (``dist_*``)."""
    return bool(kvstore) and str(kvstore).startswith("dist")


LAUNCH_ENV = "GLUONBENCH_LAUNCH_TIME"
"""Wall-clock time (``time.time()``) at which the launcher started the job; start-up is measured from it."""


class DataParallelStep:
    """Forward/backward per context slice, kvstore reduce (timed), update; one call per batch."""

    def __init__(
        self, net: Any, loss: Any, trainer: Any, contexts: list[Any], num_workers: int = 1, asynchronous: bool = False
    ) -> None:
        self.net = net
        self.loss = loss
        self.trainer = trainer
        self.contexts = contexts
        self.num_workers = num_workers
        self.asynchronous = asynchronous
        self.copy: list[float] = []
        self.kvstore: list[float] = []
        self.first_step_wall: float | None = None
        self.init_s: float | None = None
        self._nominal_batch: int | None = None
        self.last_split: tuple[list[Any], list[Any]] = ([], [])

    def _initialise(self, x: Any) -> float:
        """Settle the starting parameters before the first gradient is reduced; returns the seconds it took.

        The net's shapes are deferred (hybridized, ``in_units``/``in_channels`` unknown), so a forward pass
        of the first slice initialises it, in training mode like the steps (nothing recorded; a
        predict-mode pass may let MKL-DNN keep conv weights in its own layout). Then, with a
        synchronous kvstore, an update before any backward (every gradient stale, ``ignore_stale_grad``:
        nothing changes) makes the Trainer initialise its kvstore: rank 0's parameters are pushed and
        every worker pulls them, and the pulls are waited for. Left to ``Trainer.allreduce_grads()``, the
        last pull and the first gradient pushes leave in one burst, and ps-lite's server serves queued
        requests newest first: a pull answered after the first gradient round returns the summed
        gradient. A round needs every worker's push, and no worker pushes before its pulls are
        answered, so now no pull can come after one. ``dist_async`` (updates on the servers) only gets
        the forward pass.
        """
        from gluonbench._mx import autograd, nd

        t0 = perf_counter()
        with autograd.train_mode():
            self.net(x)
        nd.waitall()
        if not self.asynchronous:
            self.trainer.update(1, ignore_stale_grad=True)
            nd.waitall()
        return perf_counter() - t0

    splits_batch = True
    """``run_steps`` leaves the batch where the loader put it (shared or pinned memory): the step splits it
    onto the devices from there, with no extra host copy (G4)."""

    def __call__(self, data: Any, label: Any) -> Any:
        from gluonbench._mx import gluon, nd

        t0 = perf_counter()
        datas = gluon.utils.split_and_load(data, self.contexts, even_split=False)
        labels = gluon.utils.split_and_load(label, self.contexts, even_split=False)
        for x in datas + labels:
            x.wait_to_read()
        t1 = perf_counter()
        self.last_split = (datas, labels)
        if self.init_s is None:
            self.init_s = self._initialise(datas[0])
        losses = self._forward_backward(datas, labels)
        if self.asynchronous:
            # updates happen on the servers; MXNet refuses a changing batch size there, so keep the first
            if self._nominal_batch is None:
                self._nominal_batch = int(data.shape[0])
            nd.waitall()  # backward done: what follows is communication
            t2 = perf_counter()
            self.trainer.step(self._nominal_batch)
            nd.waitall()
            self.kvstore.append(perf_counter() - t2)
        elif is_dist(self.kvstore_type):
            # a dist_sync job: backward, then the allreduce, each waited for (its communication is read off
            # here; the paired probe below is for the kvstores of one process)
            nd.waitall()
            t2 = perf_counter()
            self.trainer.allreduce_grads()
            nd.waitall()
            self.kvstore.append(perf_counter() - t2)
            # dist_sync sums the gradients of every worker: normalise by the global batch, so N workers
            # at batch b train as one process at batch N*b
            self.trainer.update(int(data.shape[0]) * self.num_workers)
        else:
            # G3: the step as users run it: the gradient reduction overlaps backward (Gluon's Trainer pushes
            # each gradient as it is ready); the communication cost is measured by comm_probe()
            self.trainer.step(int(data.shape[0]))
        self.copy.append(t1 - t0)
        if self.first_step_wall is None:
            self.first_step_wall = time.time()
        return losses

    kvstore_type: str | None = None

    def _forward_backward(self, datas: list[Any], labels: list[Any]) -> list[Any]:
        from gluonbench._mx import autograd

        with autograd.record():
            losses = [self.loss(self.net(x), y) for x, y in zip(datas, labels, strict=True)]
        autograd.backward(losses)
        return losses

    def comm_probe(self, rounds: int = PAIRED_MIN_ROUNDS, steps: int = 4) -> dict[str, Any]:
        """The kvstore's cost as a probe: the trained step against the same step with the kvstore swapped out.

        Paired rounds on the last batch already split onto the devices (so neither side reads or copies):
        in each round ``steps`` steps with the run's Trainer and ``steps`` with a Trainer on no kvstore
        (each device updates alone), in alternating order, each side waited for at its end. The median
        per-step difference is the communication, with the 95 % interval of that median over rounds.
        The net's parameters are put back afterwards (the probe's updates are not training).
        """
        from gluonbench._mx import gluon, nd

        datas, labels = self.last_split
        batch = sum(int(x.shape[0]) for x in datas)
        params = self.net.collect_params()
        saved = {name: p.data(self.contexts[0]).copy() for name, p in params.items()}
        bare = gluon.Trainer(params, "sgd", {"learning_rate": self.trainer.learning_rate}, kvstore=None)

        def side(trainer: Any) -> float:
            nd.waitall()
            t0 = perf_counter()
            for _ in range(steps):
                self._forward_backward(datas, labels)
                trainer.step(batch)
            nd.waitall()
            return (perf_counter() - t0) / steps

        with_kv: list[float] = []
        without: list[float] = []
        try:
            side(bare)  # warm-up of the bare trainer's update ops
            for r in range(rounds):
                order = (self.trainer, bare) if r % 2 == 0 else (bare, self.trainer)
                got = {id(t): side(t) for t in order}
                with_kv.append(got[id(self.trainer)])
                without.append(got[id(bare)])
        finally:
            nd.waitall()
            for name, p in params.items():
                p.set_data(saved[name])
        diffs = [a - b for a, b in zip(with_kv, without, strict=True)]
        comm = max(median(diffs), 0.0)
        low, high = median_ci(diffs)
        step_s = median(with_kv)
        return {
            "kvstore_step_ms": 1000 * comm,
            "kvstore_step_ms_ci": [1000 * low, 1000 * high],
            "comm_share": comm / step_s if step_s > 0 else 0.0,
            "comm_probe": {
                "rounds": rounds,
                "steps_per_side": steps,
                "step_ms_with_kvstore": 1000 * step_s,
                "step_ms_without_kvstore": 1000 * median(without),
                "what": "the trained step minus the same step with the kvstore swapped out (paired rounds)",
            },
        }


@dataclass
class ScaleOut:
    """The data-parallel plan of one run (contexts, kvstore, rank, shard); see the module docstring."""

    contexts: list[Any]
    kvstore: str | None = None
    kv: Any = None
    rank: int = 0
    num_workers: int = 1
    step: DataParallelStep | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def plain(self) -> bool:
        """The seed's single-device run: no kvstore asked for, one context."""
        return self.kvstore is None and len(self.contexts) == 1

    @property
    def loop_ctx(self) -> Any:
        """The context ``run_steps`` copies batches to: the device itself, or the host when the step splits."""
        if len(self.contexts) == 1:
            return self.contexts[0]
        from gluonbench._mx import mx

        return mx.cpu()

    @property
    def eval_ctx(self) -> Any:
        return self.contexts[0]

    @classmethod
    def for_spec(cls, spec: Any, ctx: Any) -> ScaleOut:
        """The plan for ``spec`` (a ``RunSpec``); ``ctx`` is the run's parsed ``--ctx``.

        A ``dist_*`` kvstore is created here: this call blocks until the scheduler has every worker.
        """
        devices = int(getattr(spec, "devices", 1) or 1)
        gpus = getattr(spec, "gpus", None)
        kvstore = getattr(spec, "kvstore", None)
        contexts = device_contexts(ctx, devices, gpus)
        asked = kvstore
        if kvstore in LOCAL_KVSTORES and len(contexts) == 1:
            # G6: Gluon's Trainer creates no kvstore for one device and a local kvstore type; record what runs
            log.warning(
                "%s %s on one device (%s): MXNet creates no kvstore; the step runs without one",
                arg("kvstore"),
                kvstore,
                contexts[0],
            )
            kvstore = None
        plan = cls(contexts=contexts, kvstore=kvstore)
        if is_dist(kvstore):
            from gluonbench._mx import mx

            try:
                plan.kv = mx.kv.create(kvstore)
            except Exception as exc:
                raise GluonbenchError(
                    f"{param('kvstore')} {kvstore}: cannot create MXNet's distributed kvstore ({exc}); start workers "
                    f"through gluonbench's launcher ({param('launcher')} local|ssh), which sets DMLC_ROLE and the scheduler"
                ) from exc
            plan.rank, plan.num_workers = int(plan.kv.rank), int(plan.kv.num_workers)
        plan.info = {
            "devices": [str(c) for c in contexts],
            "kvstore": kvstore,
            "rank": plan.rank,
            "num_workers": plan.num_workers,
            "host": os.environ.get("DMLC_NODE_HOST") or socket.gethostname(),
            "hostname": socket.gethostname(),
            "pid": os.getpid(),
        }
        if os.environ.get("CUDA_VISIBLE_DEVICES") is not None:
            plan.info["cuda_visible_devices"] = os.environ["CUDA_VISIBLE_DEVICES"]
        if asked != kvstore:
            plan.info["kvstore_asked"] = asked
            plan.info["kvstore_note"] = no_kvstore_note(asked, contexts[0])
        return plan

    def diagnosis_scope(self, ctx: Any) -> str:
        """What ``--diagnose`` measured on a data-parallel run (G10): one device's pipeline, not the trained one."""
        what = f"{len(self.contexts)} devices" if len(self.contexts) > 1 else "one device"
        return (
            f"the diagnosis ran a single-device pipeline on {ctx} at the per-device batch size, without the "
            f"kvstore ({self.kvstore or 'device'}); the trained pipeline ({what}, split and reduced) was not "
            "diagnosed: its kvstore share is in the data-parallel figures"
        )

    def notes(self) -> dict[str, Any]:
        """What a plain run records of its scale-out request: the kvstore asked for that did not run (G6)."""
        if "kvstore_note" not in self.info:
            return {}
        return {k: self.info[k] for k in ("devices", "kvstore", "kvstore_asked", "kvstore_note")}

    def diagnoses(self, spec: Any) -> bool:
        """Whether this process runs the run's diagnosis: always in one process; only the chosen rank in a job."""
        return not is_dist(self.kvstore) or self.rank == int(getattr(spec, "diagnose_rank", 0) or 0)

    def shard(self, dataset: Any) -> Any:
        """This worker's rank-strided shard of ``dataset`` (the data set itself for one worker)."""
        if dataset is None or self.num_workers == 1:
            return dataset
        shard = strided_shard(dataset, self.rank, self.num_workers)
        self.info["shard_samples"] = len(shard)
        return shard

    def workload_options(self, options: dict[str, Any]) -> dict[str, Any]:
        """What this worker adds to the workload's ``options``: a pipe channel is a stream with no index to
        shard afterwards, so its producer streams only this worker's objects (ShardedByS3Key, the same
        rank-strided split as :meth:`shard`). An outside producer (``channel_dir``) shards by itself."""
        if self.num_workers > 1 and options.get("mode") == "pipe" and not options.get("channel_dir"):
            return {"shard_index": self.rank, "shard_count": self.num_workers}
        return {}

    def check_stream(self, source: dict[str, Any]) -> None:
        """Record a streamed workload's shard (``source``: its ``PipelineSpec.info``), as :meth:`shard` does for a
        data set. A stream without a shard is an outside producer's (``channel_dir``), which shards by itself."""
        if self.num_workers == 1 or source.get("shard_count") is None:
            return
        if (source.get("shard_index"), source.get("shard_count")) != (self.rank, self.num_workers):
            raise GluonbenchError(
                f"worker {self.rank} of {self.num_workers} streams shard {source.get('shard_index')} of "
                f"{source.get('shard_count')}; build the workload with ScaleOut.workload_options()"
            )
        self.info["shard_objects"] = source.get("objects")
        self.info["shard_samples"] = source.get("samples") or None  # None: no manifest to count them

    def loader_batch(self, batch_size: int) -> int:
        """Loader batch: the batch size is per device, as users set it."""
        return batch_size * len(self.contexts)

    def make_step(self, net: Any, init: Any, make_loss: Any, learning_rate: float) -> Any:
        """Initialise the parameters of ``net`` not yet initialised and put all on the contexts, build the Trainer
        on the kvstore; return the step callable."""
        from gluonbench._mx import gluon
        from gluonbench.pipeline.net import initialise_missing
        from gluonbench.pipeline.stages import ModelStep

        initialise_missing(net, init, self.contexts)  # a factory's own (pretrained, frozen) weights are kept
        optimizer = ("sgd", {"learning_rate": learning_rate})
        if self.plain:
            return ModelStep(net, make_loss(), gluon.Trainer(net.collect_params(), *optimizer))
        asynchronous = bool(self.kvstore) and "async" in str(self.kvstore)
        trainer = gluon.Trainer(
            net.collect_params(),
            *optimizer,
            kvstore=self.kv if self.kv is not None else (self.kvstore or "device"),
            update_on_kvstore=True if asynchronous else False,
        )
        self.step = DataParallelStep(net, make_loss(), trainer, self.contexts, self.num_workers, asynchronous)
        self.step.kvstore_type = self.kvstore
        return self.step

    def finish(self, times: Any, net: Any, skip: int = 1) -> dict[str, Any]:
        """Fold the step's own copy time into ``times`` and return the run's scale-out findings.

        Findings: the kvstore time and its share of the steady step time (first ``skip`` steps left
        out, as ``StepTimes.split``), start-up (launch to first step, when launched by gluonbench),
        and the parameter checksum (SHA-256 of every parameter's bytes, in name order).
        """
        out: dict[str, Any] = dict(self.info)
        step = self.step
        if step is not None and len(step.copy) == len(times):
            for i, c in enumerate(step.copy):
                times.copy[i] += c
                times.compute[i] -= c
            skip = min(skip, max(len(times) - 1, 0))
            total = sum(times.steps(skip))
            steady = max(len(times) - skip, 1)
            if step.kvstore:  # dist_*: the waited split of each step
                kv = sum(step.kvstore[skip:])
                out["kvstore_s"] = kv
                out["comm_share"] = kv / total if total > 0 else 0.0
                out["kvstore_step_ms"] = 1000 * kv / steady
                out["comm_measure"] = "waited split (backward, then the allreduce, each waited for)"
            elif step.last_split[0]:
                # G3: the step ran as users run it; its kvstore cost comes from the paired probe
                probe = step.comm_probe()
                out.update(probe)
                out["kvstore_s"] = probe["kvstore_step_ms"] / 1000 * steady
                out["comm_measure"] = "paired probe (the step with the kvstore swapped out)"
            if step.init_s is not None:
                out["param_init_s"] = step.init_s
            launched = os.environ.get(LAUNCH_ENV)
            if launched and step.first_step_wall is not None:
                out["startup_s"] = step.first_step_wall - float(launched)
        out.update(param_checksum(net, self.contexts))
        return out

    def close(self) -> None:
        """Leave the kvstore (a dist worker waits for the others here, then the servers can stop)."""
        self.kv = None


def no_kvstore_note(kvstore: str, device: Any) -> str:
    """The sentence a record and report carry when a local kvstore was asked for on one device (G6)."""
    return (
        f"no kvstore ran: {arg('kvstore')} {kvstore} on one device ({device}) creates none in MXNet (Gluon's Trainer "
        f"reduces nothing for a single device); use {example('devices=N', '--devices N')} or "
        f"{example('gpus=(0, 1, ...)', '--gpus 0,1,...')} to time a kvstore"
    )


def local_rank_gpus(
    spec: Any, workers: int, visible: str | None = None, have: int | None = None
) -> list[list[str]] | None:
    """The physical GPUs of each local worker of a job (G5): a slice of ``--gpus`` (or of ``--devices`` GPUs
    from ``--ctx gpu:N``) per rank, as ``CUDA_VISIBLE_DEVICES`` entries; None for a CPU job.

    ``visible`` is this process's ``CUDA_VISIBLE_DEVICES`` (indices or UUIDs): MXNet's ``gpu(i)`` is its
    ``i``-th entry, so a rank gets those entries. ``have``: the GPUs MXNet sees here, to refuse a job that
    needs more (None: not checked). Raises :class:`GluonbenchError` naming the fix when there are too few.
    """
    gpus = getattr(spec, "gpus", None)
    ctx = str(getattr(spec, "ctx", "cpu")).strip().lower()
    if not gpus and not ctx.startswith("gpu"):
        return None
    if gpus:
        pool, per = list(gpus), len(gpus) // workers
        if per == 0 or len(pool) % workers:
            raise GluonbenchError(
                f"{param('gpus')} {','.join(map(str, gpus))} cannot be split evenly over {workers} local workers (each "
                f"needs its own GPUs); give a multiple of {workers} GPUs or use fewer {param('hosts')}"
            )
    else:
        first = int(ctx.split(":")[1]) if ":" in ctx else 0
        per = int(getattr(spec, "devices", 1) or 1)
        pool = [first + i for i in range(per * workers)]
    if have is not None and max(pool) >= have:
        raise GluonbenchError(
            f"{workers} local workers with {per} GPU(s) each need GPUs {pool[0]}..{pool[-1]}; MXNet sees {have} "
            f"here: use fewer {param('hosts')} or {param('devices')}, or "
            + param_example("launcher='ssh'", "--launcher ssh")
            + " across machines"
        )
    entries = [e.strip() for e in visible.split(",") if e.strip()] if visible else None
    if entries is not None and max(pool) >= len(entries):
        raise GluonbenchError(
            f"CUDA_VISIBLE_DEVICES={visible} names {len(entries)} GPU(s), fewer than the {len(pool)} this job needs"
        )
    name = (lambda g: entries[g]) if entries is not None else str
    return [[name(g) for g in pool[r * per : (r + 1) * per]] for r in range(workers)]


def device_contexts(ctx: Any, devices: int = 1, gpus: Any = None) -> list[Any]:
    """The contexts of a run: ``gpus`` by index, else ``devices`` contexts of ``ctx``'s kind."""
    from gluonbench._mx import mx, num_gpus
    from gluonbench.gpucode import gpu_problem, missing_gpu_advice

    if gpus:
        have = num_gpus()
        missing = [g for g in gpus if g >= have]
        if missing:
            raise GluonbenchError(
                f"{param('gpus')} {','.join(map(str, gpus))}: MXNet sees {have} GPU(s); "
                + (missing_gpu_advice(int(gpus[0])) if have == 0 else f"use 0..{have - 1}")
            )
        for g in gpus:
            problem = gpu_problem(int(g))
            if problem:
                raise GluonbenchError(f"{param('gpus')} {','.join(map(str, gpus))}: {problem}")
        return [mx.gpu(int(g)) for g in gpus]
    if devices == 1:
        return [ctx]
    if ctx.device_type == "gpu":
        have = num_gpus()
        if ctx.device_id + devices > have:
            raise GluonbenchError(f"{param('devices')} {devices} from {ctx}: MXNet sees only {have} GPU(s)")
        for i in range(devices):
            problem = gpu_problem(ctx.device_id + i)
            if problem:
                raise GluonbenchError(f"{param('devices')} {devices} from {ctx}: {problem}")
        return [mx.gpu(ctx.device_id + i) for i in range(devices)]
    return [mx.cpu(ctx.device_id + i) for i in range(devices)]


def param_checksum(net: Any, contexts: list[Any]) -> dict[str, Any]:
    """SHA-256 over every parameter (name order) on the first context, and whether all contexts agree.

    ``param_digests`` has one short SHA-256 per parameter (first context), so two workers whose
    checksums differ can be told apart parameter by parameter (``params_differ`` in a job's record).
    """
    digests = []
    per_param: dict[str, str] = {}
    total = 0.0
    for ctx in contexts:
        h = hashlib.sha256()
        for name, p in sorted(net.collect_params().items()):
            arr = p.data(ctx).asnumpy()
            h.update(arr.tobytes())
            if ctx is contexts[0]:
                total += float(arr.astype("float64").sum())
                per_param[name] = hashlib.sha256(arr.tobytes()).hexdigest()[:16]
        digests.append(h.hexdigest())
    return {
        "param_sha256": digests[0],
        "param_sum": total,
        "param_digests": per_param,
        "params_equal_on_devices": len(set(digests)) == 1,
    }


def check_scale(s: Any) -> None:
    """Raise :class:`GluonbenchError` naming the fix for a bad scale-out setting of ``s`` (a SweepSettings)."""
    if s.kvstore is not None and s.kvstore not in KVSTORES:
        raise GluonbenchError(f"{param('kvstore')} {s.kvstore!r} is unknown; choose one of {', '.join(KVSTORES)}")
    if s.devices < 1:
        raise GluonbenchError(f"{param('devices')} must be at least 1 (got {s.devices})")
    on_cpu = s.ctx.strip().lower().startswith("cpu")
    if s.gpus is not None:
        if not s.gpus:
            raise GluonbenchError(
                f"{param('gpus')} names no GPU; e.g. {param_example('gpus=(0, 1, 2, 3)', '--gpus 0,1,2,3')}"
            )
        if on_cpu:
            raise GluonbenchError(
                f"{param('gpus')} goes with a GPU context; drop "
                + param_example("ctx='cpu'", "--ctx cpu")
                + " (or use "
                + param_example("ctx='cpu', devices=N", "--ctx cpu --devices N")
                + ")"
            )
        if s.devices not in (1, len(s.gpus)):
            raise GluonbenchError(
                f"{param('devices')} {s.devices} disagrees with {param('gpus')} {','.join(map(str, s.gpus))}; give one"
            )
    if s.kvstore == "nccl" and on_cpu:
        raise GluonbenchError(
            f"{param('kvstore')} nccl needs GPUs ({param_example('gpus=(0, 1, ...)', '--gpus 0,1,...')}); "
            "on CPU use local or device"
        )
    dist = is_dist(s.kvstore)
    if any(h < 1 for h in s.hosts):
        raise GluonbenchError(f"{param('hosts')} must be at least 1 (got {','.join(map(str, s.hosts))})")
    if s.servers < 1:
        raise GluonbenchError(f"{param('servers')} must be at least 1 (got {s.servers})")
    if not dist and (s.hosts != (1,) or s.servers != 1 or s.launcher != "local" or s.hostfile):
        raise GluonbenchError(
            f"{param('hosts')}, {param('servers')}, {param('launcher')} and {param('hostfile')} need a distributed kvstore: "
            f"add {param('kvstore')} {DIST_KVSTORES[0]} (or {', '.join(DIST_KVSTORES[1:])})"
        )
    if s.launcher not in LAUNCHERS:
        raise GluonbenchError(f"{param('launcher')} {s.launcher!r} is unknown; choose local or ssh")
    if s.launcher == "ssh":
        if not s.hostfile:
            raise GluonbenchError(f"{param('launcher')} ssh needs {param('hostfile')} FILE (one host[:port] per line)")
    elif s.hostfile:
        raise GluonbenchError(
            f"{param('hostfile')} goes with {param('launcher')} ssh; {param('launcher')} local runs every process here"
        )
    if dist and s.launcher == "local" and max(s.hosts) > 1 and (s.options or {}).get("channel_dir"):
        raise GluonbenchError(
            f"channel_dir with {param('launcher')} local: the workers on this machine would share one channel's FIFOs; "
            "leave channel_dir out (each worker then streams its own shard through its own FIFOs)"
        )
    if dist and s.launcher == "local" and s.gpus:
        for h in s.hosts:  # G5: every local worker gets its own GPUs
            local_rank_gpus(s, h)
    if s.port is not None and not 1024 <= s.port <= 65535:
        raise GluonbenchError(
            f"{param('port')} {s.port} is out of range; use 1024..65535 (or leave it out: a free one)"
        )
    if s.diagnose_rank is None or s.diagnose_rank < 0:
        raise GluonbenchError(f"{param('diagnose_rank')} must be 0 or more (got {s.diagnose_rank})")
    if s.diagnose_rank and not (dist and s.diagnose):
        raise GluonbenchError(f"{param('diagnose_rank')} goes with {param('diagnose')} and a dist_* kvstore")
    if dist and s.diagnose and s.diagnose_rank >= min(s.hosts):
        raise GluonbenchError(
            f"{param('diagnose_rank')} {s.diagnose_rank}: the smallest job has {min(s.hosts)} worker(s) "
            f"(ranks 0..{min(s.hosts) - 1}); choose one of those"
        )
