"""Before a run: one cheap request per distinct model endpoint.

A server that is down, a host name with a typo, a TLS mix-up or a refused key would otherwise
fail every sample, one retry schedule at a time. :func:`check_endpoints` asks each distinct
endpoint (provider, URL, key variable) of the run's models once for its model list, which spends
no tokens, and raises :class:`~docab.models.base.ModelError` naming the role, the model, the URL
and the cause. Models that are not SDK-backed (the offline baseline, test doubles) need no check.
"""

from __future__ import annotations

from collections.abc import Iterable

from docab.models.provider import Probe, ProviderModel

MAX_LISTED = 8  # model ids quoted in a note


async def check_endpoints(models: Iterable[object]) -> list[str]:
    """Probe the endpoint of each SDK-backed model in ``models``, once per distinct endpoint.

    Returns notes worth showing (a model the server does not list, a server that answered the
    probe with an error but is up); raises ModelError for an endpoint that cannot serve the run.
    """
    probed: dict[tuple[str, str, str], Probe] = {}
    notes: list[str] = []
    for model in models:
        if not isinstance(model, ProviderModel):
            continue
        probe = probed.get(model.endpoint_key)
        if probe is None:
            probe = probed[model.endpoint_key] = await model.probe()
            if probe.note:
                notes.append(probe.note)
        wanted = model.config.model_id
        if probe.listed is not None and wanted not in probe.listed:
            shown = ", ".join(probe.listed[:MAX_LISTED]) + (" ..." if len(probe.listed) > MAX_LISTED else "")
            fix = (
                "set answer.extractor.name to a model it serves, or give the extractor a base_url of its own"
                if model.role == "extractor"
                else "check the model name"
            )
            notes.append(
                f"{model.url} does not list the {model.role} model {wanted!r} (it lists: {shown or 'none'}); "
                f"its calls may fail with HTTP 404: {fix}"
            )
    return notes


def describe(model: object) -> str | None:
    """``agent openai/gpt-4o at https://api.openai.com/v1 (key: $OPENAI_API_KEY)``, for the line the
    launcher prints before a run (``AWS credentials: $AWS_ACCESS_KEY_ID``, ``Google Application
    Default Credentials`` for the platforms); None for a model that calls no endpoint."""
    if not isinstance(model, ProviderModel):
        return None
    # A custom base_url without a key gets a placeholder key: no credentials to name then.
    access = f" ({model.access.label})" if model.access.label else ""
    return f"{model.role} {model.name} at {model.url}{access}"
