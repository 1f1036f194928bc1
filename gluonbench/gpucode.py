"""Which GPUs an MXNet build runs on: the CUDA architectures compiled into ``libmxnet.so``.

Used by ``gluonbench doctor`` (its ``gpu`` check) and by :func:`gluonbench.contexts.parse_ctx`, so every
command given a GPU that MXNet has no kernels for refuses with one line before any work starts.

A CUDA library carries its GPU code in the ELF section ``.nv_fatbin``: fat binaries, each a list of
entries that are either machine code (SASS) for one architecture or PTX, which the driver compiles for
the GPU at hand. A GPU runs the library's kernels only when an entry fits it: SASS of the same major
architecture and no newer minor one (sm_80 code runs on an sm_86 GPU, not on an sm_90 one), or PTX of
the same or an older architecture. Otherwise its kernels fail to launch with CUDA's "no kernel image is
available for execution on the device".

Measured on the released wheels (``results/doctor/mxnet_gpu_archs.md``): ``mxnet-cu112`` and
``mxnet-cu117`` 1.9.1 carry SASS for sm_50, sm_60, sm_70, sm_80 and sm_86 and no PTX, so they run on
Maxwell to Ada GPUs (V100, A100, A10G, L4) and on no Hopper GPU (H100, H200).

:func:`cuda_code` reads headers with ``seek`` and never loads the library (900 MB for mxnet-cu117);
:func:`cuda_device` asks the CUDA driver (``libcuda``, as MXNet's own
``get_cuda_compute_capability``), so ``gpu(N)`` is MXNet's GPU N, ``CUDA_VISIBLE_DEVICES`` included.

    python -m gluonbench.gpucode /path/to/libmxnet.so     # prints the architectures
"""

from __future__ import annotations

import ctypes
import functools
import logging
import struct
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

FATBIN_SECTION = b".nv_fatbin"
FATBIN_MAGIC = 0xBA55ED50
KIND_PTX, KIND_SASS = 1, 2
FATBIN_HEADER = struct.Struct("<IHHQ")
"""magic, version, header size, size of the entries that follow"""
ENTRY_HEADER = struct.Struct("<HHIQ")
"""kind, version, header size, payload size; the architecture is the uint32 at byte 28"""
ENTRY_ARCH_AT = 28
SCAN_CHUNK = 1 << 20
MAX_SECTIONS = 65_536


