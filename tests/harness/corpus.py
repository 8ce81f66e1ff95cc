"""A small hand-made converted document, in the corpus layout docs/architecture.md describes."""

from __future__ import annotations

import io
import json
from pathlib import Path

from PIL import Image as PILImage

PAGES = (
    "### Company overview\nAcme Robotics was founded in 1998 in Lyon.\nIt builds warehouse robots.",
    "### Finances\nRevenue in 2022: 48.5 million euros\nNet margin: 12%\nEmployees: 1,250",
    "### Products\nThe flagship robot is called Hermes.\nHermes carries up to 300 kg.",
)


def png_bytes(color: tuple[int, int, int] = (200, 30, 30), size: tuple[int, int] = (8, 8)) -> bytes:
    buffer = io.BytesIO()
    PILImage.new("RGB", size, color).save(buffer, format="PNG")
    return buffer.getvalue()


def write_document(folder: Path, pages: tuple[str, ...] = PAGES, title: str = "Acme annual report") -> Path:
    """``folder/document.md`` with one ``## Page N`` per page, page images, and ``meta.json``."""
    (folder / "pages").mkdir(parents=True, exist_ok=True)
    lines = [f"# {title}", ""]
    spans = []
    for number, body in enumerate(pages, 1):
        start = len(lines) + 1
        image = f"pages/page-{number:04d}.png"
        (folder / image).write_bytes(png_bytes((number * 40 % 255, 80, 120)))
        lines += [f"## Page {number}", "", f"![Page {number}]({image})", "", *body.splitlines(), ""]
        spans.append([start, len(lines)])
    (folder / "document.md").write_text("\n".join(lines) + "\n")
    meta = {
        "format": "docab-corpus-document/1",
        "source": f"{title}.pdf",
        "page_count": len(pages),
        "pages": [{"page": n, "lines": span} for n, span in enumerate(spans, 1)],
    }
    (folder / "meta.json").write_text(json.dumps(meta))
    return folder


COMPANIES = (
    "Acme Robotics",
    "Borealis Foods",
    "Cobalt Mining",
    "Delta Shipping",
    "Ember Labs",
    "Fjord Energy",
)


def company_pages(index: int) -> tuple[str, ...]:
    name = COMPANIES[index % len(COMPANIES)]
    return (
        f"### Overview\n{name} was founded in {1980 + index} in Lyon.\nIt works in {name.split()[1].lower()}.",
        f"### Staff\nEmployees: {100 * (index + 1)}\nOffices: {index + 2}",
        f"### Products\nThe flagship product is called Model-{index}.\nIt sells in {index + 3} countries.",
    )


def make_dataset(root: Path, documents: int = 2, name: str = "test-suite"):  # type: ignore[no-untyped-def]
    """A small dataset in the harness's own types: ``documents`` converted documents, 4 questions each."""
    from docab.runner.dataset import Dataset, Sample

    samples = []
    for index in range(documents):
        doc_id = f"company-{index}.pdf"
        folder = write_document(
            root / f"company-{index}", company_pages(index), title=COMPANIES[index % len(COMPANIES)]
        )
        name_ = COMPANIES[index % len(COMPANIES)]
        questions = (
            (f"In what year was {name_} founded?", str(1980 + index), "Int", (1,)),
            (f"How many employees does {name_} have?", str(100 * (index + 1)), "Int", (2,)),
            ("What is the flagship product called?", f"Model-{index}", "Str", (3,)),
            (f"Who is the chief executive of {name_}?", "Not answerable", "None", ()),
        )
        for number, (question, answer, answer_format, pages) in enumerate(questions):
            samples.append(
                Sample(
                    qid=f"{doc_id}#{number}",
                    doc_id=doc_id,
                    doc_type="Test",
                    question=question,
                    answer=answer,
                    answer_format=answer_format,
                    evidence_pages=pages,
                    evidence_sources=("Pure-text (Plain-text)",) if pages else (),
                    document_dir=folder,
                )
            )
    return Dataset(name, "1", tuple(samples))


def exact_scorer(gold: str, prediction: str, answer_format: str) -> float:
    """Stands in for the benchmark's scorer: case-insensitive exact match."""
    return float(gold.strip().lower() == prediction.strip().lower())


def write_benchmark_folder(root: Path, documents: int = 2) -> tuple[Path, Path]:
    """The test dataset in MMLongBench-Doc's own layout: ``root/data/samples.json`` (every field a
    string, as in the benchmark) and a converted corpus ``root/corpus``. Returns (data, corpus)."""
    dataset = make_dataset(root / "corpus", documents=documents)
    rows = [
        {
            "doc_id": s.doc_id,
            "doc_type": s.doc_type,
            "question": s.question,
            "answer": s.answer,
            "evidence_pages": str(list(s.evidence_pages)),
            "evidence_sources": str(list(s.evidence_sources)),
            "answer_format": s.answer_format,
        }
        for s in dataset.samples
    ]
    (root / "data").mkdir(parents=True, exist_ok=True)
    (root / "data" / "samples.json").write_text(json.dumps(rows, indent=1))
    return root / "data", root / "corpus"
