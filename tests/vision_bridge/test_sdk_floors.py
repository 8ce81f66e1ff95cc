"""The SDK floors: what pyproject declares, what the code says, and the sentence under them.

The floors themselves are checked by installing them (``bash .ci/check-sdk-floors``, run by
``.ci/run``): one call of each format at the floors, and the sentence below under them.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from vision_bridge.backends.base import SDK_FLOORS, sdk_client, sdk_rejects_client
from vision_bridge.errors import VisionError

ROOT = Path(__file__).resolve().parents[2]


def test_pyproject_declares_the_floors_the_code_names() -> None:
    project = tomllib.loads((ROOT / "tools/vision_bridge/pyproject.toml").read_text())["project"]
    declared = {}
    for dependency in project["dependencies"]:
        match = re.fullmatch(r"(openai|anthropic)>=([\d.]+)", dependency)
        if match:
            declared[match.group(1)] = match.group(2)
    assert declared == SDK_FLOORS


def test_ci_checks_the_floors() -> None:
    assert "bash .ci/check-sdk-floors" in (ROOT / ".ci/run").read_text()


@pytest.mark.parametrize("sdk", ["openai", "anthropic"])
def test_an_sdk_that_rejects_the_client_gets_one_sentence_naming_the_versions(sdk: str) -> None:
    def old_sdk() -> object:  # what openai 2.46 and anthropic 0.125 raise for an httpx2 client
        raise TypeError(
            "Invalid `http_client` argument; Expected an instance of `httpx.AsyncClient` but got "
            "<class 'httpx2.AsyncClient'>"
        )

    with pytest.raises(VisionError) as caught:
        sdk_client(sdk, old_sdk)
    text = caught.value.render()
    floor = SDK_FLOORS[sdk]
    assert text.startswith(f"[vision_error] api: the installed {sdk} ")
    assert text.endswith(
        f"rejects vision-bridge's httpx2 HTTP client; vision-bridge needs {sdk}>={floor} "
        f"(pip install --upgrade '{sdk}>={floor}')"
    )
    assert text.count(". ") == 0  # one sentence
    assert sdk_rejects_client(sdk, "0.1.0").render() == text.replace(text.split()[5], "0.1.0", 1)


def test_another_type_error_is_not_taken_for_an_old_sdk() -> None:
    def broken() -> object:
        raise TypeError("unexpected keyword argument 'timeout'")

    with pytest.raises(TypeError, match="timeout"):
        sdk_client("openai", broken)
