"""The chat host's errors, under reactor's ReactorError.

ReactorError
└── HostError                 the host was used in a way it cannot serve (e.g. two sends at once)
    ├── SettingsError         the chat's settings cannot be used (also a ValueError): the
    │                         message says the person what to change
    └── ProviderError         the model provider refused or failed: .provider, .status, .kind,
                              .retry_after, .detail (the provider's own words) — the message is
                              for the person: what happened and what to do; never the key
ToolError and AbortedError live in reactor.errors: tools and AI Tool plugins raise them too.
"""

from __future__ import annotations

from ..errors import ReactorError


class HostError(ReactorError):
    """Base of the chat host's errors."""


class SettingsError(HostError, ValueError):
    """Settings that cannot be used: no such provider, no model named, a key missing, no steps."""


class ProviderError(HostError):
    """The provider answered with an error, or not at all (`status` 0) or not in its format."""

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        status: int = 0,
        kind: str = "",
        retry_after: float | None = None,
        detail: str = "",
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.status = status
        self.kind = kind
        self.retry_after = retry_after
        self.detail = detail
