"""The ``source`` and ``imagefolder`` workloads open their data through one function and refuse the same things
in the same words."""

from __future__ import annotations

import pytest

from gluonbench.errors import DataError, GluonbenchError
from gluonbench.workloads import get_workload
from gluonbench.workloads.source import SourceDataset, open_input


def test_one_open_one_pipe_check_one_raw_dataset(jpeg_dir):
    messages = []
    for name in ("source", "imagefolder"):
        with pytest.raises(DataError) as err:
            get_workload(name, uri=str(jpeg_dir), mode="pipe", timeout=20.0)
        messages.append(str(err.value))
    assert messages[0] == messages[1] and "gluonbench pack" in messages[0], messages
    with pytest.raises(GluonbenchError, match="unknown mode 'ftp'"):
        open_input("ftp", str(jpeg_dir))
    for name in ("source", "imagefolder"):
        w = get_workload(name, uri=str(jpeg_dir), mode="fastfile")
        try:
            kind = type(w.dataset)
            assert (kind.__module__, kind.__qualname__) == (
                SourceDataset.__module__,
                "_dataset_class.<locals>._SourceDataset",
            )
            data, _ = w.dataset[0]
            assert isinstance(data, bytes) and data[:2] == b"\xff\xd8", "the read stage hands on the raw JPEG"
        finally:
            w.close()
