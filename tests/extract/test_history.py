"""One site followed across releases (kb.extract.history), on sites made in the test:
which pairing each change of the code gets, and the ranges a record is given."""

from __future__ import annotations

from kb.extract.history import History, Seen
from kb.extract.records import message_pattern
from kb.extract.sites import ErrorType, Notation, Site


def _seen(path: str, line: int, template: str, function: str, call: str = "raise ValueError",
          error_class: str | None = "ValueError") -> Seen:  # fmt: skip
    site = Site(path, line, line, template, Notation.PYTHON_PERCENT, ErrorType.EXCEPTION,
                error_class=error_class, function=function, call=call)  # fmt: skip
    record = {"errorMessage": template,
              "messagePattern": message_pattern(template, Notation.PYTHON_PERCENT)}  # fmt: skip
    return Seen(site, record)


def _messages(history: History) -> list[list[str]]:
    return [[w.message for w in item.wordings] for item in history.tracked]


def test_two_sites_that_swap_wordings_keep_their_own_story() -> None:
    history = History()
    a, b = "Connection to the primary was refused", "Connection to the replica was refused"
    history.step("1.0", {"m.py": [_seen("m.py", 2, a, "primary"), _seen("m.py", 5, b, "replica")]})
    history.step("2.0", {"m.py": [_seen("m.py", 2, b, "primary"), _seen("m.py", 5, a, "replica")]})
    assert _messages(history) == [[a, b], [b, a]]
    assert history.counts["reworded"] == 2


def test_a_message_reworded_beyond_the_bar_is_a_site_removed_and_a_new_one() -> None:
    history = History()
    history.step("1.0", {"m.py": [_seen("m.py", 2, "Widget is broken beyond repair", "f")]})
    history.step("2.0", {"m.py": [_seen("m.py", 2, "Cannot parse the configuration file", "f")]})
    first, second = history.tracked
    assert history.ranges(first)["removedIn"] == "2.0"
    assert history.ranges(second)["firstRelease"] == "2.0"


def test_the_same_message_twice_in_a_function_pairs_by_rank_of_line() -> None:
    history = History()
    text = "Value out of range for this column"
    history.step("1.0", {"m.py": [_seen("m.py", 3, text, "f"), _seen("m.py", 9, text, "f")]})
    history.step("1.1", {"m.py": [_seen("m.py", 13, text, "f"), _seen("m.py", 19, text, "f")]})
    # one of the two left: the first by line is the one kept (as a single learn keys them)
    history.step("1.2", {"m.py": [_seen("m.py", 19, text, "f")]})
    lines = [[(p.line, history.release(p.first)) for p in i.places] for i in history.tracked]
    assert lines == [[(3, "1.0"), (13, "1.1"), (19, "1.2")], [(9, "1.0"), (19, "1.1")]]
    assert [history.ranges(i)["removedIn"] for i in history.tracked] == [None, "1.2"]


def test_a_site_moved_to_another_file_and_reworded_with_its_class_is_one_site() -> None:
    """No row was found for one() (orm/query.py, 1.3) became No row was found when one was
    required (engine/result.py, 1.4): a named class, alike enough across files."""
    history = History()
    old = "No row was found for one()"
    new = "No row was found when one was required"
    history.step("1.3", {"orm/query.py": [
        _seen("orm/query.py", 10, old, "Query.one", "raise orm_exc.NoResultFound", "NoResultFound"),
    ]})  # fmt: skip
    history.step("1.4", {
        "orm/query.py": [],
        "engine/result.py": [
            _seen("engine/result.py", 50, new, "Result._only_one_row", "raise exc.NoResultFound",
                  "NoResultFound"),
        ],
    })  # fmt: skip
    assert _messages(history) == [[old, new]]
    ranges = history.ranges(history.tracked[0])
    wordings = ranges["releaseHistory"]["wordings"]
    assert [(w["firstRelease"], w["lastRelease"]) for w in wordings] == [
        ("1.3", "1.3"),
        ("1.4", "1.4"),
    ]
    assert [p["path"] for p in ranges["releaseHistory"]["locations"]] == [
        "orm/query.py", "engine/result.py",
    ]  # fmt: skip


def test_a_bare_log_call_is_not_paired_across_files_by_likeness() -> None:
    history = History()
    old, new = "Could not reach the coordinator in time", "Could not reach the controller in time"
    history.step("1.0", {"a.py": [_seen("a.py", 1, old, "f", "log.warn", None)]})
    history.step("2.0", {"a.py": [], "b.py": [_seen("b.py", 1, new, "g", "log.warn", None)]})
    assert _messages(history) == [[old], [new]]


def test_a_wording_only_the_unnamed_last_point_has_carries_no_release() -> None:
    history = History()
    old, new = "Broker may not be available", "Node may not be available"
    history.step("2.0", {"c.py": [_seen("c.py", 1, old, "f")]})
    history.step(None, {"c.py": [_seen("c.py", 1, new, "f")]})
    ranges = history.ranges(history.tracked[0])
    assert (ranges["firstRelease"], ranges["lastRelease"], ranges["removedIn"]) == (
        "2.0", "2.0", None,
    )  # fmt: skip
    wordings = ranges["releaseHistory"]["wordings"]
    assert [(w["firstRelease"], w["lastRelease"]) for w in wordings] == [
        ("2.0", "2.0"),
        (None, None),
    ]


def test_a_message_moved_to_another_function_of_its_file_reworded_with_a_new_class() -> None:
    """greenlet_spawn's message in SQLAlchemy 1.4: a new exception class, the function
    that raises it still raising others, the message nearly alike."""
    history = History()
    old = "greenlet_spawn has not been called; can't call await_() here."
    new = "greenlet_spawn has not been called; can't call await_only() here. Was IO attempted?"
    history.step("1.4.0b1", {"c.py": [
        _seen("c.py", 5, old, "await_only", "raise exc.InvalidRequestError", "InvalidRequestError"),
        _seen("c.py", 9, "Cannot use this function in this place at all", "await_only"),
    ]})  # fmt: skip
    history.step("1.4.0b2", {"c.py": [
        _seen("c.py", 9, "Cannot use this function in this place at all", "await_only"),
        _seen("c.py", 20, new, "_raise_missing", "raise exc.MissingGreenlet", "MissingGreenlet"),
    ]})  # fmt: skip
    assert _messages(history) == [[old, new], ["Cannot use this function in this place at all"]]


def test_a_message_moved_to_another_file_with_another_function_and_call_is_one_site() -> None:
    history = History()
    text = "Textual SQL expression %r should be explicitly declared as text(%r)"
    history.step(
        "1.3", {"elements.py": [_seen("elements.py", 7, text, "_literal", "raise exc_cls", None)]}
    )
    history.step("1.4", {
        "elements.py": [],
        "coercions.py": [_seen("coercions.py", 70, text, "_no_text_coercion", "raise ArgumentError",
                               "ArgumentError")],
    })  # fmt: skip
    assert _messages(history) == [[text]]
    assert [p.path for p in history.tracked[0].places] == ["elements.py", "coercions.py"]
