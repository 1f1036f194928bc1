"""Which GPUs an MXNet build runs on: the CUDA architectures compiled into ``libmxnet.so``.

A CUDA library carries its GPU code in the ELF section ``.nv_fatbin``: fat binaries, each a list of
entries that are either machine code (SASS) for one architecture or PTX, which the driver compiles for
the GPU at hand. A GPU runs the library's kernels only when an entry fits it: SASS of the same major
architecture and no newer minor one (sm_80 code runs on an sm_86 GPU, not on an sm_90 one), or PTX of
the same or an older architecture. Otherwise every GPU operator fails with CUDA's "no kernel image is
available for execution on the device".

Measured on the released wheels (``results/doctor/mxnet_gpu_archs.md``): ``mxnet-cu112`` and
``mxnet-cu117`` 1.9.1 carry SASS for sm_50, sm_60, sm_70, sm_80 and sm_86 and no PTX, so they run on
Maxwell to Ada GPUs (V100, A100, A10G, L4) and on no Hopper GPU (H100, H200).

Standard library only: it reads headers with ``seek`` and never loads the library (900 MB for mxnet-cu117).

    python -m gluonbench.doctor.fatbin /path/to/libmxnet.so     # prints the architectures
"""

from __future__ import annotations

import struct
import sys
from dataclasses import dataclass
from pathlib import Path

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
