"""Pacing against a loopback provider enforcing a requests-per-minute limit: the figures of the
models README's Pacing section.

    uv run python -m tests.perf.pacing_limits

Both wire formats; time runs sixty times faster for client and stub (tests/harness/test_pacing_stub.py),
so the simulated minutes include sixty times the real overhead of each call: the wall time is an
upper bound, the counts are what matters. Prints, per case: failed calls, 429s, requests received,
the busiest minute of requests received and accepted, simulated and real seconds.
"""

from __future__ import annotations

import time

from tests.harness.test_pacing_stub import FastClock, LimitedProvider, run_calls
from tests.support.llm_stub import LLMStub, Protocol

CASES: list[tuple[int, int, dict[str, int]]] = [
    (100, 60, {"rpm": 55, "concurrency": 16}),  # calls, the provider's rpm, the model options
    (60, 30, {"concurrency": 8}),
]


def main() -> None:
    protocols: tuple[Protocol, ...] = ("openai", "anthropic")
    for protocol in protocols:
        for calls, rpm, options in CASES:
            clock = FastClock()
            provider = LimitedProvider(clock, rpm=rpm)
            started = time.monotonic()
            with LLMStub(responder=provider) as stub:
                turns = run_calls(stub, protocol, clock, calls, **options)
            failed = sum(isinstance(turn, BaseException) for turn in turns)
            print(
                f"{protocol} provider {rpm} rpm, {calls} calls, {options}: failed {failed}, "
                f"429s {provider.refused}, received {len(provider.received)}, busiest minute "
                f"{provider.busiest_minute(provider.received)} received / "
                f"{provider.busiest_minute(provider.accepted)} accepted, "
                f"{clock.monotonic():.0f} s simulated, {time.monotonic() - started:.1f} s real"
            )


if __name__ == "__main__":
    main()
