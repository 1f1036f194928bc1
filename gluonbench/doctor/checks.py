"""Preflight checks of the machine: each returns a :class:`Check` (ok / warn / fail, the figure, a one-line fix).

Every check reads the real machine (affinity, cgroup files, ``statvfs``, ``/proc/mounts``, the
environment, MXNet's build features, NVML) and none starts a training run. The cheap ones
(:data:`CHEAP`) are what ``sweep``, ``diagnose`` and ``tune`` run first (well under a second);
``gluonbench doctor`` runs them all.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

from gluonbench.compat import mxnet_import_hint
from gluonbench.contexts import check_ctx
from gluonbench.errors import GluonbenchError
from gluonbench.gpucode import arch_problem, missing_gpu_advice, mxnet_cuda_code, wheel_advice
from gluonbench.knobs import check_knobs
from gluonbench.names import arg, param
from gluonbench.settings import check_declared, declared
from gluonbench.units import count

log = logging.getLogger(__name__)

OK, WARN, FAIL = "ok", "warn", "fail"
SHM = Path("/dev/shm")
DOCKER_SHM_BYTES = 64 * 2**20
"""Docker's default ``/dev/shm`` (``--shm-size``): the size behind most hung-worker reports"""
THREAD_VARS = ("OMP_NUM_THREADS", "MXNET_CPU_WORKER_NTHREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
NETWORK_FS = ("nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "ceph", "glusterfs", "lustre", "gpfs", "beegfs", "afs")
MEMORY_FS = ("tmpfs", "ramfs")
IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".bmp")
SCAN_FILES = 200_000
"""files counted at most when sizing the data folder (a bigger folder is reported as "at least")"""


@dataclass
class Check:
    """One finding: ``status`` is ok, warn or fail; ``figure`` the measured value; ``fix`` what to do (empty if ok)."""

    name: str
    status: str
    figure: str
    fix: str = ""
    data: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        """``[fail] shm: 64 KiB free, 4 workers need 9.2 MiB -> fix``"""
        fix = f" -> {self.fix}" if self.fix and self.status != OK else ""
        return f"[{self.status:4s}] {self.name}: {self.figure}{fix}"


@dataclass(frozen=True)
class DoctorSettings:
    """What ``gluonbench doctor`` checks against: the loader the user plans to run and where its data lies."""

    data_dir: str | None = None
    ctx: str = declared("ctx", "cpu")
    workers: int = 0
    batch_size: int = 64
    prefetch: int | None = None
    sample_bytes: int | None = None
    """bytes of one transformed sample; default: the data set's images (3 x H x W float32) or MNIST's 28 x 28"""
    refresh: bool = False
    ceilings: bool = True

    def check(self) -> DoctorSettings:
        """Validate before any work: one clear line naming the problem and the fix."""
        check_knobs(self, param)  # workers, batch_size, thread_pool, prefetch, pin_memory: their declarations
        if self.sample_bytes is not None and (not isinstance(self.sample_bytes, int) or self.sample_bytes < 1):
            raise GluonbenchError(f"sample_bytes {self.sample_bytes!r} must be a positive integer")
        check_declared(self)  # ctx
        if self.data_dir is not None:
            p = Path(self.data_dir)
            if not p.is_dir():
                raise GluonbenchError(
                    f"{param('data_dir')} {self.data_dir} is not a folder: give the folder your data set is in"
                )
            if not os.access(p, os.R_OK | os.X_OK):
                raise GluonbenchError(f"{param('data_dir')} {self.data_dir} is not readable: fix its permissions")
        return self


def parse_ctx(ctx: str | None) -> tuple[str, int]:
    """``cpu`` / ``cpu:N`` / ``gpu`` / ``gpu:N`` -> (kind, index) (:func:`gluonbench.contexts.check_ctx`)."""
    return check_ctx(ctx or "cpu", param("ctx"))


# -- helpers that read the machine --


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return f.read().strip()
    except OSError:
        return None


def cgroup_cpu_quota() -> float | None:
    """CPUs the cgroup quota allows (cgroup v2 ``cpu.max`` or v1 ``cpu.cfs_quota_us``), None when unlimited."""
    v2 = _read("/sys/fs/cgroup/cpu.max")
    if v2:
        quota, _, period = v2.partition(" ")
        if quota != "max" and period:
            return int(quota) / int(period)
        return None
    for base in ("/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"):
        quota, period = _read(f"{base}/cpu.cfs_quota_us"), _read(f"{base}/cpu.cfs_period_us")
        if quota and period and int(quota) > 0 and int(period) > 0:
            return int(quota) / int(period)
    return None


def usable_cores() -> tuple[int, dict[str, Any]]:
    """Cores this process may really use: min(affinity, ceil(cgroup quota)); and how each was found."""
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    quota = cgroup_cpu_quota()
    usable = affinity if quota is None else max(1, min(affinity, math.ceil(quota)))
    return usable, {"affinity": affinity, "quota": quota, "cpu_count": os.cpu_count() or 0, "usable": usable}


def cgroup_memory_limit() -> int | None:
    """The cgroup memory limit in bytes (v2 ``memory.max`` or v1 ``memory.limit_in_bytes``), None when unlimited."""
    own = _read("/proc/self/cgroup") or ""
    paths = ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"]
    for line in own.splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and parts[2] not in ("", "/"):
            if parts[0] == "0":
                paths.insert(0, f"/sys/fs/cgroup{parts[2]}/memory.max")
            elif "memory" in parts[1].split(","):
                paths.insert(0, f"/sys/fs/cgroup/memory{parts[2]}/memory.limit_in_bytes")
    total = psutil.virtual_memory().total
    for p in paths:
        text = _read(p)
        if text and text != "max" and text.isdigit() and int(text) < total:
            return int(text)
    return None


def mount_of(path: str | Path) -> tuple[str, str, str]:
    """(mount point, file system type, device) of the mount holding ``path``, from ``/proc/mounts``."""
    real = os.path.realpath(path)
    best = ("/", "unknown", "")
    for line in (_read("/proc/self/mounts") or _read("/proc/mounts") or "").splitlines():
        parts = line.split()
        if len(parts) < 3:
            continue
        mnt = parts[1].replace("\\040", " ")
        if (real == mnt or real.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best[0]):
            best = (mnt, parts[2], parts[0])
    return best


def fs_kind(fstype: str) -> str:
    """local, memory (tmpfs), network (NFS, CIFS, ...) or fuse."""
    if fstype in MEMORY_FS:
        return "memory"
    if fstype in NETWORK_FS or fstype.startswith("nfs"):
        return "network"
    if fstype.startswith("fuse"):
        return "fuse"
    return "local"


def folder_bytes(folder: str | Path, limit: int = SCAN_FILES) -> tuple[int, int, bool]:
    """(bytes, files, complete) of the regular files under ``folder``, counting at most ``limit`` files."""
    total = files = 0
    for root, _dirs, names in os.walk(folder):
        for n in names:
            try:
                st = os.stat(os.path.join(root, n))
            except OSError:
                continue
            total += st.st_size
            files += 1
            if files >= limit:
                return total, files, False
    return total, files, True


def image_files(folder: str | Path, limit: int = 64) -> list[Path]:
    """Up to ``limit`` image files (JPEG, PNG, BMP) under ``folder``, in a stable order."""
    found: list[Path] = []
    for root, dirs, names in os.walk(folder):
        dirs.sort()
        for n in sorted(names):
            if n.lower().endswith(IMAGE_SUFFIXES):
                found.append(Path(root) / n)
                if len(found) >= limit:
                    return found
    return found


def _size(n: float) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n:.0f} B"


