"""The CUDA architectures in a library (``gluonbench.gpucode``) and the doctor's line for a GPU it cannot run on.

The ELF files here are built byte by byte in the layout nvcc writes (checked against nvcc 13's output
on an H100: ``results/doctor/gpu_arch_probe-*.md``); the CPU build of MXNet installed here is read as is.
"""

from __future__ import annotations

import struct
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gluonbench.gpucode import FATBIN_MAGIC, KIND_PTX, KIND_SASS, CudaCode, arch_problem, cuda_code, mxnet_cuda_code


def _entry(kind: int, arch: int, payload: bytes) -> bytes:
    head = struct.pack("<HHIQ", kind, 0x0101, 64, len(payload)) + struct.pack("<IIII", 0, 0, 0, arch)
    return head + bytes(64 - len(head)) + payload


def _fatbin(entries: list[tuple[int, int]]) -> bytes:
    body = b"".join(_entry(kind, arch, bytes([arch]) * (24 + arch % 8)) for kind, arch in entries)
    blob = struct.pack("<IHHQ", FATBIN_MAGIC, 1, 16, len(body)) + body
    return blob + bytes(-len(blob) % 8)


def elf(sections: dict[str, bytes]) -> bytes:
    """A minimal ELF64 (little-endian) holding ``sections``, with a section-name table last."""
    names = b"\0" + b"".join(n.encode() + b"\0" for n in [*sections, ".shstrtab"])
    data, offsets = b"", []
    for body in [*sections.values(), names]:
        offsets.append(64 + len(data))
        data += body + bytes(-len(body) % 8)
    shoff = 64 + len(data)
    table = bytes(64)  # section 0 is empty
    name_at = 1
    for (name, body), off in zip([*sections.items(), (".shstrtab", names)], offsets, strict=True):
        table += struct.pack("<IIQQQQIIQQ", name_at, 1, 0, 0, off, len(body), 0, 0, 8, 0)
        name_at += len(name) + 1
    shnum = len(sections) + 2
    head = b"\x7fELF" + bytes([2, 1, 1]) + bytes(9)
    head += struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, shnum, shnum - 1)
    assert len(head) == 64
    return head + data + table


MXNET_WHEEL = [(KIND_SASS, a) for a in (50, 60, 70, 80, 86)]
"""the code mix measured in mxnet-cu112 / mxnet-cu117 1.9.1 (results/doctor/mxnet_gpu_archs.md)"""


def _lib(tmp_path: Path, fatbins: list[list[tuple[int, int]]], pad: bytes = b"") -> Path:
    path = tmp_path / "libx.so"
    body = pad + b"".join(_fatbin(f) for f in fatbins)
    path.write_bytes(elf({".text": b"\x90" * 40, ".nv_fatbin": body}))
    return path


def test_reads_the_architectures_of_every_fat_binary(tmp_path):
    path = _lib(tmp_path, [MXNET_WHEEL, [*MXNET_WHEEL[:2], (KIND_PTX, 80)]], pad=bytes(24))
    code = cuda_code(path)
    assert code == CudaCode(sass=(50, 60, 70, 80, 86), ptx=(80,), fatbins=2)
    assert code.describe() == "SASS for sm_50, sm_60, sm_70, sm_80, sm_86; PTX for compute_80"


@pytest.mark.parametrize(
    ("code", "runs", "fails"),
    [
        # SASS runs on the same major architecture at the same or a newer minor one, never on another major
        (CudaCode((50, 60, 70, 80, 86), (), 1), [50, 52, 61, 70, 75, 80, 86, 89], [90, 100, 37]),
        (CudaCode((86,), (), 1), [86, 89], [80, 75, 90]),
        # PTX is compiled by the driver for the same or any newer architecture
        (CudaCode((), (80,), 1), [80, 86, 90, 100], [75, 70]),
        (CudaCode((70,), (80,), 1), [70, 75, 80, 90], [60, 50]),
    ],
)
def test_which_gpus_find_code_they_run(code, runs, fails):
    assert [cc for cc in runs if not code.runs_on(cc)] == []
    assert [cc for cc in fails if code.runs_on(cc)] == []


def test_the_supported_range_in_words():
    assert CudaCode((50, 60, 70, 80, 86), (), 1).supported() == "5.0-8.9"
    assert CudaCode((35, 50, 60), (), 1).supported() == "3.5-3.9, 5.0-6.9"
    assert CudaCode((70,), (80,), 1).supported() == "7.0-7.9, 8.0 and newer through PTX"


def test_the_doctor_line_for_an_h100_and_none_for_a_v100():
    code = CudaCode((50, 60, 70, 80, 86), (), 197)
    h100 = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "cc": 90}
    v100 = {"index": 1, "name": "Tesla V100-SXM2-16GB", "cc": 70}
    line = arch_problem(code, [v100, h100, dict(h100, index=2)])
    assert line.startswith("GPU 0 (NVIDIA H100 80GB HBM3, sm_90) and 1 more cannot run MXNet's kernels")
    assert "5.0-8.9" in line and "A100 (p4d)" in line and "H100" not in line.split(":", 1)[1].split("or build")[0]
    assert line.endswith("build MXNet from source for sm_90") and "\n" not in line
    assert arch_problem(code, [v100]) is None
    assert arch_problem(CudaCode((), (80,), 1), [h100]) is None


