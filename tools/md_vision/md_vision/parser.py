"""The markdown parser: cmark-gfm (C) turns a document into CommonMark XML with source positions.

:mod:`md_vision.document` builds the whole model (headings, images, sections) from this one pass;
nothing else in md-vision parses markdown, so an index and a read can never disagree.

Choices, and why:

- **cmark-gfm, from the** ``cmarkgfm`` **package.** GitHub's C implementation of CommonMark. One
  call parses and renders a document; Python never sees a token, which is where the previous
  pure-Python parser spent its time (``tests/perf/md_vision_bench.py --only parse``).
- **CommonMark plus GFM tables, nothing else.** Tables change what is a heading (``a | b`` /
  ``--|--`` / ``1 | 2`` / ``---`` is a table and a rule, not a setext heading), so they are on. The
  other GFM extensions (autolinks, strikethrough, task lists, the tag filter) change neither
  headings nor images, so they are left off.
- **The XML renderer, not HTML.** In CommonMark XML every piece of the document's own text,
  raw HTML included, is escaped, so every tag in the output is the parser's: a raw ``<h2>`` or
  ``</li>`` in the document cannot pose as structure. The XML also keeps the source position of
  every block (paragraphs of tight lists and HTML blocks included, which HTML output drops), keeps
  image destinations as written (HTML output percent-encodes them), and shows nesting by
  indentation. It is larger than HTML output and takes cmark longer to write; the guarantees
  above are worth that.
- **Our own binding, through ctypes.** ``cmarkgfm``'s helpers (``cmarkgfm/cmark.py``) never free
  what the C library returns: the output string, and with extensions the whole syntax tree, so a
  long-running server would grow with every document. The compiled library inside ``cmarkgfm``
  exports the full cmark-gfm C API, so this module declares the handful of functions it needs and
  frees both (``tests/md_vision/test_parser.py`` checks). ctypes rather than cffi: declaring
  functions with cffi runs pycparser, a noticeable start-up cost in every process, and ctypes
  releases the GIL during each call as well, so threads parse in parallel.

Inline source positions in the XML are not used: cmark-gfm gets them wrong after link reference
definitions, hard line breaks and multi-line link destinations (see :mod:`md_vision.document`).
"""

from __future__ import annotations

import ctypes
import importlib.util
import threading

# cmark.h option bits (stable across cmark releases; a test checks them against cmarkgfm's).
CMARK_OPT_SOURCEPOS = 1 << 1
CMARK_OPT_VALIDATE_UTF8 = 1 << 9
OPTIONS = CMARK_OPT_SOURCEPOS

_EXTENSIONS = (b"table",)


class ParserUnavailable(RuntimeError):
    """The cmark-gfm library could not be loaded; the message says what to reinstall."""


class _FreeFunction(ctypes.Structure):
    # struct cmark_mem { calloc; realloc; free; } from cmark-gfm.h
    _fields_ = (
        ("calloc", ctypes.c_void_p),
        ("realloc", ctypes.c_void_p),
        ("free", ctypes.CFUNCTYPE(None, ctypes.c_void_p)),
    )


class _Cmark:
    """The few cmark-gfm C functions md-vision calls, with their signatures."""

    def __init__(self, path: str) -> None:
        lib = ctypes.CDLL(path)
        pointer = ctypes.c_void_p
        signatures = {
            "cmark_gfm_core_extensions_ensure_registered": (None, []),
            "cmark_find_syntax_extension": (pointer, [ctypes.c_char_p]),
            "cmark_get_default_mem_allocator": (ctypes.POINTER(_FreeFunction), []),
            "cmark_parser_new": (pointer, [ctypes.c_int]),
            "cmark_parser_attach_syntax_extension": (ctypes.c_int, [pointer, pointer]),
            "cmark_parser_feed": (None, [pointer, ctypes.c_char_p, ctypes.c_size_t]),
            "cmark_parser_finish": (pointer, [pointer]),
            "cmark_parser_free": (None, [pointer]),
            "cmark_render_xml": (pointer, [pointer, ctypes.c_int]),
            "cmark_node_free": (None, [pointer]),
        }
        for name, (restype, argtypes) in signatures.items():
            function = getattr(lib, name)  # AttributeError when the build does not export it
            function.restype = restype
            function.argtypes = argtypes
        lib.cmark_gfm_core_extensions_ensure_registered()
        self.extensions = [lib.cmark_find_syntax_extension(name) for name in _EXTENSIONS]
        if not all(self.extensions):
            raise AttributeError("cmark-gfm's table extension is missing")
        self.free = lib.cmark_get_default_mem_allocator().contents.free
        self.lib = lib

    def to_xml(self, data: bytes, options: int) -> bytes:
        lib = self.lib
        parser = lib.cmark_parser_new(options)
        if not parser:
            raise MemoryError("cmark-gfm could not allocate a parser")
        root = None
        try:
            for extension in self.extensions:
                lib.cmark_parser_attach_syntax_extension(parser, extension)
            lib.cmark_parser_feed(parser, data, len(data))
            root = lib.cmark_parser_finish(parser)
            if not root:
                raise MemoryError("cmark-gfm could not parse the document")
            rendered = lib.cmark_render_xml(root, options)
            lib.cmark_node_free(root)  # before copying the output: lower peak memory
            root = None
            if not rendered:
                raise MemoryError("cmark-gfm could not render the document")
            try:
                return ctypes.string_at(rendered)
            finally:
                self.free(rendered)
        finally:
            if root:
                lib.cmark_node_free(root)
            lib.cmark_parser_free(parser)


_lock = threading.Lock()
_loaded: _Cmark | None = None


def _library() -> _Cmark:
    global _loaded
    if _loaded is None:
        with _lock:  # registering the core extensions is not thread-safe in cmark-gfm
            if _loaded is None:
                _loaded = _load()
    return _loaded


def _load(module: str = "cmarkgfm._cmark") -> _Cmark:
    advice = "reinstall md-vision's dependencies (pip install --force-reinstall cmarkgfm)"
    try:
        spec = importlib.util.find_spec(module)
    except ImportError:
        spec = None
    if spec is None or not spec.origin:
        raise ParserUnavailable(f"the cmarkgfm package (cmark-gfm) is not installed: {advice}")
    try:
        return _Cmark(spec.origin)
    except (OSError, AttributeError) as exc:
        raise ParserUnavailable(
            f"cmark-gfm from the cmarkgfm package at {spec.origin} cannot be used ({exc}): {advice}"
        ) from None


def check_parser() -> None:
    """Load the C library now; raises :class:`ParserUnavailable` with advice if it cannot be."""
    _library()


def markdown_to_xml(text: str) -> bytes:
    """The CommonMark XML of ``text`` (UTF-8), with ``sourcepos`` on every node.

    Lines are counted as CommonMark does (``\\n``, ``\\r\\n`` or a lone ``\\r`` ends one); columns
    are 1-based byte offsets into the UTF-8 line. Runs without the GIL for the C part.
    """
    try:
        return _library().to_xml(text.encode("utf-8"), OPTIONS)
    except UnicodeEncodeError:  # lone surrogates: let cmark replace them with U+FFFD
        data = text.encode("utf-8", "surrogatepass")
        return _library().to_xml(data, OPTIONS | CMARK_OPT_VALIDATE_UTF8)
