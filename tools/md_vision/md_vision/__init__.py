"""md-vision: heading indexes of markdown files and folders, and reads with images inlined.

Three faces over one core:

- the MCP stdio server ``md-vision`` (see ``md-vision --help``);
- this library API (imports stay lazy, so ``import md_vision`` is cheap)::

      from md_vision import index_markdown_text, index_markdown_file, index_markdown_folder
      index = index_markdown_text("# Guide\\n![diagram](setup.png)\\n")
      index.rows  # (IndexRow(heading='# Guide', line_start=1, image_count=1, char_count=...),)

      from md_vision import read_markdown
      result = read_markdown("guide.md", allow_paths=["docs"], section="## Setup")
      result.blocks  # TextBlock / ImageBlock, in document order; result.source_text is the source

- :class:`MdVision`, the async service the server itself calls (``await vision.read(...)``).
"""

from __future__ import annotations

from importlib import import_module
from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("md-vision")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0.0.0"

_EXPORTS = {
    "index_markdown_text": "md_vision.library",
    "index_markdown_file": "md_vision.library",
    "index_markdown_folder": "md_vision.library",
    "read_markdown": "md_vision.library",
    "FileIndex": "md_vision.index",
    "FileProblem": "md_vision.index",
    "IndexRow": "md_vision.index",
    "format_index": "md_vision.index",
    "Document": "md_vision.document",
    "Heading": "md_vision.document",
    "ImageRef": "md_vision.document",
    "StructureEnd": "md_vision.document",
    "parse_document": "md_vision.document",
    "MdVision": "md_vision.service",
    "ReadResult": "md_vision.results",
    "IndexResult": "md_vision.results",
    "TextBlock": "md_vision.results",
    "ImageBlock": "md_vision.results",
    "ToolFailure": "md_vision.results",
    "Limits": "md_vision.settings",
    "Settings": "md_vision.settings",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'md_vision' has no attribute {name!r}")
    return getattr(import_module(module), name)
