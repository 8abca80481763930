import pytest

from reactor import ContributionError, ContributionPoint, ContributionRegistry

Panels = ContributionPoint("test.panels")


@pytest.fixture
def registry():
    return ContributionRegistry()


def test_contributions_read_back_by_order_then_arrival(registry):
    registry.contribute(Panels, "late", id="c", order=10)
    registry.contribute(Panels, "first", id="a", order=0)
    registry.contribute(Panels, "second", id="b", order=0)
    assert registry.values(Panels) == ["first", "second", "late"]
    assert [c.id for c in registry.contributions(Panels)] == ["a", "b", "c"]


def test_a_taken_id_on_a_point_is_refused_and_nothing_is_overwritten(registry):
    registry.contribute(Panels, "one", id="a", plugin="p1")
    with pytest.raises(ContributionError, match="already has a contribution 'a' from plugin 'p1'"):
        registry.contribute(Panels, "two", id="a")
    assert registry.values(Panels) == ["one"]


def test_the_same_id_on_another_point_is_fine(registry):
    other = ContributionPoint("test.other")
    registry.contribute(Panels, 1, id="a")
    registry.contribute(other, 2, id="a")
    assert registry.values(other) == [2]


def test_withdrawing_removes_the_value_and_tells_watchers(registry):
    seen = []
    registry.watch(Panels, seen.append)
    withdraw = registry.contribute(Panels, "x", id="a")
    withdraw.dispose()
    withdraw.dispose()
    assert seen == [["x"], []]


def test_watchers_of_one_point_are_not_told_of_another(registry):
    seen = []
    registry.watch(Panels, seen.append)
    registry.contribute(ContributionPoint("test.other"), 1, id="a")
    assert seen == []


def test_a_point_check_normalises_or_refuses_values(registry):
    def positive(value):
        if value <= 0:
            raise ValueError(f"{value} is not positive")
        return int(value)

    numbers = ContributionPoint("test.numbers", check=positive)
    registry.contribute(numbers, 2.0, id="a")
    with pytest.raises(ValueError, match="-1 is not positive"):
        registry.contribute(numbers, -1, id="b")
    assert registry.values(numbers) == [2]


@pytest.mark.parametrize("bad_id", ["", None, 3])
def test_a_contribution_needs_a_string_id(registry, bad_id):
    with pytest.raises(ContributionError, match="needs a non-empty string id"):
        registry.contribute(Panels, 1, id=bad_id)


def test_contributing_to_something_that_is_not_a_point_is_refused(registry):
    with pytest.raises(ContributionError, match="is not a ContributionPoint"):
        registry.contribute("test.panels", 1, id="a")


def test_the_revision_of_a_point_changes_with_each_contribution_and_withdrawal_only():
    registry = ContributionRegistry()
    other = ContributionPoint("test.other")
    start = registry.revision(Panels)
    added = registry.contribute(Panels, {"title": "A"}, id="a")
    after_add = registry.revision(Panels)
    registry.contribute(other, 1, id="x")
    assert registry.revision(Panels) == after_add != start
    added.dispose()
    assert registry.revision(Panels) not in (start, after_add)
    before = registry.revision(Panels)
    added.dispose()  # idempotent: nothing withdrawn twice, no change
    assert registry.revision(Panels) == before
