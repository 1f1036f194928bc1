"""On a GPU machine with PyTorch: gluonbench's NVML monitor and profiler rules on real GPU load.

No MXNet build runs on every GPU (``results/doctor/mxnet_gpu_archs.md``: none on an H100), but
``gluonbench profile -- CMD`` samples any program, and its GPU rules read only NVML and the CPU. So
PyTorch makes the GPU load here; what is checked is gluonbench's side:

1. G9 (issue #18): :class:`~gluonbench.monitor.gpu.GpuSampler` maps ``gpu(0)`` to its NVML index and
   finds, through NVML's running processes, the GPU a process that allocated on it uses.
2. ``gluonbench profile --interval 100`` of two programs of ``--seconds`` each: *GPU-bound* (bf16 matrix
   products resident on the GPU) and *input-bound* (each batch made by CPU work in the loop, then a small
   step on the GPU). Expected: the GPU rules stay quiet on the first; LowGPUUtilization and
   CPUBottleneck fire on the second, and BatchSize's advice defers to CPUBottleneck's. The rules' patience
   (which skips the start, as Debugger's does) and windows are scaled to the run's length.

Writes ``OUT/gpu_monitor_probe-<UTC>.md`` and each program's ``report.html`` beside it; exit 1 when an
expectation fails.

    python benchmarks/gpu_monitor_probe.py --out results/gpu
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
from datetime import UTC, datetime
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gluonbench.monitor.gpu import GpuSampler

GPU_BOUND = """
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn_like(a)
t = time.time()
while time.time() - t < {seconds}:
    for _ in range(20):
        c = a @ b
    torch.cuda.synchronize()
"""

INPUT_BOUND = """
import time, numpy as np, torch
w = torch.randn(1024, 1024, device="cuda")
t = time.time()
while time.time() - t < {seconds}:
    x = np.random.rand(256, 1024).astype(np.float32)
    for _ in range(40):
        x = np.tanh(x) * 1.0001  # the CPU preprocessing of one batch
    y = torch.from_numpy(x).cuda() @ w
    torch.cuda.synchronize()
"""

RULES = ("LowGPUUtilization", "CPUBottleneck", "IOBottleneck", "GPUMemoryIncrease", "BatchSize", "OverallSystemUsage")
EXPECT = {
    "gpu-bound": {"LowGPUUtilization": False, "CPUBottleneck": False},
    "input-bound": {"LowGPUUtilization": True, "CPUBottleneck": True},
}
CONSISTENT = {
    # advice that must not appear where the rule named fired too (gluonbench.profiler.rules.reconcile)
    "input-bound": ("BatchSize", "CPU, GPU and GPU memory are all lightly used", "CPUBottleneck"),
}


def g9() -> tuple[list[str], bool]:
    """The sampler's map and the GPU this process is seen on, after allocating on cuda:0."""
    import torch

    sampler = GpuSampler.open()
    try:
        lines = [f"- sampler: {len(sampler.visible)} visible GPU(s); map {sampler.gpu_map}; note {sampler.note!r}"]
        x = torch.ones(1024, 1024, device="cuda:0")
        torch.cuda.synchronize()
        used = sampler.devices_for([os.getpid()])
        readings = sampler.read([os.getpid()])
        ok = "gpu(0)" in sampler.gpu_map and sampler.gpu_map["gpu(0)"]["nvml_index"] in used
        lines.append(
            f"- after a 4 MiB allocation on cuda:0, NVML sees this process on {used}: {'ok' if ok else 'NOT FOUND'}"
        )
        lines.append(f"- readings for this process: {[r.index for r in readings]}")
        del x
        return lines, ok
    finally:
        sampler.close()


