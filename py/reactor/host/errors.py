"""The chat host's errors, under reactor's ReactorError.

ReactorError
└── HostError                 the host was used in a way it cannot serve (e.g. two sends at once)
    ├── ToolError             a host handler's chosen failure: .code, .details (becomes the envelope)
    └── ProviderError         the model provider refused or failed: .provider, .status, .kind,
                              .retry_after — the message says what to do, and never holds the key
AbortedError (reactor.cancellation) is raised when a stop reaches what was running.
"""

from __future__ import annotations

from typing import Any

from ..errors import ReactorError


class HostError(ReactorError):
    """Base of the chat host's errors."""


class ToolError(HostError):
    """Raise from a host handler to answer the model with `{"ok": false, "error": {code, ...}}`."""

    def __init__(self, code: str, message: str, **details: Any) -> None:
        from .envelope import FAILURE_CODES

        if code not in FAILURE_CODES:
            raise ValueError(f"{code!r} is not a tool failure code; use one of {sorted(FAILURE_CODES)}.")
        super().__init__(message)
        self.code = code
        self.details = details


class ProviderError(HostError):
    """The provider answered with an error, or not at all (`status` 0) or not in its format."""

    def __init__(self, message: str, *, provider: str, status: int = 0, kind: str = "", retry_after: float | None = None) -> None:
        super().__init__(message)
        self.provider = provider
        self.status = status
        self.kind = kind
        self.retry_after = retry_after
