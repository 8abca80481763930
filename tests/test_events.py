"""Emitter: listeners are told in order, a failing one is logged and skipped, each connection undone
alone."""

import logging

from reactor.events import Emitter


def test_listeners_hear_in_the_order_they_connected_and_a_failing_one_breaks_no_other(caplog):
    heard = []
    changed: Emitter[int] = Emitter()
    changed.connect(lambda value: heard.append(("first", value)))
    changed.connect(lambda value: 1 / 0)
    changed.connect(lambda value: heard.append(("third", value)))
    with caplog.at_level(logging.ERROR, logger="reactor"):
        changed.emit(7)
    assert heard == [("first", 7), ("third", 7)]
    assert "A listener failed while being told of 7" in caplog.text


def test_the_same_function_connected_twice_is_disconnected_once_per_connection():
    heard = []
    changed: Emitter[str] = Emitter()
    first = changed.connect(heard.append)
    changed.connect(heard.append)
    first.dispose()
    changed.emit("once")
    assert heard == ["once"]


def test_a_listener_that_disconnects_another_while_being_told_does_not_skip_this_round():
    heard = []
    changed: Emitter[str] = Emitter()
    later = None

    def first(value):
        heard.append(("first", value))
        later.dispose()

    changed.connect(first)
    later = changed.connect(lambda value: heard.append(("later", value)))
    changed.emit("a")
    changed.emit("b")
    assert heard == [("first", "a"), ("later", "a"), ("first", "b")]
