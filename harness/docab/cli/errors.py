"""Errors that the CLI shows as one line, without a traceback."""

from __future__ import annotations

from docab.errors import DocabError


class CommandError(DocabError):
    """A user-facing failure of a ``docab`` command: bad input, missing file, unusable config."""

    def __init__(self, message: str, *, exit_code: int = 2):
        super().__init__(message)
        self.exit_code = exit_code
