"""Transcripts: the full conversation of one sample, stored apart from the records.

One JSON file per (arm, question, epoch) at ``transcripts/<arm>/<qid>.e<epoch>.json`` (the qid
made safe for a file name), referenced by ``RunRecord.transcript``: a
:class:`docab.log.events.Transcript` (the layout, its events and its version are defined there).
Images are stored once per run, by content hash, under ``images/<sha256>.<ext>``, and referenced
by path.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable
from typing import Any

from docab.log.events import TRANSCRIPT_VERSION, Event, ToolDefinition, Transcript, image_path
from docab.messages import Image, ToolSpec

__all__ = ["TRANSCRIPT_VERSION", "ImageSink", "image_path", "transcript_document", "transcript_path"]

ImageSink = Callable[[Image], str]
"""Stores an image at ``image_path(image)`` in the run folder and returns that path."""

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def transcript_path(arm: str, qid: str, epoch: int) -> str:
    """A file name per (arm, question, epoch) that no other triple shares: names changed to be safe
    on disk (``doc.pdf#3`` and ``doc.pdf_3`` both become ``doc.pdf_3``) get a hash of the original."""
    return f"transcripts/{_safe_name(arm, 'arm')}/{_safe_name(qid, 'question')}.e{epoch}.json"


def _safe_name(name: str, fallback: str) -> str:
    safe = _UNSAFE.sub("_", name).strip("._") or fallback
    if safe == name:
        return safe
    return f"{safe}-{hashlib.sha256(name.encode('utf-8')).hexdigest()[:8]}"


def transcript_document(
    *,
    run_id: str,
    arm: str,
    qid: str,
    epoch: int,
    model: str,
    system: str,
    tools: Iterable[ToolSpec],
    events: Iterable[Event],
    store_image: ImageSink,
) -> dict[str, Any]:
    """The transcript as JSON data, ready to write; its images are handed to ``store_image`` first.

    Raises ValueError when the sink stores an image elsewhere than the path the transcript names.
    """
    transcript = Transcript(
        run_id=run_id,
        arm=arm,
        qid=qid,
        epoch=epoch,
        model=model,
        system=system,
        tools=[ToolDefinition.of(t) for t in tools],
        events=list(events),
    )
    for image in transcript.images():
        stored = store_image(image)
        if stored != image_path(image):
            raise ValueError(
                f"the image sink stored {image_path(image)} as {stored}; transcripts name the former"
            )
    return transcript.model_dump(mode="json")
