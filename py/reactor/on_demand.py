"""Files a Python restored from the memory snapshot gets only when an import needs them.

Such a Python has in memory what the page imports at its start, so the worker leaves out what only
a later import reads: the stdlib zip (a quarter of a first visit's bytes) and the writing of the
page's Python files (15-25 ms). This module is in the snapshot, so the worker calls compiled code:
Python source run at that point would start the compiler in cold WebAssembly (~15 ms).
"""

from __future__ import annotations

import sys
import zipimport
from collections.abc import Callable, Collection


class OnFirstImport:
    """A finder ahead of every other: before the first import Python has to look for (of a module
    in `names`, when given) it calls `load`, then leaves."""

    def __init__(
        self, load: Callable[[], object], names: Collection[str] | None = None, what: str = ""
    ) -> None:
        self.load, self.names, self.what = load, names, what

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if self.wants(name):
            try:
                self.now()
            except Exception as error:
                raise ImportError(f"{self.what} could not be loaded for {name}: {error}") from None
        return None

    def wants(self, name: str) -> bool:
        stem, names = name.replace(".", "/"), self.names
        return names is None or f"{stem}.py" in names or f"{stem}/__init__.py" in names

    def now(self) -> None:
        """Load now, if not yet done."""
        if self in sys.meta_path:
            sys.meta_path.remove(self)
            self.load()


def stdlib_on_demand(load: Callable[[], object], zip_path: str) -> None:
    """`load` writes the stdlib zip at `zip_path`, which the zip importer indexed already."""
    names = zipimport._zip_directory_cache.get(zip_path)  # type: ignore[attr-defined]
    sys.meta_path.insert(0, OnFirstImport(load, names, "The standard library"))


def files_on_demand(load: Callable[[], object]) -> Callable[[], None]:
    """`load` writes the page's Python files; the answer writes them now (once the page is
    ready)."""
    finder = OnFirstImport(load, what="The page's Python files")
    sys.meta_path.insert(0, finder)
    return finder.now


def modules() -> str:
    """The modules imported so far, by name, comma-separated."""
    return ",".join(sys.modules)
