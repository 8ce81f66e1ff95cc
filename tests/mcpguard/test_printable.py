"""Messages a stdio server writes are always valid JSON: lone surrogates are escaped on the way out."""

from __future__ import annotations

import json

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from docab_mcpguard.messages import PrintableSendStream, holds_surrogates, printable, printable_message


def test_printable_escapes_only_lone_surrogates() -> None:
    assert printable("bad\udcff.md") == "bad\\xff.md"  # a byte Python read as a surrogate escape
    assert printable("a\ud800b\udfffc") == "a\\ud800b\\udfffc"  # any other lone surrogate
    plain = "café 😀 \\x41"
    assert printable(plain) is plain  # untouched, not copied


def test_a_message_with_a_surrogate_anywhere_is_rewritten_and_keeps_its_shape() -> None:
    response = types.JSONRPCResponse(
        jsonrpc="2.0",
        id=7,
        result={"content": [{"type": "text", "text": "bad\udcff.md"}], "files": {"n\udcffame": ["x", 1]}},
    )
    assert holds_surrogates(response)
    fixed = printable_message(response)
    assert json.loads(fixed.model_dump_json(by_alias=True, exclude_unset=True)) == {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {"content": [{"type": "text", "text": "bad\\xff.md"}], "files": {"n\\xffame": ["x", 1]}},
    }
    error = types.JSONRPCError(jsonrpc="2.0", id=1, error=types.ErrorData(code=-1, message="no \udcff"))
    assert holds_surrogates(error)
    assert json.loads(printable_message(error).model_dump_json())["error"]["message"] == "no \\xff"
    assert not holds_surrogates(types.JSONRPCResponse(jsonrpc="2.0", id=1, result={"text": "café"}))


def test_the_stream_passes_clean_messages_as_they_are_and_fixes_the_others() -> None:
    async def go() -> list[SessionMessage]:
        send, receive = anyio.create_memory_object_stream[SessionMessage](4)
        clean = SessionMessage(types.JSONRPCResponse(jsonrpc="2.0", id=1, result={"text": "ok"}))
        dirty = SessionMessage(
            types.JSONRPCNotification(
                jsonrpc="2.0", method="notifications/message", params={"data": "\udcff"}
            )
        )
        async with PrintableSendStream(send) as stream:
            await stream.send(clean)
            await stream.send(dirty)
        got = [await receive.receive(), await receive.receive()]
        assert got[0] is clean
        return got

    got = anyio.run(go)
    assert (
        got[1]
        .message.model_dump_json(by_alias=True, exclude_unset=True)
        .endswith('"params":{"data":"\\\\xff"}}')
    )