def profile(name: str, code: str, seconds: float, work: Path) -> dict:
    """``gluonbench profile`` of one program; its rules, its GPU samples and the path of its report."""
    script = work / f"{name}.py"
    script.write_text(code.format(seconds=seconds))
    # Debugger's patience skips a job's start, when the GPU idles while the framework initialises (here
    # PyTorch's import and CUDA context take about 5 s), and a window is the last `window` values, so the
    # last one holds the job's end (about 1 s with the GPU idle): 10 s of patience and a window of 3/4 of the
    # loop keep the start out and the end under the 5 % that p5 ignores
    patience = 100
    window = max(200, int(seconds * 10 * 3 / 4))
    overrides = [
        f"CPUBottleneck.patience={patience}",
        f"IOBottleneck.patience={patience}",
        f"LowGPUUtilization.patience={patience}",
        f"LowGPUUtilization.window={window}",
        f"BatchSize.patience={patience}",
        f"BatchSize.window={window}",
        f"GPUMemoryIncrease.patience={patience}",
    ]
    cmd = [sys.executable, "-m", "gluonbench", "profile", "--interval", "100", "--out", str(work), "--name", name]
    for o in overrides:
        cmd += ["--rule", o]
    proc = subprocess.run(
        [*cmd, "--", sys.executable, str(script)], capture_output=True, text=True, timeout=seconds + 120
    )
    folder = next(p for p in work.iterdir() if p.is_dir() and p.name.endswith(name))
    rules = {r["rule"]: r for r in json.loads((folder / "rules.json").read_text())}
    gpu_util = []
    for f in sorted((folder / "profiler-output" / "system" / "incremental").rglob("*.json")):
        for line in f.read_text().splitlines():
            event = json.loads(line)
            if event.get("Type") == "gpu" and event.get("Dimension") == "GPUUtilization":
                gpu_util.append(float(event["Value"]))
    return {"exit": proc.returncode, "rules": rules, "gpu_util": gpu_util, "folder": folder, "overrides": overrides}


def main() -> int:
    """G9, then the two profiles; exit 1 when an expectation fails."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=40.0, help="length of each profiled program (default 40)")
    ap.add_argument("--out", default="results/gpu", help="folder for the Markdown and the two reports")
    args = ap.parse_args()
    import torch

    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    lines = [
        f"# gpu_monitor_probe: {stamp}",
        "",
        f"- GPU: {torch.cuda.get_device_name(0)}; PyTorch {torch.__version__}; Python {platform.python_version()}; "
        f"{os.cpu_count()} CPUs; host {platform.node()}",
        f"- command: `python benchmarks/gpu_monitor_probe.py {' '.join(sys.argv[1:])}`",
        "",
        "## G9: which GPU a process uses",
        "",
    ]
    g9_lines, ok = g9()
    lines += g9_lines
    failures = 0 if ok else 1
    lines += ["", "## Profiles (`gluonbench profile --interval 100`)", ""]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        results = {
            name: profile(name, code, args.seconds, work)
            for name, code in (("gpu-bound", GPU_BOUND), ("input-bound", INPUT_BOUND))
        }
        lines.append(
            f"Rule overrides (scaled to {args.seconds:g} s at 100 ms): `{' '.join(results['gpu-bound']['overrides'])}`"
        )
        lines += [
            "",
            "| program | exit | GPU util. samples | GPU util. median | " + " | ".join(RULES) + " | expected |",
        ]
        lines.append("|---|---:|---:|---:|" + "---|" * len(RULES) + "---|")
        for name, r in results.items():
            util = sorted(r["gpu_util"])
            median = f"{util[len(util) // 2]:.0f} %" if util else "n/a"

            def cell(rule: str, r: dict = r) -> str:
                x = r["rules"].get(rule)
                if x is None or not x["applicable"]:
                    return "n/a"
                return f"{'**fired**' if x['triggered'] else 'ok'} ({x['violations']}/{x['datapoints']})"

            expected = EXPECT[name]
            met = all(r["rules"][k]["triggered"] == v for k, v in expected.items()) and r["exit"] == 0 and util
            if name in CONSISTENT:
                rule, words, other = CONSISTENT[name]
                if r["rules"][rule]["triggered"] and r["rules"][other]["triggered"]:
                    met = met and words not in r["rules"][rule]["recommendation"]
            failures += not met
            lines.append(
                f"| {name} | {r['exit']} | {len(util)} | {median} | " + " | ".join(cell(k) for k in RULES)
                + f" | {'met' if met else 'NOT MET'}: " + ", ".join(f"{k} {'fires' if v else 'quiet'}" for k, v in expected.items()) + " |"
            )  # fmt: skip
            shutil.copy(r["folder"] / "report.html", out / f"gpu_monitor_probe-{stamp}-{name}.html")
        for name, r in results.items():
            for rule in ("LowGPUUtilization", "CPUBottleneck", "BatchSize"):
                x = r["rules"][rule]
                if x["triggered"]:
                    lines.append(f"- {name}, {rule}: {x['recommendation']}")
    text = "\n".join(lines) + "\n"
    print(text)
    (out / f"gpu_monitor_probe-{stamp}.md").write_text(text)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
