"""Command line: parse, call the API, print. No measurement logic lives here."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import tempfile
from collections.abc import Callable
from typing import Any

from gluonbench.env import check_environment, ensure_standard_streams
from gluonbench.errors import GluonbenchError
from gluonbench.version import __version__

log = logging.getLogger("gluonbench")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line naming the fix, exit 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


SWEEP_EXAMPLES = """examples:
  gluonbench sweep --workers 0..8                 # the seed's experiment, 1 epoch per worker count
  gluonbench sweep --pipeline mypkg.train:make --workers 0,2,4    # your own pipeline (gluonbench.PipelineSpec)
  gluonbench sweep --pipeline examples/imagefolder_pipeline.py:make --pipeline-option root=data/images
  gluonbench sweep --workers 2,4 --prefetch 8 --thread-pool --pin-memory --ctx gpu:0   # any knob tune can recommend
  gluonbench sweep --workers 0,2,4 --repeat 3     # median and min-max of 3 runs each
  gluonbench sweep --workers 0..8:2 --max-batches 100 --batch-size 128
  gluonbench sweep --dataset fashion-mnist --ctx gpu:0 --workers 0..8
  gluonbench sweep --config configs/p3.2xlarge.toml --set repeat=3
  gluonbench sweep --resume results/20261122T150000Z-sweep-mnist-cpu
  gluonbench sweep --workers 0,2,4 --diagnose     # the bottleneck (verdict, shares) at each worker count
  gluonbench sweep --workers 0,2 --max-batches 100 --profile   # the profiler rules and a report per run
  gluonbench sweep --dataset synthetic --read-ms 1 --width 1024 --depth 3 --workers 0,2 --max-batches 40 --diagnose
  gluonbench sweep --source fastfile --uri packed/ --workers 0,2 --max-batches 100   # through an input mode
  gluonbench sweep --source file --uri s3://bucket/packed --endpoint-url http://127.0.0.1:9000
  gluonbench sweep --dataset imagefolder --data-dir data/images --model resnet18_v1 --image-size 64 --workers 0..4
  gluonbench sweep --config configs/seed004-resnet.toml     # seed 004 scaled down: ResNet-18 on ~39 KB JPEGs
  gluonbench sweep --config configs/seed004-resnet.toml --layout shards --source fastfile   # packed shards
scale-out (batch size is per device; see README "Scale-out"):
  gluonbench sweep --ctx cpu --devices 2 --kvstore local --workers 0,2 --max-batches 50   # 2 CPU contexts
  gluonbench sweep --gpus 0,1,2,3 --kvstore device --workers 0..8:2
  gluonbench sweep --kvstore dist_sync --hosts 1,2,4 --servers 1 --workers 0 --max-batches 60   # all on 127.0.0.1
  gluonbench sweep --kvstore dist_sync --launcher ssh --hostfile hosts.txt --hosts 2 --gpus 0..7
  gluonbench sweep --kvstore dist_sync --hosts 2 --workers 0,2 --diagnose --diagnose-rank 1
  gluonbench sweep --config configs/p3.16xlarge-2hosts-dist.toml
"""

DIAGNOSE_EXAMPLES = """examples:
  gluonbench diagnose                                   # the seed's MNIST pipeline, 0 workers, batch 64
  gluonbench diagnose --pipeline mypkg.train:make --workers 2   # your own pipeline (gluonbench.PipelineSpec)
  gluonbench diagnose --budget 30 -- python train.py --epochs 20   # your own training script, unmodified
  gluonbench diagnose --workers 2 --batch-size 256 --json results/diagnose-mnist-w2.json
  gluonbench diagnose --dataset fashion-mnist --ctx gpu:0 --budget 120
  gluonbench diagnose --dataset synthetic --cpu-ms 2           # per-sample preprocessing of 2 ms CPU
  gluonbench diagnose --dataset synthetic --read-ms 1 --record-kb 64   # slow network file system
  gluonbench diagnose --dataset synthetic --width 2048 --depth 3       # a heavy model
  gluonbench diagnose --threshold secondary_share=0.25 --threshold share_precision=0.03
  gluonbench diagnose --dataset imagefolder --data-dir data/images --model resnet50_v1 --preset imagenet
  gluonbench diagnose --dataset seed004 --workers 2 --batch-size 32   # ResNet-18, 64 px, ~39 KB JPEGs

probes (each the pipeline with more stages swapped, measured in interleaved rounds):
{probes}

