"""Property tests of the importer: whatever bytes come in, the only outcome of a bad line
is a reported error (never an exception), and a good line is never lost or altered.

Examples: 100 per property in the suite; under ``HYPOTHESIS_PROFILE=fuzz`` (``make fuzz``)
the importer's share of the 10^5-example budget (``tests/fuzz_budget.py``).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from kb.records.exporter import export_lines
from kb.records.importer import ImportReport, import_jsonl
from kb.records.models import ErrorRecord
from tests import fuzz_budget
from tests.factories import make_line

pytestmark = pytest.mark.django_db

PROPS = fuzz_budget.prop(
    "importer",
    default=100,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

GOOD = json.dumps(make_line()).encode()


@st.composite
def mutated_line(draw: st.DrawFn) -> bytes:
    """A good line with a few bytes deleted, inserted or replaced (broken at any depth)."""
    data = bytearray(GOOD)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data) - 1))
        kind = draw(st.sampled_from(["delete", "insert", "replace"]))
        byte = draw(st.sampled_from([*b'{}[]",:\\0123456789 tfnuNI-e.', 0, 0xFF, 0xC3, 0xED]))
        if kind == "delete":
            del data[at]
        elif kind == "insert":
            data.insert(at, byte)
        else:
            data[at] = byte
    return bytes(data)


def _value_swap(draw: st.DrawFn) -> bytes:
    """A good line with one field's value replaced by an arbitrary JSON value."""
    line = make_line()
    key = draw(st.sampled_from(sorted(line["record"])))
    line["record"][key] = draw(
        st.recursive(
            st.none()
            | st.booleans()
            | st.integers(-(2**70), 2**70)
            | st.floats(allow_nan=False, allow_infinity=False)
            | st.text(max_size=30),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.text(max_size=5), inner, max_size=3)
            ),
            max_leaves=6,
        )
    )
    return json.dumps(line).encode()


any_line = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
    mutated_line(),
    st.composite(_value_swap)(),
    st.just(b""),
    st.just(b"\xef\xbb\xbf"),
)

safe_text = st.text(
    alphabet=st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=80
)


def _rolled_back(lines: list[bytes], **kwargs: Any) -> tuple[ImportReport, set[str]]:
    """Import, note which ids were stored, and undo it (examples share one database)."""
    with transaction.atomic():
        report = import_jsonl([line + b"\n" for line in lines], batch_size=3, **kwargs)
        stored = set(ErrorRecord.objects.values_list("pk", flat=True))
        transaction.set_rollback(True)
    return report, stored


@PROPS
@given(st.lists(any_line, max_size=8))
def test_prop_arbitrary_lines_only_ever_produce_reported_errors(lines: list[bytes]) -> None:
    report, _stored = _rolled_back(lines)
    accounted = report.created + report.updated + report.unchanged + report.rejected
    assert accounted == len(lines)
    assert {e.line for e in report.errors} <= set(range(1, len(lines) + 1))
    assert all(e.field and e.message for e in report.errors)


@PROPS
@given(
    st.lists(
        st.tuples(safe_text.filter(str.strip), safe_text, st.lists(safe_text, max_size=3)),
        min_size=1,
        max_size=5,
    ),
    st.lists(any_line, max_size=5),
    st.randoms(use_true_random=False),
)
def test_prop_good_lines_are_never_lost_among_bad_ones(
    contents: list[tuple[str, str, list[str]]], junk: list[bytes], rnd: Any
) -> None:
    good = [
        make_line(errorMessage=message, documentation=doc, solutions=steps)
        for message, doc, steps in contents
    ]
    lines = [json.dumps(g, ensure_ascii=rnd.random() < 0.5).encode() for g in good] + junk
    rnd.shuffle(lines)
    with transaction.atomic():
        report = import_jsonl([line + b"\n" for line in lines], batch_size=2)
        ids = [g["record"]["id"] for g in good]
        exported = {
            json.loads(text)["record"]["id"]: json.loads(text)
            for text in export_lines(ErrorRecord.objects.filter(pk__in=ids))
        }
        transaction.set_rollback(True)
    assert report.created >= len(good)
    assert all(exported[g["record"]["id"]] == g for g in good)