def default_sample_bytes(data_dir: str | None) -> int:
    """Bytes of one float32 sample: the first image's decoded 3 x H x W, else MNIST's 28 x 28 x 1 (+ a label)."""
    if data_dir:
        images = image_files(data_dir, limit=1)
        if images:
            try:
                import cv2

                img = cv2.imread(str(images[0]))
                if img is not None:
                    return int(img.shape[0] * img.shape[1] * 3 * 4 + 4)
            except ImportError:  # pragma: no cover - opencv is a dependency
                pass
    return 28 * 28 * 4 + 4


# -- the checks: one function each --


def check_cores(s: DoctorSettings) -> Check:
    """Usable cores (affinity and cgroup quota) against ``os.cpu_count()`` and the worker count."""
    usable, d = usable_cores()
    quota = "none" if d["quota"] is None else f"{d['quota']:g} CPUs"
    figure = f"{usable} usable (affinity {d['affinity']}, cgroup quota {quota}, os.cpu_count() {d['cpu_count']})"
    d["workers"] = s.workers
    if s.workers > 2 * usable:
        return Check(
            "cores",
            FAIL,
            f"{figure}; {arg('workers')} {s.workers}",
            f"use at most {usable} to {2 * usable} workers: {s.workers} processes time-slice {usable} core(s) "
            "and each adds memory and start-up",
            d,
        )
    if s.workers > usable:
        return Check(
            "cores",
            WARN,
            f"{figure}; {arg('workers')} {s.workers}",
            f"more workers than usable cores helps only when reading waits on I/O; try {usable}",
            d,
        )
    if d["cpu_count"] > usable:
        return Check(
            "cores",
            WARN,
            figure,
            f"code that sizes pools by os.cpu_count() ({d['cpu_count']}) oversubscribes the {usable} usable: "
            f"set OMP_NUM_THREADS={usable} and num_workers <= {usable}",
            d,
        )
    return Check("cores", OK, figure, data=d)


