"""Small checks shared by the commands: names that must stay names, files that must be what they claim."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

from gluonbench.errors import DataError, GluonbenchError
from gluonbench.names import param

_IMAGE_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\xff\xd8\xff", "JPEG"),
    (b"\x89PNG\r\n\x1a\n", "PNG"),
    (b"BM", "BMP"),
    (b"GIF87a", "GIF"),
    (b"GIF89a", "GIF"),
    (b"II*\x00", "TIFF"),
    (b"MM\x00*", "TIFF"),
)


def check_seed(seed: int, what: str | None = None) -> int:
    """A random seed numpy and MXNet both take: a whole number in 0 .. 2**32 - 1 (``what``: its name in the
    message, default ``seed``, ``--seed`` from the CLI)."""
    from gluonbench.settings import SETTINGS

    if isinstance(seed, float):  # a seed is a whole number as given, never a float that equals one
        raise GluonbenchError(f"{what or param('seed')} must be a whole number (got {seed!r})")
    return SETTINGS["seed"].check(seed, what)


def image_kind(data: bytes | memoryview) -> str | None:
    """The image format ``data`` starts with (JPEG, PNG, BMP, GIF, TIFF, WebP), or None."""
    head = bytes(data[:12])
    for magic, kind in _IMAGE_MAGIC:
        if head.startswith(magic):
            return kind
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "WebP"
    return None


def check_image_bytes(data: bytes | memoryview, where: str) -> None:
    """:class:`DataError` when a file named like an image does not hold one."""
    if image_kind(data) is None:
        shown = bytes(data[:8]).hex(" ") or "nothing (empty)"
        raise DataError(
            f"{where} is named like an image but is not one (starts with {shown}); remove or replace it, then re-run"
        )


def outside_of(out_dir: Path, src: Path, what: str) -> None:
    """Refuse ``out_dir`` equal to or inside ``src`` (writing there changes the source for the next run)."""
    out, source = out_dir.resolve(), src.resolve()
    if out == source or source in out.parents:
        raise GluonbenchError(
            f"{what} {out_dir} is inside the source {src}; its shards would become part of the source. "
            "Choose a folder outside it"
        )


NAME_MAX = 255
"""Bytes in one path component (Linux ``NAME_MAX``)."""
PATH_MAX = 4096
"""Bytes in a whole path (Linux ``PATH_MAX``)."""


def check_path(path: str | Path, what: str) -> Path:
    """``path`` as a Path if the OS can take it: UTF-8, components of at most 255 bytes, 4096 in all.

    Checked before any work, so a name the file system refuses fails in one line, not after training.
    """
    text = str(path)
    shown = text if len(text) <= 60 else text[:40] + "..." + text[-12:]
    if not text:
        raise GluonbenchError(f"{what} is empty; give a path")
    if "\x00" in text:
        raise GluonbenchError(f"{what} {shown!r} contains a NUL byte; give a plain path")
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:
        raise GluonbenchError(f"{what} {shown!r} is not valid UTF-8; rename it with UTF-8 characters only") from None
    if len(raw) > PATH_MAX:
        raise GluonbenchError(f"{what} is {len(raw)} bytes long; the limit is {PATH_MAX}: choose a shorter path")
    for part in raw.split(b"/"):
        if len(part) > NAME_MAX:
            raise GluonbenchError(
                f"{what} has a component of {len(part)} bytes ({part[:20].decode(errors='replace')}...); "
                f"the limit is {NAME_MAX}: choose a shorter name"
            )
    return Path(path)


_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<info>[^/@\s]*)@")
SECRET_WORDS = frozenset({"password", "passwd", "passphrase", "secret", "token", "credentials", "apikey"})
"""words that make a key a credential's name, as a whole word of it (``db_password``, ``api_token``), never as a
part of a word (``tokenizer``, ``max_tokens``)"""
SECRET_PAIRS = frozenset({("api", "key"), ("access", "key"), ("private", "key"), ("secret", "key")})
"""two words that together name a credential (``aws_access_key``, ``private_key``; not ``num_keys``)"""
_SHAPES = re.compile(
    r"\b(?:(?:AKIA|ASIA)[0-9A-Z]{16}"  # AWS access key IDs
    r"|gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,}"  # GitHub tokens
    r"|xox[abpors]-[A-Za-z0-9-]{10,}"  # Slack tokens
    r"|sk-[A-Za-z0-9_-]{20,})\b"  # API secret keys of the sk-... shape
)
_ASSIGNMENT = re.compile(r"(?P<key>[A-Za-z_][A-Za-z0-9_.-]*)(?P<eq>=|: ?)(?P<value>[^\s,;&'\"]+)")


REDACTED = "***redacted:"
"""how a redacted value starts; a short SHA-256 of the secret follows"""


def redacted(secret: str) -> str:
    """The stand-in kept for a secret: says it was redacted, with a short hash so two runs can still be told apart."""
    import hashlib

    return f"{REDACTED}{hashlib.sha256(secret.encode('utf-8', 'replace')).hexdigest()[:8]}"


def is_secret_name(key: object) -> bool:
    """Whether ``key`` names a credential (:data:`SECRET_WORDS`, :data:`SECRET_PAIRS`); camelCase counts as words."""
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", str(key)).lower()
    words = [w for w in re.split(r"[^a-z0-9]+", text) if w]
    return any(w in SECRET_WORDS for w in words) or any(p in SECRET_PAIRS for p in itertools.pairwise(words))


def redact_url(text: str) -> str:
    """``text`` with the ``user:password@`` of every URL in it replaced by a redacted stand-in."""

    def stand_in(m: re.Match[str]) -> str:
        info = m.group("info")
        return m.group(0) if info.startswith(REDACTED) else f"{m.group('scheme')}{redacted(info)}@"

    return _USERINFO.sub(stand_in, text)


def redact_text(text: str) -> str:
    """``text`` (a command line, a message) with URL credentials, ``NAME=value`` of credential names and values of
    a known credential shape (AWS key IDs, GitHub and Slack tokens) replaced by redacted stand-ins."""
    if "@" in text:
        text = redact_url(text)

    def assignment(m: re.Match[str]) -> str:
        if not is_secret_name(m.group("key")) or m.group("value").startswith(REDACTED):
            return m.group(0)
        return f"{m.group('key')}{m.group('eq')}{redacted(m.group('value'))}"

    if "=" in text or ":" in text:
        text = _ASSIGNMENT.sub(assignment, text)
    return _SHAPES.sub(lambda m: redacted(m.group(0)), text)


def redact(value: object, key: object = None) -> object:
    """``value`` (JSON-like: dicts, lists, strings) with every secret in it redacted: the values under credential
    names (:func:`is_secret_name`, at any depth), credentials in URLs, and values of a known credential shape."""
    if key is not None and is_secret_name(key) and value not in (None, "", [], {}) and not isinstance(value, bool):
        if isinstance(value, dict | list | tuple):
            return redacted(json_text(value))
        return value if isinstance(value, str) and value.startswith(REDACTED) else redacted(str(value))
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {k: redact(v, k) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    return value


def json_text(value: object) -> str:
    import json

    return json.dumps(value, sort_keys=True, default=str)
