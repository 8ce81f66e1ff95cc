"""Both wire formats through the real SDKs against the loopback stub: request shapes, usage, answers."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from docab.usage import Usage
from tests.support.http_server import Reply
from tests.support.llm_stub import LLMStub, anthropic_reply, error_reply, openai_reply
from tests.vision_bridge.conftest import loader_for, png_bytes, settings_for, with_service
from vision_bridge.usage import USAGE_META_KEY

URL = "https://images.example.com/cat.png"


def sent_content(stub: LLMStub, protocol: str, index: int = 0) -> list[dict]:
    return stub.requests_for(protocol)[index].json()["messages"][0]["content"]  # type: ignore[arg-type]


# -- OpenAI Chat Completions ---------------------------------------------------------------------


def test_openai_analyze_request_shape_and_headers(llm_stub: LLMStub, tmp_path: Path, picture: Path) -> None:
    settings = settings_for(llm_stub, tmp_path, VISION_MAX_TOKENS="321")

    async def scenario(service):
        return await service.analyze(str(picture), "What colour is it?")

    outcome = with_service(settings, scenario)
    assert (outcome.text, outcome.is_error) == ("stub answer", False)
    request = llm_stub.requests_for("openai")[0]
    body = request.json()
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == "Bearer test-key"
    assert (body["model"], body["max_tokens"]) == ("vision-test", 321)
    assert len(body["messages"]) == 1 and body["messages"][0]["role"] == "user"
    image, text = body["messages"][0]["content"]
    assert image == {
        "type": "image_url",
        "image_url": {
            "url": "data:image/png;base64," + base64.b64encode(picture.read_bytes()).decode(),
            "detail": "auto",
        },
    }
    assert text == {"type": "text", "text": "What colour is it?"}


def test_openai_ocr_asks_for_high_detail_and_the_format(
    llm_stub: LLMStub, tmp_path: Path, picture: Path
) -> None:
    llm_stub.push("openai", openai_reply('```json\n{"blocks": [{"type": "heading", "text": "Hi"}]}\n```'))

    async def scenario(service):
        return await service.ocr(str(picture), "zh, en", "json")

    outcome = with_service(settings_for(llm_stub, tmp_path), scenario)
    image, text = sent_content(llm_stub, "openai")
    assert image["image_url"]["detail"] == "high"
    assert '{"blocks"' in text["text"] and "The text is likely in: zh, en." in text["text"]
    assert outcome.text == '{"blocks": [{"type": "heading", "text": "Hi"}]}'  # fence removed, JSON kept


def test_openai_compare_labels_images_and_sends_urls_as_downloaded_bytes(
    llm_stub: LLMStub, tmp_path: Path, picture: Path
) -> None:
    # Until issue 26 the URL went to the provider as it was; now it is downloaded here (every hop
    # checked) and sent inline. images.test resolves to the stub, an explicitly allowed host.
    remote = png_bytes((20, 10), "blue")
    llm_stub.server.route("/cat.png", Reply(body=remote, content_type="image/png"))
    url = f"http://images.test:{llm_stub.server.port}/cat.png"

    async def scenario(service):
        return await service.compare([str(picture), url], "Which is bigger?")

    settings = settings_for(llm_stub, tmp_path, VISION_ALLOW_HOSTS="images.test")
    outcome = with_service(settings, scenario, loader=loader_for(settings, images_test=["127.0.0.1"]))
    assert not outcome.is_error, outcome.text
    content = sent_content(llm_stub, "openai")
    assert [part["type"] for part in content] == ["text", "image_url", "text", "image_url", "text"]
    assert content[0]["text"] == "Image 1:" and content[2]["text"] == "Image 2:"
    assert content[3]["image_url"] == {
        "url": "data:image/png;base64," + base64.b64encode(remote).decode(),
        "detail": "auto",
    }
    assert content[1]["image_url"]["detail"] == "auto"
    assert content[4]["text"].endswith("Which is bigger?")
    assert [i["sent"] for i in outcome.details["images"]] == ["inline", "inline"]
    assert [i.get("downloaded") for i in outcome.details["images"]] == [None, True]


def test_openai_usage_maps_into_meta_and_the_harness_reads_it(
    llm_stub: LLMStub, tmp_path: Path, picture: Path
) -> None:
    llm_stub.push(
        "openai",
        openai_reply("ok", prompt_tokens=1200, completion_tokens=80, cached_tokens=1000, reasoning_tokens=30),
    )

    async def scenario(service):
        return await service.analyze(str(picture))

    outcome = with_service(settings_for(llm_stub, tmp_path), scenario)
    report = outcome.meta[USAGE_META_KEY]
    assert {k: report[k] for k in report if k != "latency_s"} == {
        "provider": "openai",
        "model": "vision-test",
        "input_tokens": 1200,
        "cached_tokens": 1000,
        "cache_write_tokens": 0,
        "output_tokens": 80,
        "reasoning_tokens": 30,
        "calls": 1,
        "from_cache": False,
    }
    assert report["latency_s"] >= 0
    usage = Usage.from_tool_meta(outcome.meta)
    assert usage is not None
    assert (usage.input_uncached, usage.cache_read, usage.output, usage.role) == (200, 1000, 80, "tool-side")


@pytest.mark.parametrize("content", [None, "", "  \n "])
def test_openai_reasoning_content_fallback_for_null_and_empty(
    llm_stub: LLMStub, tmp_path: Path, picture: Path, content: str | None
) -> None:
    llm_stub.push("openai", openai_reply(content, reasoning_content="A red square."))

    async def scenario(service):
        return await service.analyze(str(picture))

    outcome = with_service(settings_for(llm_stub, tmp_path), scenario)
    assert (outcome.text, outcome.is_error) == ("A red square.", False)
    assert outcome.details["answer_from"] == "reasoning"


def test_openai_empty_answers_explain_why(llm_stub: LLMStub, tmp_path: Path, picture: Path) -> None:
    llm_stub.push("openai", openai_reply(""), openai_reply(None, finish_reason="length"))

    async def scenario(service):
        return [await service.analyze(str(picture), "one"), await service.analyze(str(picture), "two")]

    empty, truncated = with_service(settings_for(llm_stub, tmp_path), scenario)
    assert empty.is_error and empty.text == "[vision_error] api: the model returned an empty answer"
    assert truncated.is_error and "VISION_MAX_TOKENS (4096)" in truncated.text


def test_openai_switches_to_max_completion_tokens_once_when_asked(
    llm_stub: LLMStub, tmp_path: Path, picture: Path
) -> None:
    llm_stub.push(
        "openai",
        error_reply(
            "openai",
            400,
            "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead.",
        ),
    )

    async def scenario(service):
        return [await service.analyze(str(picture), "one"), await service.analyze(str(picture), "two")]

    first, second = with_service(settings_for(llm_stub, tmp_path), scenario)
    assert not first.is_error and first.usage.calls == 2
    assert second.usage.calls == 1
    bodies = [r.json() for r in llm_stub.requests_for("openai")]
    assert "max_tokens" in bodies[0] and "max_completion_tokens" not in bodies[0]
    assert bodies[1]["max_completion_tokens"] == 4096 and "max_tokens" not in bodies[1]
    assert "max_completion_tokens" in bodies[2]


def test_openai_http_errors_carry_the_provider_message_and_a_hint(
    llm_stub: LLMStub, tmp_path: Path, picture: Path
) -> None:
    llm_stub.push("openai", error_reply("openai", 401, "Incorrect API key provided"))

    async def scenario(service):
        return await service.analyze(str(picture))

    outcome = with_service(settings_for(llm_stub, tmp_path), scenario)
    assert outcome.is_error
    assert outcome.text.startswith(
        "[vision_error] api: the OpenAI-format provider answered HTTP 401: Incorrect API key"
    )
    assert "check VISION_API_KEY" in outcome.text
    assert outcome.details["error_cause"] == "api"
    assert outcome.usage.calls == 1


# -- Anthropic Messages --------------------------------------------------------------------------


def test_anthropic_request_shape_and_headers(llm_stub: LLMStub, tmp_path: Path, picture: Path) -> None:
    remote = png_bytes((20, 10), "blue")
    llm_stub.server.route("/cat.png", Reply(body=remote, content_type="image/png"))
    url = f"http://images.test:{llm_stub.server.port}/cat.png"

    async def scenario(service):
        return await service.compare([str(picture), url])

    settings = settings_for(
        llm_stub, tmp_path, "anthropic", VISION_MAX_TOKENS="99", VISION_ALLOW_HOSTS="images.test"
    )
    outcome = with_service(settings, scenario, loader=loader_for(settings, images_test=["127.0.0.1"]))
    assert not outcome.is_error, outcome.text
    request = llm_stub.requests_for("anthropic")[0]
    assert request.path == "/v1/messages"
    assert request.headers["x-api-key"] == "test-key"
    assert request.headers["authorization"] == "Bearer test-key"
    assert request.headers["anthropic-version"]
    body = request.json()
    assert (body["model"], body["max_tokens"]) == ("vision-test", 99)
    content = body["messages"][0]["content"]
    assert content[1] == {
        "type": "image",
        "source": {
            "type": "base64",
            "media_type": "image/png",
            "data": base64.b64encode(picture.read_bytes()).decode(),
        },
    }
    # The URL was downloaded here (issue 26): the provider gets its bytes, not the URL.
    assert content[3] == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": base64.b64encode(remote).decode()},
    }
    assert content[0]["text"] == "Image 1:" and content[-1]["type"] == "text"


def test_a_url_part_built_by_a_python_caller_keeps_each_formats_url_shape() -> None:
    # The service never sends URL parts; a caller building a request for a backend still can.
    from vision_bridge.backends.anthropic_messages import image_block
    from vision_bridge.backends.base import ImagePart
    from vision_bridge.backends.openai_chat import image_part

    assert image_block(ImagePart(url=URL)) == {"type": "image", "source": {"type": "url", "url": URL}}
    assert image_part(ImagePart(url=URL), "auto") == {
        "type": "image_url",
        "image_url": {"url": URL, "detail": "auto"},
    }


def test_anthropic_usage_counts_cache_reads_and_writes_in_the_input(
    llm_stub: LLMStub, tmp_path: Path, picture: Path
) -> None:
    llm_stub.push(
        "anthropic",
        anthropic_reply(
            "ok",
            input_tokens=10,
            output_tokens=7,
            cache_read_input_tokens=300,
            cache_creation_input_tokens=50,
        ),
    )

    async def scenario(service):
        return await service.analyze(str(picture))

    outcome = with_service(settings_for(llm_stub, tmp_path, "anthropic"), scenario)
    report = outcome.meta[USAGE_META_KEY]
    assert (report["input_tokens"], report["cached_tokens"], report["cache_write_tokens"]) == (360, 300, 50)
    assert (report["output_tokens"], report["provider"], report["calls"]) == (7, "anthropic", 1)
    usage = Usage.from_tool_meta(outcome.meta)
    assert usage is not None and (usage.input_uncached, usage.cache_read, usage.cache_write) == (10, 300, 50)


@pytest.mark.parametrize("text", [None, ""])
def test_anthropic_thinking_fallback(
    llm_stub: LLMStub, tmp_path: Path, picture: Path, text: str | None
) -> None:
    llm_stub.push("anthropic", anthropic_reply(text, thinking="It shows a red square."))

    async def scenario(service):
        return await service.analyze(str(picture))

    outcome = with_service(settings_for(llm_stub, tmp_path, "anthropic"), scenario)
    assert (outcome.text, outcome.details["answer_from"]) == ("It shows a red square.", "reasoning")


def test_anthropic_downscales_an_image_it_would_refuse(llm_stub: LLMStub, tmp_path: Path) -> None:
    (tmp_path / "wide.png").write_bytes(png_bytes((9000, 40), "white"))

    async def scenario(service):
        return await service.analyze(str(tmp_path / "wide.png"))

    outcome = with_service(settings_for(llm_stub, tmp_path, "anthropic"), scenario)
    assert not outcome.is_error, outcome.text
    assert outcome.details["images"][0]["changed"] == "downscaled from 9000x40 to 8000x36"
    source = sent_content(llm_stub, "anthropic")[0]["source"]
    import io

    from PIL import Image

    assert Image.open(io.BytesIO(base64.b64decode(source["data"]))).size == (8000, 36)


def test_max_image_side_setting_applies_to_any_provider(llm_stub: LLMStub, tmp_path: Path) -> None:
    (tmp_path / "big.png").write_bytes(png_bytes((3000, 1500), "white"))

    async def scenario(service):
        return await service.analyze(str(tmp_path / "big.png"))

    outcome = with_service(settings_for(llm_stub, tmp_path, VISION_MAX_IMAGE_SIDE="1000"), scenario)
    assert outcome.details["images"][0]["size"] == [1000, 500]


# -- a provider that answers oddly ---------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_a_redirect_to_another_host_is_not_followed_with_the_key_and_images(
    llm_stub: LLMStub, tmp_path: Path, picture: Path, fmt: str
) -> None:
    """A provider (or a gateway before it) answering 307 to another origin had the request sent
    there again: the images, the prompt and, in Anthropic's format, the key (``x-api-key``
    survives a cross-origin hop in httpx2)."""
    from tests.support.http_server import LocalServer

    with LocalServer(default=openai_reply("elsewhere")) as elsewhere:
        llm_stub.push(fmt, Reply.redirect(elsewhere.url("/v1/steal"), status=307))  # type: ignore[arg-type]

        async def scenario(service):
            return await service.analyze(str(picture))

        outcome = with_service(settings_for(llm_stub, tmp_path, fmt), scenario)
        assert elsewhere.requests == []
    assert outcome.is_error and outcome.details["error_cause"] == "api"
    assert f"the provider redirected to http://127.0.0.1:{elsewhere.port}" in outcome.text
    assert "not followed" in outcome.text


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_a_provider_redirecting_to_itself_is_stopped_after_five_hops_and_not_retried(
    llm_stub: LLMStub, tmp_path: Path, picture: Path, fmt: str
) -> None:
    """httpx2's own limit (20 hops) raised an error the SDKs wrapped as a connection failure and
    retried: one tool call sent the key and the image 60-90 times, then blamed the network."""
    path = "/v1/chat/completions" if fmt == "openai" else "/v1/messages"
    loop = f"http://127.0.0.1:{llm_stub.server.port}{path}"
    llm_stub.push(fmt, *[Reply.redirect(loop, status=307) for _ in range(100)])  # type: ignore[arg-type]

    async def scenario(service):
        return await service.analyze(str(picture))

    outcome = with_service(settings_for(llm_stub, tmp_path, fmt), scenario)
    assert outcome.is_error and outcome.details["error_cause"] == "api"
    assert "redirected more than 5 times" in outcome.text and "connection failed" not in outcome.text
    assert len(llm_stub.requests_for(fmt)) == 6  # the request and its five hops; no retry


def test_a_redirect_within_the_providers_origin_is_followed(
    llm_stub: LLMStub, tmp_path: Path, picture: Path
) -> None:
    moved = f"http://127.0.0.1:{llm_stub.server.port}/v1/chat/completions?moved=1"
    llm_stub.push("openai", Reply.redirect(moved, status=307), openai_reply("a red square"))

    async def scenario(service):
        return await service.analyze(str(picture))

    outcome = with_service(settings_for(llm_stub, tmp_path), scenario)
    assert (outcome.text, outcome.is_error) == ("a red square", False)


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
@pytest.mark.parametrize(
    ("reply", "says"),
    [
        (
            Reply(body="<html><body>Sign in to the proxy</body></html>", content_type="text/html"),
            "text, not JSON",
        ),
        (Reply(body='{"choices": [', content_type="application/json"), "a body that is not JSON"),
        (Reply(body='{"usage": "lots", "content": 3}', content_type="application/json"), "JSON that is not"),
    ],
)
def test_a_2xx_answer_that_is_no_completion_blames_the_address_not_the_bridge(
    llm_stub: LLMStub, tmp_path: Path, picture: Path, fmt: str, reply: Reply, says: str
) -> None:
    llm_stub.push(fmt, reply)  # type: ignore[arg-type]

    async def scenario(service):
        return await service.analyze(str(picture))

    outcome = with_service(settings_for(llm_stub, tmp_path, fmt), scenario)
    assert outcome.is_error and outcome.details["error_cause"] == "api"
    assert says in outcome.text and "check VISION_API_BASE_URL" in outcome.text
    assert "internal" not in outcome.text
