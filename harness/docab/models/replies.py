"""A model endpoint's reply body is read up to a cap, its Content-Encoding decoded in bounded steps.

The SDKs read a reply whole before looking at it, and their HTTP client decodes each received chunk
into all of its output at once: a 500 MB JSON reply held about 14 GB when parsed, a 2 GiB gzip bomb
(2 MB on the wire) 4 GB, and a 200 MB answer string went on into the transcript. The hook below
runs on every response of the HTTP client docab hands an SDK (:mod:`docab.models.clients`: the
httpx2 clients of the OpenAI and Anthropic SDKs, and the httpx client of ``google-genai``), before
the body is read: a declared ``Content-Length`` over the cap is refused at once, otherwise the
body is decoded here (``docab_mcpguard.BodyDecoder``, about 64 KB at a time) and counted, and the
read stops at :data:`MAX_REPLY_BYTES`. No model reply comes near it: 128k output tokens of JSON are
about 1 MB.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import httpx2

from docab_mcpguard import BodyDecoder, UndecodableBody

MAX_REPLY_BYTES = 16 * 1024 * 1024
"""Most bytes of one reply, on the wire and decoded."""


class UnreadableReply(httpx2.RequestError):
    """A reply body that cannot be read (corrupt or truncated content coding). A request error, as
    the SDKs expect of their transport; the message is fit to show."""


class ReplyTooLarge(UnreadableReply):
    """A reply body over :data:`MAX_REPLY_BYTES`: nothing past the cap was read."""


def _too_large(limit: int, what: str) -> ReplyTooLarge:
    """``what``: ``is larger than``, ``decodes to more than``, ``declares 523,239,585 bytes, over``."""
    return ReplyTooLarge(
        f"the reply {what} docab's limit of {limit / (1024 * 1024):g} MiB for one model reply; nothing "
        "past it was read (no model answer is that large: is base_url a model API, and is it well?)"
    )


class _CappedBody(httpx2.AsyncByteStream, httpx.AsyncByteStream):
    """The decoded body of ``inner``, ending with :class:`ReplyTooLarge` past ``limit`` bytes; a
    stream of either library (each checks that a response's stream is its own kind)."""

    def __init__(self, inner: Any, decoder: BodyDecoder, *, limit: int) -> None:
        self._inner = inner
        self._decoder = decoder
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        wire = decoded = 0
        try:
            async for raw in self._inner:
                wire += len(raw)
                if wire > self._limit:
                    raise _too_large(self._limit, "is larger than")
                self._decoder.feed(raw)
                while piece := self._decoder.pull():
                    decoded += len(piece)
                    if decoded > self._limit:
                        raise _too_large(self._limit, "decodes to more than")
                    yield piece
                    if self._decoder.codings:
                        await asyncio.sleep(0)  # a big decode gives the event loop back between pieces
            self._decoder.finish()
        except UndecodableBody as exc:
            raise UnreadableReply(f"the reply cannot be decoded: {exc}") from None

    async def aclose(self) -> None:
        await self._inner.aclose()


def cap_reply_body(limit: int = MAX_REPLY_BYTES) -> Any:
    """An httpx2 (or httpx) response hook that reads a body at most ``limit`` bytes long (on the wire and
    decoded), decoding its Content-Encoding itself (the header is removed, so the client does not
    decode again)."""

    async def hook(response: httpx2.Response | httpx.Response) -> None:
        encoding = response.headers.get("content-encoding", "")
        declared = response.headers.get("content-length", "")
        if declared.strip().isdigit() and int(declared) > limit:
            raise _too_large(limit, f"declares {int(declared):,} bytes, over")
        try:
            decoder = BodyDecoder(encoding)
        except UndecodableBody as exc:
            raise UnreadableReply(f"the reply cannot be decoded: {exc}") from None
        if "content-encoding" in response.headers:
            del response.headers["content-encoding"]
        response.stream = _CappedBody(response.stream, decoder, limit=limit)

    return hook
