"""Per-GPU utilisation, memory utilisation and power through NVML (``nvidia-ml-py``).

No GPU, no driver or no NVML library is not an error: the sampler then has no
devices and one ``note`` saying why, and yields no rows.

NVML numbers every GPU of the machine; MXNet's ``gpu(N)`` is the ``N``-th entry of
``CUDA_VISIBLE_DEVICES`` (indices or UUIDs) (issue #18, G9). The sampler maps one to the other
(:func:`visible_indices`, ``gpu_map``), and :meth:`GpuSampler.read` with the profiled process tree's
pids samples only the GPUs that tree uses (NVML's running processes), falling back to the visible
ones before the tree has touched any, so the GPU rules are not evaluated on idle GPUs of a shared
machine.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Collection
from dataclasses import dataclass, field

log = logging.getLogger(__name__)


def visible_indices(visible: str | None, uuids: list[str]) -> list[int]:
    """The NVML indices of ``CUDA_VISIBLE_DEVICES`` (``visible``), in CUDA's order: ``gpu(N)`` is entry ``N``.

    ``uuids``: NVML's UUID of each device (``GPU-...``), by NVML index. Unset (None): every device. An
    entry is an index or a UUID (a unique prefix, as CUDA accepts); as in CUDA, the list ends at the first
    entry that names no device (so ``""`` or ``-1`` hides them all). MIG instances are not mapped.
    """
    if visible is None:
        return list(range(len(uuids)))
    out: list[int] = []
    for entry in (e.strip() for e in visible.split(",")):
        if entry.isdigit():
            index = int(entry) if int(entry) < len(uuids) else None
        else:
            found = [
                i
                for i, u in enumerate(uuids)
                if entry and u.startswith(entry if entry.startswith("GPU-") else f"GPU-{entry}")
            ]
            index = found[0] if len(found) == 1 else None
        if index is None or index in out:
            break
        out.append(index)
    return out


@dataclass
class GpuReading:
    """One device at one instant (percent, watts)."""

    index: int
    utilization_pct: float
    memory_utilization_pct: float
    """used / total device memory, in percent (what Debugger's GPUMemoryUtilization holds)"""
    power_w: float | None


@dataclass
class GpuSampler:
    """NVML handles opened once; :meth:`read` is one call per device and metric."""

    handles: list = field(default_factory=list)
    note: str = ""
    _nvml: object = None
    uuids: list[str] = field(default_factory=list)
    visible: list[int] = field(default_factory=list)
    """NVML indices of MXNet's ``gpu(0)``, ``gpu(1)``, ... (``CUDA_VISIBLE_DEVICES`` mapped)"""
    used: set[int] = field(default_factory=set)
    """NVML indices the profiled process tree has run on (from :meth:`read` with pids)"""

    @property
    def gpu_map(self) -> dict[str, dict[str, object]]:
        """Which physical GPU each ``gpu(N)`` is: NVML index and UUID."""
        return {f"gpu({n})": {"nvml_index": i, "uuid": self.uuids[i]} for n, i in enumerate(self.visible)}

    @classmethod
    def open(cls, visible: str | None = None) -> GpuSampler:
        """Open NVML; ``visible`` is the profiled program's ``CUDA_VISIBLE_DEVICES`` (default: this process's)."""
        try:
            import pynvml
        except ImportError:
            return cls(note="no GPU metrics: nvidia-ml-py is not installed (pip install nvidia-ml-py)")
        try:
            pynvml.nvmlInit()
            count = pynvml.nvmlDeviceGetCount()
            handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        except Exception as exc:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...
            return cls(note=f"no GPU metrics: NVML unavailable ({exc})")
        if not handles:
            return cls(note="no GPU metrics: NVML found no GPU", _nvml=pynvml)
        uuids = []
        for h in handles:
            u = pynvml.nvmlDeviceGetUUID(h)
            uuids.append(u.decode() if isinstance(u, bytes) else str(u))
        shown = visible_indices(os.environ.get("CUDA_VISIBLE_DEVICES") if visible is None else visible, uuids)
        return cls(handles=handles, _nvml=pynvml, uuids=uuids, visible=shown)

    def _running_on(self, i: int) -> set[int]:
        nv, h = self._nvml, self.handles[i]
        pids: set[int] = set()
        for query in ("nvmlDeviceGetComputeRunningProcesses", "nvmlDeviceGetGraphicsRunningProcesses"):
            try:
                pids |= {int(p.pid) for p in getattr(nv, query)(h)}
            except Exception:  # not supported on this device/driver
                continue
        return pids

    def devices_for(self, pids: Collection[int] | None) -> list[int]:
        """The NVML indices to sample: those ``pids`` (the profiled tree) run on, else the visible ones."""
        if pids:
            self.used |= {i for i in range(len(self.handles)) if self._running_on(i) & set(pids)}
        return sorted(self.used) if self.used else list(self.visible)

    def read(self, pids: Collection[int] | None = None) -> list[GpuReading]:
        out = []
        nv = self._nvml
        for i in self.devices_for(pids):
            h = self.handles[i]
            try:
                util = nv.nvmlDeviceGetUtilizationRates(h)
                mem = nv.nvmlDeviceGetMemoryInfo(h)
                try:
                    power = nv.nvmlDeviceGetPowerUsage(h) / 1000.0
                except Exception:
                    power = None
                out.append(GpuReading(i, float(util.gpu), 100.0 * mem.used / max(mem.total, 1), power))
            except Exception as exc:  # a device lost mid-run: skip it this sample
                log.debug("gpu%d: %s", i, exc)
        return out

    def close(self) -> None:
        if self._nvml is not None:
            try:
                self._nvml.nvmlShutdown()
            except Exception:
                pass
            self._nvml = None