def test_a_cpu_build_has_no_gpu_code(tmp_path):
    # the MXNet installed here is the CPU wheel: its libmxnet.so is read, and has no .nv_fatbin
    assert mxnet_cuda_code() is None
    (tmp_path / "plain.so").write_bytes(elf({".text": b"\xc3" * 16}))
    assert cuda_code(tmp_path / "plain.so") is None


def test_a_fat_binary_cut_short_keeps_what_was_read(tmp_path):
    path = _lib(tmp_path, [MXNET_WHEEL[:1], MXNET_WHEEL[1:]])
    data = bytearray(path.read_bytes())
    # the second fat binary claims more bytes than its section holds: the walk stops before it
    at = data.find(struct.pack("<I", FATBIN_MAGIC), data.find(struct.pack("<I", FATBIN_MAGIC)) + 4)
    data[at + 8 : at + 16] = struct.pack("<Q", 1 << 40)
    path.write_bytes(bytes(data))
    assert cuda_code(path) == CudaCode((50,), (), 1)


def test_not_an_elf_file_is_a_value_error(tmp_path):
    (tmp_path / "x").write_bytes(b"MZ" + bytes(100))
    with pytest.raises(ValueError, match="not an ELF file"):
        cuda_code(tmp_path / "x")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_corruption_gives_a_result_or_a_value_error(tmp_path, data):
    good = bytearray(elf({".nv_fatbin": _fatbin(MXNET_WHEEL) + _fatbin([(KIND_PTX, 80)])}))
    for _ in range(data.draw(st.integers(1, 6))):
        at = data.draw(st.integers(0, len(good) - 1))
        good[at] = data.draw(st.integers(0, 255))
    cut = data.draw(st.integers(0, len(good)))
    path = tmp_path / "fuzz.so"
    path.write_bytes(bytes(good[: len(good) - cut // 4]))
    try:
        code = cuda_code(path)
    except ValueError:
        return
    assert code is None or isinstance(code, CudaCode)


def test_the_module_prints_each_library_and_exits_2_on_a_bad_one(tmp_path):
    path = _lib(tmp_path, [MXNET_WHEEL])
    (tmp_path / "bad").write_text("hello")
    proc = subprocess.run(
        [sys.executable, "-m", "gluonbench.gpucode", str(path), str(tmp_path / "bad")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert (
        "SASS for sm_50, sm_60, sm_70, sm_80, sm_86; no PTX in 1 fat binaries; runs on compute capability 5.0-8.9"
        in proc.stdout
    )
    assert proc.stderr.strip() == f"{tmp_path / 'bad'}: not an ELF file"


def test_a_gpu_command_on_a_gpu_without_mxnet_code_gets_the_line(monkeypatch):
    from gluonbench import gpucode

    h100 = {"index": 3, "name": "NVIDIA H100 80GB HBM3", "cc": 90}
    monkeypatch.setattr(gpucode, "cuda_device", lambda index: dict(h100, index=index))
    monkeypatch.setattr(gpucode, "mxnet_cuda_code", lambda: CudaCode((50, 60, 70, 80, 86), (), 197))
    assert gpucode.gpu_problem(3).startswith("GPU 3 (NVIDIA H100 80GB HBM3, sm_90) cannot run MXNet's kernels")
    monkeypatch.setattr(gpucode, "cuda_device", lambda index: {"index": index, "name": "A100", "cc": 80})
    assert gpucode.gpu_problem(0) is None


def test_without_a_cuda_driver_there_is_no_device_and_nothing_to_refuse():
    # this machine has no NVIDIA driver: libcuda.so.1 does not load
    from gluonbench.gpucode import cuda_device, gpu_problem

    assert cuda_device(0) is None
    assert gpu_problem(0) is None


@pytest.mark.parametrize(
    ("ccs", "driver", "said"),
    [
        ([70], (12, 2), "pip install mxnet-cu117==1.9.1 (CUDA 11.7 <= the driver's 12.2; its GPU code runs on sm_70)"),
        ([86], (11, 4), "pip install mxnet-cu112==1.9.1 (CUDA 11.2 <= the driver's 11.4; its GPU code runs on sm_86)"),
        ([80, 70, 80], None, "pip install mxnet-cu117==1.9.1 (CUDA 11.7; its GPU code runs on sm_70, sm_80)"),
        ([37], (12, 0), "pip install mxnet-cu102==1.9.1 (CUDA 10.2 <= the driver's 12.0; its GPU code runs on sm_37)"),
        (
            [86],
            (10, 2),
            "the driver supports CUDA 10.2, older than the 11.0 of every MXNet wheel that runs on this GPU",
        ),
        ([90], (13, 0), "no MXNet 1.9.1 wheel has GPU code for sm_90 (they stop at sm_86, with no PTX): build MXNet"),
    ],
)
def test_the_wheel_to_install_for_the_gpu_and_driver(ccs, driver, said):
    from gluonbench.gpucode import wheel_advice

    assert wheel_advice(ccs, driver).startswith(said)


def test_the_wheel_table_is_what_the_wheels_carry():
    # the table's code mixes are the ones measured (results/doctor/mxnet_gpu_archs.md); none runs on Hopper
    from gluonbench.gpucode import WHEELS

    text = (Path(__file__).resolve().parents[1] / "results/doctor/mxnet_gpu_archs.md").read_text()
    for name, (_cuda, code) in WHEELS.items():
        row = next(line for line in text.splitlines() if line.startswith(f"| {name} |"))
        assert f"{code.describe()}; {code.fatbins} fat binaries" in row, (name, row)
        assert not code.runs_on(90)
