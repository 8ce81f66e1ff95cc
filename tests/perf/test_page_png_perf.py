"""PNG encoding of a rendered page: docab's writer against Pillow's default (run with -m perf).

The figures of record come from ``python -m docab_benchmark.mmlongbench.corpus.perf`` (whole dev set);
these micro-benchmarks show the encoder alone, on the same pixels, and check they decode identically.
"""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from docab_benchmark.mmlongbench.corpus.png import encode_png

pytestmark = pytest.mark.perf


@pytest.fixture(scope="module")
def page_pixels(tmp_path_factory: pytest.TempPathFactory) -> np.ndarray:
    import pypdfium2 as pdfium

    from docab_benchmark.suite import ensure_suite

    suite = ensure_suite(tmp_path_factory.mktemp("suite") / "suite")
    document = pdfium.PdfDocument(str(Path(suite) / "documents" / "suite-annual-report.pdf"))
    return np.ascontiguousarray(document[2].render(scale=2.0, rev_byteorder=True).to_numpy())


def test_docab_png_writer(benchmark, page_pixels: np.ndarray) -> None:
    data = benchmark(encode_png, page_pixels)
    assert np.array_equal(np.asarray(Image.open(io.BytesIO(data))), page_pixels)


def test_pillow_default_png(benchmark, page_pixels: np.ndarray) -> None:
    image = Image.fromarray(page_pixels)

    def save() -> bytes:
        buffer = io.BytesIO()
        image.save(buffer, format="PNG")
        return buffer.getvalue()

    data = benchmark(save)
    assert np.array_equal(np.asarray(Image.open(io.BytesIO(data))), page_pixels)
