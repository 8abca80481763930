"""The command registry: what a person runs from the palette and an agent calls as a tool."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from .awaiting import is_awaitable
from .disposable import Disposable
from .errors import (
    CommandError,
    CommandFailedError,
    CommandNotFoundError,
    CommandUnavailableError,
    DeclarationError,
    DuplicateCommandError,
    InvalidArgumentsError,
)
from .events import Emitter
from .json_schema import Validator
from .schema import argument_problems, compiled_validator, schema_problem

Handler = Callable[[dict[str, Any]], Any]


class Command:
    """One registered command. `parameters`, when given, is the JSON Schema its arguments obey."""

    __slots__ = (
        "id",
        "execute",
        "label",
        "description",
        "is_enabled",
        "disabled_reason",
        "parameters",
        "plugin",
        "disabled_display",
        "confirmation",
        "_validator",
    )

    def __init__(
        self,
        id: str,
        execute: Handler,
        label: str = "",
        description: str = "",
        is_enabled: Callable[[], bool] | None = None,
        disabled_reason: str = "",
        parameters: dict[str, Any] | None = None,
        plugin: str = "",
        disabled_display: str = "",
        confirmation: Callable[[dict[str, Any]], str] | None = None,
    ) -> None:
        self.id, self.execute, self.label, self.description = id, execute, label, description
        self.is_enabled, self.disabled_reason, self.parameters = is_enabled, disabled_reason, parameters
        self.plugin = plugin
        self.disabled_display = disabled_display  # the reason in a person's words (a chat card)
        self.confirmation = confirmation  # args -> the approval's question, in a person's words
        self._validator: Validator | None = None

    @property
    def validator(self) -> Validator | None:
        """The parameters compiled, on the first call: a page registers many commands at start-up
        and calls few of them soon (compiling them all was ~15% of its plugins' load)."""
        if self._validator is None and self.parameters is not None:
            self._validator = compiled_validator(self.parameters)
        return self._validator

    def __repr__(self) -> str:
        return f"Command({self.id!r}, plugin={self.plugin!r})"

    @property
    def is_available(self) -> bool:
        return self.is_enabled is None or bool(self.is_enabled())

    def describe(self) -> dict[str, Any]:
        """Plain data for a palette or a listing (the palette draws a form from `parameters`)."""
        described = {
            "id": self.id,
            "label": self.label or self.id,
            "description": self.description,
            "plugin": self.plugin,
            "available": self.is_available,
        }
        if self.parameters is not None:
            described["parameters"] = self.parameters
        return described


class CommandsChanged:
    """Told to subscribers: which command came or went."""

    __slots__ = ("kind", "command_id")

    def __init__(self, kind: str, command_id: str) -> None:
        self.kind = kind  # "added" | "removed"
        self.command_id = command_id


class CommandRegistry:
    """Holds commands by id; `execute_command` returns exactly what the handler returned."""

    def __init__(self) -> None:
        self._commands: dict[str, Command] = {}
        self.changed: Emitter[CommandsChanged] = Emitter()

    def register_command(
        self,
        id: str,
        execute: Handler,
        *,
        label: str = "",
        description: str = "",
        is_enabled: Callable[[], bool] | None = None,
        disabled_reason: str = "",
        parameters: dict[str, Any] | None = None,
        plugin: str = "",
        disabled_display: str = "",
        confirmation: Callable[[dict[str, Any]], str] | None = None,
    ) -> Disposable:
        """Add a command; the Disposable removes exactly this registration. `disabled_reason` is
        what a caller (a model) reads when it is refused; `disabled_display` the same for a person.
        `confirmation(args)`, for a command that changes things, says what a call will do as a
        person reads it before allowing it ("Publish ‘Hello’ on Acme?")."""
        if not isinstance(id, str) or not id.strip():
            raise DeclarationError(
                f"A command id must be a non-empty string, not {id!r}.", owner=plugin or "?", field="id", value=id
            )
        if id in self._commands:
            owner = self._commands[id].plugin
            by = f" by plugin {owner!r}" if owner else ""
            raise DuplicateCommandError(
                f"The command {id!r} is already registered{by}; dispose that registration first or choose another id.",
                command_id=id,
            )
        if not callable(execute):
            raise DeclarationError(
                f"The handler of command {id!r} must be callable, not {type(execute).__name__}.",
                owner=plugin or id,
                field="execute",
            )
        if parameters is not None and (problem := schema_problem(parameters)):
            raise DeclarationError(
                f"The parameters of command {id!r} are refused: {problem}.",
                owner=plugin or id,
                field="parameters",
                value=parameters,
            )
        command = Command(
            id,
            execute,
            label,
            description,
            is_enabled,
            disabled_reason,
            parameters,
            plugin,
            disabled_display,
            confirmation,
        )
        self._commands[id] = command
        self.changed.emit(CommandsChanged("added", id))

        def unregister() -> None:
            if self._commands.get(id) is command:
                del self._commands[id]
                self.changed.emit(CommandsChanged("removed", id))

        return Disposable(unregister)

    def has_command(self, id: str) -> bool:
        return id in self._commands

    def get_command(self, id: str) -> Command:
        try:
            return self._commands[id]
        except (KeyError, TypeError):
            raise CommandNotFoundError(
                f"There is no command {id!r}.{did_you_mean(id, self._commands)} Registered commands: {_sample(self._commands)}.",
                command_id=str(id),
            ) from None

    def list_commands(self) -> list[Command]:
        """Every command, unavailable ones included, in registration order."""
        return list(self._commands.values())

    def call_command(self, id: str, args: dict[str, Any] | None = None, *, checked: Validator | None = None) -> Any:
        """Run a sync handler at once, or hand back the awaitable of an async one.

        This is the fast path for the page: an `await` through the browser's event loop costs
        ten times a sync call. It raises the same errors `execute_command` does. `checked` is a
        Validator the arguments already passed (a tool's): when it is the command's own, the
        arguments are not checked twice.
        """
        try:  # get_command's lookup, without its call: this is every page call's path
            command = self._commands[id]
        except (KeyError, TypeError):
            command = self.get_command(id)
        args = self._checked_arguments(command, args, checked)
        if command.is_enabled is not None and not command.is_enabled():
            reason = command.disabled_reason or "it is disabled in the current state of the page"
            raise CommandUnavailableError(
                f"The command {id!r} is unavailable right now: {reason}",
                command_id=id,
                reason=reason,
                display=command.disabled_display,
            )
        try:
            result = command.execute(args)
        except Exception as error:
            raise _failed(id, error) from error
        if is_awaitable(result):
            return _awaited(id, result)
        return result

    async def execute_command(self, id: str, args: dict[str, Any] | None = None) -> Any:
        """Await the command's handler and return its value; every failure is a CommandError."""
        result = self.call_command(id, args)
        if is_awaitable(result):
            result = await result
        return result

    def _checked_arguments(self, command: Command, args: Any, checked: Validator | None = None) -> dict[str, Any]:
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise InvalidArgumentsError(
                f"The arguments of {command.id!r} must be an object, not {type(args).__name__}.",
                command_id=command.id,
                problems=[{"path": "$", "message": f"expected an object, got {type(args).__name__}"}],
            )
        validator = command.validator
        # Valid arguments take the validator's one call; invalid ones are checked again, to be described.
        if validator is not None and validator is not checked and validator.problems(args):
            problems = argument_problems(validator, args)
            if problems:
                listed = "; ".join(f"{p['path']}: {p['message']}" for p in problems)
                raise InvalidArgumentsError(
                    f"The arguments of {command.id!r} are invalid: {listed}.",
                    command_id=command.id,
                    problems=problems,
                )
        return args


async def _awaited(id: str, awaitable: Awaitable[Any]) -> Any:
    try:
        return await awaitable
    except Exception as error:
        raise _failed(id, error) from error


def _failed(id: str, error: Exception) -> CommandError:
    if isinstance(error, CommandUnavailableError) and error.command_id == id:
        return error  # the handler found it cannot run now (a page command whose isEnabled said no)
    # The handler's own sentence is what the caller needs; a bare KeyError prints only the key.
    if isinstance(error, KeyError):
        message = f"The command {id!r} failed: there is no {error.args[0]!r}."
    else:
        message = str(error).strip() or f"The command {id!r} failed with {type(error).__name__}."
    return CommandFailedError(message, command_id=id, cause=error)


def did_you_mean(name: Any, known: Iterable[str]) -> str:
    """ " Did you mean 'decks.goToSlide'?" for the closest known name, or ""."""
    if not isinstance(name, str) or not name:
        return ""
    import difflib  # only on this error path: not at the page's start-up

    known = list(known)
    # A name typed short of its end ("decks.goTo") first, then the closest spelling.
    close = [k for k in known if k.startswith(name)][:1] or difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f" Did you mean {close[0]!r}?" if close else ""


def _sample(commands: dict[str, Command], limit: int = 8) -> str:
    ids = sorted(commands)
    if not ids:
        return "none"
    more = f" and {len(ids) - limit} more" if len(ids) > limit else ""
    return ", ".join(ids[:limit]) + more
