"""What the SDK-backed models share: text-only stripping, retries, concurrency slots, timing, usage.

A provider module supplies four pure-ish pieces: build the request body from neutral messages, send
it with its SDK, parse the reply body, and read its usage. Everything else lives here once.
"""

from __future__ import annotations

import asyncio
import copy
import json
import random
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from docab.messages import Message, Reasoning, ToolCall, ToolSpec, Turn
from docab.models.base import ModelError
from docab.models.cache import EPOCH, ResponseCache, response_key, shared_cache
from docab.models.causes import Failure, credential_failure
from docab.models.clients import Access
from docab.models.config import ModelConfig
from docab.models.limits import ConcurrencyLimits
from docab.models.meter import charge as meter_charge
from docab.models.pacing import estimate_tokens
from docab.models.retry import (
    CALL_TRACE,
    QUOTA_CODES,
    AttemptTimedOut,
    Caller,
    Clock,
    MalformedReply,
    RetryPolicy,
    RetryTrace,
    attempt_timeout_failure,
    call_with_retries,
    classify_sdk_error,
    parse_retry_after,
    provider_code,
)
from docab.models.text_only import strip_images
from docab.usage import PLAUSIBLE_COUNT, Implausible, Usage, implausible


@dataclass(frozen=True)
class ParsedReply:
    text: str
    tool_calls: tuple[ToolCall, ...]
    reasoning: tuple[Reasoning, ...]
    stop_reason: str


@dataclass
class UsageAlarm:
    """Says, once per run, that a model call reported more tokens than any call can use
    (:func:`docab.usage.implausible`): a buggy or hostile endpoint billing nonsense. The call is
    billed as reported all the same; the line names the model, its endpoint and the figure.
    ``say`` is where the run's notes go (the launcher's; print by default)."""

    say: Callable[[str], None]
    first: Implausible | None = None  # the call warned of

    def check(self, usage: Usage, caller: Caller) -> None:
        """``usage``, one call's billing by ``caller``'s endpoint."""
        found = implausible(usage)
        if found is None or self.first is not None:
            return
        self.first = found
        self.say(
            f"warning: the {caller.role} model {caller.model} at {caller.url} reported "
            f"{found.describe()} for one call, more than any model uses (docab's bound: "
            f"{PLAUSIBLE_COUNT:,}); the call is billed as reported. Check the endpoint and what it "
            "bills (said once per run)"
        )


USAGE_ALARM: ContextVar[UsageAlarm | None] = ContextVar("usage_alarm", default=None)
"""The run's :class:`UsageAlarm` (set by the launcher around its workers); None: no warning."""

RAW_RESPONSE_HEADER = "X-Stainless-Raw-Response"  # openai._constants and anthropic._constants
REPLY_HEADERS: ContextVar[dict[str, str] | None] = ContextVar("reply_headers", default=None)
"""The headers of the reply :meth:`ProviderModel.post_wire` last received in this task (for pacing)."""

# Options that choose a model's endpoint or build its client: fixed for the life of a model.
ENDPOINT_OPTIONS = frozenset(
    {
        "name",
        "base_url",
        "api_key_env",
        "api",
        "api_version",
        "region",
        "project",
        "headers",
        "concurrency",
        "rpm",
        "tpm",
    }
)
PREFLIGHT_TIMEOUT_S = 30.0  # a model list answers in well under a second; an unreachable host never does


@dataclass(frozen=True)
class Probe:
    """What one cheap request to an endpoint found: the model ids it lists (None when it offers no
    list), or a note when it answered the request with an error yet is up."""

    listed: tuple[str, ...] | None = None
    note: str | None = None


