"""Fixtures for markfetch: a loopback site reachable under the allowed name ``site.test``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace

import pytest

from markfetch.config import Settings, load_settings
from markfetch.service import Markfetch
from tests.support.http_server import LocalServer

SITE = "site.test"


class FakeResolver:
    """``site.test`` and ``other.test`` resolve to loopback; everything else fails like a DNS miss."""

    def __init__(self) -> None:
        self.table = {SITE: ["127.0.0.1"], "other.test": ["127.0.0.1"]}

    async def resolve(self, host: str, port: int) -> list[str]:
        if host not in self.table:
            raise OSError("no such host")
        return self.table[host]


@pytest.fixture
def server() -> Iterator[LocalServer]:
    with LocalServer() as s:
        yield s


@pytest.fixture
def settings() -> Settings:
    """Settings allowing only ``site.test`` to reach internal (here: loopback) addresses."""
    return replace(load_settings({}), allow_hosts=(SITE,), timeout_ms=5000)


def site_url(server: LocalServer, path: str, host: str = SITE) -> str:
    return f"http://{host}:{server.port}{path}"


def run_document(settings: Settings, url: str, *, raw: bool = False, cache=None) -> str:
    async def go() -> str:
        async with Markfetch(settings, resolver=FakeResolver(), cache=cache) as service:
            return await service.document(url, raw=raw)

    return asyncio.run(go())
