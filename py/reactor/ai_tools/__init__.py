"""AI Tool plugins: functions the agent calls, declared as records, checked at save and at call.

declaration.py  the save-time rules (the server answers 422 with the field and the rule)
bundle.py       the one AgentTools bundle that offers the user's AI Tools to the agent
caller.py       one call: permission re-check, arguments, timeout, result cap, envelope codes
runner.py       where the code runs: in-process on CPython; the page uses a Web Worker

The page plugin that offers them (and shows UI plugin records as panels) is plugins/ai_tools.
"""

from __future__ import annotations

from .bundle import AI_TOOLS_BUNDLE_ID, ai_tool_bundle, ai_tool_command
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
    "AI_TOOLS_BUNDLE_ID",
    "LANGUAGES",
    "LOCATIONS",
    "RESULT_CAP_DEFAULT",
    "SIDE_EFFECTS",
    "TIMEOUT_MS_RANGE",
    "AiToolCaller",
    "InProcessRunner",
    "ai_tool_bundle",
    "ai_tool_command",
    "check_ai_tool_record",
]