class ProviderModel:
    """Base of ``openai/...`` and ``anthropic/...`` models; meets the ``Model`` protocol.

    ``role`` (``agent``, ``extractor``) names the model in its errors, with its URL; ``access`` says
    how it authenticates (for the line before a run and the hint of a refused credential)."""

    models_path = "/models"  # the provider's model list, relative to the client's base URL
    is_baseline = False

    def __init__(
        self,
        config: ModelConfig,
        *,
        sdk: ModuleType,
        client: Any,
        limits: ConcurrencyLimits,
        clock: Clock,
        rng: random.Random | None = None,
        role: str = "agent",
        access: Access | None = None,
    ) -> None:
        self.role = role
        self.access = access or Access.key(config.key_variable)
        self._sdk = sdk
        self._client = client
        self._limits = limits
        self._clock = clock
        self._rng = rng or random.Random()
        limits.register(config.endpoint, config.concurrency)
        limits.register_rates(config.endpoint, config.rpm, config.tpm)
        self._apply(config)

    def _apply(self, config: ModelConfig) -> None:
        self.config = config
        self.name = config.name
        self.supports_images = not config.text_only
        self._policy = RetryPolicy(
            max_retries=config.max_retries,
            base_delay_s=config.retry_base_delay,
            max_delay_s=config.retry_max_delay,
            retry_after_cap_s=config.retry_after_cap,
        )

    @property
    def url(self) -> str:
        """The endpoint's base URL as the client uses it (the provider's default when unset)."""
        return str(self._client.base_url).rstrip("/")

    @property
    def key_variable(self) -> str:
        return self.config.key_variable

    @property
    def endpoint_key(self) -> tuple[str, str, str]:
        """What makes two models one endpoint for a preflight: route, URL and credentials."""
        return (self.config.route, self.url, self.access.label)

    @property
    def caller(self) -> Caller:
        return Caller(role=self.role, model=self.name, url=self.url)

    # -- provider pieces -------------------------------------------------------------------------

    def build_request(
        self, system: str, messages: Sequence[Message], tools: Sequence[ToolSpec], max_tokens: int
    ) -> dict[str, Any]:
        raise NotImplementedError

    async def send(self, request: Mapping[str, Any]) -> dict[str, Any]:
        raise NotImplementedError

    def parse(self, raw: Mapping[str, Any]) -> ParsedReply:
        raise NotImplementedError

    def usage(self, raw: Mapping[str, Any]) -> Usage:
        raise NotImplementedError

    # -- shared machinery ------------------------------------------------------------------------

    def _response_cache(self, request: Mapping[str, Any]) -> tuple[ResponseCache | None, str]:
        """The response cache and this request's key, when the model's config asks for the cache."""
        if not self.config.cache:
            return None, ""
        key = response_key(
            route=self.config.route,
            url=self.url,
            model=self.name,
            api=self.config.api,
            request={**request, **self.config.extra_body},
            temperature=self.config.temperature,
            epoch=EPOCH.get(),
        )
        return shared_cache(), key

    def with_options(self, **changes: Any) -> ProviderModel:
        """The same model (same client, same concurrency pool) with some options changed.

        Options that choose the endpoint or its client (name, base_url, api_key_env, api, api_version,
        region, project, headers, concurrency) cannot change: build another model for another endpoint.
        """
        fixed = ENDPOINT_OPTIONS & set(changes)
        if fixed:
            raise ValueError(f"with_options cannot change {', '.join(sorted(fixed))}; build a new model")
        clone = copy.copy(self)
        clone._apply(self.config.replace(**changes))
        return clone

    async def post_wire(self, path: str, request: Mapping[str, Any]) -> dict[str, Any]:
        """POST a request that is already wire JSON (with the config's ``extra_body``) to ``path``.

        The SDK's generic ``post`` (its documented route for raw endpoints) rather than its typed
        ``create``: ``create`` walks the request against its TypedDicts (about 4 ms of CPU for a
        27 KB history, most of a call's cost at 64 in flight) and builds pydantic models we would
        only dump back to JSON. Auth, the HTTP client, error mapping and timeouts stay the SDK's.
        """
        response = await self._client.post(
            path,
            body={**request, **self.config.extra_body},
            cast_to=object,
            # the SDKs' raw-response mode (what their with_raw_response sends): the reply's headers too
            options={"timeout": self.config.timeout, "headers": {RAW_RESPONSE_HEADER: "raw"}},
        )
        headers = getattr(response, "headers", None)
        if headers is not None and hasattr(response, "parse"):
            REPLY_HEADERS.set(dict(headers.items()))
            response = await response.parse()
        return as_plain_json(response)

    async def aclose(self) -> None:
        """Close the HTTP connections. Call it in the event loop that made the calls (the runner
        does so at the end of a run); models made by ``with_options`` share the client."""
        await self._client.close()

    async def __aenter__(self) -> ProviderModel:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _classify(self, exc: BaseException, timeout_s: float | None = None) -> Failure:
        if isinstance(exc, AttemptTimedOut):  # whatever the provider's classifier knows
            return attempt_timeout_failure(exc)
        unresolved = credential_failure(exc, hint=self.access.hint)
        if unresolved is not None:
            return unresolved
        return classify_sdk_error(
            exc,
            self._sdk,
            now=self._clock.now(),
            timeout_s=self.config.timeout if timeout_s is None else timeout_s,
            credentials=self.access.hint,
        )

    def _bill(self, usage: Sequence[Usage]) -> None:
        """What one call was billed: to the sample's meter, and past the run's usage alarm."""
        meter_charge(usage)
        alarm = USAGE_ALARM.get()
        if alarm is not None:
            for record in usage:
                alarm.check(record, self.caller)

    async def probe(self, *, timeout_s: float = PREFLIGHT_TIMEOUT_S) -> Probe:
        """One cheap request to the endpoint, before a run: the provider's model list (no tokens).

        Raises :class:`ModelError` when the endpoint cannot serve the run: it cannot be reached
        (refused, DNS, TLS, timeout), refuses the credentials (401, 403) or fails (5xx). Any other
        answer means the server is up: a 404 (a server without a model list) or 429 gives a note.

        Amazon Bedrock's and Vertex AI's inference hosts offer no request that checks credentials
        without spending tokens (their model lists live on other services, with other
        permissions): there the probe resolves the credentials (signing a request needs them) and
        asks the host for its root, so an unreachable host, a DNS or TLS failure or missing
        credentials stop the run; whether the credentials are accepted shows at the first call.
        """
        if self.config.platform in ("bedrock", "vertex"):
            return await self._probe_reachability(timeout_s)
        timeout = min(timeout_s, self.config.timeout)
        try:
            async with _bounded(timeout):
                response = await self._client.get(
                    self.models_path, cast_to=object, options={"timeout": timeout}
                )
        except Exception as exc:  # an SDK error; anything else is a bug and surfaces
            return self._failed_probe(exc, timeout)
        # Azure lists the resource's models, not its deployments, which are what a name holds.
        return Probe(listed=listed_models(response) if self.config.platform is None else None)

    def _failed_probe(self, exc: Exception, timeout: float) -> Probe:
        """A model-list request that failed: raise when the endpoint cannot be used (unreachable,
        refused key, server error), else a note (it answered, but does not list models)."""
        failure = self._classify(exc, timeout)
        # malformed: a 200 whose body is not JSON (an HTML page, nothing): not the API at that URL
        if failure.kind in ("connection", "timeout", "auth", "server", "malformed"):
            caller = self.caller
            raise ModelError(
                failure.kind,
                failure.message,
                status=failure.status,
                role=caller.role,
                model=caller.model,
                url=caller.url,
            ) from None
        return Probe(note=f"{self.url} answered the model-list request with {failure.message}")

    async def _probe_reachability(self, timeout_s: float) -> Probe:
        timeout = min(timeout_s, self.config.timeout)
        try:
            async with _bounded(timeout):
                await self._client.get("/", cast_to=object, options={"timeout": timeout})
        except Exception as exc:
            failure = self._classify(exc, timeout)
            unanswered = failure.kind in ("connection", "timeout") or (
                failure.kind == "auth" and failure.status is None  # credentials not found
            )
            if unanswered:
                raise ModelError(
                    failure.kind,
                    failure.message,
                    status=failure.status,
                    role=self.role,
                    model=self.name,
                    url=self.url,
                ) from None
        return Probe(
            note=f"{self.url} is reachable and the {self.role} model's credentials were found ({self.access.label}); "
            f"{self.config.platform} has no free request that checks them, so the first call does"
        )

    async def generate(
        self,
        system: str,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        *,
        max_output_tokens: int,
    ) -> Turn:
        if self.config.text_only:
            messages = strip_images(messages)
        max_tokens = max_output_tokens
        if self.config.max_output_tokens is not None:
            max_tokens = min(max_tokens, self.config.max_output_tokens)
        request = self.build_request(system, messages, tools, max_tokens)
        cache, key = self._response_cache(request)
        if cache is not None:
            hit = await cache.aget(key)
            if hit is not None:
                try:
                    parsed_hit = self.parse(hit)
                except MalformedReply:
                    pass  # an entry this version cannot read: call the model, and store its reply
                else:
                    return Turn(
                        text=parsed_hit.text,
                        tool_calls=parsed_hit.tool_calls,
                        usage=Usage.cache_hit(self.usage(hit)),
                        latency_s=0.0,
                        stop_reason=parsed_hit.stop_reason,
                        raw=hit,
                        reasoning=parsed_hit.reasoning,
                    )
        trace = RetryTrace()
        CALL_TRACE.set(trace)  # a caller that gives up on this call reads how it went there
        # Only a tokens-per-minute limit needs the estimate (about 0.3 ms for a 60-message history)
        estimate = estimate_tokens(request) if self._limits.rates(self.config.endpoint)[1] else 0

        async def attempt() -> tuple[dict[str, Any], ParsedReply]:
            queued_at = self._clock.monotonic()
            async with self._limits.paced(
                self.config.endpoint,
                tokens=estimate,
                clock=self._clock,
                max_pause_s=self._policy.retry_after_cap_s,
                on_wait=trace.waiting,
            ) as ticket:
                trace.queued_s += self._clock.monotonic() - queued_at
                REPLY_HEADERS.set(None)
                try:
                    # The SDKs' timeouts bound each read, not the attempt: a server that trickles
                    # a byte a second would hold the call for ever. This bounds the attempt.
                    async with _bounded(self.config.timeout):
                        raw = await self.send(request)
                except Exception as exc:
                    status = getattr(exc, "status_code", None)
                    if provider_code(exc) in QUOTA_CODES:
                        status = None  # no credit is not a rate: it does not slow the endpoint down
                    headers = getattr(getattr(exc, "response", None), "headers", None)
                    ticket.failed(
                        status=status if isinstance(status, int) else None,
                        retry_after_s=parse_retry_after(headers, self._clock.now()),
                        headers=headers,
                    )
                    raise
                ticket.succeeded(_tokens_used(self, raw), REPLY_HEADERS.get())
            try:
                return raw, self.parse(raw)
            except MalformedReply:
                billed = _billed_usage(self, raw)
                if billed is not None:
                    trace.billed = (*trace.billed, billed)
                raise

        started = self._clock.monotonic()
        try:
            raw, parsed = await call_with_retries(
                attempt,
                classify=self._classify,
                policy=self._policy,
                clock=self._clock,
                rng=self._rng,
                trace=trace,
                context=self.caller,
            )
        except BaseException:  # failed, or cut short by the sample: its unusable replies were billed
            self._bill(trace.billed)
            raise
        usage = _sum_usage([*trace.billed, self.usage(raw)])
        self._bill((usage,))
        latency = max(0.0, self._clock.monotonic() - started - trace.queued_s)
        if cache is not None:
            await cache.aput(key, raw, model=self.name)
        return Turn(
            text=parsed.text,
            tool_calls=parsed.tool_calls,
            usage=usage,
            latency_s=latency,
            retries=trace.retries,
            stop_reason=parsed.stop_reason,
            raw=raw,
            reasoning=parsed.reasoning,
        )


