"""Change notifications: an Emitter calls its listeners in order and never lets one break
another."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Generic, TypeVar

from .disposable import Disposable

T = TypeVar("T")
log = logging.getLogger("reactor")


class Emitter(Generic[T]):
    """Listeners connect and get a Disposable; a listener that raises is logged and skipped."""

    __slots__ = ("_listeners", "listening")

    def __init__(self) -> None:
        self._listeners: list[Callable[[T], object]] = []
        # Whether anyone listens: an emitter on a hot path makes its value only then. Kept as
        # listeners come and go, so reading it costs a hot path (a page's every call) no call.
        self.listening = False

    def connect(self, listener: Callable[[T], object]) -> Disposable:
        # Wrap so the same function connected twice is disconnected once per connection.
        entry = lambda value: listener(value)  # noqa: E731
        self._listeners.append(entry)
        self.listening = True

        def disconnect() -> None:
            self._listeners.remove(entry)
            self.listening = bool(self._listeners)

        return Disposable(disconnect)

    def emit(self, value: T) -> None:
        # Copy: a listener may connect or disconnect others while we iterate.
        for listener in list(self._listeners):
            try:
                listener(value)
            except Exception:
                log.exception("A listener failed while being told of %r", value)
