"""The order of the pipelines within each of ``Rounds``' interleaved rounds (``gluonbench.engine.measure``):
``rotate`` (the default) and ``pairs`` (the headline pair side by side). Pure arithmetic, nothing measured."""

from __future__ import annotations

import pytest

from gluonbench.engine.measure import Rounds, paired_order, round_order
from gluonbench.errors import GluonbenchError

NAMES = ("full", "no_preprocess", "no_read", "cached_batch", "loader_only")


def _distance(order: list[str], a: str, b: str) -> int:
    return abs(order.index(a) - order.index(b))


def test_rotate_is_the_default_and_puts_each_pipeline_first_in_turn():
    assert Rounds().order == "rotate"
    firsts = [round_order(list(NAMES), r)[0] for r in range(1, 6)]
    assert sorted(firsts) == sorted(NAMES)
    # under rotation the headline pair is never side by side (2 or 3 slices apart): what results/README.md found
    assert {_distance(round_order(list(NAMES), r), "full", "cached_batch") for r in range(1, 11)} == {2, 3}


def test_pairs_keeps_the_headline_pair_and_the_preprocessing_pair_side_by_side_in_every_round():
    base = paired_order(list(NAMES))
    assert base == ["no_read", "no_preprocess", "full", "cached_batch", "loader_only"]
    for r in range(1, 11):
        order = round_order(base, r, "pairs")
        assert sorted(order) == sorted(NAMES)
        assert _distance(order, "full", "cached_batch") == 1
        assert _distance(order, "full", "no_preprocess") == 1
        assert _distance(order, "no_read", "no_preprocess") == 1
        assert _distance(order, "cached_batch", "loader_only") == 1
    # forward, then reversed: no pipeline is always first or always last
    assert round_order(base, 1, "pairs")[0] == round_order(base, 2, "pairs")[-1] == "no_read"


def test_pairs_with_skipped_probes_and_a_device_batch():
    assert paired_order(["full", "cached_batch", "loader_only"]) == ["full", "cached_batch", "loader_only"]
    gpu = ["full", "no_preprocess", "no_read", "cached_batch", "device_batch", "loader_only"]
    base = paired_order(gpu)
    assert _distance(base, "full", "cached_batch") == 1 and _distance(base, "cached_batch", "device_batch") == 1
    assert paired_order(["a", "b"]) == ["a", "b"]  # not a diagnosis: left as given


def test_an_unknown_order_is_one_clear_error():
    with pytest.raises(GluonbenchError, match="rotate, pairs"):
        Rounds(order="random")