def check_memory(s: DoctorSettings) -> Check:
    """Total and available memory, and the cgroup memory limit."""
    vm = psutil.virtual_memory()
    limit = cgroup_memory_limit()
    d = {"total": vm.total, "available": vm.available, "cgroup_limit": limit}
    avail = vm.available if limit is None else min(vm.available, limit)
    figure = f"{_size(avail)} available of {_size(vm.total)}" + (
        f" (cgroup limit {_size(limit)})" if limit is not None else " (no cgroup limit)"
    )
    if avail < 512 * 2**20:
        return Check(
            "memory",
            FAIL,
            figure,
            "free memory or raise the container's limit (docker run --memory): "
            "workers are killed (OOM) with less than 512 MiB free",
            d,
        )
    if avail < 2 * 2**30:
        return Check(
            "memory",
            WARN,
            figure,
            "each DataLoader worker holds a copy of the data set's index and its "
            "batches; keep workers few or free memory",
            d,
        )
    return Check("memory", OK, figure, data=d)


def shm_need(s: DoctorSettings) -> int:
    """Bytes of ``/dev/shm`` the loader holds at once: batches in flight x batch bytes."""
    sample = s.sample_bytes or default_sample_bytes(s.data_dir)
    in_flight = (2 * s.workers if s.prefetch is None else s.prefetch) + s.workers
    return sample * s.batch_size * in_flight


def check_shm(s: DoctorSettings) -> Check:
    """``/dev/shm`` free and total against what ``workers x prefetch x batch bytes`` need."""
    try:
        st = os.statvfs(SHM)
    except OSError:
        if s.workers > 0:
            return Check(
                "shm",
                FAIL,
                "/dev/shm is missing",
                "mount a tmpfs on /dev/shm (docker run --ipc=host) or use --workers 0",
            )
        return Check("shm", WARN, "/dev/shm is missing", "DataLoader workers will fail: mount a tmpfs on /dev/shm")
    free, total = st.f_bavail * st.f_frsize, st.f_blocks * st.f_frsize
    need = shm_need(s) if s.workers > 0 else 0
    d = {"free": free, "total": total, "need": need, "workers": s.workers}
    figure = f"{_size(free)} free of {_size(total)}" + (
        f"; {s.workers} worker(s) x batch {s.batch_size} need about {_size(need)}" if need else ""
    )
    fix = "docker run --shm-size=1g (or --ipc=host), or fewer workers / a smaller batch"
    if need and free < need:
        return Check("shm", FAIL, figure, f"workers hang or die with a bus error: {fix}", d)
    if need and free < 2 * need:
        return Check("shm", WARN, figure, f"less than twice the need: {fix}", d)
    if total <= DOCKER_SHM_BYTES:
        return Check("shm", WARN, figure, f"Docker's default 64 MB: larger batches or more workers will hang; {fix}", d)
    return Check("shm", OK, figure, data=d)


