import pytest

from gluonbench.errors import GluonbenchError
from gluonbench.ranges import parse_int_list


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("0..8", [0, 1, 2, 3, 4, 5, 6, 7, 8]),
        ("0..8:2", [0, 2, 4, 6, 8]),
        ("1..8:3", [1, 4, 7]),
        ("0,2,4,8", [0, 2, 4, 8]),
        ("4", [4]),
        (" 0, 2 ,4 ", [0, 2, 4]),
        ("2..2", [2]),
        ("0..2,2,6", [0, 1, 2, 6]),
    ],
)
def test_good_specs(spec, expected):
    assert parse_int_list(spec) == expected


@pytest.mark.parametrize(
    "spec", ["", "  ", "8..0", "0..8:0", "-1", "0..-2", "a", "0...8", "0..8:", "1,,2", "0-8", "1.5", "0..8:2:1"]
)
def test_bad_specs(spec):
    with pytest.raises(GluonbenchError) as err:
        parse_int_list(spec)
    assert "--workers" in str(err.value)
