"""Errors a user can fix: the CLI prints them as one line and exits 2."""

from __future__ import annotations

from collections.abc import Mapping

from gluonbench import names


class GluonbenchError(Exception):
    """Bad input or a missing prerequisite.

    The message names the problem and the fix in one line; the CLI prints it to
    stderr as ``gluonbench: error: <message>`` and exits with status 2.

    The error carries the parameters its message names (:attr:`params`, e.g. ``("budget_s",)``) and its raw
    message (:attr:`raw`), so that whoever shows it words them: ``str(exc)`` for this process's audience
    (``budget_s`` from Python), :meth:`worded` for either (the CLI: ``--budget``). See :mod:`gluonbench.names`.
    """

    raw: str
    """the message as raised, its parameters marked (:func:`gluonbench.names.param`)"""
    params: tuple[str, ...]
    """the parameters (Python names) the message names"""

    def __init__(self, message: object = "", *args: object) -> None:
        raw = message if isinstance(message, str) else str(message)
        self.raw = raw
        self.params = names.params(raw)
        super().__init__(names.render(raw) if isinstance(message, str) else message, *args)
        self._said = self.args[0] if isinstance(message, str) and not args else None

    def append(self, text: str) -> None:
        """End the message with ``text`` (what was kept before the error, say), its parameters marked too."""
        self._reword(self.raw + text)

    def prepend(self, text: str) -> None:
        """Begin the message with ``text`` (where the error happened, say), its parameters marked too: the error
        keeps its type and everything else it carries."""
        self._reword(text + self.raw)

    def _reword(self, raw: str) -> None:
        self.raw = raw
        self.params = names.params(self.raw)
        self.args = (names.render(self.raw), *self.args[1:])
        self._said = self.args[0]

    def worded(self, flags: bool, rename: Mapping[str, str] | None = None) -> str:
        """The message with its parameters as command-line flags (``flags=True``) or as Python arguments;
        ``rename`` words the parameters it holds its own way (``{"budget_s": "--gluonbench-budget"}``)."""
        if len(self.args) != 1 or self.args[0] != getattr(self, "_said", None):
            return str(self)  # its arguments were set another way since it was made: as they are now
        return names.render(self.raw, flags, rename)


class DataError(GluonbenchError):
    """A data set file is missing, truncated or not what it claims to be."""
