"""Counting the provider requests of one tool call, wherever they happen.

The service opens a :class:`CallMeter` around each tool call (a context variable, so concurrent
calls do not mix); the HTTP transport under the SDKs counts every request it sends into it,
retries included, and the Tesseract backend counts each engine run. That count is ``calls`` in
the usage report.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass
class CallMeter:
    requests: int = 0
    error_body_truncated: bool = False


_current: ContextVar[CallMeter | None] = ContextVar("vision_bridge_call_meter", default=None)


def current_meter() -> CallMeter | None:
    return _current.get()


def count_request() -> CallMeter | None:
    meter = _current.get()
    if meter is not None:
        meter.requests += 1
    return meter


@contextlib.contextmanager
def metering(meter: CallMeter) -> Iterator[CallMeter]:
    token = _current.set(meter)
    try:
        yield meter
    finally:
        _current.reset(token)
