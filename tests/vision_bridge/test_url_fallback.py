"""Image URLs are downloaded here (guarded, every hop checked) and sent to the provider as bytes.

Until issue 26 an image URL went to the provider as a URL (its first hop checked), and was
downloaded here only when the provider said it could not fetch it. The provider follows
redirects from its own network, so a URL whose second hop is internal reached it: now every URL
is downloaded through the guard first and the provider is asked once, with the bytes.
"""

from __future__ import annotations

import base64
from pathlib import Path

from tests.support.http_server import Reply
from tests.support.llm_stub import LLMStub, anthropic_reply, error_reply, openai_reply
from tests.vision_bridge.conftest import png_bytes, settings_for, with_service

PNG = png_bytes((16, 16), "green")
FETCH_ERROR = "Error while downloading {url}: the server refused the connection."


def serve_image(stub: LLMStub, path: str = "/img.png") -> str:
    stub.server.route(path, Reply(body=PNG, content_type="image/png"))
    return stub.server.url(path)


async def analyze(service, url: str):
    return await service.analyze(url, "what is it?")


def image_gets(stub: LLMStub) -> int:
    return sum(1 for r in stub.requests if r.method == "GET")


def test_openai_gets_the_downloaded_bytes_never_the_url(llm_stub: LLMStub, tmp_path: Path) -> None:
    url = serve_image(llm_stub)
    llm_stub.push("openai", openai_reply("a green square"))
    settings = settings_for(llm_stub, tmp_path, VISION_ALLOW_HOSTS="127.0.0.1")

    outcome = with_service(settings, lambda s: analyze(s, url))
    assert (outcome.text, outcome.is_error) == ("a green square", False)
    (sent,) = (
        r.json()["messages"][0]["content"][0]["image_url"]["url"] for r in llm_stub.requests_for("openai")
    )
    assert sent == "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert image_gets(llm_stub) == 1
    assert outcome.usage.calls == 1
    image = outcome.details["images"][0]
    assert (image["sent"], image["downloaded"], image["redirects"]) == ("inline", True, 0)
    assert "url_fallback" not in outcome.details


def test_anthropic_gets_the_downloaded_bytes_never_the_url(llm_stub: LLMStub, tmp_path: Path) -> None:
    url = serve_image(llm_stub)
    llm_stub.push("anthropic", anthropic_reply("green"))
    settings = settings_for(llm_stub, tmp_path, "anthropic", VISION_ALLOW_HOSTS="127.0.0.1")
    outcome = with_service(settings, lambda s: analyze(s, url))
    assert outcome.text == "green"
    (source,) = [r.json()["messages"][0]["content"][0]["source"] for r in llm_stub.requests_for("anthropic")]
    assert source["type"] == "base64" and source["media_type"] == "image/png"
    assert base64.b64decode(source["data"]) == PNG


def test_a_provider_error_is_not_retried_with_another_download(llm_stub: LLMStub, tmp_path: Path) -> None:
    # The old fallback retried once when the provider could not fetch a URL; with bytes sent from
    # the start, a provider's 400 is final: asked once, the image downloaded once.
    url = serve_image(llm_stub)
    failure = error_reply("openai", 400, FETCH_ERROR.format(url=url))
    llm_stub.push("openai", failure, failure, failure)
    settings = settings_for(llm_stub, tmp_path, VISION_ALLOW_HOSTS="127.0.0.1")
    outcome = with_service(settings, lambda s: analyze(s, url))
    assert outcome.is_error and "HTTP 400" in outcome.text
    assert len(llm_stub.requests_for("openai")) == 1
    assert image_gets(llm_stub) == 1


def test_other_client_errors_are_not_retried(llm_stub: LLMStub, tmp_path: Path) -> None:
    url = serve_image(llm_stub)
    llm_stub.push("openai", error_reply("openai", 400, "max_tokens is too large for this model"))
    settings = settings_for(llm_stub, tmp_path, VISION_ALLOW_HOSTS="127.0.0.1")
    outcome = with_service(settings, lambda s: analyze(s, url))
    assert outcome.is_error
    assert len(llm_stub.requests_for("openai")) == 1 and image_gets(llm_stub) == 1


