"""Every error reactor raises, so a caller can catch one family and read structured fields.

ReactorError
├── CommandError                      .command_id
│   ├── CommandNotFoundError          no command has that id
│   ├── CommandUnavailableError       listed, but refused to run now (.reason)
│   ├── CommandFailedError            the handler raised (.cause); the message is the handler's
│   ├── DuplicateCommandError         the id is taken; nothing was overwritten
│   └── InvalidArgumentsError         the arguments break the command's schema (.problems)
├── ContributionError                 .point_id, .contribution_id
├── PluginError                       .plugin
│   ├── PluginLoadError               register() raised; its registrations were rolled back (.cause)
│   ├── PluginDependencyError         a required plugin is missing, failed, or forms a cycle
│   └── PluginNotFoundError           no plugin has that name
├── DeclarationError (ValueError)     a declaration refused where it is made (.owner, .field,
│                                     .value)
├── SchemaError (ValueError)          a JSON Schema reactor cannot use (.path; reactor.json_schema)
├── AbortedError                      what was running was stopped (.reason)
├── ToolError                         a tool's chosen failure (.code, .details): becomes the
│   │                                 envelope
│   └── NotFoundError (LookupError)   what was asked for does not exist: code `not_found`
├── HttpError                         the server answered 4xx/5xx (.status, .detail, .body)
├── ApiError                          the server refuses a request (.status, .field, .headers,
│   │                                 .details)
│   └── StaleVersion                  a write named a version someone else replaced (.current;
│                                     server/requests.py)
├── OAuthError                        an OAuth endpoint refuses, as its RFC spells it (.code, the
│                                     sentence as .description, .status)
├── ProtocolError                     a message between the page and the worker that is not the
│                                     protocol's
├── PageError                         the page answered the worker's request with its error (.name)
├── PageScriptError                   a JavaScript command of the page threw (.name)
├── HostError                         the chat's host: SettingsError (ValueError), ProviderError
│                                     (reactor.host.errors)
├── PageGone                          a page for agents went before it answered
│                                     (server/agents/relay.py)
├── ScaffoldError (ValueError)        `reactor new plugin` refused (reactor.scaffold)
├── ServerStartError (RuntimeError)   reactor.testing's server did not start
├── PageCallError (AssertionError)    reactor.testing: the page refused a window.reactor call
├── OutboundRefused (ValueError)      the server will not fetch that address (not http(s),
│                                     credentials, a non-public address): nothing was sent
├── OutboundFailed                    a fetch of the server's could not be read: unreachable, too
│                                     slow, too large, an error status
└── DatabaseError                     the server's database refused a statement (SQLite or
    │                                 PostgreSQL)
    ├── UniqueViolation               a write would repeat a unique key (a taken slug, a taken id)
    └── DatabaseBusy                  too busy to answer now (locked, a serialization failure):
        │                             retry
        └── DatabaseUnavailable       not answering at all (down, restarting, the connection
                                      dropped): retry in a few seconds

A plugin's own errors derive from these too (the CMS's CrawlRefused, SourceError, SlugTaken…):
tests/test_errors.py walks every module of reactor and of the installed plugins for a class that
does not. Plugins raise ToolError with the code that says what happened (`invalid_arguments` for
a request the schema could not express, `not_found`, `conflict` for a taken id or someone else's
change, `not_permitted`, `unavailable`), so the envelope the model reads means what it says;
anything else a handler raises reaches the model as `failed` with its sentence.

Every message is a sentence naming the offending value, written for whoever must act on it:
a developer for declarations, a model or a person for commands.
"""

from __future__ import annotations

from typing import Any


class ReactorError(Exception):
    """Base of every error reactor raises on purpose."""


class CommandError(ReactorError):
    def __init__(self, message: str, *, command_id: str) -> None:
        super().__init__(message)
        self.command_id = command_id


class CommandNotFoundError(CommandError):
    pass


class CommandUnavailableError(CommandError):
    def __init__(
        self, message: str, *, command_id: str, reason: str = "", display: str = ""
    ) -> None:
        super().__init__(message, command_id=command_id)
        self.reason = reason
        self.display = display  # the reason in a person's words, when the command gave one


class CommandFailedError(CommandError):
    def __init__(self, message: str, *, command_id: str, cause: BaseException) -> None:
        super().__init__(message, command_id=command_id)
        self.cause = cause


class DuplicateCommandError(CommandError):
    pass


class InvalidArgumentsError(CommandError):
    def __init__(self, message: str, *, command_id: str, problems: list[dict[str, str]]) -> None:
        super().__init__(message, command_id=command_id)
        self.problems = problems


class ContributionError(ReactorError):
    def __init__(self, message: str, *, point_id: str, contribution_id: str = "") -> None:
        super().__init__(message)
        self.point_id = point_id
        self.contribution_id = contribution_id


class PluginError(ReactorError):
    def __init__(self, message: str, *, plugin: str) -> None:
        super().__init__(message)
        self.plugin = plugin


