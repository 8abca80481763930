"""A JS AbortSignal as Python's code reads a CancelToken."""

from __future__ import annotations

from typing import Any

from pyodide.ffi import create_once_callable  # type: ignore[import-not-found]

from ..disposable import Disposable
from ..errors import AbortedError


class JsSignal:
    """A JS AbortSignal as tool code reads it; hand `signal.js` to `fetch` to stop a request."""

    def __init__(self, signal: Any) -> None:
        self.js = signal

    @property
    def aborted(self) -> bool:
        return bool(self.js.aborted)

    @property
    def reason(self) -> Any:
        if not self.js.aborted:
            return None
        return _reason(self.js)

    def add_listener(self, listener: Any) -> Disposable:
        callback = create_once_callable(lambda event: listener(self.reason))
        self.js.addEventListener("abort", callback)
        return Disposable(lambda: self.js.removeEventListener("abort", callback))

    def throw_if_aborted(self) -> None:
        if self.aborted:
            raise AbortedError(self.reason)


def _reason(signal: Any) -> str:
    return getattr(signal.reason, "message", None) or str(signal.reason)
