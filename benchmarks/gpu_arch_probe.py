"""On a GPU machine: does ``gluonbench.gpucode`` predict which GPU code runs on this GPU?

Builds one small CUDA library per code mix with ``nvcc`` (SASS only for older architectures like MXNet's
wheels; PTX; SASS for this GPU), reads each with :func:`~gluonbench.gpucode.cuda_code`, predicts
with :meth:`~gluonbench.gpucode.CudaCode.runs_on` for the compute capability NVML reports, then
loads the library and launches its kernel: the prediction and CUDA's answer must agree. ``--lib`` also
reads a library (e.g. an MXNet wheel's ``libmxnet.so``) and prints what ``gluonbench doctor`` would say
on this GPU; the compute capability the CUDA driver gives (what every GPU command checks) must be
NVML's. Needs nvcc, an NVIDIA GPU and nvidia-ml-py; writes ``OUT/gpu_arch_probe-<UTC>.md``.

    python benchmarks/gpu_arch_probe.py --out results/doctor
    python benchmarks/gpu_arch_probe.py --lib site-packages/mxnet/libmxnet.so --out results/doctor
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gluonbench.doctor.checks import nvml_gpus
from gluonbench.gpucode import arch_problem, cuda_code, cuda_device

KERNEL = r"""
#include <cstdio>
__global__ void add1(int *x) { x[threadIdx.x] += 1; }
extern "C" int try_kernel(char *msg, int n) {
  int *d = nullptr, h[32] = {0};
  cudaError_t e = cudaMalloc(&d, sizeof h);
  if (!e) e = cudaMemset(d, 0, sizeof h);
  if (!e) { add1<<<1, 32>>>(d); e = cudaGetLastError(); }
  if (!e) e = cudaDeviceSynchronize();
  if (!e) e = cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  if (d) cudaFree(d);
  snprintf(msg, n, "%s", e ? cudaGetErrorString(e) : (h[0] == 1 && h[31] == 1 ? "kernel ran" : "wrong result"));
  return e ? (int)e : (h[0] == 1 && h[31] == 1 ? 0 : -1);
}
"""


def _mixes(cc: int) -> dict[str, list[str]]:
    sass = lambda a: f"-gencode=arch=compute_{a},code=sm_{a}"  # noqa: E731
    ptx = lambda a: f"-gencode=arch=compute_{a},code=compute_{a}"  # noqa: E731
    return {
        "SASS sm_75, sm_80, sm_86 (like MXNet's wheels)": [sass(75), sass(80), sass(86)],
        "PTX compute_80 only": [ptx(80)],
        "SASS sm_80 + PTX compute_80": [sass(80), ptx(80)],
        f"SASS sm_{cc} (this GPU)": [sass(cc)],
    }


def main() -> int:
    """Build, predict, run; exit 1 when a prediction is wrong."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", action="append", default=[], help="also read this library (repeatable)")
    ap.add_argument("--out", default="results/doctor", help="folder for the Markdown result")
    args = ap.parse_args()
    import pynvml

    pynvml.nvmlInit()
    try:
        gpus = nvml_gpus(pynvml, pynvml.nvmlDeviceGetCount())
        driver = pynvml.nvmlSystemGetDriverVersion()
    finally:
        pynvml.nvmlShutdown()
    cc = gpus[0]["cc"]
    driver_view = cuda_device(0)  # what contexts.parse_ctx asks: the CUDA driver's device 0
    nvcc = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    rows, wrong = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "k.cu"
        src.write_text(KERNEL)
        for i, (label, flags) in enumerate(_mixes(cc).items()):
            lib = Path(tmp) / f"libk{i}.so"
            subprocess.run(["nvcc", "-shared", "-Xcompiler", "-fPIC", *flags, str(src), "-o", str(lib)], check=True)
            code = cuda_code(lib)
            predicted = code is not None and code.runs_on(cc)
            # a fresh process per library: a CUDA context that failed once may not recover
            probe = (
                "import ctypes,sys; l=ctypes.CDLL(sys.argv[1]); b=ctypes.create_string_buffer(200); "
                "r=l.try_kernel(b,200); print(r, b.value.decode())"
            )
            out = subprocess.run([sys.executable, "-c", probe, str(lib)], capture_output=True, text=True)
            rc_text = out.stdout.strip() or out.stderr.strip().splitlines()[-1]
            ran = rc_text.startswith("0 ")
            wrong += predicted != ran
            described = code.describe() if code else "no GPU code found"
            rows.append(
                (label, described, "runs" if predicted else "no kernel", rc_text, "yes" if predicted == ran else "NO")
            )
    lines = [
        f"# gpu_arch_probe: {datetime.now(UTC).strftime('%Y-%m-%dT%H:%M:%SZ')}",
        "",
        f"- GPU: {gpus[0]['name']} (compute capability {cc // 10}.{cc % 10}), driver {driver}; {nvcc}",
        f"- host: {platform.node()}, Python {platform.python_version()}",
        f"- the CUDA driver's device 0 (`gluonbench.gpucode.cuda_device(0)`): {driver_view}",
        f"- command: `python benchmarks/gpu_arch_probe.py {' '.join(sys.argv[1:])}`",
        "",
        "| code in the library | read by `cuda_code` | predicted on this GPU | CUDA's answer (rc, message) | agree |",
        "|---|---|---|---|---|",
        *[f"| {' | '.join(r)} |" for r in rows],
        "",
    ]
    for name in args.lib:
        code = cuda_code(name)
        said = (
            "a CPU build (no GPU code)" if code is None else (arch_problem(code, gpus) or "every GPU runs its kernels")
        )
        lines += [
            f"- `{name}`: {code.describe() if code else 'no GPU code'}",
            f"  - `gluonbench doctor` would say: {said}",
        ]
    text = "\n".join(lines) + "\n"
    print(text)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"gpu_arch_probe-{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}.md").write_text(text)
    return 1 if wrong or driver_view is None or driver_view["cc"] != cc else 0


if __name__ == "__main__":
    raise SystemExit(main())
