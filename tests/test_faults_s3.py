"""Faults, class 3 (hangs) and 4 (tracebacks) for S3: a silent endpoint fails in bounded time; bad URLs get one line."""

from __future__ import annotations

import socket
import time

import pytest
from conftest import assert_one_clear_line

CREDS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}


@pytest.fixture
def silent_endpoint():
    """A TCP port that accepts connections (the kernel completes the handshake) and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        server.close()


@pytest.mark.parametrize("command", ["stream", "sweep"])
def test_an_endpoint_that_never_answers_fails_in_bounded_time(cli, silent_endpoint, tmp_path, command, no_leaks):
    env = dict(CREDS, GLUONBENCH_S3_TIMEOUT_S="1")
    args = {
        "stream": ["stream", "s3://bucket/data", "--channel", "train", "--channel-dir", str(tmp_path / "ch")],
        "sweep": ["sweep", "--source", "file", "--uri", "s3://bucket/data", "--workers", "0", "--out", str(tmp_path)],
    }[command]
    t0 = time.monotonic()
    proc = cli(*args, "--endpoint-url", silent_endpoint, env=env, timeout=120)
    elapsed = time.monotonic() - t0
    assert_one_clear_line(proc, silent_endpoint, "did not answer", "--endpoint-url", plan=True)  # found by reaching it
    assert elapsed < 60, elapsed  # 3 attempts x 1 s plus back-off and start-up
    if command == "sweep":
        assert not list(tmp_path.glob("*sweep*")), "no run folder for a source that cannot be read"


@pytest.mark.parametrize(
    "url",
    ["http//127.0.0.1:9000", "ftp://127.0.0.1", "http://:9000", "http://127.0.0.1:99999", "not a url", "http://"],
)
@pytest.mark.parametrize("command", ["stream", "io", "sweep"])
def test_malformed_endpoint_url_is_one_line(cli, tmp_path, url, command):
    args = {
        "stream": ["stream", "s3://bucket/data", "--channel", "train", "--channel-dir", str(tmp_path / "ch")],
        "io": ["io", "--s3-uri", "s3://bucket/io", "--out", str(tmp_path)],
        "sweep": ["sweep", "--source", "file", "--uri", "s3://bucket/data", "--out", str(tmp_path)],
    }[command]
    proc = cli(*args, "--endpoint-url", url, env=CREDS, timeout=120)
    assert_one_clear_line(proc, "--endpoint-url", "http://127.0.0.1:9000")