def test_the_download_refuses_loopback_unless_the_host_is_allowed(llm_stub: LLMStub, tmp_path: Path) -> None:
    url = serve_image(llm_stub)
    outcome = with_service(settings_for(llm_stub, tmp_path), lambda s: analyze(s, url))
    assert outcome.is_error
    assert outcome.text.startswith(
        "[vision_error] input: could not download the image: refusing to connect to 127.0.0.1"
    )
    assert "VISION_ALLOW_HOSTS" in outcome.text
    assert image_gets(llm_stub) == 0
    # Refused before the provider is asked: it must not be handed an internal URL either.
    assert len(llm_stub.requests_for("openai")) == 0


def test_redirects_are_rechecked_hop_by_hop(llm_stub: LLMStub, tmp_path: Path) -> None:
    # 127.0.0.1 is allowed, but its redirect to `localhost` (also loopback, not allowed) is refused.
    llm_stub.server.route("/hop.png", Reply.redirect(f"http://localhost:{llm_stub.server.port}/img.png"))
    serve_image(llm_stub)
    url = llm_stub.server.url("/hop.png")
    settings = settings_for(llm_stub, tmp_path, VISION_ALLOW_HOSTS="127.0.0.1")
    outcome = with_service(settings, lambda s: analyze(s, url))
    assert outcome.is_error and "refusing to connect to localhost" in outcome.text
    assert [r.path for r in llm_stub.requests if r.method == "GET"] == ["/hop.png"]
    assert llm_stub.requests_for("openai") == []


def test_an_allowed_redirect_is_followed_and_counted(llm_stub: LLMStub, tmp_path: Path) -> None:
    llm_stub.server.route("/hop.png", Reply.redirect(llm_stub.server.url("/img.png")))
    serve_image(llm_stub)
    settings = settings_for(llm_stub, tmp_path, VISION_ALLOW_HOSTS="127.0.0.1")
    outcome = with_service(settings, lambda s: analyze(s, llm_stub.server.url("/hop.png")))
    assert outcome.text == "stub answer"
    assert outcome.details["images"][0]["redirects"] == 1


def test_a_download_that_is_not_an_image_is_refused(llm_stub: LLMStub, tmp_path: Path) -> None:
    llm_stub.server.route("/page", Reply(body="<html>login</html>", content_type="text/html"))
    url = llm_stub.server.url("/page")
    settings = settings_for(llm_stub, tmp_path, VISION_ALLOW_HOSTS="127.0.0.1")
    outcome = with_service(settings, lambda s: analyze(s, url))
    assert outcome.is_error and "is text/html, not an image" in outcome.text
    assert llm_stub.requests_for("openai") == []


def test_compare_downloads_every_url_once(llm_stub: LLMStub, tmp_path: Path) -> None:
    first = serve_image(llm_stub, "/a.png")
    second = serve_image(llm_stub, "/b.png")
    llm_stub.push("openai", openai_reply("same"))
    settings = settings_for(llm_stub, tmp_path, VISION_ALLOW_HOSTS="127.0.0.1")

    async def scenario(service):
        return await service.compare([first, second, first])

    outcome = with_service(settings, scenario)
    assert outcome.text == "same"
    assert sorted(r.path for r in llm_stub.requests if r.method == "GET") == ["/a.png", "/b.png"]
    (request,) = llm_stub.requests_for("openai")
    parts = request.json()["messages"][0]["content"]
    assert (
        sum(1 for p in parts if p["type"] == "image_url" and p["image_url"]["url"].startswith("data:")) == 3
    )


def test_the_deadline_covers_the_download(llm_stub: LLMStub, tmp_path: Path) -> None:
    llm_stub.server.route("/slow.png", Reply(body=PNG, content_type="image/png", delay=3))
    url = llm_stub.server.url("/slow.png")
    settings = settings_for(llm_stub, tmp_path, VISION_ALLOW_HOSTS="127.0.0.1", VISION_TIMEOUT="1.5")

    async def scenario(service):
        service.backend.warm_up()  # as the server does at start: the SDK import is not what we time here
        return await analyze(service, url)

    outcome = with_service(settings, scenario)
    assert outcome.is_error and outcome.details["error_cause"] == "timeout"
    # Whichever fires first, the download's own limit (the time left) or the call's deadline:
    assert outcome.text.startswith("[vision_error] timeout:") and "download" in outcome.text
