"""Custom HTTP headers of a model (``headers = {...}`` in ``[model]``): checked, then filled in.

A value may name environment variables as ``${VAR}`` (``"Bearer ${GATEWAY_TOKEN}"``); ``$$`` is a
literal ``$``. The config, and so the run manifest, keeps the template; the values are read when
the model is built (:func:`resolve_headers`). A header whose name says it carries a secret
(``Authorization``, ``api-key``, ``X-Gateway-Token``...) must take its value from a variable: a
secret written into a config would be copied into every manifest, as ``api_key`` would.

Pure functions over strings and a mapping of variables.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# RFC 9110 token characters: what a field name may hold.
_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
REFERENCE = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$")
_SECRET_WORDS = ("authorization", "auth", "key", "token", "secret", "password", "cookie", "signature")
MAX_HEADERS = 32
MAX_VALUE = 8192


def looks_secret(name: str) -> bool:
    """Whether a header's name says that it carries a credential."""
    lowered = name.lower()
    return any(word in lowered for word in _SECRET_WORDS)


def variables_of(value: str) -> list[str]:
    """The variables a value names (``${VAR}``); raises ValueError for a ``$`` that starts neither
    ``${VAR}`` nor ``$$``."""
    names: list[str] = []
    for match in REFERENCE.finditer(value):
        token = match.group(0)
        if token == "$$":
            continue
        if token == "$":
            raise ValueError(f"header value {value!r}: write a variable as ${{NAME}} and a literal $ as $$")
        names.append(match.group(1))
    return names


def check_headers(headers: Mapping[str, str]) -> None:
    """Raises ValueError (worded for the config) for a header that cannot be sent or keeps a secret."""
    if len(headers) > MAX_HEADERS:
        raise ValueError(f"headers: at most {MAX_HEADERS}, got {len(headers)}")
    for name, value in headers.items():
        if not _NAME.fullmatch(name):
            raise ValueError(f"headers: {name!r} is not a valid HTTP header name")
        if not isinstance(value, str):
            raise ValueError(f"headers: the value of {name} must be a string")
        if any(c in value for c in "\r\n\0") or len(value) > MAX_VALUE:
            raise ValueError(
                f"headers: the value of {name} must be one line of at most {MAX_VALUE} characters"
            )
        named = variables_of(value)
        if looks_secret(name) and not named:
            raise ValueError(
                f"headers: {name} looks like it carries a secret, and configs are copied into the run "
                f'manifest: put the value in an environment variable and write {name} = "${{VARIABLE}}" '
                f'(or "Bearer ${{VARIABLE}}")'
            )
