"""Text-only mode: images become notes that say what and where they were; nothing else changes."""

from __future__ import annotations

from docab.messages import Image, Message, Reasoning, Text, ToolCall, ToolResult
from docab.models.text_only import describe_omitted_image, strip_images
from tests.harness.model_fakes import png


def test_note_names_the_file_and_its_size() -> None:
    note = describe_omitted_image(png(1584, 2048, name="doc/pages/page-0003.png"))
    assert note == "[image omitted: page-0003.png, 1584x2048; this model cannot see images]"


def test_unnamed_and_unreadable_images_are_still_described() -> None:
    unnamed = png(10, 20)
    assert describe_omitted_image(unnamed).startswith(
        f"[image omitted: image/png {unnamed.sha256[:12]}, 10x20;"
    )
    broken = Image(data=b"\x89PNG but not really", media_type="image/png", name="x.png")
    assert (
        describe_omitted_image(broken)
        == "[image omitted: x.png, unreadable image data; this model cannot see images]"
    )


def test_strip_images_touches_only_images_and_keeps_everything_else() -> None:
    call = ToolCall("c1", "read", {"path": "p.png"})
    messages = [
        Message(role="user", blocks=(Text("look"), png(2, 2, name="a.png"))),
        Message.assistant("ok", (call,), (Reasoning(text="r", signature="s"),)),
        Message.tool("c1", ToolResult(blocks=(png(3, 4, name="b.png"),), is_error=False)),
        Message.user("plain"),
    ]
    stripped = strip_images(messages)
    assert stripped[0].blocks == (
        Text("look"),
        Text("[image omitted: a.png, 2x2; this model cannot see images]"),
    )
    assert stripped[1] is messages[1] and stripped[3] is messages[3]
    assert stripped[2].tool_call_id == "c1" and stripped[2].text.startswith("[image omitted: b.png, 3x4;")
    assert not any(isinstance(b, Image) for m in stripped for b in m.blocks)
    assert any(isinstance(b, Image) for b in messages[0].blocks)  # the caller's history is untouched
