"""The library's error types: each carries a message fit to show a user as one line.

Messages speak of the library's own terms (``limit must be at least 1``), never of a command-line
flag: the CLI (``docab.cli``) checks its flags itself and words those errors for them, and prints any
:class:`DocabError` without a traceback. Library callers catch the specific type they can act on::

    DocabError            anything a user can fix (exit code 2 in the CLI)
    ├── ConfigError       a run config that cannot be used; names the file and the key
    │   └── ModelConfigError (docab.models.config)  a model table that cannot work
    ├── RunError          a run that cannot start or go on
    │   ├── DatasetError  the questions or their converted documents cannot be loaded
    │   └── StoreError (docab.log.store)  the run folder cannot be used as asked
    ├── ManifestError (docab.log.manifest)  a manifest.json that cannot be read
    └── MergeError (docab.log.merge)  run folders that cannot be merged
"""

from __future__ import annotations


class DocabError(Exception):
    """A failure the user can act on (bad input, missing file, unusable config or run folder)."""

    exit_code = 2


class ConfigError(DocabError):
    """A config that cannot be used; the message names the file and the key."""


class RunError(DocabError):
    """A run cannot start or go on: the dataset, the models, the MCP servers or the run folder."""


class DatasetError(RunError):
    """The configured questions, or the converted documents they are about, cannot be loaded."""
