"""The messages between the page's main thread and the Web Worker where reactor's Python runs.

Every message is one JSON text `{"v": VERSION, ...}`; strings cross `postMessage` cheaply, and
neither side holds the other's objects. Four shapes:

- a request: `{"id": n, "type": T, ...fields}`; the asker may add `"cancelled": reason` when its
  signal had aborted before it asked;
- its answer: `{"re": n, "ok": true, "value": V}` or `{"re": n, "ok": false, "error": DETAIL}`, the
  answer of reactor.answer with the envelope added;
- a cancel: `{"type": "cancel", "re": n, "reason": text}`: the asker stopped waiting;
- a notice: `{"type": T, ...fields}` with no answer.

The types each side may send and the version are reactor.messages' (web/protocol.js holds the
page's copy, checked against it); a message of another type or version is answered with a
ProtocolError, never dropped. The two calls (CALLS) have a shorter way in: the worker's
JavaScript reads their envelope, and Python takes only what to run and its arguments' text
(`take_call`). This module is plain Python (it runs, and is tested, on CPython);
`reactor.browser` posts its texts.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from .answer import error_detail
from .awaiting import is_awaitable, started
from .cancellation import CancelToken
from .errors import PageError, ProtocolError
from .json_text import dumps, loads
from .messages import (
    CALLS,
    ENVELOPE_KEYS,
    PAGE_NOTICES,
    PAGE_REQUESTS,
    VERSION,
    WORKER_NOTICES,
    WORKER_REQUESTS,
)


class Raw(str):
    """A notice's field that is JSON text already: it is spliced in as is, not encoded again."""


Handler = Callable[[dict[str, Any], CancelToken], Any]
#: What a handler's value is: the value to encode, its JSON text, or the whole answer's text
#: (`{"ok": true, "value": V}` or `{"ok": false, "error": …}`, reactor.answer), sent as it is.
VALUE, JSON_TEXT, ANSWER_TEXT = 0, 1, 2
#: A call's handler: (name, arguments as the page sent them, signal or None) -> JSON text,
#: or an awaitable of it.
Call = Callable[[Any, Any, CancelToken | None], Any]


