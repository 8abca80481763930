"""Bench plugins for the page: a no-op tool, synthetic plugins for the scale test, and the
measurements only Python can take (load times, validation speed, memory).

The bench server ships this package into the page next to `reactor` (the product's archive
holds only `reactor` and `reactor_plugins`). `reactor.browser.start` imports plugins by
"module:ATTR" spec, so `reactor_bench:SYNTH_0042` is made on demand by the module
`__getattr__` below: the server lists as many as the run asks for, nothing is generated ahead.
Plain Python apart from `now()`, so it also loads on CPython (tests/test_bench_page.py).
"""

from __future__ import annotations

import cProfile
import json
import pstats
import statistics
import time
from typing import Any

from reactor import AgentTools, PluginContext, Reactor, define_agent_tools, define_plugin
from reactor.facade import PageTools
from reactor.json_schema import Validator
from reactor.schema import _validator, argument_problems

try:  # the page: the clock JavaScript reads, so Python and JS times share one origin
    from js import performance  # type: ignore[import-not-found]

    def now() -> float:
        return float(performance.now())
except ImportError:  # CPython

    def now() -> float:
        return time.perf_counter() * 1000


TOOLS_PER_PLUGIN = 10
IMPORTED_AT = now()  # the first plugin spec of this module is being imported
DEFINED_AT = IMPORTED_AT  # moved on by each synthetic plugin declared
LOADED_AT = IMPORTED_AT  # moved on by each synthetic plugin registered
NOOP_PARAMETERS = {
    "type": "object",
    "properties": {"n": {"type": "integer"}},
    "additionalProperties": False,
}
# The decks_open schema: a realistic tool's arguments for the validation figures.
DECK_PARAMETERS = {
    "type": "object",
    "properties": {
        "id": {"type": "string", "minLength": 1, "maxLength": 64},
        "slide": {"type": "integer", "minimum": 1},
    },
    "required": ["id"],
    "additionalProperties": False,
}
_reactor: Reactor | None = None
_tools: PageTools | None = None  # the page's calls as the worker makes them, on _reactor


def _page_tools() -> PageTools:
    global _tools
    assert _reactor is not None
    if _tools is None or _tools.reactor is not _reactor:
        _tools = PageTools(_reactor)
    return _tools


def synthetic_plugin(index: int, tools: int = TOOLS_PER_PLUGIN, *, timed: bool = False) -> Any:
    """Plugin `synth_NNNN` with `tools` echo tools, each with its own (distinct) schema;
    a `timed` one moves LOADED_AT when it has registered."""
    name = f"synth_{index:04d}"
    commands = [
        {
            "name": f"{name}_t{t}",
            "command": f"{name}.t{t}",
            "description": f"Synthetic tool {t} of {name}: answers with the arguments it was "
            "given.",
            "parameters": {
                "type": "object",
                "properties": {
                    "id": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 64,
                        "description": f"An id for {name}.t{t}.",
                    },
                    "count": {"type": "integer", "minimum": 0},
                },
                "required": ["id"],
                "additionalProperties": False,
            },
        }
        for t in range(tools)
    ]
    bundle = define_agent_tools(id=name, name=f"Synthetic {index}", plugin=name, commands=commands)

    def register(context: PluginContext) -> None:
        global LOADED_AT
        context.register_bundle(bundle, {tool["command"]: _echo for tool in bundle["commands"]})
        if timed:
            LOADED_AT = now()

    return define_plugin(name=name, register=register)


def __getattr__(attribute: str) -> Any:
    """`SYNTH_0042` -> synthetic_plugin(42), made once (PEP 562)."""
    global DEFINED_AT
    if not attribute.startswith("SYNTH_"):
        raise AttributeError(f"module 'reactor_bench' has no attribute {attribute!r}")
    plugin = globals()[attribute] = synthetic_plugin(
        int(attribute.removeprefix("SYNTH_")), timed=True
    )
    DEFINED_AT = now()
    return plugin


def _echo(args: dict[str, Any]) -> dict[str, Any]:
    return args


def stats() -> dict[str, Any]:
    """Load times (ms, on the page's clock) and memory figures of this page."""
    memory: dict[str, Any] = {}
    try:
        import pyodide_js  # type: ignore[import-not-found]

        memory["wasm_bytes"] = int(pyodide_js._module.HEAPU8.length)  # private, bench only
    except Exception:  # CPython, or a Pyodide that moved it
        pass
    commands = len(_reactor.commands.list_commands()) if _reactor else 0
    return {
        "imported_at": IMPORTED_AT,
        "defined_at": DEFINED_AT,
        "loaded_at": LOADED_AT,
        "commands": commands,
        "memory": memory,
    }


def _rate(function: Any, calls: int) -> float:
    """Calls per second of `function()`, over `calls` calls."""
    start = time.perf_counter()
    for _ in range(calls):
        function()
    return calls / (time.perf_counter() - start)


