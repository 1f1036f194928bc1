"""``benchmarks/round_order.py``: reads the rounds' order back from stored diagnoses and groups the per-round
deviations of each probe against ``full`` by how far apart the two ran (pure arithmetic, nothing measured)."""

from __future__ import annotations

import json
import math
import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import round_order

NAMES = ("full", "no_preprocess", "no_read", "cached_batch", "loader_only")


def _diagnosis(rounds: int, noise_by_distance: dict[int, float]) -> dict:
    """Five probes whose round-r ratio to full strays by noise_by_distance[distance], alternating in sign."""
    n = len(NAMES)
    probes = {name: {"same_as": None, "per_round": []} for name in NAMES}
    probes["device_batch"] = {"same_as": "cached_batch", "per_round": []}  # not measured: not in the order
    for number in range(1, rounds + 1):
        shift = number % n
        probes["full"]["per_round"].append(1.0)
        for j, name in enumerate(NAMES[1:], start=1):
            distance = abs((j - shift) % n - (0 - shift) % n)
            sign = 1 if number % 2 else -1
            probes[name]["per_round"].append(0.5 * math.exp(sign * noise_by_distance[distance]))
    return {"probes": probes, "rounds": rounds}


def test_deviations_grow_with_distance_when_the_noise_does(tmp_path, capsys):
    d = _diagnosis(40, {1: 0.01, 2: 0.02, 3: 0.03, 4: 0.04})
    got = round_order.deviations(d)
    assert set(got) == {(5, 1), (5, 2), (5, 3), (5, 4)}
    medians = [sorted(got[(5, k)])[len(got[(5, k)]) // 2] for k in (1, 2, 3, 4)]
    assert medians == sorted(medians) and medians[0] < medians[-1], medians
    # the same rounds with one noise level for every distance: no trend to report
    flat = round_order.deviations(_diagnosis(40, dict.fromkeys((1, 2, 3, 4), 0.02)))
    assert all(abs(v - 1.0) < 1e-9 for values in flat.values() for v in values)
    path = tmp_path / "acc.json"
    path.write_text(json.dumps({"records": [{"case": "c", "diagnosis": d}]}))
    assert round_order.main([str(path), str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("1 diagnoses;"), "a file named twice counts once"


def test_too_few_rounds_or_a_bad_file_is_exit_2(tmp_path, capsys):
    path = tmp_path / "short.json"
    path.write_text(json.dumps(_diagnosis(round_order.MIN_ROUNDS - 1, dict.fromkeys((1, 2, 3, 4), 0.02))))
    assert round_order.main([str(path)]) == 2
    (tmp_path / "bad.json").write_text("{")
    assert round_order.main([str(tmp_path / "bad.json")]) == 2
    assert "bad.json" in capsys.readouterr().err
