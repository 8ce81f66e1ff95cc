"""Converters by name. ``pypdfium2`` ships with docab; others plug in with ``register_converter``.

A converter is any picklable object meeting ``model.Converter``: a layout-aware one (docling,
MinerU) returns ``TextLine`` records with ``heading`` set from its own layout analysis and
writes the page images itself (``PdfiumConverter._render_page`` can be reused for that). None is
bundled: their models are large and they are not installed here.
"""

from __future__ import annotations

from collections.abc import Callable

from docab_benchmark.mmlongbench.corpus.model import ConversionError, Converter, RenderSettings

ConverterFactory = Callable[[RenderSettings], Converter]

_FACTORIES: dict[str, ConverterFactory] = {}


def register_converter(name: str, factory: ConverterFactory) -> None:
    _FACTORIES[name] = factory


def _pdfium(settings: RenderSettings) -> Converter:
    from docab_benchmark.mmlongbench.corpus.pdfium import PdfiumConverter

    return PdfiumConverter(settings)


register_converter("pypdfium2", _pdfium)


def available_converters() -> list[str]:
    return sorted(_FACTORIES)


def get_converter(name: str = "pypdfium2", settings: RenderSettings | None = None) -> Converter:
    factory = _FACTORIES.get(name)
    if factory is None:
        raise ConversionError(f"unknown converter {name!r}; available: {', '.join(available_converters())}")
    return factory(settings or RenderSettings())
