"""The site's model as the operator configures it: provider, model, key, limits; and the check
that it answers before the server starts."""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from ...errors import DeclarationError

PROVIDERS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
PATHS = {"openai": "/api/assistant/v1/chat/completions", "anthropic": "/api/assistant/v1/messages"}
UPSTREAM_PATHS = {"openai": "/chat/completions", "anthropic": "/v1/messages"}
ANTHROPIC_VERSION = "2023-06-01"
# The request fields a chat uses, as each provider's API reference defines them. Left out on
# purpose: what changes the site's cost or where its data goes (OpenAI's `store`, `service_tier`,
# `audio`; Anthropic's `mcp_servers`, `container`, `service_tier`).
FIELDS = {
    "openai": frozenset(
        {
            "model",
            "messages",
            "tools",
            "tool_choice",
            "parallel_tool_calls",
            "max_tokens",
            "max_completion_tokens",
            "temperature",
            "top_p",
            "stop",
            "stream",
            "stream_options",
            "presence_penalty",
            "frequency_penalty",
            "seed",
            "response_format",
            "logit_bias",
            "logprobs",
            "top_logprobs",
            "n",
            "reasoning_effort",
            "user",
        }
    ),  # fmt: skip
    "anthropic": frozenset(
        {
            "model",
            "messages",
            "system",
            "max_tokens",
            "tools",
            "tool_choice",
            "temperature",
            "top_p",
            "top_k",
            "stop_sequences",
            "stream",
            "metadata",
            "thinking",
        }
    ),  # fmt: skip
}


@dataclass(frozen=True)
class AssistantConfig:
    """The site's model, as `reactor serve --model-provider … --model …` configures it."""

    provider: str
    model: str
    api_key: str = field(default="", repr=False)
    base_url: str = ""
    anonymous: bool = False
    limit_rpm: int = 20
    limit_tokens: int = 200_000
    max_tokens: int = 4096
    max_body: int = 2_000_000
    timeout: float = 120.0
    # How long a reply kept for its thread waits for a page to come back (gateway/kept.py).
    reattach_seconds: float = 30.0

    def __post_init__(self) -> None:
        def refuse(option: str, value: Any, rule: str) -> DeclarationError:
            return DeclarationError(rule, owner="assistant", field=option, value=value)

        if self.provider not in PROVIDERS:
            raise refuse(
                "--model-provider",
                self.provider,
                f"There is no model provider {self.provider[:40]!r}: set --model-provider "
                "(REACTOR_MODEL_PROVIDER) to openai or anthropic.",
            )
        if not self.model or len(self.model) > 200 or any(c.isspace() for c in self.model):
            raise refuse(
                "--model",
                self.model,
                "Name the site's model with --model (REACTOR_MODEL), for example gpt-4o-mini, "
                "claude-sonnet-4-5 or llama3.1: one word, no spaces.",
            )
        parts = urlsplit(self.url)
        if (
            parts.scheme not in ("http", "https")
            or not parts.hostname
            or parts.query
            or parts.fragment
        ):
            raise refuse(
                "--model-base-url",
                self.base_url,
                "--model-base-url (REACTOR_MODEL_BASE_URL) must be an http:// or https:// "
                f"address such as http://127.0.0.1:11434/v1; {self.base_url[:80]!r} is not.",
            )
        if not self.api_key and (self.provider == "anthropic" or not self.base_url):
            raise refuse(
                "REACTOR_MODEL_API_KEY",
                None,
                f"The site's model needs its provider's key: set REACTOR_MODEL_API_KEY (or "
                f"{KEY_VARIABLES[self.provider]}) in the server's environment, never on the "
                "command line.",
            )
        for option, value, low, high in (
            ("--model-limit-rpm", self.limit_rpm, 1, 100_000),
            ("--model-limit-tokens", self.limit_tokens, 1, 10**12),
            ("--model-max-tokens", self.max_tokens, 1, 1_000_000),
        ):
            if not low <= value <= high:
                raise refuse(
                    option, value, f"{option} must be between {low} and {high}, not {value}."
                )

    @property
    def url(self) -> str:
        return (self.base_url or PROVIDERS[self.provider]).rstrip("/")

    @property
    def label(self) -> str:
        return f"{self.model} · via this site"

    def for_page(self) -> dict[str, Any]:
        """What boot.json tells the page (never the key nor the provider's address)."""
        return {
            "provider": self.provider,
            "model": self.model,
            "label": self.label,
            "url": "/api/assistant",
            "maxTokens": self.max_tokens,
            "anonymous": self.anonymous,
        }


def check_reachable(config: AssistantConfig, timeout: float = 3.0) -> str:
    """ "" when the provider's host takes a connection, else the sentence saying what to set."""
    parts = urlsplit(config.url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname, port), timeout=timeout).close()
        return ""
    except OSError as error:
        reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
        return (
            f"the site's model at {config.url} cannot be reached ({reason}): start it, or point "
            "--model-base-url (REACTOR_MODEL_BASE_URL) at where it listens."
        )
