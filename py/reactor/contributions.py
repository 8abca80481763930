"""Contribution points: named places a plugin adds values to, read back in order."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

from .disposable import Disposable
from .errors import ContributionError
from .events import Emitter

T = TypeVar("T")


class ContributionPoint(Generic[T]):
    """A place plugins contribute to. `check` may normalise a value or raise to refuse it."""

    __slots__ = ("id", "description", "check")

    def __init__(
        self, id: str, description: str = "", check: Callable[[Any], T] | None = None
    ) -> None:
        self.id, self.description, self.check = id, description, check

    def __repr__(self) -> str:
        return f"ContributionPoint({self.id!r})"


class Contribution(Generic[T]):
    """A value on a point, with the id it is known by and its order (lower reads first)."""

    __slots__ = ("point", "value", "id", "order", "plugin")

    def __init__(
        self, point: ContributionPoint[T], value: T, id: str, order: int = 0, plugin: str = ""
    ) -> None:
        self.point, self.value, self.id, self.order, self.plugin = point, value, id, order, plugin

    def __repr__(self) -> str:
        return f"Contribution({self.point.id!r}, id={self.id!r}, plugin={self.plugin!r})"


def contribution(
    point: ContributionPoint[T], value: T, *, id: str, order: int = 0
) -> Contribution[T]:
    """Describe a contribution for `define_plugin(contributes=[...])`; the reactor adds it on
    load."""
    return Contribution(point, value, id, order)


class ContributionRegistry:
    """Holds every point's contributions; `changed` tells which point changed."""

    def __init__(self) -> None:
        self._by_point: dict[ContributionPoint[Any], dict[str, tuple[int, Contribution[Any]]]] = {}
        self._sequence = itertools.count()
        self._revisions: dict[ContributionPoint[Any], int] = {}
        self.changed: Emitter[ContributionPoint[Any]] = Emitter()
        # The contribution that came or went, told before `changed`: a reader that follows one
        # point's changes (BundleFeed) reads only those, not the whole point again.
        self.touched: Emitter[Contribution[Any]] = Emitter()

    def revision(self, point: ContributionPoint[Any]) -> int:
        """A number that changes whenever the point's contributions do: a key for caches."""
        return self._revisions.get(point, 0)

    def _changed(self, point: ContributionPoint[Any], item: Contribution[Any]) -> None:
        self._revisions[point] = self._revisions.get(point, 0) + 1
        self.touched.emit(item)
        self.changed.emit(point)

    def contribute(
        self, point: ContributionPoint[T], value: T, *, id: str, order: int = 0, plugin: str = ""
    ) -> Disposable:
        """Add `value` to `point` under `id`; a taken id is refused, nothing overwritten."""
        if not isinstance(point, ContributionPoint):
            raise ContributionError(
                f"{point!r} is not a ContributionPoint.", point_id=str(point), contribution_id=id
            )
        if not isinstance(id, str) or not id:
            raise ContributionError(
                f"A contribution to {point.id!r} needs a non-empty string id, not {id!r}.",
                point_id=point.id,
            )
        entries = self._by_point.setdefault(point, {})
        if id in entries:
            owner = entries[id][1].plugin
            raise ContributionError(
                f"The point {point.id!r} already has a contribution {id!r}"
                + (f" from plugin {owner!r}" if owner else "")
                + "; give this one another id.",
                point_id=point.id,
                contribution_id=id,
            )
        if point.check is not None:
            value = point.check(value)
        entry = (next(self._sequence), Contribution(point, value, id, order, plugin))
        entries[id] = entry
        self._changed(point, entry[1])

        def withdraw() -> None:
            if entries.get(id) is entry:
                del entries[id]
                self._changed(point, entry[1])

        return Disposable(withdraw)

    def contributions(self, point: ContributionPoint[T]) -> list[Contribution[T]]:
        """The point's contributions by order, then by when they were added."""
        return _in_order(self._by_point.get(point, {}).values())

    def among(self, point: ContributionPoint[T], ids: Iterable[str]) -> list[Contribution[T]]:
        """The point's contributions of those `ids` that it has, in the same order."""
        entries = self._by_point.get(point, {})
        return _in_order([entries[id] for id in ids if id in entries])

    def values(self, point: ContributionPoint[T]) -> list[T]:
        return [c.value for c in self.contributions(point)]

    def watch(
        self, point: ContributionPoint[T], listener: Callable[[list[T]], object]
    ) -> Disposable:
        """Call `listener` with the point's values each time they change."""
        return self.changed.connect(
            lambda changed: changed is point and listener(self.values(point))
        )


def _in_order(entries: Iterable[tuple[int, Contribution[T]]]) -> list[Contribution[T]]:
    return [c for _, c in sorted(entries, key=lambda e: (e[1].order, e[0]))]
