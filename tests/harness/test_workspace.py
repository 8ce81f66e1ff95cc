"""The sample's workspace: only the converted document, at a neutral path, pristine for every sample."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from docab.runner.workspace import DocumentPool, WorkspaceError, WorkspaceSlot, snapshot
from tests.harness.corpus import write_document


@pytest.fixture
def corpus(tmp_path: Path) -> tuple[Path, Path]:
    a = write_document(tmp_path / "corpus" / "ANSWER-IS-42 annual report")
    b = write_document(tmp_path / "corpus" / "other", title="Other")
    return a, b


def slot_in(tmp_path: Path) -> WorkspaceSlot:
    root = tmp_path / "ws"
    root.mkdir()
    return WorkspaceSlot(root, DocumentPool(tmp_path / "pool"))


def test_only_the_document_is_visible_under_a_neutral_name(tmp_path: Path, corpus: tuple[Path, Path]) -> None:
    (corpus[0] / "secret-link").symlink_to(tmp_path)  # a symlink in the corpus is never followed
    slot = slot_in(tmp_path)
    document = slot.prepare(corpus[0])
    assert os.listdir(slot.root) == ["document"]
    names = sorted(str(p.relative_to(slot.root)) for p in slot.root.rglob("*"))
    assert names == [
        "document",
        "document/document.md",
        "document/pages",
        *(f"document/pages/page-000{i}.png" for i in (1, 2, 3)),
    ]
    assert "ANSWER" not in "".join(names) and not (document / "meta.json").exists()
    assert (document / "document.md").read_text() == (corpus[0] / "document.md").read_text()


def test_the_arms_of_a_question_reuse_one_copy(tmp_path: Path, corpus: tuple[Path, Path]) -> None:
    slot = slot_in(tmp_path)
    slot.prepare(corpus[0])
    assert slot.reusable(corpus[0]) and not slot.reusable(corpus[1])
    slot.prepare(corpus[0])
    slot.prepare(corpus[1])
    slot.prepare(corpus[0])  # back to the first document: its pristine copy comes from the pool
    assert slot.pool.copies == 2
    assert (slot.document / "document.md").read_text() == (corpus[0] / "document.md").read_text()


def test_a_stray_file_beside_the_document_is_removed(tmp_path: Path, corpus: tuple[Path, Path]) -> None:
    slot = slot_in(tmp_path)
    slot.prepare(corpus[0])
    (slot.root / "notes.txt").write_text("left by a server")
    assert not slot.reusable(corpus[0])
    slot.prepare(corpus[0])
    assert os.listdir(slot.root) == ["document"]


def test_a_changed_copy_is_never_reused(tmp_path: Path, corpus: tuple[Path, Path]) -> None:
    slot = slot_in(tmp_path)
    slot.prepare(corpus[0])
    (slot.document / "pages" / "cache.bin").write_bytes(b"x")  # something wrote into the document
    assert not slot.reusable(corpus[0])
    slot.prepare(corpus[1])
    slot.prepare(corpus[0])
    assert slot.pool.copies == 3  # the changed copy was discarded, a fresh one made
    assert not (slot.document / "pages" / "cache.bin").exists()
    assert snapshot(slot.document) == snapshot(slot.document)


def test_a_copy_changed_while_pooled_is_discarded_when_taken(
    tmp_path: Path, corpus: tuple[Path, Path]
) -> None:
    # Copies are checked when taken, not when given back: a change made after give_back (a lingering
    # process writing into the folder) must still never reach a sample.
    slot = slot_in(tmp_path)
    slot.prepare(corpus[0])
    slot.prepare(corpus[1])  # corpus[0]'s copy goes back to the pool
    (pooled,) = [folder for folder, _ in slot.pool._free[corpus[0]]]
    # Replaced (a new file), as a writer using write-then-rename would: an in-place write would reach
    # the corpus itself through the hard link (see harness/workspace.py).
    (pooled / "document.md").unlink()
    (pooled / "document.md").write_text("tampered")
    slot.prepare(corpus[0])
    assert slot.pool.copies == 3  # the tampered copy was discarded, a fresh one made
    assert (slot.document / "document.md").read_text() != "tampered"
    assert not pooled.exists()


def test_a_document_that_was_not_converted_is_a_clear_error(tmp_path: Path) -> None:
    empty = tmp_path / "corpus" / "broken"
    empty.mkdir(parents=True)
    with pytest.raises(WorkspaceError, match=r"no document\.md"):
        slot_in(tmp_path).prepare(empty)
