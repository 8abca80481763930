"""What `invoke(args, context)` is given: the record's config, the active view, and a signal.

The signal is AbortSignal-style (`aborted`, `reason`, `add_listener`, `throw_if_aborted`); in
the page it wraps a real JS AbortSignal, reachable as `signal.js` to hand to `fetch`.
`fetch_json` threads the signal through for the plugin, so a timeout stops the request too.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ..errors import ToolError

Fetch = Callable[..., Awaitable[Any]]


class ToolContext:
    """The context of one call. `view_id` is the view that was active when the agent called."""

    def __init__(
        self, config: dict[str, Any], view_id: str | None, signal: Any, fetch: Fetch | None = None
    ) -> None:
        self.config = config
        self.view_id = view_id
        self.signal = signal
        self._fetch = fetch

    async def fetch_json(
        self,
        url: str,
        *,
        method: str = "GET",
        body: Any = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        """Fetch JSON with this call's signal, so a timeout or a stop aborts the request."""
        if self._fetch is None:
            sentence = "This context cannot fetch: no HTTP client was given to the runner."
            raise ToolError("unavailable", sentence)
        self.signal.throw_if_aborted()
        return await self._fetch(
            url, method=method, body=body, headers=headers or {}, signal=self.signal
        )