class PluginLoadError(PluginError):
    def __init__(self, message: str, *, plugin: str, cause: BaseException) -> None:
        super().__init__(message, plugin=plugin)
        self.cause = cause


class PluginDependencyError(PluginError):
    pass


class PluginNotFoundError(PluginError):
    pass


class DeclarationError(ReactorError, ValueError):
    def __init__(self, message: str, *, owner: str, field: str, value: Any = None) -> None:
        super().__init__(message)
        self.owner = owner
        self.field = field
        self.value = value


def refusal(subject: str, owner: str, field: str, value: Any, rule: str) -> DeclarationError:
    """The DeclarationError of one broken rule: "Plugin 'notes': assets must be file names …"."""
    where = f" {field}" if field else ""
    return DeclarationError(
        f"{subject} {owner!r}:{where} {rule}", owner=owner, field=field, value=value
    )


class AbortedError(ReactorError):
    """What was running was stopped; `.reason` says why (the argument given to `abort`)."""

    def __init__(self, reason: Any) -> None:
        super().__init__(f"Stopped: {reason}" if isinstance(reason, str) else "Stopped.")
        self.reason = reason


# The codes of a tool's failure, as the envelope the model reads carries them (envelope.py).
FAILURE_CODES = frozenset(
    {
        "invalid_arguments",
        "unknown_tool",
        "not_admitted",
        "not_permitted",
        "not_found",
        "conflict",
        "denied",
        "unavailable",
        "failed",
        "aborted",
        "timeout",
        "too_large",
    }
)


def check_failure_code(code: str, owner: str) -> None:
    """Refuse a code the envelope does not have (a DeclarationError, also a ValueError)."""
    if code not in FAILURE_CODES:
        rule = f"{code!r} is not a tool failure code; use one of {sorted(FAILURE_CODES)}."
        raise DeclarationError(rule, owner=owner, field="code", value=code)


class ToolError(ReactorError):
    """Raise from a tool to answer the model with `{"ok": false, "error": {code, message, ...}}`."""

    def __init__(self, code: str, message: str, **details: Any) -> None:
        check_failure_code(code, "ToolError")
        super().__init__(message)
        self.code = code
        self.details = details


class NotFoundError(ToolError, LookupError):
    """What a tool was asked for does not exist; the message names what does."""

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__("not_found", message, **details)


class HttpError(ReactorError):
    """The server answered with an error status; `.status` and the server's `.detail`."""

    def __init__(self, status: int, detail: str, body: dict[str, Any] | None = None) -> None:
        super().__init__(f"The server answered {status}: {detail}")
        self.status = status
        self.detail = detail
        self.body = body or {}  # the answer's JSON object, for what it says beside the sentence


class ApiError(ReactorError):
    """The server's refusal of one request: its status and the sentence it answers, with the
    request field that was wrong and the headers it sends (`Retry-After`); `details` are further
    members of the JSON answer (a 409's `current`)."""

    def __init__(
        self,
        status: int,
        sentence: str,
        *,
        field: str = "",
        retry_after: int | None = None,
        headers: dict[str, str] | None = None,
        **details: Any,
    ) -> None:
        super().__init__(sentence)
        self.status, self.sentence, self.field, self.details = status, sentence, field, details
        self.headers = dict(headers or {})
        if retry_after is not None:
            self.headers["retry-after"] = str(retry_after)


class OAuthError(ReactorError):
    """An OAuth endpoint's refusal: the RFC's error code (`invalid_grant`, `invalid_target`, …),
    the sentence its client shows (`error_description`), the HTTP status (400, or 401 for a
    client that failed to authenticate)."""

    def __init__(self, code: str, description: str, *, status: int = 400) -> None:
        super().__init__(description)
        self.code, self.description, self.status = code, description, status


class ProtocolError(ReactorError):
    """A message between the page and the worker that is not the protocol's (reactor.protocol)."""


class PageError(ReactorError):
    """The page's JavaScript answered the worker's request with an error; `.name` is that error's
    name."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name


class PageScriptError(ReactorError):
    """A JavaScript command handler threw; the message is the script's own, `.name` its error's
    name."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name


class OutboundRefused(ReactorError, ValueError):
    """The guard refused a URL before any connection was made (reactor.server.outbound)."""


class OutboundFailed(ReactorError):
    """A guarded fetch could not be read: unreachable, too slow, too large, or an error status."""


class DatabaseError(ReactorError):
    """The database refused a statement; the driver's own error is the cause."""


class UniqueViolation(DatabaseError):
    """A write would repeat a unique key: the database, not a lock in one process, said so."""


class DatabaseBusy(DatabaseError):
    """The database could not answer now (SQLite locked, PostgreSQL serialization or deadlock)."""


class DatabaseUnavailable(DatabaseBusy):
    """The database does not answer: unreachable, restarting, or it dropped the connection. A
    DatabaseBusy, so whatever retries a busy database retries this too."""