verdict: the seed's rule, as speed-ups paired round by round with 95 % CIs:
  input         = full / cached_batch       (one batch reused: "with a perfect input pipeline
                                             training would be 1.27x [1.21, 1.33] faster")
  preprocessing = full / no_preprocess      disk_io = no_preprocess / cached_batch (read, loader)
  gpu_io only when reusing one batch gains nothing (the input CI under the input_gain line, or 1
  within it once converged); the input stage whose removal gains the most when the whole CI lies
  above the line; inconclusive when the CIs cannot tell ("at the line": a gain beyond the noise
  whose CI crosses the line). The shares (the time each stage's removal saves) are printed too:
  preprocessing = full - no_preprocess, disk_io = no_preprocess - cached_batch, gpu_io = cached_batch
  (copy = cached_batch - device_batch, compute = device_batch), each over the total, with intervals.
thresholds (--threshold KEY=VALUE): rel_ci=0.05 (a probe's median known to +-5 % counts as
  converged: with 1 inside the reused batch's interval, gpu_io needs every chain probe converged), min_blocks=6, secondary_share=0.15, highly_input_bound=0.20, moderately_input_bound=0.05,
  input_gain=0.05 (a perfect input pipeline must save 5 % of the step to count),
  share_precision=0.05 (measure on, within the budget, until every share is known to +-5 points),
  stop_confidence=0.99 (stop before the budget only when the input speed-up's 99 % interval is clear
  of the line too: the verdict is checked after every round, and a case at the line must not stop on
  a lucky few rounds).
"""


def _diagnose_epilog() -> str:
    """The examples, with the probe list taken from the probe declarations."""
    from gluonbench.diagnosis.probes import PROBES

    return DIAGNOSE_EXAMPLES.format(probes="\n".join(f"  {p.name:14s} {p.removes}" for p in PROBES))


SYNTHETIC_HELP = (
    "synthetic workload knobs (--dataset synthetic): real file reads, real CPU work, a real model; "
    "files are written once under --data-dir, $GLUONBENCH_CACHE or ~/.cache/gluonbench"
)

REPORT_EXAMPLES = """examples:
  gluonbench report results/20261122T150000Z-sweep-mnist-cpu   # rebuild csv, md, json, png, report.html
  gluonbench report results/20261122T160000Z-io-local-read      # an io benchmark's folder
  gluonbench report results/20261122T170000Z-diagnose-mnist-w0  # a folder of gluonbench diagnose --out
  gluonbench report results/20261123T130000Z-profile-train     # rebuild a profile's rules.json, report.html
  gluonbench report ~/Downloads/my-job/profiler-output --out /tmp/my-job   # a folder SageMaker Debugger wrote
  gluonbench report results/<profile> --rule StepOutlier.stddev=4
"""


def _add_source_args(p: argparse.ArgumentParser, modes: tuple[str, ...] = ("file", "fastfile", "pipe")) -> None:
    """--source/--uri/--endpoint-url/--cache-dir: train on a data set read through an input mode."""
    p.add_argument(
        "--source",
        choices=modes,
        help=f"input mode: the seed's CNN on --uri read through {', '.join(modes)} mode",
    )
    p.add_argument("--uri", help="data set for --source: an image folder, a packed folder, or s3://bucket/prefix")
    p.add_argument("--endpoint-url", help="S3-compatible endpoint for s3:// (MinIO, moto), e.g. http://127.0.0.1:9000")
    p.add_argument("--cache-dir", help="--source file: copy into this folder (default: a temporary one)")


PIPELINE_HELP = (
    "your own pipeline: a factory MODULE:FUNCTION (or path/file.py:FUNCTION) returning a gluonbench.PipelineSpec; "
    "the working folder is on sys.path"
)


def _add_pipeline_args(p: argparse.ArgumentParser) -> None:
    """--pipeline MODULE:FUNCTION and --pipeline-option KEY=VALUE (see gluonbench.PipelineSpec)."""
    g = p.add_argument_group("your own pipeline (instead of --dataset)")
    g.add_argument("--pipeline", metavar="MODULE:FUNCTION", help=PIPELINE_HELP)
    g.add_argument(
        "--pipeline-option",
        dest="pipeline_option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help='keyword argument of the factory (a TOML value: 5, 0.5, true, "text"; else the text), repeatable',
    )


def _pipeline_options(args: argparse.Namespace) -> dict[str, Any]:
    from gluonbench.workloads.spec import parse_pipeline_options

    return parse_pipeline_options(args.pipeline_option)


def _source_options(args: argparse.Namespace, options: dict[str, Any]) -> dict[str, Any] | None:
    from gluonbench.config import source_options

    return source_options(options, args.source, args.uri, args.endpoint_url, args.cache_dir)


def _add_sweep(sub: Any) -> None:
    p = sub.add_parser(
        "sweep",
        help="train at each DataLoader worker count and compare",
        description="Train the workload once per worker count (each run in its own process) and report "
        "train time, eval time, accuracy, samples/s and the best worker count.",
        epilog=SWEEP_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--workers", help="worker counts: 0..8, 0..8:2 or 0,2,4,8 (default 0..8)")
    p.add_argument("--dataset", dest="workload", help="mnist (default), fashion-mnist, synthetic, imagefolder, seed004")
    p.add_argument(
        "--data-dir",
        help="folder with the four IDX files (default: $GLUONBENCH_DATA/NAME, MXNet's cache, system copies)",
    )
    p.add_argument(
        "--no-download",
        dest="download",
        action="store_false",
        default=None,
        help="never download; fail if no local copy",
    )
    p.add_argument("--repeat", type=int, help="runs per worker count (median and min-max); default 1")
    p.add_argument("--epochs", type=int, help="epochs per run (default 1)")
    p.add_argument("--max-batches", type=int, help="cap on training (and eval) batches per run, for quick looks")
    p.add_argument("--batch-size", type=int, help="default 64, as the seed")
    p.add_argument("--eval-workers", type=int, help="fix the eval loader's workers (default: same as training)")
    p.add_argument("--ctx", help="cpu (default), cpu:N (another CPU device), gpu or gpu:N")
    p.add_argument(
        "--thread-pool", action="store_true", default=None, help="DataLoader(thread_pool=True): threads, not processes"
    )
    p.add_argument(
        "--timeout",
        dest="timeout_s",
        type=float,
        help="seconds before a run is killed and recorded as failed (default 3600)",
    )
    p.add_argument("--seed", type=int, help="random seed (default 1, as the seed)")
    p.add_argument(
        "--diagnose",
        action="store_true",
        default=None,
        help="after each run, diagnose the bottleneck at that worker count (adds diagnosis time per run)",
    )
    p.add_argument(
        "--profile",
        action="store_true",
        help="profile each run (system metrics, the profiler rules, report.html) into RUN_DIR/profiles/",
    )
    p.add_argument(
        "--diagnose-budget",
        dest="diagnose_budget_s",
        type=float,
        help="seconds of diagnosis per run with --diagnose (default 30)",
    )
    p.add_argument("--prefetch", type=int, help="DataLoader(prefetch=N): batches prepared ahead (default 2 x workers)")
    p.add_argument(
        "--pin-memory",
        action="store_true",
        default=None,
        help="DataLoader(pin_memory=True): page-locked batches (matters only with a GPU context)",
    )
    p.add_argument(
        "--emulate-step-ms",
        metavar="MS|TARGET",
        help="swap the model step for a timed wait (ms per batch, or e.g. resnet50@v100): reports AU (DLIO)",
    )
    _add_pipeline_args(p)
    _add_source_args(p)
    p.add_argument("--name", help="suffix of the run folder (default sweep-DATASET-CTX)")
    p.add_argument("--out", default="results", help="parent folder of run folders (default results/)")
    p.add_argument(
        "--resume", metavar="RUN_DIR", help="finish an interrupted sweep in RUN_DIR (its settings are reused)"
    )
    p.add_argument("--config", help="TOML file of settings (keys as in --set)")
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one setting, e.g. --set batch_size=128",
    )
    _add_synthetic_knobs(p)
    _add_vision_args(p)
    _add_scale_args(p)
    g = p.add_argument_group("with -- CMD: your own training script, once per --workers count (fresh process each)")
    g.add_argument(
        "--loader",
        type=int,
        metavar="N",
        help="set the N-th DataLoader the script makes (default: the "
        "first whose batches are followed by a Trainer update)",
    )
    g.add_argument(
        "--start-timeout",
        dest="start_timeout_s",
        type=float,
        default=120.0,
        metavar="S",
        help="seconds the script may take to reach its first training steps (default 120)",
    )
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD", help="a training command: python train.py ARGS")
    p.set_defaults(func=cmd_sweep)


SCALE_FLAGS = ("devices", "gpus", "kvstore", "hosts", "servers", "launcher", "hostfile", "port", "diagnose_rank")


def _add_scale_args(p: argparse.ArgumentParser) -> None:
    """Scale-out options (gluonbench.distributed): several devices, several processes or hosts."""
    g = p.add_argument_group("scale-out: data-parallel over devices (one process) or kvstore workers (dist_*)")
    g.add_argument("--devices", type=int, help="contexts in one process: --ctx cpu --devices 2 (batch size per device)")
    g.add_argument("--gpus", help="GPUs by index, e.g. 0,1,2,3 or 0..7 (implies --ctx gpu)")
    g.add_argument(
        "--kvstore",
        help="local, device, nccl (one process) or dist_sync, dist_device_sync, dist_async (several processes)",
    )
    g.add_argument("--hosts", help="kvstore worker processes per job (one per host with ssh), e.g. 1,2,4")
    g.add_argument("--servers", type=int, help="parameter servers per job (default 1)")
    g.add_argument("--launcher", help="local (every process here on 127.0.0.1, default) or ssh (needs --hostfile)")
    g.add_argument("--hostfile", help="--launcher ssh: one host[:port] per line; servers first, then workers")
    g.add_argument("--port", type=int, help="scheduler port (default: a free one; a busy one is replaced)")
    g.add_argument(
        "--diagnose-rank",
        type=int,
        help="with --diagnose and a dist_* kvstore: the worker rank that diagnoses its pipeline after training",
    )


def _add_synthetic_knobs(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(SYNTHETIC_HELP)
    g.add_argument("--samples", type=int, help="training samples (default 4096; test: a quarter)")
    g.add_argument("--record-kb", type=float, help="file size per sample in KiB (default 4)")
    g.add_argument("--read-ms", type=float, help="latency added to each file read, in ms (a slow network FS)")
    g.add_argument(
        "--cold", action="store_true", default=None, help="evict each file from the page cache after reading it"
    )
    g.add_argument("--cpu-ms", type=float, help="CPU time of the per-sample transform's extra work, in ms")
    g.add_argument("--width", type=int, help="units per hidden layer of the model (default 64)")
    g.add_argument("--depth", type=int, help="hidden layers of the model (default 1)")


VISION_HELP = (
    "image workloads (--dataset imagefolder --data-dir DIR, --dataset seed004, or --source MODE --uri DIR): "
    "a gluoncv model, random weights, never downloaded"
)
VISION_FLAGS = ("model", "classes", "image_size", "preset", "layout")


def _add_vision_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(VISION_HELP)
    g.add_argument("--model", help="a classification model of gluoncv.model_zoo, e.g. resnet18_v1, mobilenetv2_1.0")
    g.add_argument("--classes", type=int, help="model outputs (default: the data set's classes)")
    g.add_argument("--image-size", type=int, help="input size (default: the model's, 224; 32 for cifar_*; 28 seed CNN)")
    g.add_argument(
        "--preset",
        choices=("imagenet", "cifar", "none"),
        help="per-sample training transforms (default imagenet: RandomResizedCrop, flip, jitter, lighting, normalise)",
    )
    g.add_argument("--layout", choices=("files", "shards"), help="--dataset seed004: ~39 KB JPEGs or RecordIO shards")


def vision_options(args: argparse.Namespace) -> dict[str, Any]:
    """The image-workload flags given on the command line."""
    return {k: getattr(args, k) for k in VISION_FLAGS if getattr(args, k, None) is not None}


def _source_workload(workload: str) -> str:
    from gluonbench.workloads.vision_zoo import VISION_WORKLOADS

    return workload if workload in VISION_WORKLOADS else "source"


def synthetic_options(args: argparse.Namespace, workload: str) -> dict[str, Any]:
    from gluonbench.config import SYNTHETIC_KNOBS, synthetic_options

    return synthetic_options(workload, {k: getattr(args, k, None) for k in SYNTHETIC_KNOBS})


def _add_diagnose(sub: Any) -> None:
    p = sub.add_parser(
        "diagnose",
        help="classify the bottleneck: preprocessing, disk I/O or GPU I/O, with evidence and fixes",
        description="Measure the training pipeline with one stage swapped at a time (probes), attribute the "
        "step time to preprocessing, disk I/O and the device, and print the verdict, the evidence (psutil) "
        "and what to change.",
        epilog=_diagnose_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--dataset",
        dest="workload",
        default="mnist",
        help="mnist (default), fashion-mnist, synthetic, imagefolder (with --data-dir) or seed004",
    )
    p.add_argument("--data-dir", help="folder of the data set's files (synthetic: where its files are written)")
    p.add_argument("--no-download", dest="download", action="store_false", help="never download")
    p.add_argument("--workers", type=int, default=0, help="DataLoader workers (default 0)")
    p.add_argument("--batch-size", type=int, default=64, help="default 64, as the seed")
    p.add_argument("--ctx", help="cpu, cpu:N, gpu or gpu:N (default: gpu:0 if MXNet sees a GPU, else cpu)")
    p.add_argument("--thread-pool", action="store_true", help="DataLoader(thread_pool=True)")
    p.add_argument(
        "--pin-memory",
        action="store_true",
        help="DataLoader(pin_memory=True, pin_device_id=<the --ctx GPU>); the cached_batch ceiling is pinned too",
    )
    p.add_argument(
        "--budget",
        dest="budget_s",
        type=float,
        default=60.0,
        help="seconds for the measurement (default 60); it stops earlier once the verdict is settled, clear "
        "of the line at 95 and 99 %%, and every share is known to +-5 points",
    )
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    _add_pipeline_args(p)
    _add_source_args(p, modes=("file", "fastfile"))
    p.add_argument("--json", metavar="FILE", help="also write the whole diagnosis as JSON (written atomically)")
    p.add_argument(
        "--out",
        metavar="DIR",
        help="also keep a run folder DIR/<UTC>-diagnose-.../ (runs.jsonl, diagnosis.md/.csv/.json; "
        "gluonbench report rebuilds it)",
    )
    p.add_argument(
        "--threshold",
        dest="thresholds",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="change a threshold of the verdict, e.g. --threshold secondary_share=0.2 (see below)",
    )
    _add_synthetic_knobs(p)
    _add_vision_args(p)
    g = p.add_argument_group("with -- CMD: your own training script, run as written (the probes act inside it)")
    g.add_argument(
        "--loader",
        type=int,
        metavar="N",
        help="diagnose the N-th DataLoader the script makes "
        "(default: the first whose batches are followed by a Trainer update)",
    )
    g.add_argument(
        "--start-timeout",
        dest="start_timeout_s",
        type=float,
        default=120.0,
        metavar="S",
        help="seconds the script may take to reach its first training steps (default 120)",
    )
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD", help="a training command: python train.py ARGS")
    p.set_defaults(func=cmd_diagnose)


def _add_report(sub: Any) -> None:
    p = sub.add_parser(
        "report",
        help="rebuild every export of a run folder (sweep, io, diagnose --out, tune --out, profile), report.html "
        "included",
        epilog=REPORT_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "run_dir",
        help="a run folder made by gluonbench sweep, io, diagnose --out or tune --out, a profile folder, or a "
        "profiler-output folder",
    )
    p.add_argument("--out", help="profiles: write rules.json and report.html here (default: beside profiler-output)")
    p.add_argument("--rule", action="append", metavar="RULE.PARAM=VALUE", help="profiles: override a rule parameter")
    p.set_defaults(func=cmd_report)


PACK_EXAMPLES = """examples:
  gluonbench pack data/images packed/                     # class sub-folders -> 150 MB RecordIO shards
  gluonbench pack data/images packed/ --shard-size 64MB --shuffle --seed 1
  gluonbench pack ../shared/data/mnist mnist-rec/ --split train   # an IDX data set; images stored as PNG
  gluonbench verify packed/
"""

VERIFY_EXAMPLES = """examples:
  gluonbench verify packed/      # sizes, SHA-256, record framing, labels and .idx offsets of every shard
"""

STREAM_EXAMPLES = """examples:
  gluonbench stream packed/ --channel train --channel-dir /tmp/ch --epochs 3
  gluonbench stream s3://bucket/train --endpoint-url http://127.0.0.1:9000 --channel train \\
      --channel-dir /tmp/ch --epochs 2 --shuffle --seed 7
  gluonbench stream data/images --channel train --channel-dir /tmp/ch --record-wrapper recordio \\
      --shard-index 0 --shard-count 4      # ShardedByS3Key: objects 0, 4, 8, ...
The consumer reads /tmp/ch/train_0, then /tmp/ch/train_1, ... (SageMaker's Pipe-mode protocol).
"""


def _add_pack(sub: Any) -> None:
    p = sub.add_parser(
        "pack",
        help="pack an image folder or IDX data set into RecordIO shards",
        description="Write SRC's samples into OUT_DIR/<name>-NNNNN.rec + .idx shards (MXNet's own RecordIO, "
        "original file bytes behind an IRHeader, as im2rec --pass-through) and a manifest.json with SHA-256 per "
        "shard. SRC is a folder with one sub-folder per class, or a folder with MNIST-style IDX files.",
        epilog=PACK_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("src", metavar="SRC", help="image folder (SRC/<class>/*.jpg) or IDX folder")
    p.add_argument("out_dir", metavar="OUT_DIR", help="empty or new folder for the shards")
    p.add_argument("--shard-size", default="150MB", help="largest shard, e.g. 150MB (default), 64MiB")
    p.add_argument("--shuffle", action="store_true", help="write records in a seeded random order")
    p.add_argument("--seed", type=int, default=0, help="seed of --shuffle (default 0)")
    p.add_argument("--name", help="shard file prefix (default: SRC's folder name)")
    p.add_argument("--split", choices=("train", "test"), default="train", help="IDX split to pack (default train)")
    p.add_argument("--force", action="store_true", help="write into a non-empty OUT_DIR (never into SRC)")
    p.set_defaults(func=cmd_pack)


def _add_verify(sub: Any) -> None:
    p = sub.add_parser(
        "verify",
        help="re-read a packed folder and check every shard",
        epilog=VERIFY_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("out_dir", metavar="OUT_DIR", help="a folder made by gluonbench pack")
    p.set_defaults(func=cmd_verify)


def _add_stream(sub: Any) -> None:
    p = sub.add_parser(
        "stream",
        help="Pipe-mode producer: stream a data set into per-epoch FIFOs",
        description="Create DIR/NAME_0, stream SRC's objects into it (threads read ahead), close it, then "
        "DIR/NAME_1, and so on: SageMaker's Pipe-mode protocol. A packed folder streams its .rec shards; any "
        "other source streams every object. Waits at most --open-timeout for a consumer to open each FIFO.",
        epilog=STREAM_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("src", metavar="SRC", help="a folder or s3://bucket/prefix")
    p.add_argument("--channel", required=True, metavar="NAME", help="channel name, e.g. train")
    p.add_argument("--channel-dir", required=True, metavar="DIR", help="folder for the FIFOs (made private, 0700)")
    p.add_argument("--epochs", type=int, default=1, help="epochs to stream (default 1)")
    p.add_argument("--shuffle", action="store_true", help="new object order each epoch")
    p.add_argument("--seed", type=int, default=0, help="seed of --shuffle (default 0)")
    p.add_argument("--record-wrapper", choices=WRAPPERS_CHOICES, default="none", help="none (default) or recordio")
    p.add_argument("--gzip", action="store_true", help="objects are gzip files: decompress before streaming")
    p.add_argument("--shard-index", type=int, help="ShardedByS3Key: this consumer's index I (object i if i %% K == I)")
    p.add_argument("--shard-count", type=int, help="ShardedByS3Key: number of consumers K")
    p.add_argument("--endpoint-url", help="S3-compatible endpoint, e.g. http://127.0.0.1:9000 for MinIO")
    p.add_argument("--threads", type=int, default=4, help="read-ahead threads (default 4)")
    p.add_argument("--open-timeout", type=float, default=600.0, help="seconds to wait for a consumer (default 600)")
    p.add_argument("--write-timeout", type=float, default=600.0, help="seconds a consumer may stall (default 600)")
    p.set_defaults(func=cmd_stream)


WRAPPERS_CHOICES = ("none", "recordio")

IO_EXAMPLES = """examples:
  gluonbench io                                   # seed 004's matrix at the default scale (a few minutes)
  gluonbench io --modes file,fastfile --sizes large --epochs 3
  gluonbench io --small 50MB --large 2GB --shard-size 150MB --work-dir /data/gb-io   # closer to real sizes
  gluonbench io --src data/my-images              # your own image folder (one sub-folder per class)
  gluonbench io --s3-uri s3://my-bucket/gluonbench-io --endpoint-url http://127.0.0.1:9000   # MinIO
  gluonbench io --s3-uri s3://my-bucket/gluonbench-io  # AWS (credentials from the usual boto3 chain)
  gluonbench io --page-cache cold --drop-caches   # evict the origin before each cell
  gluonbench io --stage decode --preset imagenet --image-size 224   # also decode + ImageNet augmentation
  gluonbench io --stage decode --emulate-step-ms resnet50@v100   # which cells keep a V100 fed? (AU, DLIO's 90 %)
"""


def _add_io(sub: Any) -> None:
    p = sub.add_parser(
        "io",
        help="benchmark input modes (file, fastfile, pipe) x data set size x file layout",
        description="Seed 004's matrix: each input mode over a small and a large data set, stored as many ~40 KB "
        "JPEG files and as a few large RecordIO shards. Per cell: start-up to the first batch, read MB/s and "
        "samples/s per epoch, total time, local disk used; then a recommendation drawn from the numbers. "
        "Writes OUT/<UTC>-io-.../ with runs.jsonl, io.csv, io.md, io.json, io.png.",
        epilog=IO_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--modes", default="file,fastfile,pipe", help="comma list (default file,fastfile,pipe)")
    p.add_argument("--sizes", default="small,large", help="comma list of small, large (default both)")
    p.add_argument("--layouts", default="files,shards", help="comma list of files, shards (default both)")
    p.add_argument("--small", default="20MB", help="size of the small data set (default 20MB)")
    p.add_argument("--large", default="200MB", help="size of the large data set (default 200MB)")
    p.add_argument("--file-size", default="40KB", help="mean JPEG size (default 40KB, as seed 004's ~39 KB)")
    p.add_argument("--shard-size", help="shard size (default: a fifth of the data set, at most 150MB)")
    p.add_argument("--src", help="benchmark this image folder (SRC/<class>/*.jpg) instead of generated data")
    p.add_argument("--s3-uri", help="stage the data sets under s3://BUCKET/PREFIX and read them through boto3")
    p.add_argument("--endpoint-url", help="S3-compatible endpoint for --s3-uri (MinIO, moto)")
    p.add_argument("--epochs", type=int, default=2, help="epochs per cell (default 2)")
    p.add_argument("--batch-size", type=int, default=64, help="samples per batch (default 64)")
    p.add_argument("--threads", type=int, default=4, help="reader threads in every mode (default 4)")
    p.add_argument("--stage", choices=("read", "decode"), default="read", help="read only (default) or also decode")
    p.add_argument(
        "--preset",
        choices=("imagenet", "cifar", "none"),
        help="--stage decode: decode to RGB and apply this training preset per sample (as sweep/diagnose --preset)",
    )
    p.add_argument("--image-size", type=int, default=224, help="--preset's output size (default 224)")
    p.add_argument(
        "--emulate-step-ms",
        metavar="MS|TARGET",
        help="each cell feeds a timed wait per batch (ms, or e.g. resnet50@v100) and reports AU (DLIO's 90 %%)",
    )
    p.add_argument("--page-cache", choices=("warm", "cold"), default="warm", help="origin cached or evicted first")
    p.add_argument(
        "--drop-caches", action="store_true", help="with --page-cache cold: also write /proc/sys/vm/drop_caches"
    )
    p.add_argument("--no-shuffle", dest="shuffle", action="store_false", help="read in key order")
    p.add_argument("--seed", type=int, default=0, help="seed of data generation and shuffling (default 0)")
    p.add_argument("--work-dir", help="keep generated data sets here and reuse them (default: a temporary folder)")
    p.add_argument("--mnist-dir", help="MNIST IDX folder whose digits the JPEGs show (default: look it up)")
    p.add_argument("--timeout", dest="timeout_s", type=float, default=600.0, help="pipe stall limit, s (default 600)")
    p.add_argument("--name", help="suffix of the run folder (default io-local-STAGE or io-s3-STAGE)")
    p.add_argument("--out", default="results", help="parent folder of run folders (default results/)")
    p.set_defaults(func=cmd_io)


# -- gluonbench profile (issue 8): the profiler package does the work ------------------------------
PROFILE_EXAMPLES = """examples:
  gluonbench profile -- python train.py --epochs 1          # system metrics of any program, rules, report
  gluonbench profile --pipeline mypkg.train:make --workers 2 --max-batches 200   # one run of your pipeline
  gluonbench profile --interval 100 --name mnist-w2 -- python examples/train_mnist.py --workers 2
  gluonbench profile --rule CPUBottleneck.threshold=30 --rule StepOutlier.stddev=4 -- python train.py
  gluonbench profile --mxnet-profiler -- python examples/train_mnist.py   # merge MXNet's operator trace

In the script (optional, framework metrics; no-ops when not profiled):
  from gluonbench import profiler
  for data, label in profiler.wrap(loader):      # data wait per batch
      with profiler.step():                      # step duration
          ...

writes OUT/<UTC>-profile-NAME/: profiler-output/ (SageMaker Debugger's layout: system/incremental/...,
framework/ Chrome traces), profile.json, rules.json, report.html. Exit code: the program's own.
"""


def _add_profile(sub: Any) -> None:
    p = sub.add_parser(
        "profile",
        help="run a training program and profile it: system and framework metrics, rules, HTML report",
        description="Run CMD as a child process (its own process group), sample the machine and its process "
        "tree every --interval ms, record the gluonbench.profiler hooks' step events, then run SageMaker "
        "Debugger's profiler rules and gluonbench's InputBound and write report.html.",
        epilog=PROFILE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--interval", type=int, default=500, metavar="MS", help="100, 200, 500 (default), 1000, 5000, 60000")
    p.add_argument("--out", default="results", help="parent folder of the profile folder (default results/)")
    p.add_argument("--name", help="suffix of the profile folder (default: the script's name)")
    p.add_argument("--rule", action="append", metavar="RULE.PARAM=VALUE", help="override a rule parameter")
    p.add_argument("--mxnet-profiler", action="store_true", help="also run MXNet's profiler; merge its dump")
    _add_pipeline_args(p)
    g = p.add_argument_group("with --pipeline: the one training run profiled (instead of -- CMD)")
    g.add_argument("--workers", type=int, default=0, help="DataLoader workers (default 0)")
    g.add_argument("--batch-size", type=int, default=64, help="default 64")
    g.add_argument("--max-batches", type=int, help="cap on training (and eval) batches")
    g.add_argument("--epochs", type=int, default=1, help="epochs (default 1)")
    g.add_argument("--ctx", default="cpu", help="cpu (default), cpu:N, gpu or gpu:N")
    g.add_argument("--thread-pool", action="store_true", help="DataLoader(thread_pool=True)")
    g.add_argument("--prefetch", type=int, help="DataLoader(prefetch=N)")
    g.add_argument("--pin-memory", action="store_true", help="DataLoader(pin_memory=True) (GPU only)")
    p.add_argument("cmd", nargs=argparse.REMAINDER, metavar="-- CMD", help="the program and its arguments")
    p.set_defaults(func=cmd_profile)


def cmd_profile(args: argparse.Namespace) -> int:
    from gluonbench.profiler.rules import parse_overrides
    from gluonbench.profiler.session import ProfileSettings, check_command, run_command

    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    name = args.name
    if args.pipeline:
        from gluonbench.config import pipeline_label
        from gluonbench.profiler.pipeline_run import pipeline_command

        if cmd:
            raise GluonbenchError("give either --pipeline MODULE:FUNCTION or -- CMD, not both")
        ProfileSettings(interval_ms=args.interval, out=args.out, name=args.name).check()  # before loading
        cmd = pipeline_command(
            args.pipeline,
            _pipeline_options(args),
            workers=args.workers,
            batch_size=args.batch_size,
            max_batches=args.max_batches,
            epochs=args.epochs,
            ctx=args.ctx,
            thread_pool=args.thread_pool,
            prefetch=args.prefetch,
            pin_memory=args.pin_memory,
        )
        name = name or f"{pipeline_label(args.pipeline)}-w{args.workers}"
    elif args.pipeline_option:
        raise GluonbenchError("--pipeline-option goes with --pipeline MODULE:FUNCTION; add --pipeline")
    settings = ProfileSettings(
        interval_ms=args.interval,
        out=args.out,
        name=name,
        rules=parse_overrides(args.rule),
        mxnet_profiler=args.mxnet_profiler,
    ).check()
    from gluonbench.api import make_out

    check_command(cmd)  # before the first line: a command that cannot start is the one line (run_command checks again)
    make_out(settings.out)  # before the first line: a bad --out is the one line
    print(
        f"profile: running {' '.join(cmd) or '(no command)'} with system metrics every {args.interval} ms; it ends "
        "when the program does, then the rules run and report.html is written",
        file=sys.stderr,
        flush=True,
    )
    result = run_command(cmd, settings)
    _print_rules(result.rules)
    if result.interrupted:
        print(f"gluonbench: interrupted; the profile so far is kept: {result.profile_dir}", file=sys.stderr)
    print(f"profile: {result.profile_dir}/report.html (exit code {result.exit_code})")
    return result.exit_code if result.exit_code is not None else 1


def _print_rules(reports: list) -> None:
    print(f"{'rule':<22} {'status':<10} {'violations / datapoints':<23} note")
    for r in reports:
        status = "TRIGGERED" if r.triggered else "ok" if r.applicable else "n/a"
        note = r.reason if not r.applicable else r.recommendation if r.triggered else ""
        print(f"{r.rule:<22} {status:<10} {r.violations:>10} / {r.datapoints:<10} {note}".rstrip())


def _is_profile(folder: Any) -> bool:
    return (
        (folder / "profiler-output").is_dir()
        or (folder / "system" / "incremental").is_dir()
        or (folder.name == "profiler-output" and folder.is_dir())
    )


def _report_profile(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gluonbench.profiler.data import find_output
    from gluonbench.profiler.rules import parse_overrides
    from gluonbench.profiler.session import build_report

    reports = build_report(args.run_dir, parse_overrides(args.rule), args.out)
    _print_rules(reports)
    target = args.out or find_output(Path(args.run_dir))[0]
    print(f"rebuilt: {target}/rules.json, report.html")


# -- tune (issue 11) -------------------------------------------------------------------------

TUNE_EXAMPLES = """examples:
  gluonbench tune                                        # the seed's MNIST pipeline: best DataLoader setting
  gluonbench tune --pipeline mypkg.train:make --toml tuned.toml   # your own pipeline; tuned.toml names it
  gluonbench tune --workers 2 --budget 120 --json tune.json --toml tuned.toml
  gluonbench sweep --config tuned.toml                   # then train at the recommendation
  gluonbench tune --dataset synthetic --read-ms 2        # slow reads: more workers than cores pay
  gluonbench tune --dataset synthetic --cpu-ms 1         # CPU-heavy transform: about the core count
  gluonbench tune --emulate-step-ms resnet50@v100        # would this loader keep a V100 fed? (AU, DLIO's 90 %)
  gluonbench tune --batch-sizes 64,128,256               # also other batch sizes (learning-rate note)
  gluonbench tune --source fastfile --uri packed/        # a RecordIO data set packed by gluonbench pack
  gluonbench tune --out results                          # also a run folder with report.html

how: the model ceiling (one cached batch stepped) once; the loader alone (no model step) at a few worker
counts, chosen by a model of how it grows with workers (linearly until the cores, or the read latency,
saturate; CPU use per worker from psutil); stop once the loader clearly outruns the model; then the full
pipelines of the top candidates and the current setting in interleaved rounds with 95 % CIs; the cheapest
(fewest workers, then least memory) within noise or 5 % of the best is recommended.
"""


def _add_tune(sub: Any) -> None:
    p = sub.add_parser(
        "tune",
        help="find the cheapest DataLoader setting that keeps the model fed, in a fraction of a sweep",
        description="Search num_workers, thread_pool, prefetch (and pin_memory on a GPU) with short steady-state "
        "measurements and a model of the loader, confirm the top candidates against each other, and print the "
        "DataLoader line to paste with the evidence.",
        epilog=TUNE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--dataset", dest="workload", default="mnist", help="mnist (default), fashion-mnist or synthetic")
    p.add_argument("--data-dir", help="folder of the data set's files (synthetic: where its files are written)")
    p.add_argument("--no-download", dest="download", action="store_false", help="never download")
    p.add_argument("--workers", type=int, default=0, help="the current num_workers, the baseline (default 0)")
    p.add_argument("--thread-pool", action="store_true", help="the current setting uses thread_pool=True")
    p.add_argument(
        "--pin-memory", action="store_true", help="the current setting uses pin_memory=True (pinned for the --ctx GPU)"
    )
    p.add_argument("--prefetch", type=int, help="the current setting's prefetch (default: MXNet's 2 x workers)")
    p.add_argument("--batch-size", type=int, default=64, help="default 64, as the seed")
    p.add_argument("--batch-sizes", help="also tune these batch sizes, e.g. 64,128,256 (budget shared)")
    p.add_argument("--max-workers", type=int, help="most workers tried (default max(16, 4 x cores))")
    p.add_argument("--ctx", help="cpu, cpu:N, gpu or gpu:N (default: gpu:0 if MXNet sees a GPU, else cpu)")
    p.add_argument(
        "--emulate-step-ms",
        metavar="MS|TARGET",
        help="swap the model step for a timed wait: ms per batch, or "
        "resnet50@v100, resnet50@a100, resnet50@h100 (DLIO's published per-batch times)",
    )
    p.add_argument("--budget", dest="budget_s", type=float, default=60.0, help="seconds for the search (default 60)")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    _add_pipeline_args(p)
    _add_source_args(p, modes=("file", "fastfile"))
    p.add_argument("--json", metavar="FILE", help="also write the whole result as JSON (atomically)")
    p.add_argument(
        "--toml", metavar="FILE", help="write the recommendation as a sweep config (gluonbench sweep --config)"
    )
    p.add_argument(
        "--out",
        metavar="DIR",
        help="also keep a run folder DIR/<UTC>-tune-.../ (runs.jsonl, tune.md/.csv/.json, report.html; "
        "gluonbench report rebuilds it)",
    )
    _add_synthetic_knobs(p)
    p.set_defaults(func=cmd_tune)


def _print_stalled(text: Callable[[], str], what: str) -> None:
    """Print what a stalled command measured before the stall (``text()``); its one error line follows, whatever
    happens here."""
    try:
        print(text(), end="")
    except Exception as err:
        log.info("%s before the stall could not be printed: %r", what, err)


def cmd_tune(args: argparse.Namespace) -> int:
    from gluonbench import api
    from gluonbench.config import TuneSettings
    from gluonbench.ranges import parse_int_list

    options = synthetic_options(args, args.workload)
    source = _source_options(args, options)
    settings = TuneSettings(
        workload="source" if source is not None else args.workload,
        data_dir=args.data_dir,
        download=args.download,
        workers=args.workers,
        thread_pool=args.thread_pool,
        prefetch=args.prefetch,
        pin_memory=args.pin_memory,
        batch_size=args.batch_size,
        batch_sizes=tuple(parse_int_list(args.batch_sizes, what="--batch-sizes")) if args.batch_sizes else None,
        max_workers=args.max_workers,
        ctx=args.ctx,
        emulate_step_ms=args.emulate_step_ms,
        budget_s=args.budget_s,
        seed=args.seed,
        options=source if source is not None else options,
        json_path=args.json,
        toml_path=args.toml,
        pipeline=args.pipeline,
        pipeline_options=_pipeline_options(args),
    ).check()
    warn = _preflight(args, settings.data_dir, settings.ctx, settings.workers, settings.batch_size, settings.options)

    from gluonbench.console import Progress, duration

    _pipeline_first(settings)
    api.check_before_start(settings, args.out)  # what needs no MXNet: before the first line
    progress = Progress("tune", settings.budget_s, "s", timed=True)
    progress.start(
        f"searching DataLoader settings of {_what(settings)} (batch {settings.batch_size}"
        + (f", batch sizes {', '.join(map(str, settings.batch_sizes))}" if settings.batch_sizes else "")
        + f") within a {duration(settings.budget_s)} budget, then a report"
    )

    def on_progress(elapsed: float, budget: float, best: str) -> None:
        warn()
        progress.advance(elapsed, budget, best)

    from gluonbench.engine.deadline import BudgetExceededError
    from gluonbench.monitor.load import LoadMeter

    meter = LoadMeter().start()  # other processes' CPU during the search: one warning at the end if it mattered
    try:
        try:
            result = api.run_tune(settings, on_progress, out=args.out)
        finally:
            progress.close()
    except BudgetExceededError as exc:
        if exc.partial is not None and exc.partial.measured:  # a stall: what was measured before it, then the line
            _print_stalled(exc.partial.to_text, "the tune's evidence")
        raise
    warn()
    print(result.to_text(), end="")
    _print_roofline(lambda: api.roofline_tune(settings, result))
    if args.json:
        print(f"gluonbench: wrote {args.json}", file=sys.stderr)
    if args.toml:
        print(f"gluonbench: wrote {args.toml} (gluonbench sweep --config {args.toml})", file=sys.stderr)
    if result.run_dir is not None:
        print(f"results: {result.run_dir}")
    _load_warning(meter, "tune")
    return 0


CHECK_EXAMPLES = """examples:
  gluonbench check --workload mnist --save-baseline baseline.json       # on main: measure, save
  gluonbench check --workload mnist --baseline baseline.json --max-slowdown 5%   # on a pull request
  gluonbench check --pipeline mypkg.data:make_pipeline --baseline baseline.json --junit check.xml
  gluonbench check --pipeline ci/pipeline.py:make --workers 2 --baseline baseline.json --json check.json
  gluonbench check --pipeline examples/imagefolder_pipeline.py:make --pipeline-option root=data/images \\
      --save-baseline images.json
  gluonbench check --workload synthetic --set cpu_ms=1 --save-baseline synth.json --budget 90
  gluonbench check --pipeline ci/pipeline.py:make --against origin/main   # base branch and working tree side by side

what is measured: the pipeline's probes (full, preprocessing / reading / loader swapped out, the loader
  alone) beside a fixed reference pipeline, the *ruler* (the seed's CNN step fed through a CPU-bound
  transform), in interleaved rounds; every figure is relative to the ruler in the same round, so a slower
  runner or a noisy neighbour is not a regression. Wall and CPU seconds per sample are both recorded.
exit codes: 0 pass (not slower beyond --max-slowdown, 95 % confidence), 1 regression (names the stage:
  preprocessing, read, loader, copy, compute), 2 bad input, 3 inconclusive (too noisy for the budget;
  the message says what --budget would settle it).
--pipeline MODULE:FUNC / path/to/file.py:FUNC: FUNC(**pipeline options) returns a gluonbench PipelineSpec, a
  Pipeline, a Workload, or a dict with dataset (required), transform, decode, net, loss, batch_size, num_workers.
  The options (--set or --pipeline-option) are kept in the baseline; a check with other options says so.
with $GITHUB_STEP_SUMMARY set, a Markdown summary is appended to it.
"""

COMPARE_EXAMPLES = """examples:
  gluonbench compare results/<sweep-A> results/<sweep-B>           # per worker count: samples/s A, B, ratio
  gluonbench compare results/<diag-A> results/<diag-B> --markdown diff.md --html diff.html --json diff.json
  gluonbench compare results/<io-A> results/<io-B> --fail-on-slowdown 5%    # exit 1 on a significant slowdown

rows are matched by their setting (sweep: workers; diagnosis: probe; io: mode/size/layout; tune: the
  candidate's knobs); ratio = B / A of samples/s with a 95 % bootstrap interval over the stored per-run
  (sweep repeats) or per-block (diagnosis probes) figures; flagged when the interval excludes 1.
"""


def _add_check(sub: Any) -> None:
    p = sub.add_parser(
        "check",
        help="CI gate: measure a pipeline beside a ruler; save a baseline or fail on a slowdown",
        epilog=CHECK_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    what = p.add_mutually_exclusive_group()
    what.add_argument("--pipeline", metavar="MODULE:FUNC", help="your pipeline: pkg.mod:func or path/to/file.py:func")
    what.add_argument("--workload", "--dataset", dest="workload", help="a registered workload (default: mnist)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE", help="workload option")
    p.add_argument(
        "--pipeline-option",
        dest="pipeline_option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="keyword argument of the --pipeline function (a TOML value), repeatable; kept in the baseline",
    )
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--baseline", metavar="FILE", help="check against this baseline file")
    mode.add_argument("--save-baseline", metavar="FILE", help="measure and save a baseline file")
    mode.add_argument(
        "--against",
        metavar="REF",
        help="measure REF's code (a git ref of this repository, or another checkout's folder) and the working tree "
        "side by side in one job; robust to a busy machine",
    )
    p.add_argument("--max-slowdown", default="5%", help="allowed slowdown before exit 1 (default: 5%%)")
    p.add_argument("--budget", type=float, default=60.0, help="seconds of measurement (default: 60)")
    p.add_argument("--batch-size", type=int, default=64, help="loader batch size where the pipeline sets none")
    p.add_argument("--workers", type=int, default=0, help="loader workers where the pipeline sets none")
    p.add_argument("--ctx", help="cpu (default without a GPU) or gpu:N")
    p.add_argument("--data-dir", help="where the workload's data are")
    p.add_argument("--json", metavar="FILE", help="write the result as JSON")
    p.add_argument("--junit", metavar="FILE", help="write JUnit XML (a regression fails, inconclusive is skipped)")
    p.set_defaults(func=cmd_check)


def _add_compare(sub: Any) -> None:
    p = sub.add_parser(
        "compare",
        help="diff two run folders of the same kind (sweep, diagnosis, tune, io) with 95 %% intervals",
        epilog=COMPARE_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("run_a", help="the reference run folder (A)")
    p.add_argument("run_b", help="the run folder compared with it (B)")
    p.add_argument("--markdown", metavar="FILE", help="write the comparison as Markdown")
    p.add_argument("--json", metavar="FILE", help="write the comparison as JSON")
    p.add_argument("--html", metavar="FILE", help="write a self-contained HTML table")
    p.add_argument(
        "--fail-on-slowdown", metavar="PCT", help="exit 1 when a row is significantly slower by more, e.g. 5%%"
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="compare results of different pipelines (factory or script, options, data); refused without it",
    )
    p.set_defaults(func=cmd_compare)


class _PlainProgress:
    """Progress for a check: a bar on a terminal, a plain line every 10 s otherwise (no carriage returns)."""

    def __init__(self, desc: str) -> None:
        self.desc = desc
        self.tty = sys.stderr.isatty()
        self.bar = _progress_bar(None, desc, unit="s") if self.tty else None
        self.next_line = 0.0

    def __call__(self, elapsed: float, budget: float) -> None:
        if self.bar is not None:
            self.bar.total = round(budget)
            self.bar.n = min(round(elapsed), round(budget))
            self.bar.refresh()
        elif elapsed >= self.next_line:
            print(f"{self.desc}: {elapsed:.0f}/{budget:.0f} s", file=sys.stderr, flush=True)
            self.next_line = elapsed + 10.0

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def cmd_check(args: argparse.Namespace) -> int:
    from types import SimpleNamespace

    from gluonbench import api
    from gluonbench.check import render
    from gluonbench.config import check_pipeline_settings, parse_overrides

    overrides, pipeline_options = parse_overrides(args.overrides), _pipeline_options(args)
    # every command's rule: a --pipeline function gets --pipeline-option, a workload --set
    check_pipeline_settings(
        SimpleNamespace(
            pipeline=args.pipeline, pipeline_options=pipeline_options, workload="pipeline", options=overrides
        )
    )
    options = pipeline_options if args.pipeline else overrides
    progress = _PlainProgress("check")
    try:
        result = api.check(
            args.pipeline or args.workload or "mnist",
            baseline=args.baseline,
            save=args.save_baseline,
            against=args.against,
            max_slowdown=args.max_slowdown,
            budget_s=args.budget,
            batch_size=args.batch_size,
            num_workers=args.workers,
            ctx=args.ctx,
            options=options,
            data_dir=args.data_dir,
            json_path=args.json,
            junit_path=args.junit,
            summary_path=os.environ.get("GITHUB_STEP_SUMMARY") or None,
            on_progress=progress,
        )
    finally:
        progress.close()
    if args.save_baseline:
        print(render.snapshot_text(result))
        print(f"baseline saved: {args.save_baseline}")
        return 0
    print(render.to_text(result))
    return result.exit_code


def cmd_compare(args: argparse.Namespace) -> int:
    from gluonbench import api
    from gluonbench.check.compare import to_text

    cmp = api.compare(
        args.run_a,
        args.run_b,
        markdown=args.markdown,
        json_path=args.json,
        html=args.html,
        fail_on_slowdown=args.fail_on_slowdown,
        force=args.force,
    )
    print(to_text(cmp))
    return cmp.exit_code


SUBCOMMANDS: list[Callable[[Any], None]] = [
    _add_sweep,
    _add_report,
    _add_diagnose,
    _add_pack,
    _add_verify,
    _add_stream,
    _add_io,
    _add_profile,
    _add_tune,
    _add_check,
    _add_compare,
]


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="gluonbench",
        description="Why is Gluon/MXNet training slow, and how do I make the data pipeline keep up?",
        epilog="examples:\n  gluonbench sweep --workers 0..8\n  gluonbench diagnose --workers 2\n"
        "  gluonbench report results/<run>\n"
        "  gluonbench pack data/images packed/ && gluonbench verify packed/\n"
        "  gluonbench stream packed/ --channel train --channel-dir /tmp/ch --epochs 2\n"
        "  gluonbench io\n"
        "  gluonbench profile -- python train.py\n\n"
        "Run 'gluonbench COMMAND --help' for a command's options and examples.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"gluonbench {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details to stderr")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for add in SUBCOMMANDS:
        add(sub)
    _add_no_preflight(sub)
    return parser


def settings_from_args(args: argparse.Namespace):
    """Defaults < --config < explicit flags < --set."""
    from gluonbench.config import SweepSettings, coerce, load_toml, parse_overrides

    settings = SweepSettings()
    if args.config:
        settings = coerce(settings, load_toml(args.config), source=f"--config {args.config}")
    flags = {
        k: getattr(args, k)
        for k in (
            "workers",
            "workload",
            "data_dir",
            "download",
            "repeat",
            "epochs",
            "max_batches",
            "batch_size",
            "eval_workers",
            "ctx",
            "thread_pool",
            "timeout_s",
            "seed",
            "diagnose",
            "diagnose_budget_s",
            "name",
            *SCALE_FLAGS,
            "prefetch",
            "pin_memory",
            "emulate_step_ms",
            "pipeline",
        )
        if getattr(args, k, None) is not None
    }
    if args.pipeline_option:
        flags["pipeline_options"] = {**settings.pipeline_options, **_pipeline_options(args)}
    flags.update({k: v for k, v in vision_options(args).items() if k != "layout"})
    if args.gpus is not None and args.ctx is None:
        flags["ctx"] = "gpu"
    options = {**settings.options, **({"layout": args.layout} if args.layout else {})}
    source = _source_options(args, options)
    if source is not None:
        flags.update(workload=_source_workload(flags.get("workload", settings.workload)), options=source)
    elif args.layout:
        flags["options"] = options
    settings = coerce(settings, flags, source="command line")
    settings = coerce(settings, parse_overrides(args.overrides), source="--set")
    knobs = synthetic_options(args, settings.workload)
    if knobs:
        settings = coerce(settings, {"options": {**settings.options, **knobs}}, source="command line")
    return settings.check()


def _progress_bar(total: int | None, desc: str, unit: str = "step"):
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover - tqdm is a dependency
        return None
    return tqdm(
        total=total,
        desc=desc,
        unit=unit,
        file=sys.stderr,
        dynamic_ncols=True,
        leave=False,
        disable=not sys.stderr.isatty() and os.environ.get("GLUONBENCH_PROGRESS") != "1",
    )


def cmd_sweep(args: argparse.Namespace) -> int:
    from gluonbench import api
    from gluonbench.console import Progress
    from gluonbench.report.sweep import to_markdown
    from gluonbench.sweeprun.run import seed_line

    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if cmd:
        return _sweep_script(args, cmd)

    settings = None if args.resume else settings_from_args(args)
    if settings is not None:
        warn = _preflight(
            args,
            settings.data_dir,
            settings.ctx,
            max(settings.workers or [0]),
            settings.batch_size,
            settings.options,
            explore=True,
        )
    else:
        warn = _preflight(args, None, None, 0, 1, None, enabled=False)
    _pipeline_first(settings)
    if settings is not None:
        api.check_before_start(settings, args.out, create=False)  # what needs no MXNet first: no import wait
    # then the context, the data set and the workload's options (the folder, its sweep.json and its lock with
    # --resume): bad input is one line, before the first; only a download or a remote store waits for the sweep
    api.check_inputs(settings if settings is not None else api.check_resume(args.resume), reach=False)
    progress = Progress("sweep", _planned_runs(settings), "run")
    progress.start(_sweep_plan(settings, args.resume))
    state: dict[str, Any] = {"bar": None, "last": 0}

    def on_progress(steps: int, planned: int | None) -> None:
        warn()
        # on a terminal, a bar of training steps (with the ETA); the run lines are written above it
        if state["bar"] is None:
            state["bar"] = _progress_bar(planned, "sweep")
            if state["bar"] is not None:
                progress.attach(state["bar"])
        bar = state["bar"]
        if bar is not None and steps > state["last"]:
            bar.update(steps - state["last"])
            state["last"] = steps

    def on_result(result) -> None:
        warn()
        if result.kind == "dist":
            from gluonbench.report.scaling import worker_line

            line = worker_line(result)
        else:
            line = seed_line(result)
        if "profile" in result.extra:
            line += f"; rules fired: {', '.join(result.extra['profile']['triggered']) or 'none'}"
        progress.finished(line)

    try:
        run_dir, summary = api.sweep(
            settings,
            out=args.out,
            resume=args.resume,
            on_result=on_result,
            on_progress=on_progress,
            profile=args.profile,
        )
    finally:
        progress.close()
    warn()
    from gluonbench.report.scaling import ScalingSummary

    if isinstance(summary, ScalingSummary):
        from gluonbench.report.scaling import to_markdown as scaling_markdown

        print(scaling_markdown(summary))
        print(f"results: {run_dir}")
        return 0 if summary.failed == 0 else 1
    # the per-run lines (seed format) went to stderr as each run finished: stdout has the table once
    print(to_markdown(summary))
    _print_roofline(lambda: api.roofline_sweep(settings, summary))
    print(f"results: {run_dir}")
    return 0 if all(r.failed == 0 for r in summary.rows) else 1


def _is_dist(settings: Any) -> bool:
    return str(getattr(settings, "kvstore", "") or "").startswith("dist")


def _planned_runs(settings: Any) -> int | None:
    """Lines a sweep prints: one per run (worker counts x repeats), or with a dist_* kvstore one per
    worker process of each job (sum of --hosts x worker counts x repeats); None when resuming."""
    if settings is None:
        return None
    per_setting = sum(settings.hosts) if _is_dist(settings) else 1
    return len(settings.workers) * settings.repeat * per_setting


def _what(settings: Any) -> str:
    """What a command runs, for its first line: the user's pipeline factory or the registered workload."""
    return f"the pipeline {settings.pipeline}" if getattr(settings, "pipeline", None) else str(settings.workload)


def _pipeline_first(settings: Any) -> None:
    """Import and check a ``--pipeline`` factory before the first line, so bad input stays one line (the
    library's check before measuring reuses the spec kept here: the factory is called once in this process)."""
    if settings is not None and getattr(settings, "pipeline", None):
        from gluonbench import api

        api.check_user_pipeline(settings, keep=True)  # kept: the API's check reuses it (one factory call)


def _sweep_plan(settings: Any, resume: str | None) -> str:
    """The sweep's first line: what runs, and what is known of how long it takes."""
    if settings is None:
        return f"resuming {resume}: the runs it lacks, then the report"
    s = settings
    if _is_dist(s):
        jobs = len(s.workers) * s.repeat * len(s.hosts)
        what = f"{jobs} {s.kvstore} job(s) ({', '.join(map(str, s.hosts))} worker process(es) x loader workers " + (
            f"{', '.join(map(str, s.workers))} x {s.repeat} repeat(s)) of {_what(s)}"
        )
    else:
        what = (
            f"{_planned_runs(s)} run(s) (workers {', '.join(map(str, s.workers))} x {s.repeat} repeat(s)) of {_what(s)}"
        )
    what += (
        f", {s.epochs} epoch(s)"
        + (f" of at most {s.max_batches} batches" if s.max_batches else "")
        + f" at batch {s.batch_size} on {s.ctx}"
    )
    return (
        f"{what}; each run is a fresh process (start-up, training, eval). How long a run takes is known once the "
        "first finishes: each finished run prints the time left"
        + (f" (each run is stopped after {s.timeout_s:g} s)" if getattr(s, "timeout_s", None) else "")
    )


def cmd_diagnose(args: argparse.Namespace) -> int:
    from gluonbench.config import DiagnoseSettings, parse_thresholds

    cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
    if cmd:
        return _diagnose_script(args, cmd)
    if args.loader is not None:
        raise GluonbenchError(
            "--loader N goes with a training command: gluonbench diagnose --loader 2 -- python train.py"
        )
    from gluonbench.monitor.load import LoadMeter
    from gluonbench.workloads.vision_zoo import resolve_workload

    meter = LoadMeter().start()  # other processes' CPU over the whole command: one warning at the end if it mattered

    options = {**synthetic_options(args, args.workload), **vision_options(args)}
    source = _source_options(args, options)
    workload = args.workload
    if source is not None:
        workload, options = _source_workload(args.workload), source
    settings = DiagnoseSettings(
        workload=resolve_workload(workload, options),
        data_dir=args.data_dir,
        download=args.download,
        workers=args.workers,
        batch_size=args.batch_size,
        ctx=args.ctx,
        thread_pool=args.thread_pool,
        pin_memory=args.pin_memory,
        budget_s=args.budget_s,
        seed=args.seed,
        options=options,
        thresholds=parse_thresholds(args.thresholds),
        json_path=args.json,
        pipeline=args.pipeline,
        pipeline_options=_pipeline_options(args),
    ).check()
    warn = _preflight(args, settings.data_dir, settings.ctx, settings.workers, settings.batch_size, settings.options)

    from gluonbench import api
    from gluonbench.console import Progress, duration
    from gluonbench.diagnosis.report import to_text

    _pipeline_first(settings)
    api.check_before_start(settings, args.out)  # what needs no MXNet: before the first line
    progress = Progress("diagnose", settings.budget_s, "s", timed=True)
    progress.start(
        f"timing {_what(settings)} at {settings.workers} worker(s), batch {settings.batch_size}, with each "
        f"pipeline stage swapped for a stand-in, in interleaved rounds within a {duration(settings.budget_s)} budget"
    )

    def on_progress(elapsed: float, budget: float) -> None:
        warn()
        progress.advance(elapsed, budget)

    from gluonbench.engine.deadline import BudgetExceededError

    try:
        try:
            run_dir, d = api.run_diagnosis(settings, out=args.out, on_progress=on_progress)
        finally:
            progress.close()
    except BudgetExceededError as exc:
        if exc.partial is not None:  # a stall: what the rounds before it measured, then the one error line
            partial = exc.partial
            _print_stalled(lambda: to_text(partial), "the diagnosis")
        raise
    warn()
    print(to_text(d), end="")
    if args.json:
        print(f"gluonbench: wrote {args.json}", file=sys.stderr)
    if run_dir is not None:
        print(f"results: {run_dir}")
    _load_warning(meter, "diagnosis")
    return 0


SCRIPT_IGNORES = ("workload", "data_dir", "workers", "batch_size", "ctx", "thread_pool", "pin_memory", "pipeline")


def _diagnose_script(args: argparse.Namespace, cmd: list[str]) -> int:
    """``gluonbench diagnose [options] -- python train.py ARGS``: the script's own loader, step and contexts."""
    from gluonbench import api
    from gluonbench.config import parse_thresholds
    from gluonbench.console import Progress, duration
    from gluonbench.diagnosis.report import to_text

    defaults = build_parser().parse_args(["diagnose"])
    given = [k for k in SCRIPT_IGNORES if getattr(args, k, None) != getattr(defaults, k, None)]
    if given:
        flag = "--dataset" if given[0] == "workload" else "--" + given[0].replace("_", "-")
        raise GluonbenchError(
            f"{flag} does not apply to a training command: the script's own DataLoader, batch size and contexts "
            "are diagnosed as written; change them in the script (or its arguments)"
        )
    thresholds = parse_thresholds(args.thresholds)
    api.check_script(
        cmd, args.budget_s, args.out, args.loader, args.start_timeout_s
    )  # bad input: before the first line
    progress = Progress("diagnose", args.budget_s, "s", timed=True)
    progress.start(
        f"running {' '.join(cmd)} with gluonbench's hooks; once it trains, its training DataLoader's batches are "
        f"swapped for stand-ins in interleaved rounds within a {duration(args.budget_s)} budget, then it is stopped"
    )
    try:
        run_dir, d = api.diagnose_script(
            cmd,
            args.budget_s,
            out=args.out,
            json_path=args.json,
            thresholds=thresholds,
            loader=args.loader,
            start_timeout_s=args.start_timeout_s,
            on_progress=progress.advance,
        )
    finally:
        progress.close()
    print(to_text(d), end="")
    if args.json:
        print(f"gluonbench: wrote {args.json}", file=sys.stderr)
    if run_dir is not None:
        print(f"results: {run_dir}")
    return 0


SWEEP_SCRIPT_FLAGS = ("workload", "data_dir", "batch_size", "epochs", "repeat", "ctx", "pipeline", "resume", "config")


def _sweep_script(args: argparse.Namespace, cmd: list[str]) -> int:
    """``gluonbench sweep --workers 0,2 -- python train.py ARGS``: the script once per worker count."""
    from gluonbench import api
    from gluonbench.ranges import parse_int_list

    given = [k for k in SWEEP_SCRIPT_FLAGS if getattr(args, k, None)]
    if given or args.diagnose:
        flag = (
            "--dataset" if given[:1] == ["workload"] else "--" + (given[0] if given else "diagnose").replace("_", "-")
        )
        raise GluonbenchError(
            f"{flag} does not apply to a training command: the script runs as written, with only its training "
            "DataLoader's num_workers set per run; pass --workers and --max-batches (or change the script's arguments)"
        )
    workers = parse_int_list(args.workers or "0..8")
    max_batches = args.max_batches or 100
    api.check_script(cmd, 60.0, None, args.loader, args.start_timeout_s)  # bad input: before the first line
    print(
        f"sweep: running {' '.join(cmd)} at {', '.join(map(str, workers))} worker(s), a fresh process each, its "
        f"training DataLoader's num_workers set; {max_batches} of its training steps timed per run after warm-up",
        file=sys.stderr,
        flush=True,
    )

    def on_run(run: Any) -> None:
        print(f"sweep: {run.workers} worker(s): {run.samples_per_s:.1f} samples/s", file=sys.stderr, flush=True)

    result = api.sweep_script(
        cmd, workers, max_batches, loader=args.loader, start_timeout_s=args.start_timeout_s, on_run=on_run
    )
    info = result.loader_info
    print(
        f"# gluonbench sweep: {' '.join(cmd)}\n\nDataLoader #{result.loader} of the script ({info.get('dataset')}, "
        f"batch size {info.get('batch_size')}), {max_batches} training steps a run\n"
    )
    best = result.best
    print("| workers | samples/s | step (ms) | steps |\n|---:|---:|---:|---:|")
    for r in result.runs:
        star = " *" if r is best else ""
        print(f"| {r.workers}{star} | {r.samples_per_s:.1f} | {r.step_s * 1000:.1f} | {r.steps} |")
    if best is not None:
        print(f"\nfastest: {best.workers} worker(s) (*): DataLoader(..., num_workers={best.workers})")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from pathlib import Path

    from gluonbench.rundir import rebuild

    if _is_profile(Path(args.run_dir)):
        return _report_profile(args)
    if args.out or args.rule:
        raise GluonbenchError(
            "--out and --rule apply to profile folders only; pass a folder made by gluonbench profile"
        )
    written = rebuild(args.run_dir)
    for path in written:
        if path.suffix == ".md":
            print(path.read_text(encoding="utf-8"))
    print(f"rebuilt: {', '.join(str(p) for p in written)}")
    return 0


DOCTOR_EXAMPLES = """examples:
  gluonbench doctor                                     # this machine: cores, memory, /dev/shm, threads, MXNet build
  gluonbench doctor --data-dir data/images --workers 4 --batch-size 128   # and the data folder, its ceilings
  gluonbench doctor --data-dir data/images --refresh    # measure the ceilings again (else cached per host)
  gluonbench doctor --ctx gpu:0 --json                  # JSON on stdout; exit 1 when any check fails
  gluonbench doctor --json doctor.json --no-ceilings    # the checks alone, in about a second

checks: cores (affinity, cgroup quota), memory (cgroup limit), shm (/dev/shm against workers x prefetch x
  batch bytes), threads (OMP_NUM_THREADS, MXNET_CPU_WORKER_NTHREADS, BLAS), mxnet build (MKLDNN, CUDA, CUDNN,
  NCCL, DIST_KVSTORE), versions (numpy / MXNet shims), data fs (local, tmpfs, NFS/FUSE), page cache (does the
  data set fit in free RAM), gpu (driver, CUDA, GPUs MXNet sees vs NVML, pinned memory).
ceilings (cached in $GLUONBENCH_CACHE or ~/.cache/gluonbench): read MB/s with the page cache bypassed,
  decode img/s per core (mx.image.imdecode of the data set's images), memcpy GB/s per core, H2D GB/s on a GPU.
exit status: 0 no check failed, 1 a check failed, 2 bad input.
"""


def _add_doctor(sub: Any) -> None:
    p = sub.add_parser(
        "doctor",
        help="check this machine's setup (cores, /dev/shm, threads, MXNet build, data folder) and measure its ceilings",
        description="Preflight checks, each ok / warn / fail with the figure and a one-line fix, then this "
        "machine's measured ceilings (disk read, decode per core, memcpy, host-to-device) that diagnose, "
        "sweep and tune compare every stage with.",
        epilog=DOCTOR_EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--data-dir", help="the data set's folder: its file system, size against RAM, read and decode ceilings"
    )
    p.add_argument("--ctx", default="cpu", help="cpu (default), gpu or gpu:N: also check the GPU and measure H2D")
    p.add_argument("--workers", type=int, default=0, help="DataLoader workers you plan to run (default 0)")
    p.add_argument("--batch-size", type=int, default=64, help="batch size you plan to run (default 64)")
    p.add_argument("--prefetch", type=int, help="DataLoader prefetch (default 2 x workers)")
    p.add_argument("--refresh", action="store_true", help="measure the ceilings again instead of using the cache")
    p.add_argument("--no-ceilings", dest="ceilings", action="store_false", help="only the checks; measure nothing")
    p.add_argument("--json", nargs="?", const="-", metavar="FILE", help="JSON on stdout, or into FILE")
    p.set_defaults(func=cmd_doctor)


SUBCOMMANDS.append(_add_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    import json

    from gluonbench import api
    from gluonbench.doctor import DoctorSettings

    settings = DoctorSettings(
        data_dir=args.data_dir,
        ctx=args.ctx,
        workers=args.workers,
        batch_size=args.batch_size,
        prefetch=args.prefetch,
        refresh=args.refresh,
        ceilings=args.ceilings,
    ).check()
    report = api.run_doctor(settings)
    if args.json == "-":
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(report.to_text(), end="")
        if args.json:
            from gluonbench.report.store import atomic_write_text

            atomic_write_text(args.json, json.dumps(report.to_dict(), indent=2))
            print(f"gluonbench: wrote {args.json}", file=sys.stderr)
    return report.exit_code


def _add_no_preflight(sub: Any) -> None:
    """``--no-preflight`` on the commands that run the cheap doctor checks first."""
    for name in ("sweep", "diagnose", "tune"):
        sub.choices[name].add_argument(
            "--no-preflight",
            dest="preflight",
            action="store_false",
            help="skip the cheap doctor checks (cores, /dev/shm, threads, data fs) that run first",
        )


def _preflight(
    args: argparse.Namespace,
    data_dir: Any,
    ctx: Any,
    workers: int,
    batch_size: int,
    options: Any,
    explore: bool = False,
    enabled: bool = True,
) -> Callable[[], None]:
    """Run the cheap doctor checks now (< 1 s); return ``warn()``, which prints any ``fail`` once, as a warning.

    The command calls ``warn()`` once its own validation has passed (its first progress report, or the
    end), so bad input stays one clear line. ``explore``: a sweep tries worker counts above the cores
    on purpose, so the cores check leaves them out (``/dev/shm`` is still checked for the largest).
    """
    lines: list[str] = []
    if enabled and getattr(args, "preflight", True):
        from gluonbench import api

        for c in api.preflight(data_dir, ctx, workers, batch_size, options, explore=explore):
            if c.status == "fail":
                lines.append(
                    f"gluonbench: warning: preflight {c.line()} (gluonbench doctor for all checks; "
                    "--no-preflight skips them)"
                )

    def warn() -> None:
        while lines:
            print(lines.pop(0), file=sys.stderr)

    return warn


def _print_roofline(lines: Callable[[], list[Any]]) -> None:
    """Print roofline lines (:class:`~gluonbench.doctor.roofline.RooflineLine` or their dicts) under a heading."""
    from gluonbench.doctor.roofline import RooflineLine, to_text

    text = to_text([ln if isinstance(ln, RooflineLine) else RooflineLine(**ln) for ln in lines()])
    if text:
        print(text, end="")


_MAIN_PID = os.getpid()


def _raise_interrupt(signum: int, frame: Any) -> None:
    if os.getpid() != _MAIN_PID:
        # a forked DataLoader worker inherits this handler: Pool.terminate() must kill it, not make it unwind
        # (an interrupted worker can block on the pool's queue lock and hang terminate's join forever)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    raise KeyboardInterrupt


def cmd_pack(args: argparse.Namespace) -> int:
    from gluonbench.data.recordio import pack
    from gluonbench.units import format_size, parse_size

    shard_size = parse_size(args.shard_size, "--shard-size")
    result = pack(args.src, args.out_dir, shard_size, args.shuffle, args.seed, args.name, args.split, args.force)
    m = result.manifest
    print(
        f"packed {m.records} records ({format_size(m.bytes)}) into {len(m.shards)} shard(s) in {result.seconds:.2f} s "
        f"({result.mb_per_s:.0f} MB/s): {result.out_dir}"
    )
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from gluonbench.data.recordio import verify
    from gluonbench.units import format_size

    result = verify(args.out_dir)
    print(
        f"ok: {result.shards} shard(s), {result.records} records, {format_size(result.bytes)} verified "
        f"in {result.seconds:.2f} s: {result.out_dir}"
    )
    return 0


def cmd_stream(args: argparse.Namespace) -> int:
    import signal

    from gluonbench.data.store import open_store
    from gluonbench.sources.pipe import Producer, StreamOptions

    def stop(signum: int, frame: Any) -> None:
        raise SystemExit(128 + signum)  # unwinds through the producer's clean-up (FIFO removal)

    signal.signal(signal.SIGTERM, stop)
    options = StreamOptions(
        channel=args.channel,
        channel_dir=args.channel_dir,
        epochs=args.epochs,
        shuffle=args.shuffle,
        seed=args.seed,
        record_wrapper=args.record_wrapper,
        gzip=args.gzip,
        shard_index=args.shard_index,
        shard_count=args.shard_count,
        threads=args.threads,
        open_timeout=args.open_timeout,
        write_timeout=args.write_timeout,
    ).check()

    def on_epoch(stats) -> None:
        note = "" if stats.complete else f" (incomplete: {stats.note})"
        print(
            f"epoch {stats.epoch}: {stats.objects} objects, {stats.bytes} bytes in {stats.seconds:.3f} s "
            f"({stats.mb_per_s:.1f} MB/s){note}",
            flush=True,
        )

    Producer(open_store(args.src, args.endpoint_url), options).run(on_epoch)
    return 0


def cmd_io(args: argparse.Namespace) -> int:
    from gluonbench import api
    from gluonbench.config import IoSettings
    from gluonbench.report.iobench import to_markdown
    from gluonbench.units import parse_size

    def names(text: str) -> tuple[str, ...]:
        return tuple(v.strip() for v in text.split(",") if v.strip())

    settings = IoSettings(
        modes=names(args.modes),
        sizes=names(args.sizes),
        layouts=names(args.layouts),
        small_bytes=parse_size(args.small, "--small"),
        large_bytes=parse_size(args.large, "--large"),
        file_size=parse_size(args.file_size, "--file-size"),
        shard_size=parse_size(args.shard_size, "--shard-size") if args.shard_size else None,
        src=args.src,
        s3_uri=args.s3_uri,
        endpoint_url=args.endpoint_url,
        epochs=args.epochs,
        batch_size=args.batch_size,
        threads=args.threads,
        stage=args.stage,
        page_cache=args.page_cache,
        drop_caches=args.drop_caches,
        shuffle=args.shuffle,
        seed=args.seed,
        work_dir=args.work_dir,
        mnist_dir=args.mnist_dir,
        timeout_s=args.timeout_s,
        name=args.name,
        preset=args.preset,
        image_size=args.image_size,
        emulate_step_ms=args.emulate_step_ms,
    ).check()

    from gluonbench.console import Progress

    cells = len(settings.modes) * len(settings.sizes) * len(settings.layouts)
    api.check_before_start(settings, args.out, create=False)  # what needs no MXNet: before the first line
    progress = Progress("io", cells, "cell")
    progress.start(
        f"{cells} cell(s): modes {', '.join(settings.modes)} x sizes {', '.join(settings.sizes)} x layouts "
        f"{', '.join(settings.layouts)}, {settings.epochs} epoch(s) each; the data sets are generated first "
        "(reused with --work-dir); each finished cell prints the time left"
    )

    def on_result(r) -> None:
        c = r.cell
        what = f"{c['mode']:>8} {c['size']:>5} {c['layout']:>6}"
        if r.ok:
            au = f", AU {r.emulated['au']:.0%}" if r.emulated else ""
            progress.finished(
                f"{what}: start-up {r.startup_s:.3f} s, {r.read_mb_per_s:.0f} MB/s, {r.samples_per_s:.0f} samples/s, "
                f"total {r.total_s:.2f} s{au}"
            )
        else:
            progress.finished(f"{what}: failed ({r.error})")

    run_dir, summary = api.io_benchmark(settings, out=args.out, on_result=on_result)
    print(to_markdown(summary))
    print(f"results: {run_dir}")
    return 0 if all(r.get("status") == "ok" for r in summary.rows) else 1


def _load_warning(meter: Any, what: str) -> None:
    """After a measurement: one line when other processes' load was enough to change it (monitor.load)."""
    from gluonbench.monitor.load import warning

    line = warning(meter.stop(), what)
    if line:
        print(line, file=sys.stderr)


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so that Python's own flush at exit does not fail on a closed pipe again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def main(argv: list[str] | None = None) -> int:
    ensure_standard_streams()  # a closed stdin/stdout/stderr is /dev/null: no file or pipe opened later takes 0-2
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING, format="gluonbench: %(levelname)s: %(message)s"
    )
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    from gluonbench.names import use_flags

    use_flags()  # messages name the flags (--budget), not the Python arguments (budget_s)
    from gluonbench.engine.deadline import exit_hard_when_stuck

    exit_hard_when_stuck()  # a step stuck in native code past budget + grace ends this process, not only its command
    # SIGTERM (a scheduler, `kill`) stops as cleanly as Ctrl-C: finished runs kept, report rebuilt
    global _MAIN_PID
    _MAIN_PID = os.getpid()
    signal.signal(signal.SIGTERM, _raise_interrupt)
    signal.signal(signal.SIGHUP, _raise_interrupt)  # a closed terminal or ssh session: the same clean stop
    from gluonbench.scratch import SHORT_ROOT, sweep_stale

    sweep_stale()  # scratch folders of a gluonbench run killed with -9 (their owner is gone)
    if os.path.realpath(tempfile.gettempdir()) != SHORT_ROOT:
        sweep_stale(SHORT_ROOT)  # where a run's TMPDIR goes when its own folder's path is too long for a socket
    try:
        check_environment()  # before MXNet is imported: a thread count or GLUONBENCH_* value it cannot use
        return args.func(args)
    except BrokenPipeError:
        # the reader of our output went away (`gluonbench compare A B | head -1`): what it read is all it wanted
        _quiet_stdout()
        return 141  # 128 + SIGPIPE, as a shell reports a command its pipe's reader ended
    except GluonbenchError as exc:
        print(f"gluonbench: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        if hasattr(args, "resume"):  # only the commands that have --resume may suggest it
            print(
                "gluonbench: interrupted; every finished run is kept (see runs.jsonl; resume with --resume RUN_DIR)",
                file=sys.stderr,
            )
        else:
            print("gluonbench: interrupted; nothing more was measured (run the command again)", file=sys.stderr)
        return 130
