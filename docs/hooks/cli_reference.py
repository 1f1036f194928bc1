"""MkDocs hook: the command-line reference is generated from gluonbench's argparse parser at build time.

A page holding the marker ``<!-- cli-reference -->`` gets, in its place, ``gluonbench --help`` and each
subcommand's ``--help`` (options, defaults and examples exactly as the parser prints them), so the
reference can never drift from the code.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

MARKER = "<!-- cli-reference -->"
REPO = Path(__file__).resolve().parents[2]


def cli_reference() -> str:
    """Markdown: the top-level help, then one section per subcommand with its help."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    os.environ["COLUMNS"] = "100"  # argparse wraps to the terminal: a fixed width for a stable page
    from gluonbench.cli import build_parser

    parser = build_parser()
    parts = ["## gluonbench", "", "```text", parser.format_help().rstrip(), "```", ""]
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for name, p in sub.choices.items():
        parts += [f"## gluonbench {name}", "", "```text", p.format_help().rstrip(), "```", ""]
    return "\n".join(parts)


def on_page_markdown(markdown: str, page, config, files) -> str:
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, cli_reference())
