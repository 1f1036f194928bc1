"""Per-GPU utilisation, memory utilisation and power through NVML (``nvidia-ml-py``).

No GPU, no driver or no NVML library is not an error: the sampler then has no
devices and one ``note`` saying why, and yields no rows.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

log = logging.getLogger(__name__)


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

    @classmethod
    def open(cls) -> GpuSampler:
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
        return cls(handles=handles, _nvml=pynvml)

    def read(self) -> list[GpuReading]:
        out = []
        nv = self._nvml
        for i, h in enumerate(self.handles):
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