def check_threads(s: DoctorSettings) -> Check:
    """``OMP_NUM_THREADS``, ``MXNET_CPU_WORKER_NTHREADS`` and BLAS thread variables against the usable cores."""
    usable, _ = usable_cores()
    values = {k: os.environ.get(k) for k in THREAD_VARS}
    set_ = {k: v for k, v in values.items() if v not in (None, "")}
    figure = (", ".join(f"{k}={v}" for k, v in set_.items()) or "none of " + ", ".join(THREAD_VARS) + " set") + (
        f" on {usable} usable core(s)"
    )
    d = {"values": values, "usable": usable, "workers": s.workers}
    bad = []
    for k, v in set_.items():
        try:
            n = int(v)
        except ValueError:
            return Check("threads", FAIL, figure, f"{k}={v!r} is not a number: set {k}={usable}", d)
        if n > usable:
            bad.append(f"{k}={usable}")
    if bad:
        return Check(
            "threads", FAIL, figure, f"threads beyond the cores oversubscribe the CPU: set {', '.join(bad)}", d
        )
    omp = set_.get("OMP_NUM_THREADS")
    if s.workers > 0 and omp and int(omp) * (s.workers + 1) > 2 * usable:
        return Check(
            "threads",
            WARN,
            figure,
            f"{count(s.workers, 'worker')} + the main process each run {omp} OpenMP threads: "
            "keep the product near the cores (OMP_NUM_THREADS=1 in workers)",
            d,
        )
    if "OMP_NUM_THREADS" not in set_ and usable < (os.cpu_count() or usable):
        return Check(
            "threads",
            WARN,
            figure,
            f"OpenMP sizes its pool by the host's {os.cpu_count()} CPUs, not the "
            f"{usable} usable: set OMP_NUM_THREADS={usable}",
            d,
        )
    return Check("threads", OK, figure, data=d)


def mxnet_features() -> dict[str, bool]:
    """MXNet's build features (``mxnet.runtime.Features``) that matter for speed."""
    from gluonbench._mx import mx

    feats = mx.runtime.Features()
    return {k: bool(feats.is_enabled(k)) for k in ("MKLDNN", "CUDA", "CUDNN", "NCCL", "DIST_KVSTORE", "OPENMP")}


def check_features(s: DoctorSettings) -> Check:
    """MKLDNN, CUDA, CUDNN, NCCL, DIST_KVSTORE in this MXNet build, against the context asked for."""
    try:
        feats = mxnet_features()
    except Exception as exc:
        return Check(
            "mxnet build",
            FAIL,
            "MXNet does not import",
            str(exc) if isinstance(exc, GluonbenchError) else mxnet_import_hint(exc),
        )
    figure = ", ".join(f"{k} {'on' if v else 'off'}" for k, v in feats.items())
    kind, index = parse_ctx(s.ctx)
    if kind == "gpu" and not feats["CUDA"]:
        return Check(
            "mxnet build",
            FAIL,
            figure,
            f"this MXNet has no CUDA: {missing_gpu_advice(index)}",
            feats,
        )
    if kind == "gpu" and not feats["CUDNN"]:
        return Check("mxnet build", WARN, figure, "no cuDNN: convolutions run far slower; use a cuDNN build", feats)
    if kind == "cpu" and not feats["MKLDNN"]:
        return Check(
            "mxnet build",
            WARN,
            figure,
            "no MKL-DNN (oneDNN): CPU training is several times slower; pip install mxnet (the PyPI wheel has it)",
            feats,
        )
    return Check("mxnet build", OK, figure, data=feats)


def check_versions(s: DoctorSettings) -> Check:
    """numpy and MXNet versions, and whether gluonbench's shims (numpy aliases, distutils) are in place."""
    import sys

    import numpy as np

    from gluonbench.env import environment

    mx_version = environment().get("mxnet", "unknown")
    major_minor = tuple(int(x) for x in np.__version__.split(".")[:2])
    aliases_gone = major_minor >= (1, 24)
    restored = all(hasattr(np, a) for a in ("bool", "int", "float", "object", "str"))
    figure = f"numpy {np.__version__}, MXNet {mx_version}, Python {sys.version.split()[0]}"
    d = {"numpy": np.__version__, "mxnet": mx_version, "numpy_aliases_removed": aliases_gone, "shim": restored}
    if aliases_gone:
        figure += "; numpy's removed aliases " + ("restored by gluonbench's shim" if restored else "MISSING")
        if not restored:
            return Check(
                "versions",
                FAIL,
                figure,
                "import gluonbench before mxnet (it restores np.bool & co.), or pip install 'numpy<1.24'",
                d,
            )
    if mx_version.startswith("1.") and not mx_version.startswith("1.9"):
        return Check("versions", WARN, figure, "gluonbench is tested on MXNet 1.9.1: pip install mxnet==1.9.1", d)
    return Check("versions", OK, figure, data=d)


