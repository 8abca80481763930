"""OpenAI Chat Completions, and every server that speaks it (llama.cpp, Ollama, vLLM, LM Studio).

POST {base_url}/chat/completions with `tools` in the function format; the answer's
`tool_calls` carry arguments as a JSON string, answered by `{role: "tool", tool_call_id}`
messages. Local servers differ in small ways — no call id, arguments as an object,
finish_reason "stop" beside tool calls — so tool use is read from the calls, not the reason.
"""

from __future__ import annotations

import json
from typing import Any

from .errors import ProviderError
from .formats import openai_chat_result, openai_chat_tools
from .model import END_TURN, MAX_TOKENS, OTHER, REFUSAL, TOOL_USE, ModelRequest, ModelTurn, ToolCall
from .streaming import OpenAIStream
from .transport import Send
from .wire import WireModel

_STOPS = {
    "stop": END_TURN,
    "tool_calls": TOOL_USE,
    "function_call": TOOL_USE,
    "length": MAX_TOKENS,
    "content_filter": REFUSAL,
}


class OpenAIChatModel(WireModel):
    """A model behind an OpenAI-compatible `/chat/completions`; the key stays with the caller."""

    provider = "OpenAI-compatible server"
    path = "/chat/completions"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        send: Send,
        api_key: str = "",
        max_tokens: int | None = None,
        temperature: float | None = None,
        label: str = "",
        stream: bool = False,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.label = label or model
        self._send = send
        self._api_key = api_key
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.stream = stream  # ask for server-sent events; a server that answers whole still works

    def __repr__(self) -> str:  # never the key
        return f"OpenAIChatModel(base_url={self.base_url!r}, model={self.model!r})"

    def request_body(self, request: ModelRequest) -> dict[str, Any]:
        messages: list[dict[str, Any]] = (
            [{"role": "system", "content": request.system}] if request.system else []
        )
        messages += [_message(m) for m in request.messages]
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if request.tools:
            body["tools"] = openai_chat_tools(request.tools)
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if self.temperature is not None:
            body["temperature"] = self.temperature
        return body

    def headers(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def new_stream(self, on_text: Any) -> OpenAIStream:
        return OpenAIStream(self.provider, on_text)

    def streamed_turn(self, stream: OpenAIStream) -> ModelTurn:
        calls, reason = stream.tool_calls(), stream.finish_reason
        stop = TOOL_USE if calls and reason in ("stop", "") else _STOPS.get(reason, OTHER)
        return ModelTurn("".join(stream.text), calls, stop, reason)

    def parse_response(self, data: dict[str, Any]) -> ModelTurn:
        try:
            choice = data["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise ProviderError(
                f"{self.provider} answered without choices[0].message: {json.dumps(data)[:200]}.",
                provider=self.provider,
                status=200,
                kind="bad_response",
            ) from None
        calls = tuple(
            ToolCall(
                call.get("id") or f"call_{index}",
                call.get("function", {}).get("name", ""),
                call.get("function", {}).get("arguments"),
            )
            for index, call in enumerate(message.get("tool_calls") or [])
        )
        reason = str(choice.get("finish_reason") or "")
        stop = TOOL_USE if calls and reason in ("stop", "") else _STOPS.get(reason, OTHER)
        return ModelTurn(_text(message.get("content")), calls, stop, reason)


def _message(message: dict[str, Any]) -> dict[str, Any]:
    role = message["role"]
    if role == "tool":
        return openai_chat_result(message["tool_call_id"], message["result"])
    if role == "assistant" and message.get("tool_calls"):
        return {
            "role": "assistant",
            "content": message.get("content") or None,
            "tool_calls": [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["name"], "arguments": _arguments_text(c["arguments"])},
                }
                for c in message["tool_calls"]
            ],
        }
    return {"role": role, "content": message.get("content") or ""}


def _arguments_text(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments
    return json.dumps({} if arguments is None else arguments)


def _text(content: Any) -> str:
    # Some servers answer with a list of parts instead of a string.
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""
