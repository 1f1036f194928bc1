"""Errors a user can fix: the CLI prints them as one line and exits 2."""

from __future__ import annotations


class GluonbenchError(Exception):
    """Bad input or a missing prerequisite.

    The message names the problem and the fix in one line; the CLI prints it to
    stderr as ``gluonbench: error: <message>`` and exits with status 2.
    """


class DataError(GluonbenchError):
    """A data set file is missing, truncated or not what it claims to be."""
