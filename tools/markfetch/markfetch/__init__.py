"""markfetch: fetch a URL and return its reader-view markdown, as an MCP server and a CLI.

The extraction core (:func:`markfetch.extract.extract_article`) is importable on its own and does
no I/O; :mod:`markfetch.service` adds fetching, caching and saving; :mod:`markfetch.server` and
:mod:`markfetch.cli` are the two faces. Nothing heavy is imported here.
"""

__version__ = "0.1.0"
