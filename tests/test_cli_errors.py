"""Bad input: one line on stderr naming the problem and the fix, exit 2, no traceback."""

import os

import pytest
from conftest import assert_one_clear_line


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["sweep", "--workers", "8..0"], ["--workers", "backwards"]),
        (["sweep", "--workers", "a,b"], ["--workers", "0..8:2"]),
        (["sweep", "--workers", "0..8:0"], ["step"]),
        (["sweep", "--ctx", "tpu"], ["--ctx 'tpu'", "cpu, gpu or gpu:N"]),
        (["sweep", "--ctx", "gpu", "--max-batches", "1"], ["MXNet sees no GPU", "--ctx cpu"]),
        (["sweep", "--batch-size", "0"], ["--batch-size must be at least 1"]),
        (["sweep", "--max-batches", "x"], ["--max-batches", "invalid int"]),
        (["sweep", "--dataset", "cifar"], ["unknown --dataset 'cifar'"]),
        (["sweep", "--set", "nonsense=1"], ["unknown setting 'nonsense'"]),
        (["sweep", "--set", "batch_size"], ["KEY=VALUE"]),
        (["sweep", "--config", "/nonexistent.toml"], ["does not exist"]),
        (["sweep", "--resume", "/nonexistent-run"], ["no sweep.json"]),
        (["report", "/nonexistent-run"], ["not a folder"]),
        (["nosuchcommand"], ["invalid choice"]),
        (["sweep", "--bogus"], ["unrecognized arguments"]),
    ],
)
def test_bad_input(cli, args, needles, tmp_path):
    proc = cli(*args, "--out", str(tmp_path)) if args[0] == "sweep" else cli(*args)
    assert_one_clear_line(proc, *needles)


def test_missing_data_offline(cli, tmp_path):
    proc = cli(
        "sweep",
        "--workers",
        "0",
        "--out",
        str(tmp_path),
        env={
            "GLUONBENCH_DATA": str(tmp_path / "d"),
            "MXNET_HOME": str(tmp_path / "mx"),
            "GLUONBENCH_OFFLINE": "1",
            "GLUONBENCH_PACKAGED_DATA": "0",  # the copy shipped in the package would be found
        },
    )
    assert_one_clear_line(proc, "mnist not found", str(tmp_path / "d" / "mnist"), "--data-dir")
    assert not list(tmp_path.glob("*Z-sweep*")), "no run folder for a sweep that never started"


def test_corrupt_data_dir(cli, tmp_path, mnist_dir):
    import shutil

    bad = tmp_path / "bad"
    shutil.copytree(mnist_dir, bad)
    (bad / "train-labels-idx1-ubyte.gz").chmod(0o644)
    data = (bad / "train-labels-idx1-ubyte.gz").read_bytes()
    (bad / "train-labels-idx1-ubyte.gz").write_bytes(data[:1000])
    proc = cli("sweep", "--workers", "0", "--data-dir", str(bad), "--out", str(tmp_path / "out"))
    assert_one_clear_line(proc, "train-labels-idx1-ubyte.gz", "truncated")


def test_bad_config_toml(cli, tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text("[sweep]\nbatch_size = 'big'\n")
    assert_one_clear_line(cli("sweep", "--config", str(cfg)), "batch_size must be a whole number")
    cfg.write_text("[sweep\n")
    assert_one_clear_line(cli("sweep", "--config", str(cfg)), "not valid TOML")


def test_over_core_count_warns(cli, tmp_path, mnist_dir):
    proc = cli("sweep", "--workers", "64", "--batch-size", "0", "--data-dir", str(mnist_dir))
    # the bad batch size is found first: one line, exit 2
    assert_one_clear_line(proc, "--batch-size")


def test_help_has_examples(cli):
    for args in (["--help"], ["sweep", "--help"], ["report", "--help"]):
        proc = cli(*args)
        assert proc.returncode == 0 and "examples:" in proc.stdout


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["diagnose", "--out", "/proc/gb-out", "--budget", "5"], ["cannot create --out /proc/gb-out"]),
        (["tune", "--out", "/proc/gb-out", "--budget", "10"], ["cannot create --out /proc/gb-out"]),
        (["profile", "--out", "/proc/gb-out", "--", "true"], ["cannot create --out /proc/gb-out"]),
        (["io", "--work-dir", "/proc/gb-work"], ["cannot create --work-dir /proc/gb-work"]),
        (["diagnose", "--data-dir", "/nonexistent", "--budget", "5"], ["--data-dir /nonexistent lacks"]),
        (["tune", "--data-dir", "/nonexistent", "--budget", "10"], ["--data-dir /nonexistent lacks"]),
        (["diagnose", "--dataset", "imagefolder", "--budget", "5"], ["imagefolder needs a data set"]),
        (["tune", "--source", "file", "--uri", "/nonexistent", "--budget", "10"], ["/nonexistent does not exist"]),
        (["sweep", "--resume", "/nonexistent/run"], ["/nonexistent/run has no sweep.json"]),
        (["profile", "--", "no-such-program-xyz"], ["command not found: no-such-program-xyz"]),
        (["profile", "--"], ["no command to profile"]),
        (["sweep", "--kvstore", "dist_sync", "--launcher", "ssh", "--hostfile", "/nonexistent"], ["--hostfile"]),
    ],
)
def test_bad_values_that_need_no_measuring_come_before_the_first_line(cli, args, needles):
    """#22: a long command's first line ("diagnose: timing ...") is not printed for input it can refuse at once."""
    assert_one_clear_line(cli(*args), *needles, plan=False)


def test_mxnet_that_fails_inside_a_scipy_for_numpy_2_is_one_line(cli, tmp_path):
    # seen on a GPU machine whose image has scipy 1.18 (numpy >= 2) beside the numpy 1.26 MXNet needs: MXNet's
    # import of scipy.sparse failed with AttributeError, which `sweep` showed as a traceback and the doctor
    # answered with "pip install mxnet==1.9.1". Here a scipy that fails the same way stands first on the path.
    fake = tmp_path / "site"
    (fake / "scipy" / "sparse").mkdir(parents=True)
    (fake / "scipy" / "__init__.py").write_text("")
    (fake / "scipy" / "sparse" / "__init__.py").write_text(
        "raise AttributeError(\"module 'numpy' has no attribute 'long'\")\n"
    )
    (fake / "scipy-1.18.1.dist-info").mkdir()
    (fake / "scipy-1.18.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: scipy\nVersion: 1.18.1\n")
    path = os.pathsep.join([str(fake), os.environ.get("PYTHONPATH", "")])
    proc = cli("sweep", "--ctx", "gpu:0", "--max-batches", "1", "--out", str(tmp_path), env={"PYTHONPATH": path})
    assert_one_clear_line(proc, "scipy 1.18.1 needs numpy >= 2", "pip install 'scipy<1.16'", "no attribute 'long'")
    doctor = cli("doctor", "--no-ceilings", env={"PYTHONPATH": path})
    assert doctor.returncode == 1 and "Traceback" not in doctor.stderr
    assert "[fail] mxnet build: MXNet does not import -> cannot import mxnet: MXNet imports scipy" in doctor.stdout
    assert "[fail] gpu: MXNet does not import, so its GPUs cannot be checked" in doctor.stdout
