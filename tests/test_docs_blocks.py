"""Every code block of README.md and docs/ runs as written, on a machine with no network and nothing
prepared (issue #22): no ``$GLUONBENCH_DATA``, an empty MXNet cache, ``GLUONBENCH_OFFLINE=1``; data come
from what gluonbench ships (MNIST) or makes.

A ```` ```python ```` or ```` ```bash ```` block runs in a fresh temporary folder holding links to the
checkout's ``configs/`` and ``examples/``, with ``gluonbench`` on ``PATH``. The HTML comment on the line
before a block says how:

- ``<!-- run: fast -->``: in the default suite (seconds);
- ``<!-- run: slow -->``, or no comment: with ``-m slow`` (minutes);
- ``<!-- run: skip: REASON -->``: never run (it installs, needs a GPU, ssh hosts, your own files...); the
  reason is required and shown.

A fast block with the same code as an earlier one (the README's first sweep is also the tutorial's) runs
once in the default suite; its copies run with ``-m slow``.

A block with no language (command examples shown as plain text) is not run, but its ``gluonbench``
command lines are checked like the others'.

In the default suite every block is also checked without running it: Python compiles, bash parses
(``bash -n``), and every ``gluonbench ...`` command line is accepted by the real argument parser, so a
renamed flag fails here at once. The site itself builds with ``mkdocs build --strict`` when MkDocs is
installed (``pip install -e ".[docs]"``).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO

FENCE = re.compile(
    r"(?:^<!--\s*run:\s*(?P<mode>fast|slow|skip)(?::\s*(?P<why>[^>]*?))?\s*-->\s*\n)?^```(?P<lang>python|bash|)[ \t]*\n"
    r"(?P<code>.*?)^```\s*$",
    re.S | re.M,
)


@dataclass(frozen=True)
class Block:
    path: str
    line: int
    lang: str
    mode: str
    why: str
    code: str

    @property
    def id(self) -> str:
        return f"{self.path}:{self.line}"


def blocks() -> list[Block]:
    files = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    out = []
    for f in files:
        text = f.read_text(encoding="utf-8")
        for m in FENCE.finditer(text):
            line = text.count("\n", 0, m.start("lang")) + 1
            out.append(
                Block(
                    str(f.relative_to(REPO)),
                    line,
                    m["lang"] or "shown",
                    "shown" if not m["lang"] else m["mode"] or "slow",
                    (m["why"] or "").strip(),
                    textwrap.dedent(m["code"]),
                )
            )
    return out


BLOCKS = blocks()


def _gluonbench_commands(code: str) -> list[list[str]]:
    """The ``gluonbench ...`` command lines of a bash block, as argument lists (comments dropped,
    continuations joined; each ``&&``/``|``/``;`` part on its own)."""
    joined = re.sub(r"\\\n\s*", " ", code)
    out = []
    for raw in joined.splitlines():
        try:
            words = shlex.split(raw, comments=True)
        except ValueError:
            continue
        part: list[str] = []
        for w in [*words, "&&"]:
            if w in ("&&", "||", "|", ";"):
                if part[:1] == ["gluonbench"]:
                    out.append(part[1:])
                part = []
            else:
                part.append(w)
    return out


def test_the_docs_have_runnable_blocks_and_every_skip_says_why():
    assert len(BLOCKS) >= 10
    assert any(b.mode == "fast" for b in BLOCKS) and any(b.path.startswith("docs/") for b in BLOCKS)
    for b in BLOCKS:
        if b.mode == "skip":
            assert len(b.why) >= 10, f"{b.id}: say why the block does not run: <!-- run: skip: REASON -->"


@pytest.mark.parametrize("block", BLOCKS, ids=lambda b: b.id)
def test_every_block_parses_and_its_commands_are_accepted(block, capsys):
    if block.lang == "python":
        compile(block.code, block.id, "exec")
        return
    if block.lang == "bash":
        proc = subprocess.run(["bash", "-n"], input=block.code, text=True, capture_output=True)
        assert proc.returncode == 0, f"{block.id}: {proc.stderr}"
    from gluonbench.cli import build_parser

    parser = build_parser()
    for argv in _gluonbench_commands(block.code):
        # a placeholder (results/<UTC>-profile-x, $RUN) stands for a path: any path parses alike
        argv = [re.sub(r"<[^>]*>|\$\{?\w+\}?", "X", a) for a in argv]
        try:
            parser.parse_args(argv)
        except SystemExit as exc:
            if exc.code not in (0, None):  # --help and --version exit 0
                pytest.fail(f"{block.id}: gluonbench {shlex.join(argv)}: {capsys.readouterr().err.strip()}")


def _bare_env(tmp_path: Path) -> dict[str, str]:
    """No prepared data: no GLUONBENCH_DATA, an empty MXNet cache, no network; gluonbench on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "gluonbench"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m gluonbench "$@"\n')
    shim.chmod(0o755)
    python = bin_dir / "python"  # a shim, not a link: a link would lose the virtual environment
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    python.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GLUONBENCH_", "MXNET_HOME"))}
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        PYTHONPATH=str(REPO),
        MXNET_HOME=str(tmp_path / "mxnet-home"),
        GLUONBENCH_OFFLINE="1",
        # an empty cache, as on a first run, but not the user's ~/.cache/gluonbench
        GLUONBENCH_CACHE=str(tmp_path / "gluonbench-cache"),
        PYTHONUNBUFFERED="1",
    )
    return env


