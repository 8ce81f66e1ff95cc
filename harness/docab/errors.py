"""The library's error types: each carries a message fit to show a user as one line.

The CLI (``docab.cli``) prints any :class:`DocabError` without a traceback; library callers
catch the specific type they can act on.
"""

from __future__ import annotations


class DocabError(Exception):
    """A failure the user can act on (bad input, missing file, unusable config or run folder)."""

    exit_code = 2


class RunError(DocabError):
    """A run cannot start or go on: the dataset, the models, the MCP servers or the run folder."""