@asynccontextmanager
async def _bounded(timeout_s: float) -> AsyncIterator[None]:
    """Bound a whole request at ``timeout_s``; its expiry raises :class:`AttemptTimedOut`."""
    try:
        async with asyncio.timeout(timeout_s):
            yield
    except TimeoutError as exc:
        raise AttemptTimedOut(timeout_s) from exc


def _billed_usage(model: ProviderModel, raw: Mapping[str, Any]) -> Usage | None:
    """The tokens an unusable reply was billed, when it says (None when its usage is unreadable)."""
    try:
        usage = model.usage(raw)
    except Exception:  # a reply too broken to say what it used
        return None
    return usage if usage.total else None


def _tokens_used(model: ProviderModel, raw: Mapping[str, Any]) -> int | None:
    """The tokens a reply says it used (what a provider's tokens-per-minute counts); None if unreadable."""
    try:
        return model.usage(raw).total
    except Exception:  # a malformed reply: parse() reports it; the estimate stands meanwhile
        return None


def _sum_usage(records: Sequence[Usage]) -> Usage:
    last = records[-1]
    if len(records) == 1:
        return last
    return Usage(
        input_uncached=sum(u.input_uncached for u in records),
        cache_read=sum(u.cache_read for u in records),
        cache_write=sum(u.cache_write for u in records),
        output=sum(u.output for u in records),
        reasoning=sum(u.reasoning for u in records),
        role=last.role,
        model=last.model,
        raw=last.raw,
    )


