"""Pyodide's memory snapshot for the page: its Python initialised once, here, not at every visit.

Why: initialising Python in WebAssembly is most of a page's boot (about 4 of 5.5 s on this
machine); restoring memory that holds an initialised Python takes about 1.5 s (bench/RESULTS.md).
Pyodide makes it (`web/snapshot.mjs`, under the Node the set-up already needs) with the page's
Python bundle installed and what the page imports at its start already imported: reactor, its
plugins' page modules and the stdlib modules they use. One per vendored runtime, bundle and
module list, cached and served beside the runtime; without Node, or when making it fails, the
page boots Pyodide from its files as before.

The file holds the memory without its zeros (half of it: `without_zeros`), and the worker writes
what it receives where it goes as it arrives (web/pyodide-boot.js): the browser's fetch costs
~4-5 ms per megabyte it delivers here, zeros included, however well they compress.

A snapshot fixes what Python drew at its start for every page that restores it: the page
reseeds `random` (reactor.browser.restored) and its str hash key is this server's, not its own.
"""

from __future__ import annotations

import hashlib
import json
import logging
import tempfile
from pathlib import Path

from .assets import compressed_twins
from .files import WEB
from .node import least_recently_used, run_node, store

log = logging.getLogger("reactor.server")
MAKER = WEB / "snapshot.mjs"


# Snapshots kept beside the runtime: the most recently used ones (servers of other plugin sets).
KEPT = 4
# Zeros are left out of the file in whole pages of WebAssembly memory.
PAGE = 64 * 1024
WASM32_MEMORY = 4 * 1024**3
FORMAT = "without zeros, 1"  # in each snapshot's key: a file of another format is not read


def without_zeros(memory: bytes) -> bytes:
    """The file of a snapshot of `memory`: a JSON line {"size": its length, "runs": [[offset,
    length], ...]} of the PAGE-aligned runs that are not all zeros, then those runs' bytes back to
    back. The rest of the memory is zeros."""
    runs: list[list[int]] = []
    view = memoryview(memory)
    for offset in range(0, len(memory), PAGE):
        page = view[offset : offset + PAGE]
        if page == bytes(len(page)):
            continue
        if runs and sum(runs[-1]) == offset:
            runs[-1][1] += len(page)
        else:
            runs.append([offset, len(page)])
    index = json.dumps({"size": len(memory), "runs": runs}, separators=(",", ":")).encode()
    return b"".join([index, b"\n", *(view[o : o + n] for o, n in runs)])


def memory_of(file: bytes) -> bytes:
    """The memory a snapshot's file holds (the inverse of `without_zeros`); ValueError for a file
    that is not one."""
    head, _, body = file.partition(b"\n")
    try:
        index = json.loads(head)
        size, runs = index["size"], index["runs"]
        if not 0 <= size <= WASM32_MEMORY:
            raise ValueError(f"a memory of {size} bytes")
        memory = bytearray(size)
        at = 0
        for offset, length in runs:
            inside = 0 <= offset and 0 <= length and offset + length <= size
            if not inside or at + length > len(body):
                raise ValueError(f"the run at {offset} of {length} bytes is outside the memory")
            memory[offset : offset + length] = body[at : at + length]
            at += length
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"This is not a memory snapshot's file: {error}") from None
    if at != len(body):
        raise ValueError("This is not a memory snapshot's file: bytes beyond its runs")
    return bytes(memory)


def memory_snapshot(
    pyodide: Path,
    folder: Path,
    stamp: str,
    modules: tuple[str, ...],
    *,
    bundle: bytes = b"",
    site: str = "",
    node: str = "node",
) -> str | None:
    """The name, in `folder`, of the snapshot of the Pyodide in `pyodide` (runtime `stamp`) with
    the Python `bundle` (a SourceArchive's bytes) installed under `site` and `modules` imported:
    made now unless made before (only the KEPT most recently used are kept). None when it cannot
    be made."""
    key = hashlib.sha256(
        "\n".join([FORMAT, stamp, *modules, site, MAKER.read_text()]).encode() + bundle
    ).hexdigest()[:16]
    name = f"snapshot-{key}.bin"
    if (folder / name).is_file() and (folder / f"{name}.gz").is_file():
        if not (folder / f"{name}.zst").is_file():  # made by a version that wrote no zstd twin
            store(folder / f"{name}.zst", compressed_twins((folder / name).read_bytes())[".zst"])
        (folder / name).touch()
        return name
    with tempfile.TemporaryDirectory() as work:
        made = Path(work) / name
        installed: tuple[str, ...] = ()
        if bundle:
            (Path(work) / "python.bundle").write_bytes(bundle)
            installed = ("--bundle", str(Path(work) / "python.bundle"), site)
        printed = run_node(
            MAKER,
            str(pyodide),
            str(made),
            *installed,
            *modules,
            timeout=300,
            node=node,
            task="making Pyodide's memory snapshot",
            fallback="the page boots Pyodide from its files (slower start-up)",
        )
        if printed is None:
            return None
        if not made.is_file():
            log.warning(
                "Making Pyodide's memory snapshot wrote no file; the page boots Pyodide from "
                "its files. %s",
                printed[-500:],
            )
            return None
        data = without_zeros(made.read_bytes())
    # The twins first: a snapshot is served only once all are whole (two servers may start at once).
    for suffix, squeezed in compressed_twins(data).items():
        store(folder / f"{name}{suffix}", squeezed)
    store(folder / name, data)
    for old in least_recently_used(list(folder.glob("snapshot-*.bin")), KEPT):
        for twin in folder.glob(f"{old.name}*"):
            # another runtime's, or one made for other modules, not used lately
            twin.unlink(missing_ok=True)
    return name
