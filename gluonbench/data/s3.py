"""The one place that talks to S3: ``s3://bucket/prefix`` parsing, the boto3 client, :class:`S3Store`.

``endpoint_url`` points the real boto3 client at any S3-compatible server
(MinIO, a local moto server, ...); without it boto3 goes to AWS with its usual
credential chain (environment, ``~/.aws``, instance role). Clients are created
per process (boto3 clients must not cross ``fork``) and shared by threads.

Every call is bounded: a connect timeout of ``CONNECT_TIMEOUT_S``, a read
timeout of ``READ_TIMEOUT_S`` (``GLUONBENCH_S3_TIMEOUT_S`` overrides both), and
``ATTEMPTS`` attempts, so an endpoint that accepts connections and never answers
fails in at most ``ATTEMPTS x (connect + read)`` seconds plus back-off.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from dataclasses import dataclass
from urllib.parse import urlsplit

from gluonbench.data.store import ObjectInfo, Store, safe_key
from gluonbench.errors import DataError
from gluonbench.names import param
from gluonbench.validate import redact_url

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 60.0
ATTEMPTS = 3
TIMEOUT_ENV = "GLUONBENCH_S3_TIMEOUT_S"


def timeouts() -> tuple[float, float]:
    """(connect, read) timeouts in seconds; ``GLUONBENCH_S3_TIMEOUT_S`` caps both."""
    raw = os.environ.get(TIMEOUT_ENV)
    if not raw:
        return CONNECT_TIMEOUT_S, READ_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise DataError(f"{TIMEOUT_ENV}={raw!r} must be a positive number of seconds")
    return min(CONNECT_TIMEOUT_S, value), value


def check_endpoint_url(url: str | None, what: str | None = None) -> str | None:
    """``http(s)://host[:port][/path]`` or None; anything else is one line naming the form to use."""
    what = what or param("endpoint_url")  # the argument as the caller knows it
    if url is None:
        return None
    example = "e.g. http://127.0.0.1:9000"
    if not isinstance(url, str) or not url or any(c.isspace() for c in url):
        raise DataError(f"{what} {url!r} is not a URL; {example}")
    try:
        parts = urlsplit(url)
    except ValueError:  # an unbalanced "[" (an IPv6 literal cut short)
        raise DataError(f"{what} {redact_url(url)!r} is not a URL; {example}") from None
    if parts.scheme not in ("http", "https"):
        raise DataError(f"{what} {url!r} must start with http:// or https://; {example}")
    try:
        port = parts.port
    except ValueError:
        raise DataError(f"{what} {url!r} has an invalid port; {example}") from None
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise DataError(
            f"{what} {redact_url(url)!r} carries credentials (user:password@); they would be stored with the "
            "results: drop them and set AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (or an AWS profile) instead"
        )
    if len(url) > 2048:
        raise DataError(f"{what} is {len(url)} characters long; the limit is 2048, {example}")
    if not parts.hostname or (port is not None and not 0 < port < 65536):
        raise DataError(f"{what} {url!r} names no host (or port 0); {example}")
    return url


@dataclass(frozen=True)
class S3Uri:
    bucket: str
    prefix: str  # "" or ending in "/"

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.prefix}"


def parse_s3_uri(uri: str) -> S3Uri:
    """``s3://bucket/some/prefix`` -> S3Uri("bucket", "some/prefix/")."""
    if not uri.startswith("s3://"):
        raise DataError(f"{uri!r} is not an S3 address; write s3://BUCKET/PREFIX")
    rest = uri[len("s3://") :]
    bucket, _, prefix = rest.partition("/")
    if not bucket:
        raise DataError(f"{uri!r} names no bucket; write s3://BUCKET/PREFIX")
    prefix = prefix.strip("/")
    return S3Uri(bucket, prefix + "/" if prefix else "")


def make_client(endpoint_url: str | None = None, max_pool: int = 32):
    """A boto3 S3 client; ``endpoint_url`` for MinIO or another S3-compatible server."""
    try:
        import boto3
        from botocore.config import Config
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise DataError("S3 sources need boto3: pip install 'gluonbench[s3]' (or pip install boto3)") from exc
    check_endpoint_url(endpoint_url)
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    connect, read = timeouts()
    config = Config(
        max_pool_connections=max_pool,
        retries={"max_attempts": ATTEMPTS, "mode": "standard"},
        connect_timeout=connect,
        read_timeout=read,
    )
    return boto3.client("s3", endpoint_url=endpoint_url, region_name=region, config=config)


