"""One disposal contract: whatever registers something hands back a Disposable that undoes it."""

from __future__ import annotations

from collections.abc import Callable


class Disposable:
    """Runs its undo once; `dispose()` is idempotent and `is_disposed` is always safe to read."""

    __slots__ = ("_undo",)

    def __init__(self, undo: Callable[[], object] | None = None) -> None:
        self._undo: Callable[[], object] | None = undo or _nothing

    @property
    def is_disposed(self) -> bool:
        return self._undo is None

    def dispose(self) -> None:
        undo, self._undo = self._undo, None
        if undo is not None:
            undo()


class DisposableSet(Disposable):
    """Disposes what it holds in reverse order, so later registrations are undone first."""

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: list[Disposable] = []
        super().__init__(self._dispose_items)

    def add(self, item: Disposable) -> Disposable:
        if self.is_disposed:
            item.dispose()
        else:
            self._items.append(item)
        return item

    def clear(self) -> None:
        """Dispose what it holds now, and keep holding what is added next."""
        self._dispose_items()

    def _dispose_items(self) -> None:
        items, self._items = self._items, []
        for item in reversed(items):
            item.dispose()


def _nothing() -> None:
    pass
