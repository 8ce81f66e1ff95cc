"""PDF to a markdown corpus (``docab convert``): one folder per PDF with document.md, page images, figures, meta.json.

Entry points: ``convert_corpus`` (see ``runner``), ``corpus_index(out_dir)`` (doc_id -> folder), the
``Converter`` interface (see ``model``) and ``get_converter(name)``; ``PdfiumConverter`` is the default.
"""

from __future__ import annotations

from docab_benchmark.mmlongbench.corpus.model import (
    ConversionError,
    Converter,
    DocumentInfo,
    Figure,
    PageContent,
    RenderSettings,
    TextLine,
)
from docab_benchmark.mmlongbench.corpus.registry import available_converters, get_converter
from docab_benchmark.mmlongbench.corpus.runner import (
    ConversionReport,
    DocumentResult,
    Progress,
    convert_corpus,
    corpus_index,
)

__all__ = [
    "ConversionError",
    "ConversionReport",
    "Converter",
    "DocumentInfo",
    "DocumentResult",
    "Figure",
    "PageContent",
    "Progress",
    "RenderSettings",
    "TextLine",
    "available_converters",
    "convert_corpus",
    "corpus_index",
    "get_converter",
]
