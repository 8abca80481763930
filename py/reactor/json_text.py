"""`loads` and `dumps` for the small texts of every page call, without json's per-call set-up.

A call from the page decodes its message (and a tool's arguments) and encodes its answer. In
Pyodide `json.loads` of such a text spends ~5 of its ~7 µs in Python-level checks around the C
scanner, and `json.dumps` ~6 of ~8 µs making a C encoder for each call (bench/RESULTS.md, the
call round trip). These give the same values and texts as json's; anything else (whitespace
around the text, bytes, an error, a cycle) takes json's own path, so its errors read as json's.
"""

from __future__ import annotations

import json
from json import decoder, encoder
from typing import Any

# json's C parts are not in its stubs.
_scan = decoder.JSONDecoder().scan_once  # type: ignore[attr-defined]
_make_encoder = getattr(encoder, "c_make_encoder", None)


def _c_encoder(allow_nan: bool, sort_keys: bool) -> Any:
    # No cycle check (`markers=None`): a cycle ends in RecursionError, and json.dumps then says so.
    if _make_encoder is None:
        return None
    default = json.JSONEncoder().default
    return _make_encoder(
        None,
        default,
        encoder.encode_basestring_ascii,
        None,
        ": ",
        ", ",
        sort_keys,
        False,
        allow_nan,
    )


_ENCODERS = {(nan, keys): _c_encoder(nan, keys) for nan in (True, False) for keys in (True, False)}


def loads(text: str) -> Any:
    """json.loads(text)."""
    try:
        value, end = _scan(text, 0)
    except (StopIteration, ValueError, TypeError):
        return json.loads(text)
    return value if end == len(text) else json.loads(text)


def dumps(value: Any, *, allow_nan: bool = True, sort_keys: bool = False) -> str:
    """json.dumps(value, allow_nan=allow_nan, sort_keys=sort_keys)."""
    encode = _ENCODERS[allow_nan, sort_keys]
    if encode is not None:
        try:
            return "".join(encode(value, 0))
        except RecursionError:
            pass
    return json.dumps(value, allow_nan=allow_nan, sort_keys=sort_keys)


def copied(value: Any) -> Any:
    """A deep copy of plain JSON data, made by json's C parts: a bundle's schemas are copied at
    each check, and copy.deepcopy's Python-level walk was a tenth of the plugins' load in the
    page."""
    return loads(dumps(value))
