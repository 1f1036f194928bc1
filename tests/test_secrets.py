"""Secrets given to gluonbench (options, what a factory reports, URLs, command lines) are never stored verbatim."""

from __future__ import annotations

import json
import re

import pytest
from conftest import run_cli

from gluonbench.validate import REDACTED, is_secret_name, redact, redact_text

GITHUB = "ghp_" + "A1b2C3d4" * 5
AWS_ID = "AKIAIOSFODNN7EXAMPLE"


@pytest.mark.parametrize(
    "key",
    ["password", "db_passwd", "aws_secret_access_key", "api_token", "apiKey", "private_key", "access_key",
     "credentials", "SECRET", "hf_token", "client-secret"],
)  # fmt: skip
def test_credential_names(key):
    assert is_secret_name(key)


@pytest.mark.parametrize("key", ["tokenizer", "max_tokens", "num_keys", "key", "keys", "root", "secretary", "mode"])
def test_names_that_only_look_like_credentials(key):
    assert not is_secret_name(key)


def test_values_under_credential_names_and_of_credential_shapes_are_redacted_with_a_short_hash():
    doc = {
        "options": {"password": "hunter2", "max_tokens": 512, "nested": {"api_token": ["a", "b"]}, "mode": "file"},
        "info": {"endpoint": f"https://{AWS_ID}:xyz@minio:9000/b", "note": f"made with {GITHUB}"},
        "command": f"gluonbench sweep --pipeline-option password=hunter2 --pipeline-option max_tokens=512 {GITHUB}",
    }
    out = redact(doc)
    text = json.dumps(out)
    for secret in ("hunter2", GITHUB, AWS_ID, "xyz@"):
        assert secret not in text
    assert out["options"]["max_tokens"] == 512 and out["options"]["mode"] == "file"
    assert re.fullmatch(r"\*\*\*redacted:[0-9a-f]{8}", out["options"]["password"])
    assert out["options"]["nested"]["api_token"].startswith(REDACTED)
    assert "max_tokens=512" in out["command"] and "password=***redacted:" in out["command"]
    # the same secret, the same stand-in: two runs can still be told apart, or matched
    assert redact({"password": "hunter2"}) == redact({"password": "hunter2"}) != redact({"password": "other"})
    assert redact(out) == out  # redacting twice changes nothing
    assert redact_text("tokenizer=bert max_tokens=5") == "tokenizer=bert max_tokens=5"


def test_a_secret_option_is_not_kept_in_any_file_of_a_run(tmp_path):
    factory = tmp_path / "pipe.py"
    factory.write_text(
        "import numpy as np\n"
        "def make(password='', api_token='', samples=64):\n"
        "    from mxnet import gluon\n"
        "    x = np.zeros((samples, 4), dtype='float32')\n"
        "    y = np.zeros((samples,), dtype='float32')\n"
        "    return {'dataset': gluon.data.ArrayDataset(x, y), 'net': lambda: gluon.nn.Dense(2), 'batch_size': 16,\n"
        f"            'info': {{'endpoint': 'https://u:{GITHUB}@host/x'}}}}\n"
    )
    out = tmp_path / "runs"
    proc = run_cli(
        "sweep", "--pipeline", f"{factory}:make", "--pipeline-option", "password=hunter2",
        "--pipeline-option", f"api_token={GITHUB}", "--workers", "0", "--max-batches", "4", "--out", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    files = [p for p in out.rglob("*") if p.is_file()]
    assert files
    for path in files:
        data = path.read_bytes()
        assert b"hunter2" not in data and GITHUB.encode() not in data, path
    assert any(REDACTED.encode() in p.read_bytes() for p in files if p.name == "runs.jsonl")
