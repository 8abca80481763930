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
~4-5 ms per megabyte it delivers here, zeros included, however well they compress. Nor does it
hold again what pyodide.asm.wasm brings: the memory's first 3.8 MB are the module's data
segments, 98 % unchanged, sent as their difference from them (`module_memory`; 1.2 MB of the
4.1 MB zstd file before).

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
FORMAT = "without zeros, 2"  # in each snapshot's key: a file of another format is not read
# Pyodide's snapshot: this magic number, then where WebAssembly's memory starts in it (uint32 LE).
PYODIDE_MAGIC = b"\0snp"


def without_zeros(memory: bytes, base: bytes = b"") -> bytes:
    """The file of a snapshot of `memory`: a JSON line {"size": its length, "base": [at, length],
    "runs": [[offset, length], ...]}, then the bytes of the runs back to back. The runs are the
    PAGE-aligned ones that are not all zeros; the rest of the memory is zeros. With a `base` (the
    module's memory as instantiated, `module_memory`), the bytes from `at` on are sent as their
    exclusive or with it, mostly zeros: the reader undoes it with the same bytes."""
    at = _wasm_memory_at(memory) if base else None
    if at is not None and at + len(base) <= len(memory):
        end = at + len(base)
        memory = b"".join([memory[:at], _xor(memory[at:end], base), memory[end:]])
        index: dict[str, object] = {"size": len(memory), "base": [at, len(base)]}
    else:
        index = {"size": len(memory)}
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
    line = json.dumps({**index, "runs": runs}, separators=(",", ":")).encode()
    return b"".join([line, b"\n", *(view[o : o + n] for o, n in runs)])


def memory_of(file: bytes, base: bytes = b"") -> bytes:
    """The memory a snapshot's file holds (the inverse of `without_zeros` with the same `base`);
    ValueError for a file that is not one, or that needs another base."""
    head, _, body = file.partition(b"\n")
    try:
        index = json.loads(head)
        size, runs = index["size"], index["runs"]
        start, span = index.get("base", [0, 0])
        if not 0 <= size <= WASM32_MEMORY:
            raise ValueError(f"a memory of {size} bytes")
        if span != len(base) or not 0 <= start <= size - span:
            raise ValueError(f"it needs a base of {span} bytes at {start}, not of {len(base)}")
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
    memory[start : start + span] = _xor(memory[start : start + span], base)
    return bytes(memory)


def module_memory(wasm: bytes) -> bytes:
    """The memory a WebAssembly module has as instantiated, up to the end of its last data segment
    (a multiple of 4 bytes): its active data segments written at their offsets. b"" for a module
    whose memory is not known before it runs: one with a start function, or with a segment that
    is passive or placed by anything but a constant."""
    if wasm[:8] != b"\0asm\x01\0\0\0":
        return b""
    memory = bytearray()
    at = 8
    try:
        while at < len(wasm):
            section, at = wasm[at], at + 1
            size, at = _leb128(wasm, at)
            if section == 8:  # start
                return b""
            if section == 11:  # data
                count, inside = _leb128(wasm, at)
                for _ in range(count):
                    flags, inside = _leb128(wasm, inside)
                    if flags != 0 or wasm[inside] != 0x41:  # active, memory 0, i32.const
                        return b""
                    offset, inside = _leb128(wasm, inside + 1, signed=True)
                    if wasm[inside] != 0x0B or offset < 0:
                        return b""
                    length, inside = _leb128(wasm, inside + 1)
                    end = offset + length
                    if end > len(memory):
                        memory.extend(bytes(end - len(memory)))
                    memory[offset:end] = wasm[inside : inside + length]
                    inside += length
            at += size
    except IndexError:
        return b""
    return bytes(memory) + bytes(-len(memory) % 4)


def pyodide_base(pyodide: Path) -> bytes:
    """The base a snapshot's file is sent against: the memory of the folder `pyodide`'s
    pyodide.asm.wasm as instantiated (`module_memory`)."""
    return module_memory((pyodide / "pyodide.asm.wasm").read_bytes())


def _leb128(data: bytes, at: int, signed: bool = False) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte, at = data[at], at + 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            if signed and byte & 0x40:
                value -= 1 << shift
            return value, at


def _xor(data: bytes | bytearray, base: bytes) -> bytes:
    return (int.from_bytes(data, "little") ^ int.from_bytes(base, "little")).to_bytes(
        len(data), "little"
    )


def _wasm_memory_at(snapshot: bytes) -> int | None:
    """Where WebAssembly's memory starts in Pyodide's snapshot (a multiple of 4); None if this is
    not one."""
    if snapshot[:4] != PYODIDE_MAGIC or len(snapshot) < 8:
        return None
    at = int.from_bytes(snapshot[4:8], "little")
    return at if at % 4 == 0 else None


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
        data = without_zeros(made.read_bytes(), pyodide_base(pyodide))
    # The twins first: a snapshot is served only once all are whole (two servers may start at once).
    for suffix, squeezed in compressed_twins(data).items():
        store(folder / f"{name}{suffix}", squeezed)
    store(folder / name, data)
    for old in least_recently_used(list(folder.glob("snapshot-*.bin")), KEPT):
        for twin in folder.glob(f"{old.name}*"):
            # another runtime's, or one made for other modules, not used lately
            twin.unlink(missing_ok=True)
    return name
