"""A net factory that initialises its own parameters (pretrained weights, a frozen layer) keeps them in every
command's build path, and gluonbench initialises only what the factory left uninitialised, quietly (no MXNet
"Parameter ... is already initialized, ignoring" warning)."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

from gluonbench._mx import gluon, mx
from gluonbench.workloads.spec import PipelineSpec

PRETRAINED, FROZEN = 0.5, 0.25


def pretrained_net() -> Any:
    """A factory's net: a 'pretrained' layer (set_data with a constant), a frozen one (grad_req='null') and a
    last layer the factory leaves to gluonbench."""
    net = gluon.nn.Sequential()
    net.add(gluon.nn.Dense(6, in_units=4, prefix="pre_"))
    net.add(gluon.nn.Dense(5, in_units=6, prefix="frozen_"))
    net.add(gluon.nn.Dense(2, in_units=5, prefix="head_"))
    pre, frozen = net[0], net[1]
    pre.initialize(mx.init.Zero())
    frozen.initialize(mx.init.Zero())
    for p in pre.collect_params().values():
        p.set_data(mx.nd.full(p.shape, PRETRAINED))
    for p in frozen.collect_params().values():
        p.set_data(mx.nd.full(p.shape, FROZEN))
    frozen.collect_params().setattr("grad_req", "null")
    return net


def spec_of(net: Any) -> PipelineSpec:
    data = [(np.full((4,), i % 3, dtype=np.float32), np.float32(i % 2)) for i in range(64)]
    return PipelineSpec(dataset=gluon.data.SimpleDataset(data), net=net, batch_size=8, name="pretrained")


def assert_kept(net: Any, frozen_only: bool = False) -> None:
    """The factory's weights are as it set them; the head was initialised (not left empty)."""
    if not frozen_only:
        for p in net[0].collect_params().values():
            assert np.all(p.data().asnumpy() == PRETRAINED), f"{p.name} was re-initialised"
    for p in net[1].collect_params().values():
        assert np.all(p.data().asnumpy() == FROZEN), f"{p.name} (frozen) changed"
        assert p.grad_req == "null"
    assert all(p._data is not None for p in net[2].collect_params().values())


@contextmanager
def quiet(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Fails when MXNet warns that a parameter is already initialised (warnings or logging)."""
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.INFO):
        warnings.simplefilter("always")
        yield
    texts = [str(w.message) for w in caught] + [r.getMessage() for r in caplog.records]
    assert not [t for t in texts if "already initialized" in t], texts


def test_initialise_missing_keeps_set_weights(caplog: pytest.LogCaptureFixture) -> None:
    from gluonbench.pipeline.net import initialise_missing

    net = pretrained_net()
    with quiet(caplog):
        assert initialise_missing(net, mx.init.Xavier(), mx.cpu()) == 2  # the head's weight and bias
        assert initialise_missing(net, mx.init.Xavier(), mx.cpu()) == 0  # nothing left: no warning either
    assert_kept(net)


def test_sweep_and_profile_step_builder_keeps_weights(caplog: pytest.LogCaptureFixture) -> None:
    """sweep (and profile, which trains through the sweep's run) builds its step with ScaleOut.make_step."""
    from gluonbench.pipeline.scale import ScaleOut
    from gluonbench.workloads.mnist import seed_init

    net = pretrained_net()
    with quiet(caplog):
        ScaleOut(contexts=[mx.cpu()]).make_step(net, seed_init(), gluon.loss.SoftmaxCrossEntropyLoss, 0.1)
    assert_kept(net)


def test_a_short_sweep_run_keeps_the_frozen_layer(caplog: pytest.LogCaptureFixture) -> None:
    """The whole run (sweep's and profile's train_and_eval): training moves the trainable layers only."""
    from gluonbench.sweeprun.run import RunSpec, train_and_eval

    net = pretrained_net()
    with quiet(caplog):
        result = train_and_eval(
            RunSpec(workload="pipeline", workers=0, batch_size=8, epochs=1, max_batches=4),
            workload=spec_of(net),
        )
    assert result.train_s > 0
    assert_kept(net, frozen_only=True)


def test_diagnose_and_tune_build_path_keeps_weights(caplog: pytest.LogCaptureFixture) -> None:
    """diagnose and tune open the workload (its net initialised) and prepare it on the context, then restore it."""
    from gluonbench.pipeline.net import prepare_net, restore_net
    from gluonbench.workloads.base import opened_workload

    net = pretrained_net()
    with quiet(caplog), opened_workload("pipeline", mx.cpu(), workload=spec_of(net)) as (_, opened):
        assert opened is net
        saved = prepare_net(opened, mx.cpu())
        assert_kept(opened)
        restore_net(opened, saved)
    assert_kept(net)


def test_a_short_diagnose_keeps_weights(caplog: pytest.LogCaptureFixture) -> None:
    import gluonbench

    net = pretrained_net()
    spec = spec_of(net)
    with quiet(caplog):
        gluonbench.diagnose(spec.dataset, net=net, batch_size=8, num_workers=0, budget_s=2.0, ctx=mx.cpu())
    assert_kept(net)  # the probes trained it; what they trained is put back


def test_check_target_keeps_weights_even_with_a_spec_initializer(caplog: pytest.LogCaptureFixture) -> None:
    from dataclasses import replace

    from gluonbench.check.target import resolve_pipeline

    net = pretrained_net()
    with quiet(caplog):
        target = resolve_pipeline(replace(spec_of(net), init=mx.init.Uniform(3.0)), batch_size=8)
    try:
        assert_kept(net)
    finally:
        target.close()