def _explain(exc: Exception, uri: str, endpoint_url: str | None) -> DataError:
    """One line naming the problem and the fix for a boto3/botocore failure."""
    from botocore.exceptions import (
        ClientError,
        ConnectTimeoutError,
        EndpointConnectionError,
        NoCredentialsError,
        ReadTimeoutError,
    )

    where = f" at {endpoint_url}" if endpoint_url else ""
    if isinstance(exc, ReadTimeoutError):
        read = timeouts()[1]
        return DataError(
            f"the S3 endpoint{where} accepted the connection but did not answer {uri} within {read:g} s "
            f"({ATTEMPTS} attempts); check {param('endpoint_url')} and the server"
        )
    if isinstance(exc, ConnectTimeoutError):
        return DataError(
            f"cannot connect to the S3 endpoint{where} for {uri} (timed out); check {param('endpoint_url')}"
        )
    if isinstance(exc, NoCredentialsError):
        return DataError(f"no AWS credentials for {uri}; set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or a profile")
    if isinstance(exc, EndpointConnectionError):
        return DataError(
            f"cannot reach the S3 endpoint{where} for {uri}; check {param('endpoint_url')} and the network"
        )
    if isinstance(exc, ClientError):
        code = exc.response.get("Error", {}).get("Code", "")
        if code in ("NoSuchBucket",):
            return DataError(f"bucket of {uri} does not exist{where}; check the bucket name")
        if code in ("NoSuchKey", "404"):
            return DataError(f"{uri} does not exist{where}; check the key")
        if code in ("AccessDenied", "403", "InvalidAccessKeyId", "SignatureDoesNotMatch"):
            return DataError(f"access to {uri} denied{where} ({code}); check the credentials and bucket policy")
        return DataError(f"S3 error on {uri}{where}: {code or exc}")
    return DataError(f"S3 error on {uri}{where}: {type(exc).__name__}: {exc}")


class S3Store(Store):
    """Objects under ``s3://bucket/prefix`` through the real boto3 client."""

    def __init__(self, uri: str, endpoint_url: str | None = None) -> None:
        self.location = parse_s3_uri(uri)
        self.uri = str(self.location)
        self.endpoint_url = check_endpoint_url(endpoint_url)
        self._client = None
        self._pid = 0
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_client"] = None
        state["_pid"] = 0
        state["_lock"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    @property
    def client(self):
        if self._client is None or self._pid != os.getpid():
            with self._lock:
                if self._client is None or self._pid != os.getpid():
                    self._client = make_client(self.endpoint_url)
                    self._pid = os.getpid()
        return self._client

    def fork_safe(self) -> S3Store:
        return S3Store(self.uri, self.endpoint_url)

    def _key(self, key: str) -> str:
        return self.location.prefix + key

    def list(self) -> list[ObjectInfo]:
        from botocore.exceptions import BotoCoreError, ClientError

        out = []
        try:
            pages = self.client.get_paginator("list_objects_v2").paginate(
                Bucket=self.location.bucket, Prefix=self.location.prefix
            )
            for page in pages:
                for item in page.get("Contents", []):
                    key = item["Key"][len(self.location.prefix) :]
                    if not key:
                        continue
                    out.append(ObjectInfo(safe_key(key, self.uri), int(item["Size"])))
        except (BotoCoreError, ClientError) as exc:
            raise _explain(exc, self.uri, self.endpoint_url) from exc
        # folder markers for every folder that holds objects (S3 has none unless a console made them)
        folders = {o.key for o in out if o.is_folder}
        for o in list(out):
            parts = o.key.rstrip("/").split("/")[:-1]
            for i in range(1, len(parts) + 1):
                marker = "/".join(parts[:i]) + "/"
                if marker not in folders:
                    folders.add(marker)
                    out.append(ObjectInfo(marker, 0))
        out.sort(key=lambda o: o.key)
        return out

    def get(self, key: str) -> bytes:
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            return self.client.get_object(Bucket=self.location.bucket, Key=self._key(key))["Body"].read()
        except (BotoCoreError, ClientError) as exc:
            raise _explain(exc, self.describe(key), self.endpoint_url) from exc

    def get_range(self, key: str, start: int, end: int) -> bytes:
        from botocore.exceptions import BotoCoreError, ClientError

        if end <= start:
            return b""
        try:
            body = self.client.get_object(
                Bucket=self.location.bucket, Key=self._key(key), Range=f"bytes={start}-{end - 1}"
            )["Body"]
            return body.read()
        except (BotoCoreError, ClientError) as exc:
            raise _explain(exc, self.describe(key), self.endpoint_url) from exc

    def put(self, key: str, data: bytes) -> None:
        """Upload one object (used to stage benchmark data sets)."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.client.put_object(Bucket=self.location.bucket, Key=self._key(safe_key(key, self.uri)), Body=data)
        except (BotoCoreError, ClientError) as exc:
            raise _explain(exc, self.describe(key), self.endpoint_url) from exc

    def ensure_bucket(self) -> None:
        """Create the bucket if it does not exist (benchmark staging only)."""
        from botocore.exceptions import BotoCoreError, ClientError

        try:
            self.client.head_bucket(Bucket=self.location.bucket)
        except ClientError:
            try:
                self.client.create_bucket(Bucket=self.location.bucket)
            except (BotoCoreError, ClientError) as exc:
                raise _explain(exc, self.uri, self.endpoint_url) from exc
        except BotoCoreError as exc:
            raise _explain(exc, self.uri, self.endpoint_url) from exc
