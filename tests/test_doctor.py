"""gluonbench doctor: each fail produced for real, the ceilings measured and cached, preflight, the roofline."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO, assert_one_clear_line, run_cli, run_clis
from faults import run_in_tmpfs


def _checks(proc: subprocess.CompletedProcess) -> dict[str, dict]:
    assert "Traceback" not in proc.stderr, proc.stderr
    data = json.loads(proc.stdout)
    assert data["exit_code"] == proc.returncode
    assert proc.returncode == (1 if any(c["status"] == "fail" for c in data["checks"]) else 0)
    return {c["name"]: c for c in data["checks"]}


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("GLUONBENCH_CACHE", str(folder))
    return folder


def _clean_threads_env() -> dict[str, str]:
    return {k: "" for k in ("OMP_NUM_THREADS", "MXNET_CPU_WORKER_NTHREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


def test_small_dev_shm_fails_the_shm_check(cache):
    proc = run_in_tmpfs(
        {"/dev/shm": "64k"},
        ["doctor", "--workers", "4", "--batch-size", "256", "--no-ceilings", "--json"],
        env={"GLUONBENCH_CACHE": str(cache)},
    )
    checks = _checks(proc)
    shm = checks["shm"]
    assert proc.returncode == 1
    assert shm["status"] == "fail", shm
    assert shm["data"]["total"] == 64 * 1024
    assert shm["data"]["need"] > shm["data"]["free"]
    assert "--shm-size" in shm["fix"]


def test_one_core_affinity_with_four_workers_fails_the_cores_check(cache):
    env = dict(os.environ, GLUONBENCH_CACHE=str(cache), PYTHONUNBUFFERED="1")
    cpu = sorted(os.sched_getaffinity(0))[0]
    proc = subprocess.run(
        [sys.executable, "-m", "gluonbench", "doctor", "--workers", "4", "--no-ceilings", "--json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        preexec_fn=lambda: os.sched_setaffinity(0, {cpu}),
        timeout=120,
    )
    cores = _checks(proc)["cores"]
    assert proc.returncode == 1
    assert cores["status"] == "fail", cores
    assert cores["data"]["affinity"] == 1 and cores["data"]["usable"] == 1
    assert "at most 1" in cores["fix"]


def test_data_folder_on_tmpfs_fails_and_the_read_ceiling_says_how_it_read(tmp_path, cache):
    data = tmp_path / "data"
    proc = run_in_tmpfs(
        {str(data): "200m"},
        ["doctor", "--data-dir", str(data), "--json"],
        env={"GLUONBENCH_CACHE": str(cache)},
        before=f"head -c 3000000 /dev/urandom > {data}/blob.bin",
        timeout=300,
    )
    checks = _checks(proc)
    fs = checks["data fs"]
    assert fs["status"] == "fail" and fs["data"]["fstype"] == "tmpfs", fs
    assert proc.returncode == 1
    read = json.loads(proc.stdout)["ceilings"]["read"]
    # whichever way it read (older kernels refuse O_DIRECT on tmpfs, newer accept it), the note says it is RAM
    assert read["value"] > 0 and ("fadvise" in read["method"] or "O_DIRECT" in read["method"]), read
    assert "RAM, not a disk" in read["note"], read
    assert not list(data.glob(".gluonbench-read-ceiling-*"))  # the scratch file is gone (the mount is too)


def test_omp_threads_beyond_the_cores_fail_the_threads_check(cache):
    usable = len(os.sched_getaffinity(0))
    env = {**_clean_threads_env(), "OMP_NUM_THREADS": str(8 * usable), "GLUONBENCH_CACHE": str(cache)}
    proc = run_cli("doctor", "--no-ceilings", "--json", env=env, timeout=120)
    threads = _checks(proc)["threads"]
    assert threads["status"] == "fail", threads
    assert f"OMP_NUM_THREADS={usable}" in threads["fix"]


def test_plain_doctor_lists_every_check_and_exits_by_its_failures(cache):
    # the JSON and the text at once: each doctor's load check may see the other as load, which it reports as such
    proc, text = run_clis(("doctor", "--no-ceilings", "--json"), ("doctor", "--no-ceilings"), env=_clean_threads_env(),
                          timeout=120)  # fmt: skip
    checks = _checks(proc)
    assert set(checks) == {
        "cores",
        "load",
        "memory",
        "shm",
        "threads",
        "mxnet build",
        "versions",
        "data fs",
        "page cache",
        "gpu",
    }
    assert all(c["status"] in ("ok", "warn", "fail") and c["figure"] for c in checks.values())
    assert all(c["fix"] for c in checks.values() if c["status"] != "ok")
    assert "MKLDNN" in checks["mxnet build"]["figure"]
    load = checks["load"]["data"]  # measured, not assumed: ok or warn by the other processes' CPU it saw
    assert checks["load"]["status"] == ("warn" if load["busy"] else "ok") and 0 <= load["other_cores"] <= load["cores"]
    assert text.stdout.count("\n") >= 10 and "ok," in text.stdout.splitlines()[-1]


def test_bad_input_is_one_clear_line(tmp_path):
    workers, data_dir, ctx, batch_size = run_clis(
        ("doctor", "--workers", "-1"),
        ("doctor", "--data-dir", str(tmp_path / "nope")),
        ("doctor", "--ctx", "tpu"),
        ("doctor", "--batch-size", "0"),
    )
    assert_one_clear_line(workers, "--workers must be 0 or more")
    assert_one_clear_line(data_dir, "--data-dir", "not a folder")
    assert_one_clear_line(ctx, "--ctx", "cpu, gpu")
    assert_one_clear_line(batch_size, "--batch-size")


def test_ceilings_are_measured_on_the_real_images_cached_and_refreshed(tmp_path, cache, jpeg_dir):
    from gluonbench.doctor.ceilings import cache_file, measure_ceilings

    data = tmp_path / "images"
    shutil.copytree(jpeg_dir, data)
    first = measure_ceilings(str(data))
    assert not first.cached
    assert first.read.value > 0 and "O_DIRECT" in first.read.method  # ext4/xfs here: the page cache is bypassed
    assert first.decode.value > 0 and "imdecode" in first.decode.method
    assert first.memcpy.value > 0
    assert not list(data.glob(".gluonbench-read-ceiling-*"))
    assert cache_file().is_file() and str(cache) in str(cache_file())
    again = measure_ceilings(str(data))
    assert again.cached and again.decode.value == first.decode.value
    fresh = measure_ceilings(str(data), refresh=True)
    assert not fresh.cached and fresh.decode.measured_utc >= first.decode.measured_utc


def test_idx_data_has_no_decode_ceiling(tmp_path, cache, mnist_dir):
    from gluonbench.doctor.ceilings import measure_decode

    c = measure_decode(str(mnist_dir))
    assert c.value is None and "decode does not apply" in c.note


def test_preflight_is_under_a_second_and_reports_what_the_doctor_reports():
    from gluonbench import api

    start, cpu = time.monotonic(), time.process_time()
    checks = api.preflight(None, "cpu", 2 * 1024, 64)
    # under a second of work (CPU time: what the checks cost, whatever else runs on the cores), and it never
    # waits on anything (wall time, bounded loosely enough for a machine busy with other jobs)
    assert time.process_time() - cpu < 1.0
    assert time.monotonic() - start < 10.0
    names = [c.name for c in checks]
    assert names == ["cores", "memory", "shm", "threads", "data fs"]
    assert next(c for c in checks if c.name == "cores").status == "fail"  # 2048 workers on any machine here


def test_roofline_advice_changes_near_and_far_from_the_ceiling():
    from gluonbench.doctor.ceilings import Ceiling, Ceilings
    from gluonbench.doctor.roofline import decode_line, read_line

    c = Ceilings("h", "/d", read=Ceiling("read", 400.0, "MB/s", "m"), decode=Ceiling("decode", 500.0, "img/s", "m"))
    near = decode_line(900.0, 2, 2, c)
    far = decode_line(200.0, 2, 2, c)
    assert near.bound == "hardware" and "CPU-bound" in near.text and "90 %" in near.text
    assert far.bound == "software" and "software-bound" in far.text and "20 %" in far.text
    slow = read_line(38e6, c, "loader_only")
    fast = read_line(380e6, c, "loader_only")
    assert slow.bound == "software" and "latency-bound" in slow.text and "10 %" in slow.text
    assert fast.bound == "hardware" and "disk-bound" in fast.text
    cached = read_line(0.0, c, "loader_only")
    assert cached.bound == "none" and "page cache" in cached.text


def test_diagnose_runs_preflight_and_prints_the_roofline(tmp_path, cache, jpeg_dir, no_leaks):
    data = tmp_path / "images"
    shutil.copytree(jpeg_dir, data)
    usable = len(os.sched_getaffinity(0))
    env = {**_clean_threads_env(), "MXNET_CPU_WORKER_NTHREADS": str(8 * usable), "GLUONBENCH_CACHE": str(cache)}
    args = ["diagnose", "--dataset", "imagefolder", "--data-dir", str(data), "--budget", "6", "--batch-size", "16"]
    # with the same diagnosis, --no-preflight at once (the least budget: what is checked is that it measures, exit 0,
    # and no preflight line comes)
    proc, quiet = run_clis(
        (*args, "--json", str(tmp_path / "d.json")), (*args[:-4], "--budget", "2", *args[-2:], "--no-preflight"), env=env,
        timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    stored = json.loads((tmp_path / "d.json").read_text())["analysis"]["roofline"]
    assert [r["text"] for r in stored] == [
        line.strip() for line in proc.stdout.split("gluonbench doctor):\n")[1].splitlines()
    ]
    assert "gluonbench: warning: preflight [fail] threads: MXNET_CPU_WORKER_NTHREADS" in proc.stderr
    out = proc.stdout
    assert "roofline (each stage against this machine's measured ceiling" in out
    roof = out[out.index("roofline (") :].splitlines()
    assert any("decode ceiling" in line or "not measured within the budget" in line for line in roof), roof
    assert any(k in roof[-1] for k in ("verdict", "nearest")), roof  # the verdict against the nearest ceiling
    assert quiet.returncode == 0, quiet.stderr[-2000:]
    assert "preflight" not in quiet.stderr, quiet.stderr[-2000:]


def test_sweep_and_tune_throughput_lines_say_whether_decode_is_the_limit():
    from gluonbench.doctor.ceilings import Ceiling, Ceilings
    from gluonbench.doctor.roofline import for_throughput

    c = Ceilings("h", "/d", decode=Ceiling("decode", 500.0, "img/s", "m"))
    far = for_throughput(50.0, 2, 2, c, "training:")[0]
    near = for_throughput(800.0, 2, 2, c, "training:")[0]
    assert far.bound == "software" and "decode is not the limit" in far.text and "5 %" in far.text
    assert near.bound == "hardware" and "CPU-bound" in near.text
    idx = for_throughput(300.0, 0, 2, None, "training:", "mnist's samples are not decoded images")[0]
    assert idx.fraction is None and "not decoded" in idx.text


def test_a_sweep_past_the_cores_is_not_a_preflight_fail_but_its_shm_need_is_checked():
    from gluonbench import api

    checks = {c.name: c for c in api.preflight(None, "cpu", 2 * 1024, 64, explore=True)}
    assert checks["cores"].status != "fail" and "--workers" not in checks["cores"].figure
    assert checks["shm"].data["workers"] == 2 * 1024


def test_sweep_prints_the_preflight_fail_once_and_bad_input_stays_one_line(tmp_path, mnist_dir, no_leaks):
    usable = len(os.sched_getaffinity(0))
    env = {**_clean_threads_env(), "MXNET_CPU_WORKER_NTHREADS": str(8 * usable)}
    base = ["sweep", "--data-dir", str(mnist_dir), "--no-download", "--out", str(tmp_path)]
    proc, bad = run_clis((*base, "--workers", "0", "--max-batches", "2"), (*base, "--dataset", "cifar"), env=env,
                         timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stderr.count("gluonbench: warning: preflight [fail] threads") == 1, proc.stderr
    assert_one_clear_line(bad, "unknown --dataset 'cifar'")


_CACHE_WRITER = """
import logging, sys
from gluonbench.doctor import ceilings

