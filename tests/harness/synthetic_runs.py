"""Synthetic run folders (manifest.json + records.jsonl) with known contents, for report tests."""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from docab.log.records import RunRecord, ToolCallRecord
from docab.usage import Usage


def make_record(
    arm: str,
    qid: str,
    doc_id: str,
    *,
    epoch: int = 0,
    model: str = "openai/gpt-test",
    status: str = "ok",
    score: float = 1.0,
    gold: str = "42",
    answer: str | None = None,
    answer_format: str = "Int",
    input_tokens: int = 1000,
    cached_tokens: int = 0,
    output_tokens: int = 100,
    extractor_tokens: int = 0,
    wall_time_s: float = 10.0,
    tools: Sequence[str] = ("read",),
    pages_read: Sequence[int] = (),
    pages_seen: Sequence[int] | None = None,  # default: the pages read (a seen page includes reads)
    evidence_pages: Sequence[int] = (3,),
    evidence_sources: Sequence[str] = ("Table",),
    doc_type: str = "Academic paper",
    protocol: str = "submit_tool",
    limit_hit: str | None = None,
    truncated: bool = False,
    run_id: str = "synthetic",
) -> RunRecord:
    usage: list[Usage] = []
    if input_tokens or output_tokens:
        usage.append(
            Usage.from_openai(
                {
                    "prompt_tokens": input_tokens,
                    "completion_tokens": output_tokens,
                    "prompt_tokens_details": {"cached_tokens": cached_tokens},
                },
                model=model,
            )
        )
    if extractor_tokens:
        usage.append(Usage(input_uncached=extractor_tokens, output=10, role="extractor", model=model))
    if answer is None:
        answer = gold if score >= 1 else "wrong"
    return RunRecord(
        run_id=run_id,
        arm=arm,
        qid=qid,
        doc_id=doc_id,
        epoch=epoch,
        model=model,
        status=status,  # type: ignore[arg-type]
        score=score if status == "ok" else 0.0,
        answer_protocol=protocol,  # type: ignore[arg-type]
        raw_answer=answer,
        extracted_answer=answer,
        gold=gold,
        answer_format=answer_format,
        usage=tuple(usage),
        model_time_s=wall_time_s * 0.8,
        tool_time_s=wall_time_s * 0.1,
        wall_time_s=wall_time_s,
        turns=len(tools) + 1,
        tool_calls=tuple(ToolCallRecord(name=t, duration_s=0.5, truncated=truncated) for t in tools),
        limit_hit=limit_hit,
        errors=("boom",) if status == "error" else (),
        pages_read=tuple(pages_read),
        pages_seen=tuple(pages_read if pages_seen is None else pages_seen),
        evidence_pages=tuple(evidence_pages),
        evidence_sources=tuple(evidence_sources),
        doc_type=doc_type,
    )


def write_run(folder: Path, records: Iterable[RunRecord], manifest: dict[str, Any] | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    records = list(records)
    arms = list(dict.fromkeys(r.arm for r in records))
    base = {"run_id": folder.name, "arms": [{"name": a} for a in arms]}
    (folder / "manifest.json").write_text(json.dumps({**base, **(manifest or {})}))
    with (folder / "records.jsonl").open("w") as handle:
        for record in records:
            handle.write(json.dumps(record.to_dict()) + "\n")
    return folder


def random_run(
    folder: Path,
    *,
    documents: int = 12,
    per_document: int = 5,
    arms: Sequence[str] = ("fs", "fs+md-vision"),
    accuracy: Sequence[float] = (0.4, 0.6),
    token_scale: Sequence[float] = (1.0, 1.4),
    model: str = "openai/gpt-test",
    epochs: int = 1,
    seed: int = 0,
) -> Path:
    """A plausible run: document effects, skewed tokens, a few errors, all answer formats and sources."""
    rng = random.Random(seed)
    sources = ["Pure-text (Plain-text)", "Table", "Chart", "Figure", "Generalized-text (Layout)"]
    formats = ["Int", "Str", "Float", "List", "None"]
    records: list[RunRecord] = []
    for d in range(documents):
        doc = f"doc{d:02d}.pdf"
        difficulty = rng.uniform(-0.2, 0.2)
        for q in range(per_document):
            qid = f"{doc}#{q}"
            unanswerable = rng.random() < 0.2
            pages = () if unanswerable else tuple(sorted(rng.sample(range(1, 30), rng.choice([1, 1, 2, 3]))))
            tags = tuple(rng.sample(sources, rng.choice([1, 1, 2])))
            base_tokens = rng.lognormvariate(8.5, 0.6)
            for epoch in range(epochs):
                draw = rng.random()
                for arm, acc, scale in zip(arms, accuracy, token_scale, strict=True):
                    correct = draw < acc + difficulty
                    status = "error" if rng.random() < 0.03 else "ok"
                    gold = "Not answerable" if unanswerable else "7"
                    records.append(
                        make_record(
                            arm,
                            qid,
                            doc,
                            epoch=epoch,
                            model=model,
                            status=status,
                            score=1.0 if correct else 0.0,
                            gold=gold,
                            answer=gold if correct else ("Not answerable" if rng.random() < 0.3 else "8"),
                            answer_format="None" if unanswerable else formats[q % 4],
                            input_tokens=int(base_tokens * scale),
                            cached_tokens=int(base_tokens * scale * 0.3),
                            output_tokens=int(rng.uniform(50, 300)),
                            extractor_tokens=300 if arm == arms[0] else 0,
                            wall_time_s=rng.lognormvariate(2.3, 0.4) * scale,
                            tools=("grep", "read") if arm == arms[0] else ("md_index", "md_read", "md_read"),
                            pages_read=pages if correct else (),
                            evidence_pages=pages,
                            evidence_sources=tags,
                            doc_type=["Academic paper", "Guidebook", "Brochure"][d % 3],
                            protocol="submit_tool",
                        )
                    )
    return write_run(folder, records)