def _json_text(text: str) -> Any:
    """The JSON value of a body the SDK returned as text (see :func:`as_plain_json`); None when
    it is not JSON (an HTML page, an error text, nothing)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def listed_models(response: Any) -> tuple[str, ...] | None:
    """The model ids of a model-list reply (``{"data": [{"id": ...}, ...]}``, OpenAI's and
    Anthropic's shape, whatever its ``Content-Type``); None for a reply of another shape."""
    if isinstance(response, str):
        response = _json_text(response)
    data = response.get("data") if isinstance(response, dict) else None
    if not isinstance(data, list):
        return None
    return tuple(
        str(item["id"]) for item in data if isinstance(item, dict) and isinstance(item.get("id"), str)
    )


def as_plain_json(response: Any) -> dict[str, Any]:
    """An SDK response as plain JSON data; a body that is not a JSON object is malformed.

    The SDKs parse a body as JSON only when its ``Content-Type`` ends in ``json``: any other (a
    gateway's ``text/plain``, or none) comes back as the body's text, which is read here, and
    accepted when it is a JSON object."""
    if hasattr(response, "model_dump"):
        # warnings=False: a reply that breaks the SDK's types is still dumped as sent, and parse() judges it
        data = response.model_dump(mode="json", exclude_unset=True, warnings=False)
        if isinstance(data, dict):
            return data
    if isinstance(response, dict):
        return response
    if isinstance(response, str):
        data = _json_text(response)
        if isinstance(data, dict):
            return data
    raise MalformedReply(f"the reply body is not a JSON object ({type(response).__name__})")
