"""The command registry: what a person runs from the palette and an agent calls as a tool."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Iterable
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


class CommandOptions:
    """Everything a command is besides its id, as in Lumino's `addCommand(id, options)`.

    An AgentTools bundle declares the words and the schema (label, description, parameters);
    the plugin's code gives the rest. `parameters`, when given, is the JSON Schema the arguments
    obey. `is_enabled(args)` says whether the command can run now; when it says no, a caller (a
    model) reads `disabled_reason` and a person `disabled_display`. `confirmation(args)`, for a
    command that changes things, is what a person reads before allowing a call ("Publish
    ‘Hello’ on Acme?"): a str, or an awaitable of one when the words need what the page may not
    have loaded yet (a deck's title); one that fails gives way to the host's plain question.
    A plain class: a dataclass costs milliseconds to define in the page.
    """

    __slots__ = (
        "execute",
        "label",
        "description",
        "parameters",
        "is_enabled",
        "disabled_reason",
        "disabled_display",
        "confirmation",
    )

    def __init__(
        self,
        execute: Handler,
        *,
        label: str = "",
        description: str = "",
        parameters: dict[str, Any] | None = None,
        is_enabled: Callable[[dict[str, Any]], bool] | None = None,
        disabled_reason: str = "",
        disabled_display: str = "",
        confirmation: Callable[[dict[str, Any]], str | Awaitable[str]] | None = None,
    ) -> None:
        self.execute, self.label, self.description, self.parameters = (
            execute,
            label,
            description,
            parameters,
        )
        self.is_enabled, self.disabled_reason, self.disabled_display = (
            is_enabled,
            disabled_reason,
            disabled_display,
        )
        self.confirmation = confirmation

    def declared(self, label: str, description: str, parameters: dict[str, Any]) -> CommandOptions:
        """These options with the words and the schema a bundle declares."""
        declared = CommandOptions(
            self.execute, label=label, description=description, parameters=parameters
        )
        declared.is_enabled, declared.disabled_reason = self.is_enabled, self.disabled_reason
        declared.disabled_display, declared.confirmation = self.disabled_display, self.confirmation
        return declared


class Command:
    """One registered command: its id, its options, the plugin that registered it."""

    __slots__ = ("id", "options", "plugin", "_validator")

    def __init__(self, id: str, options: CommandOptions, plugin: str = "") -> None:
        self.id, self.options, self.plugin = id, options, plugin
        self._validator: Validator | None = None

    @property
    def validator(self) -> Validator | None:
        """The parameters compiled, on the first call: a page registers many commands at start-up
        and calls few of them soon (compiling them all was ~15% of its plugins' load)."""
        if self._validator is None and self.options.parameters is not None:
            self._validator = compiled_validator(self.options.parameters)
        return self._validator

    def __repr__(self) -> str:
        return f"Command({self.id!r}, plugin={self.plugin!r})"

    def describe(self) -> dict[str, Any]:
        """Plain data for a palette or a listing (the palette draws a form from `parameters`)."""
        options = self.options
        described = {
            "id": self.id,
            "label": options.label or self.id,
            "description": options.description,
            "plugin": self.plugin,
            "available": options.is_enabled is None or bool(options.is_enabled({})),
        }
        if options.parameters is not None:
            described["parameters"] = options.parameters
        return described


class CommandsChanged:
    """Told to subscribers: which command came or went."""

    __slots__ = ("kind", "command_id")

    def __init__(self, kind: str, command_id: str) -> None:
        self.kind = kind  # "added" | "removed"
        self.command_id = command_id


class CommandExecuted:
    """Told to subscribers after a handler ran: its arguments, and what it answered or raised."""

    __slots__ = ("command_id", "args", "result", "error")

    def __init__(
        self, command_id: str, args: dict[str, Any], result: Any, error: CommandError | None
    ) -> None:
        self.command_id, self.args, self.result, self.error = command_id, args, result, error


class Settled:
    """What `execute` hands back when the command is done at once: `await` it like any answer,
    or read it now with `result()`. Only an async handler's answer is still to come."""

    __slots__ = ("value", "error")

    def __init__(self, value: Any = None, error: CommandError | None = None) -> None:
        self.value, self.error = value, error

    def result(self) -> Any:
        """The command's value, or its error raised."""
        if self.error is not None:
            raise self.error
        return self.value

    def __await__(self) -> Generator[Any, None, Any]:
        return self.result()
        yield  # a generator that returns at once: `await` takes no turn of the event loop


class CommandRegistry:
    """Commands by id, in the shape of Lumino's CommandRegistry: `register_command(id, options)`,
    one `execute`, `is_enabled(id, args)`, and the `changed` and `executed` signals."""

    def __init__(self) -> None:
        self._commands: dict[str, Command] = {}
        self.changed: Emitter[CommandsChanged] = Emitter()
        self.executed: Emitter[CommandExecuted] = Emitter()

    def register_command(
        self, id: str, options: CommandOptions | Handler, *, plugin: str = ""
    ) -> Disposable:
        """Add a command (`options` may be just its handler); the Disposable removes exactly this
        registration. A plugin declares its commands in its bundle instead (`register_bundle`)."""
        if not isinstance(id, str) or not id.strip():
            raise DeclarationError(
                f"A command id must be a non-empty string, not {id!r}.",
                owner=plugin or "?",
                field="id",
                value=id,
            )
        if id in self._commands:
            owner = self._commands[id].plugin
            by = f" by plugin {owner!r}" if owner else ""
            raise DuplicateCommandError(
                f"The command {id!r} is already registered{by}; dispose that registration "
                "first or choose another id.",
                command_id=id,
            )
        if not isinstance(options, CommandOptions):
            options = CommandOptions(options)
        if not callable(options.execute):
            raise DeclarationError(
                f"The handler of command {id!r} must be callable, not "
                f"{type(options.execute).__name__}.",
                owner=plugin or id,
                field="execute",
            )
        if options.parameters is not None and (problem := schema_problem(options.parameters)):
            raise DeclarationError(
                f"The parameters of command {id!r} are refused: {problem}.",
                owner=plugin or id,
                field="parameters",
                value=options.parameters,
            )
        command = Command(id, options, plugin)
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
            raise self._not_found(id) from None

    def _not_found(self, id: Any) -> CommandNotFoundError:
        return CommandNotFoundError(
            f"There is no command {id!r}.{did_you_mean(id, self._commands)} Registered "
            f"commands: {_sample(self._commands)}.",
            command_id=str(id),
        )

    def list_commands(self) -> list[Command]:
        """Every command, unavailable ones included, in registration order."""
        return list(self._commands.values())

    def is_enabled(self, id: str, args: dict[str, Any] | None = None) -> bool:
        """Whether the command can run now with these arguments; False for an unknown id."""
        command = self._commands.get(id) if isinstance(id, str) else None
        if command is None:
            return False
        is_enabled = command.options.is_enabled
        return is_enabled is None or bool(is_enabled({} if args is None else args))

    def execute(self, id: str, args: dict[str, Any] | None = None) -> Awaitable[Any]:
        """Run a command: check its arguments, ask whether it is enabled, call its handler.

        Await the answer for the handler's value; every failure arrives as a CommandError when it
        is awaited. A command done at once answers `Settled`, which the page reads without a turn
        of the event loop (an `await` through the browser's event loop costs ten times a sync call).
        """
        try:  # get_command's lookup, without its call: this is every page call's path
            command = self._commands[id]
        except (KeyError, TypeError):
            return Settled(error=self._not_found(id))
        if args is None:
            args = {}
        options = command.options
        try:
            _check_arguments(command, args)
            if options.is_enabled is not None and not options.is_enabled(args):
                reason = (
                    options.disabled_reason or "it is disabled in the current state of the page"
                )
                raise CommandUnavailableError(
                    f"The command {id!r} is unavailable right now: {reason}",
                    command_id=id,
                    reason=reason,
                    display=options.disabled_display,
                )
        except CommandError as error:
            return Settled(error=error)
        except Exception as error:  # its is_enabled failed
            return Settled(error=_failed(id, error))
        try:
            result = options.execute(args)
        except Exception as error:
            failed = _failed(id, error)
            self._tell(id, args, None, failed)
            return Settled(error=failed)
        if is_awaitable(result):
            return self._awaited(id, args, result)
        if self.executed.listening:
            self.executed.emit(CommandExecuted(id, args, result, None))
        return Settled(result)

    async def _awaited(self, id: str, args: dict[str, Any], awaitable: Awaitable[Any]) -> Any:
        try:
            result = await awaitable
        except Exception as error:
            failed = _failed(id, error)
            self._tell(id, args, None, failed)
            raise failed from error
        self._tell(id, args, result, None)
        return result

    def _tell(self, id: str, args: dict[str, Any], result: Any, error: CommandError | None) -> None:
        if self.executed.listening:
            self.executed.emit(CommandExecuted(id, args, result, error))


def _check_arguments(command: Command, args: Any) -> None:
    if not isinstance(args, dict):
        raise InvalidArgumentsError(
            f"The arguments of {command.id!r} must be an object, not {type(args).__name__}.",
            command_id=command.id,
            problems=[{"path": "$", "message": f"expected an object, got {type(args).__name__}"}],
        )
    validator = command.validator
    # Valid arguments take the validator's one call; invalid ones are checked again, to be
    # described.
    if validator is not None and validator.problems(args):
        problems = argument_problems(validator, args)
        if problems:
            listed = "; ".join(f"{p['path']}: {p['message']}" for p in problems)
            raise InvalidArgumentsError(
                f"The arguments of {command.id!r} are invalid: {listed}.",
                command_id=command.id,
                problems=problems,
            )


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
    """ " Did you mean 'notes.openNote'?" for the closest known name, or ""."""
    if not isinstance(name, str) or not name:
        return ""
    import difflib  # only on this error path: not at the page's start-up

    known = list(known)
    # A name typed short of its end ("notes.open") first, then the closest spelling.
    close = [k for k in known if k.startswith(name)][:1] or difflib.get_close_matches(
        name, known, n=1, cutoff=0.6
    )
    return f" Did you mean {close[0]!r}?" if close else ""


def _sample(commands: dict[str, Command], limit: int = 8) -> str:
    ids = sorted(commands)
    if not ids:
        return "none"
    more = f" and {len(ids) - limit} more" if len(ids) > limit else ""
    return ", ".join(ids[:limit]) + more
