"""Redirects a model endpoint may send: followed within its origin, refused to any other.

The SDKs follow redirects and strip only ``Authorization`` when one leaves the origin; an API key
sent as ``x-api-key`` (Anthropic), ``x-goog-api-key`` (Gemini) or a gateway header from the
config's ``headers`` went along to whatever host a 307 named, with the prompt. The hook below
runs on every response of the HTTP client docab hands an SDK, before the client follows it.
"""

from __future__ import annotations

from typing import Any

import httpx2

_DEFAULT_PORTS = {"http": 80, "https": 443}


class RedirectRefused(httpx2.RequestError):
    """A model endpoint redirected to another origin; nothing was sent there. A request error,
    as the SDKs expect of their transport (the OpenAI SDK lets any other exception through raw)."""


def _origin(url: Any) -> tuple[str, str, int | None]:
    scheme = str(url.scheme).lower()
    return scheme, str(url.host).lower(), url.port or _DEFAULT_PORTS.get(scheme)


async def refuse_cross_origin_redirects(response: Any) -> None:
    """An httpx / httpx2 response hook: raise :class:`RedirectRefused` when ``response`` redirects
    to another scheme, host or port (https to http included)."""
    location = response.headers.get("location")
    if not location or not 300 <= response.status_code < 400:
        return
    source = response.request.url
    target = source.join(location)
    if _origin(target) != _origin(source):
        raise RedirectRefused(
            f"the endpoint {_shown(source)} redirected to another origin ({_shown(target)}); docab does not "
            "follow it, since the request carries your API key: set base_url to the API's own address"
        )


def _shown(url: Any) -> str:
    return f"{url.scheme}://{url.host}" + (f":{url.port}" if url.port else "")


HOOKS = {"response": [refuse_cross_origin_redirects]}
"""``event_hooks`` for an SDK's HTTP client."""