def check_data_fs(s: DoctorSettings) -> Check:
    """The data folder's file system: local disk, tmpfs (a benchmark then measures memory), NFS / FUSE."""
    if not s.data_dir:
        return Check("data fs", OK, f"no {arg('data_dir')} given (nothing to check)")
    mnt, fstype, dev = mount_of(s.data_dir)
    kind = fs_kind(fstype)
    d = {"mount": mnt, "fstype": fstype, "device": dev, "kind": kind}
    figure = f"{s.data_dir} is on {fstype} ({kind}) mounted at {mnt}"
    if kind == "memory":
        return Check(
            "data fs",
            FAIL,
            figure,
            "a data folder in RAM makes every read a memory copy, so reading "
            "figures will not hold on the disk you train from: put the data on that disk",
            d,
        )
    if kind in ("network", "fuse"):
        return Check(
            "data fs",
            WARN,
            figure,
            "each small read waits a network round trip: pack files into shards "
            "(gluonbench pack), copy to local disk first, or raise num_workers to overlap the latency",
            d,
        )
    return Check("data fs", OK, figure, data=d)


def check_page_cache(s: DoctorSettings) -> Check:
    """Whether the data set fits in free RAM: then after one epoch a benchmark measures memory, not the disk."""
    if not s.data_dir:
        return Check("page cache", OK, f"no {arg('data_dir')} given (nothing to check)")
    start = time.monotonic()
    size, files, complete = folder_bytes(s.data_dir)
    vm = psutil.virtual_memory()
    limit = cgroup_memory_limit()
    room = vm.available if limit is None else min(vm.available, limit)
    d = {"bytes": size, "files": files, "complete": complete, "room": room, "scan_s": time.monotonic() - start}
    figure = f"data set {'' if complete else 'at least '}{_size(size)} in {files} files; {_size(room)} of RAM free"
    if complete and size < room:
        return Check(
            "page cache",
            WARN,
            figure,
            "it fits in the page cache: from the second epoch on, reading "
            "measures memory, not the disk; use gluonbench io --drop-caches or a data set larger than RAM "
            "to measure the disk",
            d,
        )
    return Check("page cache", OK, figure, data=d)


def _nvml() -> Any:
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:
        return None
    return pynvml


def wheel_cuda() -> str | None:
    """The CUDA version the installed MXNet wheel was built for, from its distribution name (mxnet-cu112 -> 11.2)."""
    from importlib.metadata import distributions

    for dist in distributions():
        name = (dist.metadata.get("Name") or "").lower()
        if name.startswith("mxnet-cu"):
            digits = name[len("mxnet-cu") :].split("-")[0].rstrip("mkl")
            if digits.isdigit() and len(digits) >= 3:
                return f"{digits[:-1]}.{digits[-1]}"
    return None


def nvml_gpus(nvml: Any, count: int) -> list[dict[str, Any]]:
    """Index, name and compute capability (``major * 10 + minor``) of each GPU NVML sees."""
    out = []
    for i in range(count):
        handle = nvml.nvmlDeviceGetHandleByIndex(i)
        name = nvml.nvmlDeviceGetName(handle)
        major, minor = nvml.nvmlDeviceGetCudaComputeCapability(handle)
        out.append({"index": i, "name": name.decode() if isinstance(name, bytes) else name, "cc": major * 10 + minor})
    return out


