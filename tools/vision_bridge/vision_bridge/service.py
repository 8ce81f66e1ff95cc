"""The three tools as plain async methods: inputs -> cache -> backend -> cache, under one deadline.

:class:`VisionService` is what the MCP face calls and what a Python user can call directly. Each
method returns a :class:`ToolOutcome` (never raises for a user-facing failure): the answer or a
``[vision_error]`` text, and the usage report and details for ``_meta``.

One call, step by step:

1. refuse at once what the backend cannot do (analyze/compare on Tesseract);
2. load the images (local file, data URL, clipboard) and download image URLs through the guarded
   client (every redirect hop checked, the decoded body capped): a provider is never handed a
   URL, only the bytes that were checked (why: :mod:`vision_bridge.inputs`);
3. look the answer up in the cache (key: image content hashes, prompt, options, backend, model);
4. prepare the images for the provider (convert or downscale what it would refuse, decoding in a
   child process under a memory cap: :mod:`vision_bridge.isolation`);
5. ask the backend;
6. store the answer.

``VISION_TIMEOUT`` bounds all of it; a timeout says which step ran out of time.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from vision_bridge.backends.base import (
    Detail,
    ImagePart,
    Task,
    UnreadableResponse,
    VisionAnswer,
    VisionBackend,
    VisionRequest,
)
from vision_bridge.cache import ResultCache, cache_key
from vision_bridge.errors import ErrorCause, VisionError, input_error
from vision_bridge.inputs import ImageBytes, ImageLoader, ImageUrl, ResolvedImage
from vision_bridge.isolation import DecodeLimits, IsolatedDecoder
from vision_bridge.metering import CallMeter, metering
from vision_bridge.prepare import PreparedImage
from vision_bridge.prompts import (
    DEFAULT_ANALYZE_PROMPT,
    OCR_FORMATS,
    OcrFormat,
    clean_json_answer,
    compare_prompt,
    ocr_prompt,
    parse_languages,
)
from vision_bridge.usage import DETAILS_META_KEY, USAGE_META_KEY, TokenUsage, UsageReport

if TYPE_CHECKING:
    from docab_mcpguard import PathPolicy
    from vision_bridge.config import Settings

log = logging.getLogger("vision_bridge")

MIN_COMPARE, MAX_COMPARE = 2, 4

_UNSUPPORTED = (
    "{tool} needs a vision model, and this server runs the offline Tesseract backend, which only reads "
    "text (VISION_BACKEND=tesseract). Use ocr_image to read the text in an image, or configure an API "
    "backend (VISION_API_BASE_URL, VISION_API_KEY, VISION_MODEL) to describe or compare images."
)


@dataclass(frozen=True)
class ToolOutcome:
    text: str
    is_error: bool
    usage: UsageReport
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def meta(self) -> dict[str, Any]:
        return {USAGE_META_KEY: self.usage.to_meta(), DETAILS_META_KEY: self.details}


Progress = Callable[[float, float | None, str], None]
"""Told how a call is going: (step done, steps in all or None, what it is doing now)."""

_STEPS = 6  # reading, (downloading), cache, preparing, asking, writing the cache


@dataclass
class _Call:
    """The mutable state of one tool call: what step it is in, what it did to the images.

    Each new phase is reported to ``progress`` (the MCP face sends it to a client that asked)."""

    tool: str
    progress: Progress | None = None
    images: list[dict[str, Any]] = field(default_factory=list)
    _phase: str = "starting"
    _steps: int = 0

    @property
    def phase(self) -> str:
        return self._phase

    @phase.setter
    def phase(self, phase: str) -> None:
        self._phase = phase
        self._steps += 1
        if self.progress is not None:
            self.progress(self._steps, max(_STEPS, self._steps), phase)


@dataclass(frozen=True)
class _Job:
    task: Task
    tool: str
    raw_images: tuple[str, ...]
    prompt: str
    detail: Detail
    options: Mapping[str, Any]
    ocr_format: OcrFormat = "plain"
    languages: tuple[str, ...] = ()
    labelled: bool = False
    paths: PathPolicy | None = None  # the folders allowed for this call (the client's roots)
    progress: Progress | None = None


class VisionService:
    def __init__(
        self,
        backend: VisionBackend,
        loader: ImageLoader,
        cache: ResultCache,
        *,
        timeout_s: float,
        max_image_side: int | None = None,
        clock: Callable[[], float] = time.monotonic,
        decoder: IsolatedDecoder | None = None,
    ) -> None:
        self.backend = backend
        self.decoder = decoder or IsolatedDecoder()
        self.loader = loader
        self.cache = cache
        self.timeout_s = timeout_s
        self.image_limits = backend.image_limits.with_side_cap(max_image_side)
        self.clock = clock

    # -- the three tools --------------------------------------------------------------------

    async def analyze(
        self,
        image: str,
        prompt: str | None = None,
        *,
        paths: PathPolicy | None = None,
        progress: Progress | None = None,
    ) -> ToolOutcome:
        """Describe or answer ``prompt`` about one image. ``paths``: the folders local images may
        come from for this call (default: the loader's); ``progress`` hears each step."""
        instruction = (prompt or "").strip() or DEFAULT_ANALYZE_PROMPT
        job = _Job(
            "analyze", "analyze_image", (image,), instruction, "auto", {}, paths=paths, progress=progress
        )
        return await self._run(job)

    async def ocr(
        self,
        image: str,
        languages: str | None = None,
        format: str = "plain",
        *,
        paths: PathPolicy | None = None,
        progress: Progress | None = None,
    ) -> ToolOutcome:
        fmt = (format or "plain").strip().lower()
        if fmt not in OCR_FORMATS:
            return self._failure(
                _Call("ocr_image"),
                input_error(f"format {format!r} is not one of: {', '.join(OCR_FORMATS)}"),
                0.0,
            )
        langs = parse_languages(languages)
        job = _Job(
            "ocr",
            "ocr_image",
            (image,),
            ocr_prompt(fmt, langs),
            "high",
            {"format": fmt, "languages": list(langs)},
            ocr_format=fmt,
            languages=langs,
            paths=paths,
            progress=progress,
        )
        return await self._run(job)

    async def compare(
        self,
        images: Sequence[str],
        prompt: str | None = None,
        *,
        paths: PathPolicy | None = None,
        progress: Progress | None = None,
    ) -> ToolOutcome:
        count = len(images) if isinstance(images, list | tuple) else 0
        if not MIN_COMPARE <= count <= MAX_COMPARE:
            error = input_error(f"compare_images takes {MIN_COMPARE} to {MAX_COMPARE} images, not {count}")
            return self._failure(_Call("compare_images"), error, 0.0)
        job = _Job(
            "compare",
            "compare_images",
            tuple(images),
            compare_prompt(prompt, count),
            "auto",
            {},
            labelled=True,
            paths=paths,
            progress=progress,
        )
        return await self._run(job)

    async def aclose(self) -> None:
        await self.backend.aclose()

    # -- one call ---------------------------------------------------------------------------

    async def _run(self, job: _Job) -> ToolOutcome:
        started = self.clock()
        call = _Call(job.tool, job.progress)
        meter = CallMeter()
        try:
            with metering(meter):
                async with asyncio.timeout(self.timeout_s):
                    answer, from_cache = await self._answer(job, call, deadline=started + self.timeout_s)
        except TimeoutError:
            error = VisionError(
                ErrorCause.TIMEOUT,
                f"no answer within VISION_TIMEOUT ({self.timeout_s:g} s) while {call.phase}",
            )
            return self._failure(call, error, self.clock() - started, meter)
        except VisionError as failure:
            return self._failure(call, failure, self.clock() - started, meter)
        except UnreadableResponse as exc:  # too large (declared, sent or decoded), or undecodable
            return self._failure(call, VisionError(ErrorCause.API, str(exc)), self.clock() - started, meter)
        except Exception as exc:  # a bug here must not kill the server or leak a traceback to the model
            log.exception("unexpected failure in %s", job.tool)
            error = VisionError(
                ErrorCause.API, f"unexpected internal failure ({type(exc).__name__}); see the server log"
            )
            return self._failure(call, error, self.clock() - started, meter)

        text = answer.text
        if job.task == "ocr" and job.ocr_format == "json" and answer.answer_from != "ocr":
            text = clean_json_answer(text)
        identity = self.backend.identity
        report = UsageReport(
            provider=identity.backend,
            model=identity.model,
            usage=TokenUsage() if from_cache else answer.usage,
            calls=0 if from_cache else meter.requests,
            from_cache=from_cache,
            latency_s=self.clock() - started,
            original=answer.usage if from_cache else None,
        )
        log.debug(
            "%s: %s in %.2f s (%d input, %d output tokens)",
            job.tool,
            "answered from the cache"
            if from_cache
            else f"answered by {identity.backend} {identity.model}".rstrip(),
            report.latency_s,
            report.usage.input_tokens,
            report.usage.output_tokens,
        )
        return ToolOutcome(text, False, report, self._details(call, answer_from=answer.answer_from))

    async def _answer(self, job: _Job, call: _Call, *, deadline: float) -> tuple[VisionAnswer, bool]:
        if job.task not in self.backend.tasks:
            raise VisionError(ErrorCause.UNSUPPORTED, _UNSUPPORTED.format(tool=job.tool))

        call.phase = "reading the images"
        resolved = list(await asyncio.gather(*(self.loader.load(raw, job.paths) for raw in job.raw_images)))
        if any(isinstance(r, ImageUrl) for r in resolved):
            resolved = await self._download_all(resolved, call, deadline)

        identity = self.backend.identity
        key = cache_key(
            tool=job.tool,
            prompt=job.prompt,
            options=job.options,
            images=[r.identity for r in resolved],
            identity=identity,
        )
        call.phase = "reading the cache"
        cached = self.cache.get(key)
        if cached is not None:
            call.images = [{"origin": r.origin} for r in resolved]
            return VisionAnswer(cached.text, cached.usage, cached.answer_from), True  # type: ignore[arg-type]

        request = await self._request(job, resolved, call, deadline)
        answer = await self._ask(request, call, deadline)
        call.phase = "writing the cache"
        self.cache.put(key, text=answer.text, usage=answer.usage, answer_from=answer.answer_from)
        return answer, False

    async def _ask(self, request: VisionRequest, call: _Call, deadline: float) -> VisionAnswer:
        call.phase = (
            "running Tesseract"
            if self.backend.identity.backend == "tesseract"
            else "waiting for the vision model"
        )
        return await self.backend.answer(request, timeout_s=self._remaining(deadline))

    async def _download_all(
        self, resolved: list[ResolvedImage], call: _Call, deadline: float
    ) -> list[ResolvedImage]:
        call.phase = "downloading the images"
        urls = [r.url for r in resolved if isinstance(r, ImageUrl)]
        fetched = await self.loader.download(urls, timeout_s=self._remaining(deadline))
        return [fetched[r.url] if isinstance(r, ImageUrl) else r for r in resolved]

    async def _request(
        self, job: _Job, resolved: list[ResolvedImage], call: _Call, deadline: float
    ) -> VisionRequest:
        call.phase = "preparing the images"
        limits = self.image_limits

        async def prepared(image: ResolvedImage) -> PreparedImage | None:
            if isinstance(image, ImageBytes):
                return await self.decoder.prepare(image, limits, timeout_s=self._remaining(deadline))
            return None

        ready = await asyncio.gather(*(prepared(r) for r in resolved))
        parts = []
        call.images = []
        for index, (image, inline) in enumerate(zip(resolved, ready, strict=True), start=1):
            label = f"Image {index}" if job.labelled else None
            # Every URL was downloaded before this step: the provider gets bytes only.
            assert isinstance(image, ImageBytes) and inline is not None
            parts.append(ImagePart(inline=inline, label=label))
            info: dict[str, Any] = {
                "origin": image.origin,
                "sent": "inline",
                "mime": inline.mime,
                "size": [inline.width, inline.height],
            }
            if image.redirects is not None:
                info["downloaded"] = True
                info["redirects"] = image.redirects
            if inline.note:
                info["changed"] = inline.note
            call.images.append(info)
        return VisionRequest(
            task=job.task,
            prompt=job.prompt,
            images=tuple(parts),
            detail=job.detail,
            ocr_format=job.ocr_format,
            languages=job.languages,
        )

    # -- results ----------------------------------------------------------------------------

    def _remaining(self, deadline: float) -> float:
        return max(0.001, deadline - self.clock())

    def _details(self, call: _Call, **extra: Any) -> dict[str, Any]:
        details: dict[str, Any] = {"backend": self.backend.identity.backend, "tool": call.tool}
        if call.images:
            details["images"] = call.images
        details.update(extra)
        return details

    def _failure(
        self, call: _Call, error: VisionError, elapsed: float, meter: CallMeter | None = None
    ) -> ToolOutcome:
        identity = self.backend.identity
        report = UsageReport(
            provider=identity.backend,
            model=identity.model,
            usage=TokenUsage(),
            calls=meter.requests if meter else 0,
            from_cache=False,
            latency_s=elapsed,
        )
        return ToolOutcome(error.render(), True, report, self._details(call, error_cause=error.cause.value))


def create_service(
    settings: Settings, *, loader: ImageLoader | None = None, cache_clock: Callable[[], float] | None = None
) -> VisionService:
    """Wire a service from settings (raises ConfigError when the Tesseract program is unusable).

    ``loader`` replaces the image loader (tests inject a clipboard runner or a DNS resolver);
    ``cache_clock`` replaces the wall clock that dates cache entries (tests of the TTL).
    """
    from vision_bridge.backends import create_backend

    backend = create_backend(settings)
    loader = loader or ImageLoader(
        allowed_paths=settings.allowed_paths, allow_hosts=settings.allow_hosts, url_images=settings.url_images
    )
    cache = ResultCache(
        settings.cache_dir,
        settings.cache_ttl_s,
        clock=cache_clock or time.time,
        max_bytes=settings.cache_max_bytes,
    )
    return VisionService(
        backend,
        loader,
        cache,
        timeout_s=settings.timeout_s,
        max_image_side=settings.max_image_side,
        decoder=IsolatedDecoder(DecodeLimits(memory_bytes=settings.decode_memory_bytes)),
    )
