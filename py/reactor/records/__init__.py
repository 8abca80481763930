"""Plugin records: code a person saves at /plugins, as an AI Tool the agent calls or a UI
plugin's panel; checked at save and at call.

declaration.py  the save-time rules (the server answers 422 with the field and the rule)
caller.py       one call: permission re-check, arguments, timeout, result cap, envelope codes
runner.py       where the code runs: in-process on CPython; the page uses a Web Worker
context.py      what the code's `invoke(args, context)` is given

A page plugin offers the records to the agent and draws the panels; the server stores them.
"""

from __future__ import annotations

from .caller import AiToolCaller
from .declaration import (
    LANGUAGES,
    LOCATIONS,
    RESULT_CAP_DEFAULT,
    SIDE_EFFECTS,
    TIMEOUT_MS_RANGE,
    check_ai_tool_record,
)
from .runner import InProcessRunner

__all__ = [
    "LANGUAGES",
    "LOCATIONS",
    "RESULT_CAP_DEFAULT",
    "SIDE_EFFECTS",
    "TIMEOUT_MS_RANGE",
    "AiToolCaller",
    "InProcessRunner",
    "check_ai_tool_record",
]