def run_block(block: Block, tmp_path: Path) -> subprocess.CompletedProcess:
    work = tmp_path / "work"
    work.mkdir()
    for name in ("configs", "examples"):
        (work / name).symlink_to(REPO / name)
    env = _bare_env(tmp_path)
    cmd = (
        [sys.executable, "-c", block.code] if block.lang == "python" else ["bash", "-euo", "pipefail", "-c", block.code]
    )
    return subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, timeout=1200)


def _run(block: Block, tmp_path: Path) -> None:
    proc = run_block(block, tmp_path)
    assert proc.returncode == 0, f"{block.id} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]


def _fast_and_copies() -> tuple[list[Block], list[Block]]:
    """The fast blocks, each code once; and the fast blocks that repeat an earlier one's code."""
    first: dict[tuple[str, str], Block] = {}
    copies = []
    for b in BLOCKS:
        if b.mode == "fast":
            if (b.lang, b.code) in first:
                copies.append(b)
            else:
                first[(b.lang, b.code)] = b
    return list(first.values()), copies


FAST, FAST_COPIES = _fast_and_copies()


@pytest.mark.parametrize("block", FAST, ids=lambda b: b.id)
def test_fast_block_runs(block, tmp_path, no_leaks):
    _run(block, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("block", [b for b in BLOCKS if b.mode == "slow"] + FAST_COPIES, ids=lambda b: b.id)
def test_slow_block_runs(block, tmp_path, no_leaks):
    _run(block, tmp_path)


def test_the_site_builds_strict_and_offline(tmp_path):
    pytest.importorskip("mkdocs", reason='the docs extra: pip install -e ".[docs]"')
    pytest.importorskip("material", reason='the docs extra: pip install -e ".[docs]"')
    site = tmp_path / "site"
    env = dict(os.environ, PYTHONPATH=str(REPO), NO_MKDOCS_2_WARNING="1")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-d", str(site)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    pages = {p: p.read_text(encoding="utf-8") for p in site.rglob("*.html")}
    external = {
        m for text in pages.values() for m in re.findall(r'<(?:script|link)[^>]+(?:src|href)="(https?://[^"]+)"', text)
    }
    assert not external, f"the site loads from the network: {sorted(external)}"
    assert not any("fonts.googleapis" in t or "fonts.gstatic" in t for t in pages.values())
    cli = (site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    import argparse

    from gluonbench.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for name in sub.choices:
        assert f"gluonbench {name}" in cli, f"the generated CLI reference lacks {name}"
    api = (site / "reference" / "python" / "index.html").read_text(encoding="utf-8")
    assert "budget_s" in api and "TuneResult" in api