class WorkerEndpoint:
    """The worker's end of the channel: runs the page's requests, asks the page and awaits its
    answers.

    `post(text)` sends one message to the page; `receive(text)` takes one from it.
    """

    def __init__(self, post: Callable[[str], object]) -> None:
        self._post = post
        self._handlers: dict[str, tuple[Handler, int]] = {}  # type -> (handler, what it answers)
        self._calls: dict[str, tuple[Call, int]] = {}
        self._asked: dict[int, asyncio.Future[Any]] = {}
        self._running: dict[Any, CancelToken] = {}
        self._next_id = 0

    def handle(
        self,
        type: str,
        handler: Handler,
        *,
        json_text: bool = False,
        answers: bool = False,
    ) -> None:
        """Answer requests (or take notices) of `type` with `handler(message, signal)`: its value,
        or awaitable of one, is the answer; what it raises is the error the page's caller gets.
        With `json_text`, the value is JSON text already, and is sent as it is: not encoded again,
        nor copied (a 4 MB list of bundles; a call's answer, where a copy was a tenth of its time).
        With `answers`, it is the whole answer's text (reactor.answer): a failure it answers
        rejects the page's call as an error raised here would."""
        if type not in PAGE_REQUESTS | PAGE_NOTICES:
            rule = f"{type!r} is not a message the page sends; declare it in reactor/messages.py."
            raise ProtocolError(rule)
        shape = ANSWER_TEXT if answers else JSON_TEXT if json_text else VALUE
        self._handlers[type] = (handler, shape)

    def handle_call(self, type: str, call: Call, *, answers: bool = False) -> None:
        """Answer the CALLS request `type` with `call(name, args, signal)`, its value JSON text
        (with `answers`, the answer's text, as for `handle`): from `take_call` (signal None), or
        from `take` like any request."""
        field = CALLS.get(type)
        if field is None:
            rule = f"{type!r} is not one of the calls {sorted(CALLS)}; handle it with handle()."
            raise ProtocolError(rule)
        self._calls[type] = (call, ANSWER_TEXT if answers else JSON_TEXT)

        def run(message: dict[str, Any], signal: CancelToken) -> Any:
            return call(message[field], message["args"], signal)

        self.handle(type, run, json_text=True, answers=answers)

    def notify(self, type: str, **fields: Any) -> None:
        """Tell the page something; no answer comes. Raw fields are spliced in as they are."""
        _check_fields(type, WORKER_NOTICES, fields)
        plain = {k: v for k, v in fields.items() if not isinstance(v, Raw)}
        text = json.dumps({"v": VERSION, "type": type, **plain})
        spliced = "".join(f",{json.dumps(k)}:{v}" for k, v in fields.items() if isinstance(v, Raw))
        self._post(text[:-1] + spliced + "}" if spliced else text)

    async def ask(self, type: str, *, signal: CancelToken | None = None, **fields: Any) -> Any:
        """Ask the page; its answer's value, or PageError. An abort of `signal` tells the page
        to stop and raises AbortedError here at once (a late answer is dropped)."""
        _check_fields(type, WORKER_REQUESTS, fields)
        if signal is not None:
            signal.throw_if_aborted()
        self._next_id += 1
        id = self._next_id
        answer = self._asked[id] = asyncio.get_running_loop().create_future()
        self._post(json.dumps({"v": VERSION, "id": id, "type": type, **fields}))
        listening = (
            signal.add_listener(lambda reason: self._cancel(id, reason))
            if signal is not None
            else None
        )
        try:
            if signal is None:
                return await answer
            return await signal.race(answer)
        except asyncio.CancelledError:
            self._cancel(id, "The caller stopped waiting.")  # e.g. the person pressed Stop
            raise
        finally:
            self._asked.pop(id, None)
            if listening is not None:
                listening.dispose()

    def _cancel(self, id: int, reason: Any) -> None:
        if id in self._asked:
            self._post(
                json.dumps({"v": VERSION, "type": "cancel", "re": id, "reason": str(reason)})
            )

    def receive(self, text: str) -> None:
        """Take one message from the page; a request's answer is posted when it is ready."""
        reply = self.take(text)
        if reply is not None:
            self._post(reply)

    def take(self, text: str) -> str | None:
        """Take one message from the page and hand back the answer's text when it is ready at
        once, for the caller to post (in the worker, its JavaScript: one crossing from Python to
        JavaScript fewer per call); an answer that must wait is posted when it comes."""
        try:
            message = loads(text)
            if not isinstance(message, dict):
                raise ProtocolError(
                    f"A message must be a JSON object, not {type(message).__name__}."
                )
        except (ValueError, RecursionError, ProtocolError) as error:
            return dumps(
                {
                    "v": VERSION,
                    "type": "fail",
                    "message": f"The worker got a message that is not JSON: {error}",
                }
            )
        if "re" in message:
            self._settle(message)
            return None
        id = message.get("id")
        try:
            if message.get("v") != VERSION:
                raise ProtocolError(
                    f"The page speaks protocol version {message.get('v')!r}; this worker "
                    f"speaks {VERSION}. "
                    "Reload the page: its scripts and the worker's come from different versions."
                )
            handling = self._handlers.get(message.get("type"))  # type: ignore[arg-type]
            if handling is None:
                raise ProtocolError(f"The worker has no message type {message.get('type')!r}.")
            handler, shape = handling
            signal = CancelToken()
            if "cancelled" in message:
                signal.abort(message["cancelled"])
            outcome = handler(message, signal)
        except Exception as error:
            return self._error_text(id, error)
        return self._outcome_text(id, outcome, shape, signal)

    def take_call(self, type: str, id: Any, name: Any, args: Any) -> str | None:
        """`take` for a CALLS request without a signal, whose envelope the worker's JavaScript
        has read and checked: only the arguments are parsed here. In Pyodide, parsing the whole
        message and the bookkeeping around it were a third of a no-op call's time in the worker."""
        calling = self._calls.get(type)
        if calling is None:
            return self._error_text(id, ProtocolError(f"The worker has no message type {type!r}."))
        call, shape = calling
        try:
            outcome = call(name, args, None)
        except Exception as error:
            return self._error_text(id, error)
        return self._outcome_text(id, outcome, shape, None)

    def _outcome_text(
        self,
        id: Any,
        outcome: Any,
        shape: int,
        signal: CancelToken | None,
    ) -> str | None:
        if is_awaitable(outcome):
            task = started(outcome)
            if task.done():  # it never had to wait: answered now, not a few event-loop turns later
                return self._finished_text(id, task, shape)
            if signal is not None:
                self._running[id] = signal
            task.add_done_callback(lambda done: self._finished(id, done, shape))
            return None
        return self._answer_text(id, outcome, shape)

    def _finished(self, id: Any, task: asyncio.Future[Any], shape: int) -> None:
        self._running.pop(id, None)
        reply = self._finished_text(id, task, shape)
        if reply is not None:
            self._post(reply)

    def _finished_text(self, id: Any, task: asyncio.Future[Any], shape: int) -> str | None:
        if task.cancelled():
            return self._error_text(id, ProtocolError("The worker stopped this request."))
        if task.exception() is not None:
            return self._error_text(id, task.exception())  # type: ignore[arg-type]
        return self._answer_text(id, task.result(), shape)

    def _answer_text(self, id: Any, value: Any, shape: int) -> str | None:
        if id is None:
            return None  # a notice
        if shape == VALUE:
            value = dumps(value)
        elif not isinstance(value, str):
            kind = type(value).__name__
            wrong = TypeError(f"The worker's answer should have been JSON text, not {kind}.")
            return self._error_text(id, wrong)
        head = f'{{"v":{VERSION},"re":{id if type(id) is int else dumps(id)},'
        return head + value[1:] if shape == ANSWER_TEXT else f'{head}"ok":true,"value":{value}}}'

    def _error_text(self, id: Any, error: BaseException) -> str:
        detail = error_detail(error)
        if id is None:
            return dumps({"v": VERSION, "type": "fail", "message": detail["message"]})
        return dumps({"v": VERSION, "re": id, "ok": False, "error": detail})

    def _settle(self, message: dict[str, Any]) -> None:
        if message.get("type") == "cancel":
            token = self._running.get(message["re"])
            if token is not None:
                token.abort(message.get("reason") or "The page stopped waiting.")
            return
        answer = self._asked.get(message["re"])
        if answer is None or answer.done():
            return  # asked with a signal that has since aborted: the late answer is dropped
        if message.get("ok"):
            answer.set_result(message.get("value"))
        else:
            error = message.get("error") or {}
            answer.set_exception(
                PageError(str(error.get("type", "Error")), str(error.get("message", "")))
            )


def _check_fields(type: str, declared: frozenset[str], fields: dict[str, Any]) -> None:
    if type not in declared:
        raise ProtocolError(
            f"{type!r} is not a message the worker sends; declare it in reactor/messages.py."
        )
    taken = sorted(ENVELOPE_KEYS & fields.keys())
    if taken:
        raise ProtocolError(
            f"A {type!r} message cannot carry a field {taken[0]!r}: the envelope uses it."
        )
