"""Draft patterns from gaps: match every sample, bounded, no nested quantifiers, accepted by
RE2 and by the matcher's own admission."""

from __future__ import annotations

import re._constants as sre_constants
import re._parser as sre_parse

import pytest
import re2

from kb.engine import admit_pattern
from kb.loop.text.derive import merge_templates, pattern_from_template
from kb.loop.text.gaps import GapIndex, template_of

# Real-looking gaps: the redacted sample lines of reports that folded together.
GAPS = [
    [
        "apply entries took too long [104.2239ms for 1 entries]",
        "apply entries took too long [12.318867ms for 13 entries]",
    ],
    [
        "health check for peer 684f2e4032b4dcc2 could not connect: dial tcp <ip>:2380:"
        " getsockopt: connection refused",
        "health check for peer 9b3523b532ddb797 could not connect: dial tcp <ip>:2379:"
        " getsockopt: connection refused",
    ],
    [
        "django.core.exceptions.ImproperlyConfigured: Requested setting INSTALLED_APPS, but"
        " settings are not configured.",
        "ImproperlyConfigured: Requested setting USE_I18N, but settings are not configured.",
    ],
    [
        "sqlalchemy.exc.TimeoutError: QueuePool limit of size 5 overflow 10 reached,"
        " connection timed out, timeout 30.00",
        "sqlalchemy.exc.TimeoutError: queuePool limit of size 1 overflow 0 reached,"
        " connection timed out, timeout 1.00",
    ],
    [
        "Parent instance <User at 0x7f0c42b64f50> is not bound to a Session; lazy load"
        " operation of attribute 'addresses' cannot proceed",
        "serialization error: Parent instance <Novel at 0x7f496c947160> is not bound to a"
        " Session; lazy load operation of attribute 'urls' cannot proceed",
    ],
    [
        "sync failed for <email>: key <token> rejected by postgres://<user>:<password>@<host>/x",
        "sync failed for <email>: key <token> rejected by postgres://<user>:<password>@<ip>/y",
    ],
    [
        "greenlet_spawn has not been called; can't call await_() here. Was IO attempted in an"
        " unexpected place?",
        "greenlet_spawn has not been called; can't call await_only() here. Was IO attempted in"
        " an unexpected place?",
    ],
    [
        'SAWarning: SELECT statement has a cartesian product between FROM element(s) "users"'
        ' and FROM element "addresses".  Apply join condition(s) between each element to'
        " resolve.",
        "SAWarning: SELECT statement has a cartesian product between FROM element(s)"
        ' "orders" and FROM element "items". Apply join condition(s) between each element to'
        " resolve.",
    ],
]


def _gap(samples: list[str]) -> tuple[str, list[str]]:
    index = GapIndex()
    for s in samples:
        gap = index.add(template_of(s), s)
    assert len(index) == 1, "the samples of one test gap must fold together"
    return gap.template, gap.samples


def _repeats(pattern: str) -> list[tuple[int, int, bool]]:
    """(min, max, holds another repeat) for every repeat in the pattern."""
    out: list[tuple[int, int, bool]] = []

    def walk(items: sre_parse.SubPattern, inside: bool) -> bool:
        found = False
        for op, av in items:
            if op in (sre_constants.MAX_REPEAT, sre_constants.MIN_REPEAT):
                lo, hi, sub = av
                nested = walk(sub, True)
                out.append((lo, hi, nested))
                found = True
            elif op == sre_constants.SUBPATTERN:
                found |= walk(av[-1], inside)
            elif op == sre_constants.BRANCH:
                for branch in av[1]:
                    found |= walk(branch, inside)
        return found

    walk(sre_parse.parse(pattern), False)
    return out


@pytest.mark.parametrize("samples", GAPS, ids=[s[0][:30] for s in GAPS])
def test_draft_matches_every_sample_and_is_bounded(samples: list[str]) -> None:
    template, kept = _gap(samples)
    pattern = pattern_from_template(template, kept)
    compiled = re2.compile(pattern)
    assert all(compiled.search(s) for s in samples), pattern
    repeats = _repeats(pattern)
    assert repeats, "a draft has at least one bounded variable or spacing"
    for _lo, hi, nested in repeats:
        assert hi != sre_constants.MAXREPEAT, f"unbounded repeat in {pattern}"
        assert hi <= 200
        assert not nested, f"nested quantifier in {pattern}"
    admission = admit_pattern(pattern)
    assert admission.ok, admission.reason


def test_draft_groups_follow_the_values() -> None:
    pattern = pattern_from_template(*_gap(GAPS[0]))
    assert r"([-+]?[0-9.,_:]{1,40})ms for (\d{1,20}) entries" in pattern
    pattern = pattern_from_template(*_gap(GAPS[2]))
    assert r"Requested setting ([^ \t\r\n]{1,80}), but settings are not configured" in pattern


def test_a_draft_matches_the_same_error_with_new_values() -> None:
    template, kept = _gap(GAPS[1])
    compiled = re2.compile(pattern_from_template(template, kept))
    assert compiled.search(
        "rafthttp: health check for peer 1a2b3c4d5e6f7081 could not connect: dial tcp"
        " 10.9.8.7:2380: getsockopt: connection refused"
    )


def test_merge_keeps_shared_words_and_makes_the_rest_one_variable() -> None:
    assert (
        merge_templates(["can't call await_() here now", "can't call await_only() here now"])
        == "can't call <*> here now"
    )
    assert merge_templates(["a b c", "a b c"]) == "a b c"


def test_too_generic_or_unmatched_templates_are_refused() -> None:
    with pytest.raises(ValueError, match="no draft pattern"):
        pattern_from_template("<*>: <*>", ["x: y"])
    with pytest.raises(ValueError, match="no draft pattern"):
        pattern_from_template("completely different wording here", ["nothing in common at all"])