def check_gpu(s: DoctorSettings) -> Check:
    """Driver and CUDA versions, the GPUs MXNet sees against NVML's, whether MXNet has kernels for them, pinned memory."""
    kind, index = parse_ctx(s.ctx)
    nvml = _nvml()
    try:
        from gluonbench._mx import mx
    except GluonbenchError as exc:  # "mxnet build" says why, with the fix; here only what it stops
        return Check("gpu", FAIL, "MXNet does not import, so its GPUs cannot be checked", str(exc))
    try:
        mx_gpus = mx.context.num_gpus()
    except Exception:
        mx_gpus = 0
    if nvml is None:
        if kind == "gpu":
            return Check(
                "gpu",
                FAIL,
                f"no GPU: NVML unavailable (no driver or nvidia-ml-py), MXNet sees {mx_gpus}",
                "install the NVIDIA driver and pip install nvidia-ml-py, or use --ctx cpu",
            )
        return Check("gpu", OK, "no GPU (NVML unavailable); CPU context", data={"nvml": False, "mxnet_gpus": mx_gpus})
    try:
        count = nvml.nvmlDeviceGetCount()
        driver = nvml.nvmlSystemGetDriverVersion()
        driver = driver.decode() if isinstance(driver, bytes) else driver
        cuda_drv = nvml.nvmlSystemGetCudaDriverVersion()
        gpus = nvml_gpus(nvml, count)
    finally:
        nvml.nvmlShutdown()
    drv = (cuda_drv // 1000, (cuda_drv % 1000) // 10)
    drv_cuda = f"{drv[0]}.{drv[1]}"
    wheel = wheel_cuda()
    d = {"nvml_gpus": count, "mxnet_gpus": mx_gpus, "driver": driver, "driver_cuda": drv_cuda, "wheel_cuda": wheel}
    d["gpus"] = gpus
    figure = (
        f"driver {driver} (CUDA {drv_cuda}), MXNet wheel CUDA {wheel or 'none'}, GPUs: NVML {count}, MXNet {mx_gpus}"
    )
    if count and not mx_gpus:
        return Check(
            "gpu",
            FAIL,
            figure,
            "MXNet sees no GPU: " + wheel_advice([g["cc"] for g in gpus], drv),
            d,
        )
    if wheel and tuple(int(x) for x in wheel.split(".")) > drv:
        return Check(
            "gpu",
            FAIL,
            figure,
            f"the wheel needs CUDA {wheel} but the driver supports {drv_cuda}: "
            "update the driver or install an older mxnet-cuXXX",
            d,
        )
    code = mxnet_cuda_code()
    if code is not None:
        d["mxnet_cuda_code"] = {"sass": list(code.sass), "ptx": list(code.ptx)}
        problem = arch_problem(code, gpus)
        if problem:
            return Check("gpu", FAIL, f"{figure}; libmxnet.so has {code.describe()}", problem, d)
    if mx_gpus < count:
        return Check("gpu", WARN, figure, "MXNet sees fewer GPUs than NVML: check CUDA_VISIBLE_DEVICES", d)
    if kind == "gpu" and index >= mx_gpus:
        return Check("gpu", FAIL, figure, f"{arg('ctx')} gpu:{index} but MXNet sees {mx_gpus} GPU(s): give gpu:0..", d)
    try:
        pinned = mx.nd.zeros((16, 2**20), ctx=mx.cpu_pinned(0), dtype="uint8")
        pinned.wait_to_read()
        assert pinned.context.device_type == "cpu_pinned"
        d["pinned_alloc"] = True
    except Exception as exc:
        return Check(
            "gpu",
            FAIL,
            f"{figure}; pinned allocation of 16 MiB failed ({exc})",
            "raise the locked-memory limit (ulimit -l unlimited / docker --ulimit memlock=-1)",
            d,
        )
    return Check("gpu", OK, figure + "; 16 MiB pinned allocation ok", data=d)


def check_load(s: DoctorSettings) -> Check:
    """Other processes' CPU and the hypervisor's steal over half a second, and what that does to measurements."""
    from gluonbench.monitor.load import background_load

    load = background_load(0.5)
    if load.busy:
        return Check("load", WARN, load.text(), load.effect(), load.to_dict())
    return Check("load", OK, load.text(), data=load.to_dict())


CheckFn = Callable[[DoctorSettings], Check]
CHEAP: tuple[CheckFn, ...] = (check_cores, check_memory, check_shm, check_threads, check_data_fs)
"""the preflight checks: no MXNet import, no folder walk; well under a second"""
ALL: tuple[CheckFn, ...] = (
    check_cores,
    check_load,
    check_memory,
    check_shm,
    check_threads,
    check_features,
    check_versions,
    check_data_fs,
    check_page_cache,
    check_gpu,
)


def run_checks(settings: DoctorSettings, checks: tuple[CheckFn, ...] = ALL) -> list[Check]:
    """Run ``checks`` in order; a check that raises is reported as its own ``fail`` rather than stopping the rest."""
    out = []
    for fn in checks:
        try:
            out.append(fn(settings))
        except GluonbenchError:
            raise
        except Exception as exc:
            log.debug("check %s raised", fn.__name__, exc_info=True)
            name = fn.__name__.removeprefix("check_").replace("_", " ")
            out.append(
                Check(
                    name,
                    FAIL,
                    f"the check itself failed: {type(exc).__name__}: {exc}",
                    "report this with gluonbench doctor --json",
                )
            )
    return out


def exit_code(checks: list[Check]) -> int:
    """0 when nothing failed, 1 when any check failed."""
    return 1 if any(c.status == FAIL for c in checks) else 0