@dataclass(frozen=True)
class CudaCode:
    """The GPU code in a library: architectures as ``major * 10 + minor`` (sm_86 is 86)."""

    sass: tuple[int, ...]
    ptx: tuple[int, ...]
    fatbins: int

    def runs_on(self, cc: int) -> bool:
        """Whether a GPU of compute capability ``cc`` (e.g. 90 for 9.0) finds code it can run."""
        if any(a // 10 == cc // 10 and a <= cc for a in self.sass):
            return True
        return any(a <= cc for a in self.ptx)

    def describe(self) -> str:
        """E.g. ``SASS for sm_50, sm_60, sm_70, sm_80, sm_86; no PTX``."""
        sass = ", ".join(f"sm_{a}" for a in self.sass) or "none"
        ptx = ", ".join(f"compute_{a}" for a in self.ptx)
        return f"SASS for {sass}; " + (f"PTX for {ptx}" if ptx else "no PTX")

    def supported(self) -> str:
        """The compute capabilities it runs on, in words: ``5.0-8.9``, or ``... and 8.0 and newer through PTX``."""
        spans: list[list[int]] = []
        for major in sorted({a // 10 for a in self.sass}):
            lo = min(a for a in self.sass if a // 10 == major)
            if spans and spans[-1][1] == lo - 1 and lo % 10 == 0:
                spans[-1][1] = major * 10 + 9
            else:
                spans.append([lo, major * 10 + 9])
        words = [f"{lo // 10}.{lo % 10}-{hi // 10}.{hi % 10}" for lo, hi in spans]
        if self.ptx:
            lo = min(self.ptx)
            words.append(f"{lo // 10}.{lo % 10} and newer through PTX")
        return ", ".join(words) or "none"


def _section(f, size: int) -> tuple[int, int] | None:
    """(offset, size) of ``.nv_fatbin`` in the ELF64 file ``f``; None when there is none."""
    head = f.read(64)
    if len(head) < 64 or head[:4] != b"\x7fELF":
        raise ValueError("not an ELF file")
    if head[4] != 2 or head[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    (shoff,) = struct.unpack_from("<Q", head, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", head, 0x3A)
    if shnum == 0 or shnum > MAX_SECTIONS or shentsize < 64 or shstrndx >= shnum:
        raise ValueError("ELF section headers missing or corrupt")
    if shoff + shnum * shentsize > size:
        raise ValueError("ELF section headers past the end of the file")
    f.seek(shoff)
    table = f.read(shnum * shentsize)
    sections = []
    for i in range(shnum):
        name, _type, _flags, _addr, offset, length = struct.unpack_from("<IIQQQQ", table, i * shentsize)
        sections.append((name, offset, length))
    _, str_off, str_len = sections[shstrndx]
    if str_off + str_len > size:
        raise ValueError("ELF section names past the end of the file")
    f.seek(str_off)
    names = f.read(min(str_len, 1 << 20))
    for name, offset, length in sections:
        end = names.find(b"\0", name)
        if name < len(names) and names[name : end if end >= 0 else None] == FATBIN_SECTION:
            if offset + length > size:
                raise ValueError(".nv_fatbin past the end of the file")
            return offset, length
    return None


def _next_magic(f, pos: int, end: int) -> int:
    """The first fat-binary header at or after ``pos`` (at a file offset that is a multiple of 8), or ``end``."""
    magic = struct.pack("<I", FATBIN_MAGIC)
    while pos < end:
        f.seek(pos)
        chunk = f.read(min(SCAN_CHUNK, end - pos))
        at = chunk.find(magic)
        while at >= 0 and (pos + at) % 8:
            at = chunk.find(magic, at + 1)
        if at >= 0:
            return pos + at
        pos += max(8, len(chunk) - 8)
    return end


def cuda_code(path: str | Path) -> CudaCode | None:
    """The architectures of the GPU code in ``path``; None when it has none (a CPU build of MXNet).

    Raises ``ValueError`` for a file that is not a 64-bit little-endian ELF. A fat binary cut short
    ends the walk with what was read before it.
    """
    path = Path(path)
    size = path.stat().st_size
    sass: set[int] = set()
    ptx: set[int] = set()
    fatbins = 0
    with path.open("rb") as f:
        found = _section(f, size)
        if found is None:
            return None
        pos, end = found[0], found[0] + found[1]
        while pos + FATBIN_HEADER.size <= end:
            pos = _next_magic(f, pos, end)
            f.seek(pos)
            head = f.read(FATBIN_HEADER.size)
            if len(head) < FATBIN_HEADER.size:
                break
            _magic, _version, header_size, entries_size = FATBIN_HEADER.unpack(head)
            first, stop = pos + header_size, pos + header_size + entries_size
            if header_size < FATBIN_HEADER.size or stop > end:
                break
            fatbins += 1
            p = first
            while p + ENTRY_ARCH_AT + 4 <= stop:
                f.seek(p)
                entry = f.read(ENTRY_ARCH_AT + 4)
                kind, _version, entry_header, payload = ENTRY_HEADER.unpack_from(entry)
                (arch,) = struct.unpack_from("<I", entry, ENTRY_ARCH_AT)
                if entry_header < ENTRY_ARCH_AT + 4:
                    break
                if kind == KIND_SASS:
                    sass.add(arch)
                elif kind == KIND_PTX:
                    ptx.add(arch)
                p += entry_header + payload
            pos = stop
    if not fatbins:
        return None
    return CudaCode(tuple(sorted(sass)), tuple(sorted(ptx)), fatbins)


@functools.cache
def mxnet_cuda_code() -> CudaCode | None:
    """The GPU code in MXNet's ``libmxnet.so`` (None for a CPU build, or when the file cannot be read)."""
    from gluonbench._mx import mx

    try:
        return cuda_code(mx.libinfo.find_lib_path()[0])
    except (OSError, ValueError, IndexError, RuntimeError) as exc:
        log.debug("could not read libmxnet.so's GPU code: %s", exc)
        return None


CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 75, 76


@functools.cache
def _libcuda() -> ctypes.CDLL | None:
    """The CUDA driver library (``libcuda.so.1``), or None where there is no NVIDIA driver."""
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None


@functools.cache
def cuda_device(index: int) -> dict[str, Any] | None:
    """``{"index", "name", "cc"}`` of CUDA device ``index`` as the driver numbers it (``CUDA_VISIBLE_DEVICES``
    applied, as MXNet's ``gpu(index)``); ``cc`` is ``major * 10 + minor``. None without a driver or such a device."""
    cuda = _libcuda()
    if cuda is None:
        return None
    device, major, minor = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
    name = ctypes.create_string_buffer(256)
    if cuda.cuInit(0) or cuda.cuDeviceGet(ctypes.byref(device), index):
        return None
    if cuda.cuDeviceGetAttribute(ctypes.byref(major), CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device):
        return None
    if cuda.cuDeviceGetAttribute(ctypes.byref(minor), CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device):
        return None
    cuda.cuDeviceGetName(name, len(name), device)
    return {"index": index, "name": name.value.decode(errors="replace") or "?", "cc": major.value * 10 + minor.value}


AWS_GPUS = {"V100 (p3)": 70, "T4 (g4dn)": 75, "A100 (p4d)": 80, "A10G (g5)": 86, "L4 (g6)": 89, "H100 (p5)": 90}
"""compute capabilities of the GPUs of AWS's instance families, for the examples in :func:`arch_problem`"""


def arch_problem(code: CudaCode, gpus: list[dict[str, Any]]) -> str | None:
    """The one-line fix when a GPU (``{"index", "name", "cc"}``) finds no kernel it can run in ``code``;
    None when every GPU does."""
    bad = [g for g in gpus if not code.runs_on(g["cc"])]
    if not bad:
        return None
    g = bad[0]
    which = f"GPU {g['index']} ({g['name']}, sm_{g['cc']})" + (f" and {len(bad) - 1} more" if len(bad) > 1 else "")
    fits = [name for name, cc in AWS_GPUS.items() if code.runs_on(cc)]
    examples = f" ({', '.join(fits)})" if fits else ""
    return (
        f"{which} cannot run MXNet's kernels (its GPU operators fail with 'no kernel image is available'): "
        f"train on GPUs of compute capability {code.supported()}{examples} "
        f"or build MXNet from source for sm_{g['cc']}"
    )


def gpu_problem(index: int) -> str | None:
    """:func:`arch_problem` for MXNet's ``gpu(index)``; None when it runs MXNet's code or either side is unknown."""
    device = cuda_device(index)
    code = mxnet_cuda_code() if device is not None else None
    if device is None or code is None:
        return None
    return arch_problem(code, [device])


WHEELS: dict[str, tuple[tuple[int, int], CudaCode]] = {
    # name: (its CUDA, its GPU code), newest first; read from the 1.9.1 wheels on PyPI on 2026-11-24
    # (results/doctor/mxnet_gpu_archs.md)
    "mxnet-cu117": ((11, 7), CudaCode((50, 60, 70, 80, 86), (), 197)),
    "mxnet-cu112": ((11, 2), CudaCode((50, 60, 70, 80, 86), (), 198)),
    "mxnet-cu110": ((11, 0), CudaCode((50, 60, 70, 80), (), 198)),
    "mxnet-cu102": ((10, 2), CudaCode((30, 50, 60, 70, 75), (), 198)),
}
"""MXNet 1.9.1's CUDA wheels: the CUDA each needs and the GPU code each carries"""


def cuda_driver_version() -> tuple[int, int] | None:
    """The newest CUDA the installed driver supports (``cuDriverGetVersion``); None without a driver."""
    cuda = _libcuda()
    if cuda is None:
        return None
    version = ctypes.c_int()
    if cuda.cuDriverGetVersion(ctypes.byref(version)):
        return None
    return version.value // 1000, (version.value % 1000) // 10


def wheel_advice(ccs: list[int], driver: tuple[int, int] | None) -> str:
    """What to install so MXNet runs on GPUs of compute capabilities ``ccs`` under a driver for CUDA ``driver``:
    the newest 1.9.1 wheel whose code runs on all of them and whose CUDA the driver supports, or why none does."""
    runs = [(name, cuda) for name, (cuda, code) in WHEELS.items() if all(code.runs_on(cc) for cc in ccs)]
    fits = [(name, cuda) for name, cuda in runs if driver is None or cuda <= driver]
    if fits:
        name, cuda = fits[0]
        drv = f" <= the driver's {driver[0]}.{driver[1]}" if driver else ""
        on = ", ".join(f"sm_{cc}" for cc in sorted(set(ccs)))
        return f"pip install {name}==1.9.1 (CUDA {cuda[0]}.{cuda[1]}{drv}; its GPU code runs on {on})"
    if runs:
        need = min(cuda for _, cuda in runs)
        return (
            f"the driver supports CUDA {driver[0]}.{driver[1]}, older than the {need[0]}.{need[1]} of every MXNet wheel "
            "that runs on this GPU: update the NVIDIA driver"
        )
    newest = max(max(code.sass) for _, code in WHEELS.values())
    return (
        f"no MXNet 1.9.1 wheel has GPU code for sm_{max(ccs)} (they stop at sm_{newest}, with no PTX): "
        f"build MXNet from source for sm_{max(ccs)}, or use GPUs of compute capability "
        f"{WHEELS['mxnet-cu117'][1].supported()}"
    )


def missing_gpu_advice(index: int = 0) -> str:
    """The fix to give when MXNet sees no GPU: the wheel for the driver's GPU ``index``, or the generic one."""
    device = cuda_device(index)
    if device is None:
        return "install the NVIDIA driver (nvidia-smi must list the GPU) and an mxnet-cuXXX wheel"
    return wheel_advice([device["cc"]], cuda_driver_version())


def main(argv: list[str] | None = None) -> int:
    """Print the GPU code of each library named; exit 2 on a file that cannot be read."""
    status = 0
    for name in sys.argv[1:] if argv is None else argv:
        try:
            code = cuda_code(name)
        except (OSError, ValueError) as exc:
            print(f"{name}: {exc}", file=sys.stderr)
            status = 2
            continue
        if code is None:
            print(f"{name}: no GPU code (a CPU build)")
        else:
            print(
                f"{name}: {code.describe()} in {code.fatbins} fat binaries; runs on compute capability {code.supported()}"
            )
    return status


if __name__ == "__main__":
    raise SystemExit(main())