class Fail(logging.Handler):
    def emit(self, record):
        sys.stderr.write(record.getMessage() + "\\n")
        sys.exit(3)

logging.getLogger("gluonbench.doctor.ceilings").addHandler(Fail())
who = sys.argv[1]
for n in range(int(sys.argv[2])):
    ceilings._save_entry(f"/data/{who}/{n}", {"host": who, "memcpy": None, "pad": "x" * 4000})
"""


def test_two_processes_writing_the_ceilings_cache_at_once_keep_every_entry_and_leave_no_temp_file(cache):
    """Two doctors caching at once: every write lands (no shared temporary name to race on), no entry is lost
    (the read-modify-write is locked), the file is always whole JSON, and no temporary file is left."""
    from gluonbench.doctor.ceilings import cache_file

    rounds = 60
    procs = [
        subprocess.Popen([sys.executable, "-c", _CACHE_WRITER, who, str(rounds)], stderr=subprocess.PIPE, text=True)
        for who in ("a", "b")
    ]
    while any(p.poll() is None for p in procs):  # a reader meanwhile never sees half a file
        try:
            text = cache_file().read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        json.loads(text)
    errors = [p.stderr.read() for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errors
    data = json.loads(cache_file().read_text(encoding="utf-8"))
    assert set(data) == {f"/data/{who}/{n}" for who in ("a", "b") for n in range(rounds)}
    assert sorted(p.name for p in cache.iterdir()) == sorted([cache_file().name, cache_file().name + ".lock"])
