"""Disposable and DisposableSet: what registers something hands back its undo, run once."""

from reactor.disposable import Disposable, DisposableSet


def test_a_disposable_undoes_once_however_often_it_is_disposed():
    undone = []
    held = Disposable(lambda: undone.append("x"))
    assert not held.is_disposed
    held.dispose()
    held.dispose()
    assert undone == ["x"] and held.is_disposed
    nothing = Disposable()
    nothing.dispose()
    assert nothing.is_disposed


def test_a_set_undoes_the_last_registration_first_and_keeps_taking_after_clear():
    undone = []
    held = DisposableSet()
    for name in ("first", "second", "third"):
        held.add(Disposable(lambda name=name: undone.append(name)))
    held.clear()
    assert undone == ["third", "second", "first"] and not held.is_disposed
    held.add(Disposable(lambda: undone.append("after clear")))
    held.dispose()
    assert undone[-1] == "after clear" and held.is_disposed


def test_what_is_added_to_a_disposed_set_is_undone_at_once():
    undone = []
    held = DisposableSet()
    held.dispose()
    item = held.add(Disposable(lambda: undone.append("late")))
    assert undone == ["late"] and item.is_disposed