def validation(calls: int = 2000) -> dict[str, Any]:
    """Calls per second with validation, cached and not, and what a cache lookup costs."""
    args = {"id": "onboarding", "slide": 2}
    assert argument_problems(DECK_PARAMETERS, args) == []
    before = _validator.cache_info()
    cached = _rate(lambda: argument_problems(DECK_PARAMETERS, args), calls)
    after = _validator.cache_info()
    compiled_each_time = _rate(
        lambda: Validator(DECK_PARAMETERS).problems(args), max(calls // 10, 20)
    )
    bare_validator = Validator(DECK_PARAMETERS)
    validator_only = _rate(lambda: bare_validator.problems(args), calls)
    cache_key = _rate(lambda: json.dumps(DECK_PARAMETERS, sort_keys=True), calls)
    registry = _reactor.commands if _reactor else None
    registry_rate = (
        _rate(lambda: registry.execute("bench.noop", {"n": 1}), calls) if registry else None
    )
    return {
        "argument_problems_per_s": cached,
        "compiled_each_call_per_s": compiled_each_time,
        "validator_only_per_s": validator_only,
        "cache_key_dumps_per_s": cache_key,
        "registry_call_per_s": registry_rate,
        "cache_hits": after.hits - before.hits,
        "cache_misses": after.misses - before.misses,
    }


def listing() -> dict[str, Any]:
    """What listing the bundles costs Python, in ms: ordering them, serialising them after a
    change, and answering again before the next change (the cached JSON)."""
    assert _reactor is not None
    _page_tools().bundles_json()  # the text the page was given at its start
    start = now()
    values = _reactor.contributions.values(AgentTools)
    ordered = now()
    text = json.dumps(values)
    serialised = now()
    _page_tools().bundles_json()
    return {
        "order_ms": ordered - start,
        "dumps_ms": serialised - ordered,
        "cached_ms": now() - serialised,
        "json_bytes": len(text),
    }


# What a plugin load spends its time in: the product's functions the profile is read for.
PROFILED = [
    "schema_problem",
    "check_schema",
    "define_agent_tools",
    "check_agent_tools",
    "register_command",
    "contribute",
    "emit",
    "deepcopy",
]


def profile_load(plugins: int = 5) -> dict[str, Any]:
    """Declare and load `plugins` synthetic plugins into a fresh Reactor under cProfile:
    total ms, and each PROFILED function's cumulative share of it."""
    profile = cProfile.Profile()
    start = time.perf_counter()
    profile.enable()
    Reactor().load_plugins([synthetic_plugin(9000 + i) for i in range(plugins)])
    profile.disable()
    total = time.perf_counter() - start
    shares: dict[str, float] = {}
    for (_, _, function), (_, _, _, cumulative, _) in pstats.Stats(profile).stats.items():  # type: ignore[attr-defined]
        if function in PROFILED:
            shares[function] = max(shares.get(function, 0.0), cumulative)
    return {
        "plugins": plugins,
        "total_ms": total * 1000,
        "share": {k: v / total for k, v in sorted(shares.items())},
    }


def call_scaling(command: str, rounds: int = 40, calls: int = 200) -> dict[str, Any]:
    """Per-call ms of `command` in this page's registry and of the same kind of tool in a fresh
    registry of 10 tools, interleaved in one page (pages differ by more than what is measured):
    as a registry call, and on the agent's path (`PageTools.call_json`: the toolbox's lookup by
    tool name, argument parsing, validation, the envelope), which the page's callTool runs in the
    worker."""
    small = Reactor()
    small.load_plugins([synthetic_plugin(0)])
    page_tools, small_tools = _page_tools(), PageTools(small)
    args = {"id": "x", "count": 1}
    args_json = json.dumps(args)
    subjects = {
        "page": lambda: _reactor.commands.execute(command, args),  # type: ignore[union-attr]
        "ten_tools": lambda: small.commands.execute("synth_0000.t3", args),
        "tool_page": lambda: page_tools.call_json(command.replace(".", "_"), args_json, None),
        "tool_ten_tools": lambda: small_tools.call_json("synth_0000_t3", args_json, None),
    }
    times: dict[str, list[float]] = {name: [] for name in subjects}
    for _ in range(rounds):
        for name, call in subjects.items():
            start = time.perf_counter()
            for _ in range(calls):
                call()
            times[name].append((time.perf_counter() - start) * 1000 / calls)
    ms = {name: statistics.median(each) for name, each in times.items()}
    # timed a call, not a refusal
    assert '"ok": true' in small_tools.call_json("synth_0000_t3", args_json, None)
    return {
        "page_ms": ms["page"],
        "ten_tools_ms": ms["ten_tools"],
        "ratio": ms["page"] / ms["ten_tools"],
        "tool_page_ms": ms["tool_page"],
        "tool_ten_tools_ms": ms["tool_ten_tools"],
        "tool_ratio": ms["tool_page"] / ms["tool_ten_tools"],
        "rounds": rounds,
        "calls": calls,
    }


def _register_probe(context: PluginContext) -> None:
    global _reactor
    _reactor = context.reactor
    context.register_bundle(PROBE_TOOLS, {"bench.noop": lambda args: None})
    context.register_command("bench.stats", lambda args: stats())
    context.register_command(
        "bench.validation", lambda args: validation(int(args.get("calls", 2000)))
    )
    context.register_command("bench.listing", lambda args: listing())
    context.register_command("bench.callScaling", lambda args: call_scaling(args["command"]))
    context.register_command(
        "bench.profileLoad", lambda args: profile_load(int(args.get("plugins", 5)))
    )


PROBE_TOOLS = define_agent_tools(
    id="bench",
    name="Bench",
    plugin="bench",
    commands=[
        {
            "name": "bench_noop",
            "command": "bench.noop",
            "parameters": NOOP_PARAMETERS,
            "description": "Do nothing and answer null; measures the round trip.",
        }
    ],
)
PROBE_PLUGIN = define_plugin(
    name="bench",
    description="Bench probes: a no-op tool and measurements.",
    register=_register_probe,
)
