"""One call of each API format through vision-bridge against a loopback stub, at the SDK floors.

Run by ``.ci/check-sdk-floors`` with the interpreter of a fresh venv holding vision-bridge and the
``openai`` and ``anthropic`` releases to check; the repository root goes on sys.path for the test
stub only (tests/support: the standard library, plus brotli and zstd for the bomb, both
vision-bridge dependencies through mcpguard).

    python .ci/sdk_floor_probe.py            # the floors: each format answers, and a provider's
                                             # 1 GiB gzip answer is refused at the decoded cap
    python .ci/sdk_floor_probe.py --below    # releases under the floors: each format fails with
                                             # the one sentence naming the versions

Exits 0 when every check holds, 1 with one line per failure otherwise.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import importlib.metadata
import io
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from PIL import Image

from tests.support.bombs import bomb
from tests.support.http_server import Reply
from tests.support.llm_stub import LLMStub, anthropic_reply, openai_reply
from vision_bridge.backends.base import sdk_rejects_client
from vision_bridge.config import load_settings
from vision_bridge.service import create_service

BOMB_REFUSAL = (
    "[vision_error] api: the provider's response decodes to more, over the limit of 16,777,216 bytes"
)


def _data_url() -> str:
    buffer = io.BytesIO()
    Image.new("RGB", (32, 24), "red").save(buffer, "PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


async def _call(stub: LLMStub, fmt: str, folder: str) -> str:
    base = stub.openai_base_url if fmt == "openai" else stub.anthropic_base_url
    env = {
        "VISION_API_FORMAT": fmt,
        "VISION_API_BASE_URL": base,
        "VISION_API_KEY": "k",
        "VISION_MODEL": "m",
        "VISION_MAX_RETRIES": "1",
        "VISION_CACHE_TTL": "0",
        "VISION_ALLOWED_PATHS": folder,
    }
    service = create_service(load_settings(env, cwd=folder, tempdir=folder, home=Path(folder)))
    try:
        outcome = await service.analyze(_data_url(), "what is it?")
    finally:
        await service.aclose()
    return outcome.text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--below", action="store_true", help="expect the SDKs to reject the client")
    below = parser.parse_args(argv).below
    versions = {name: importlib.metadata.version(name) for name in ("openai", "anthropic", "httpx2")}
    print("sdk floors:", ", ".join(f"{k} {v}" for k, v in versions.items()), "(below)" if below else "")
    failures = []
    with LLMStub() as stub, tempfile.TemporaryDirectory() as folder:
        body, header = bomb("gzip")
        gzip_bomb = Reply(body=body, headers={"Content-Encoding": header}, content_type="application/json")
        for fmt in ("openai", "anthropic"):
            reply = openai_reply("a red square") if fmt == "openai" else anthropic_reply("a red square")
            stub.push(fmt, reply, gzip_bomb)
            if below:
                expected = [sdk_rejects_client(fmt, versions[fmt]).render()]
            else:
                expected = ["a red square", BOMB_REFUSAL]
            for want in expected:
                got = asyncio.run(_call(stub, fmt, folder))
                if got != want:
                    failures.append(f"{fmt} format ({fmt} {versions[fmt]}): expected {want!r}, got {got!r}")
    for failure in failures:
        print("sdk floors: FAILED", failure, file=sys.stderr)
    if not failures:
        done = (
            "each format refused with the sentence naming the versions"
            if below
            else ("one call of each format answered; a 1 GiB gzip answer refused in each")
        )
        print("sdk floors:", done)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
