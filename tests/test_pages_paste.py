"""The paste page and ``/match/``: page vs fragment, the result cards, limits, safety.

Most tests feed the view a hand-made ``MatchResult`` so that they test the page, not the
matcher; ``test_real_matcher_finds_the_seed_in_a_timestamped_line`` runs the real one.
"""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from kb.engine import MatchReport, PasteTooLarge
from kb.matching.holder import AnswerView, GroupView, MatchResult, MatchView, SuggestionView
from kb.records.models import ErrorRecord, next_revision
from tests.factories import SEED, import_lines, make_line, make_record
from tests.hostile import assert_inert, hostile_overrides

pytestmark = pytest.mark.django_db

SEED_ID = "c36bebe8cdedec02"
LINE = (
    "2026-11-30T03:12:44.123Z ERROR actor=7 Backfill progress for vnode 17 not found, "
    "backfill_state not initialized properly"
)
HX = {"HX-Request": "true"}


@pytest.fixture
def seed() -> ErrorRecord:
    assert import_lines(SEED).rejected == 0
    return ErrorRecord.objects.get(pk=SEED_ID)


def result_for(text: str, matches: list[MatchView], **kw: Any) -> MatchResult:
    normalised = SimpleNamespace(
        text=kw.pop("normalised", text), steps=kw.pop("steps", ["stripped timestamps"])
    )
    report = MatchReport(matches=[], suggestions=[], groups=[], normalised=normalised, elapsed_ms=1)
    groups = kw.pop("groups", [])
    return MatchResult(
        matches=matches,
        suggestions=kw.pop("suggestions", []),
        groups=groups,
        report=report,
        elapsed_ms=1.5,
        answers=kw.pop("answers", None) or answers_for(matches, groups),
    )


def answers_for(matches: list[MatchView], groups: list[GroupView]) -> list[AnswerView]:
    """One answer per matched record, in the groups' order (as the matcher orders them)."""
    by_record = {g.record.pk: g for g in groups}
    out = []
    for m in matches:
        g = by_record.get(m.record.pk)
        if g is None:
            out.append(AnswerView(m, [], 1, m.line, m.line))
        else:
            out.append(AnswerView(m, [], g.count, g.first_line, g.last_line, g.order, g.reason))
    rank = [g.record.pk for g in groups]
    out.sort(key=lambda a: rank.index(a.record.pk) if a.record.pk in rank else len(rank))
    return out


def seed_match(text: str, record: ErrorRecord, **kw: Any) -> MatchView:
    start = text.index("Backfill")
    return MatchView(
        record=record,
        line=kw.pop("line", 1),
        span=(start, len(text.split("\n")[0])),
        text=text[start:],
        captures=["17"],
        score=0.97,
        reason="exact message; 78 literal characters",
        literal_chars=78,
        coverage=0.98,
        **kw,
    )


@pytest.fixture
def fake_matcher(monkeypatch: pytest.MonkeyPatch):
    """Replace the matcher: ``fake_matcher.answer = fn(text) -> MatchResult``."""
    state = SimpleNamespace(answer=None, calls=[])

    def fake(text: str, *, max_bytes: int | None = None) -> MatchResult:
        state.calls.append((text, max_bytes))
        if max_bytes is not None and len(text.encode()) > max_bytes:
            raise PasteTooLarge(len(text.encode()), max_bytes)
        return state.answer(text)

    monkeypatch.setattr("kb.matching.views.match_text", fake)
    monkeypatch.setattr("kb.matching.holder.match_text", fake)  # an uploaded log's path
    return state


def test_paste_page_is_a_real_form_with_a_focused_labelled_textarea(client: Client) -> None:
    response = client.get("/")
    assert response.status_code == 200
    html = response.content.decode()
    assert '<form id="paste-form" class="paste-form" method="post" action="/match/"' in html
    assert 'name="csrfmiddlewaretoken"' in html
    assert '<label for="paste-text"' in html
    assert re.search(r'<textarea id="paste-text" name="text"[^>]*autofocus', html)
    assert 'hx-post="/match/"' in html
    assert 'hx-headers=\'{"X-CSRFToken": "' in html
    assert 'name="log"' in html  # the no-JS file upload
    config = re.search(r'<meta name="htmx-config" content=\'([^\']+)\'', html)
    assert config is not None
    for setting in (
        '"allowEval":false',
        '"allowScriptTags":false',
        '"selfRequestsOnly":true',
        '"includeIndicatorStyles":false',
        '"historyCacheSize":0',
    ):
        assert setting in config.group(1)
    assert " style=" not in html


def test_get_match_goes_back_to_the_form(client: Client) -> None:
    response = client.get("/match/?text=secret")
    assert response.status_code == 302
    assert response["Location"] == "/"


def test_match_without_htmx_is_a_whole_page_with_the_card(
    client: Client, seed: ErrorRecord, fake_matcher: Any
) -> None:
    fake_matcher.answer = lambda text: result_for(text, [seed_match(text, seed)])
    response = client.post("/match/", {"text": LINE})
    assert response.status_code == 200
    assert "HX-Request" in response["Vary"]
    assert "no-store" in response["Cache-Control"]
    html = response.content.decode()
    assert html.startswith("<!doctype html>")
    assert "actor=7 Backfill" in html  # the paste is echoed back into the textarea
    assert "1 known error found" in html
    assert 'href="/records/c36bebe8cdedec02/"' in html


def test_match_with_htmx_is_the_results_fragment(
    client: Client, seed: ErrorRecord, fake_matcher: Any
) -> None:
    fake_matcher.answer = lambda text: result_for(text, [seed_match(text, seed)])
    response = client.post("/match/", {"text": LINE}, headers=HX)
    assert response.status_code == 200
    assert "HX-Request" in response["Vary"]
    assert "no-store" in response["Cache-Control"]
    csp = response["Content-Security-Policy"]
    assert "frame-ancestors 'none'" in csp
    assert "'nonce-" in csp
    html = response.content.decode()
    assert "<html" not in html
    assert "<textarea" not in html
    # the card: severity, the span marked inside its line, captures, first step, why
    assert 'class="sev sev-error"' in html
    assert (
        "<code>2026-11-30T03:12:44.123Z ERROR actor=7 <mark>Backfill progress for vnode 17 "
        "not found, backfill_state not initialized properly</mark></code>"
    ) in html
    assert "<code>17</code>" in html
    assert "98% of the message's fixed text" in html  # the same percent filter as suggestions
    assert "Verify the progress table contains one row per vnode" in html
    assert "Check whether vnode mapping" not in html  # only the first solution
    assert "exact message; 78 literal characters" in html
    assert "0.97" in html
    assert "98%" in html
    assert 'href="/records/c36bebe8cdedec02/"' in html


def test_same_message_candidates_are_listed(
    client: Client, seed: ErrorRecord, fake_matcher: Any
) -> None:
    twin = make_record(repo="acme/other", filePath="src/twin.rs")
    fake_matcher.answer = lambda text: result_for(
        text, [seed_match(text, seed, same_message=[twin])]
    )
    html = client.post("/match/", {"text": LINE}, headers=HX).content.decode()
    assert "Also raised with the same message" in html
    assert f'href="/records/{twin.pk}/"' in html
    assert "src/twin.rs" in html


def test_a_whole_log_gets_a_summary_table(
    client: Client, seed: ErrorRecord, fake_matcher: Any
) -> None:
    other = make_record(
        errorMessage="Vnode bitmap for actor {} is empty",
        messagePattern="Vnode bitmap for actor (.+?) is empty",
        severity="warning",
    )
    log = "\n".join(["boot ok", LINE, "noise", LINE, "Vnode bitmap for actor 3 is empty", LINE])

    def answer(text: str) -> MatchResult:
        start = text.index("Vnode bitmap")
        vnode = MatchView(other, 5, (start, start + 33), text[start : start + 33], ["3"], 0.9, "")
        return result_for(
            text,
            [seed_match(text.split("\n", 1)[1], seed, line=2), vnode],
            groups=[GroupView(seed, 3, 2, 6), GroupView(other, 1, 5, 5)],
        )

    fake_matcher.answer = answer
    html = client.post("/match/", {"text": log}, headers=HX).content.decode()
    table = re.search(r'<table class="summary">.*?</table>', html, re.S)
    assert table is not None
    rows = re.findall(r'<tr class="summary-row".*?</tr>', table.group(0), re.S)
    assert len(rows) == 2
    assert re.search(r"<td>3</td><td>2</td><td>6</td>", rows[0])
    assert html.index('<table class="summary">') < html.index('class="card match-card"')


def test_a_log_with_more_known_errors_than_cards_shows_them_all_in_the_summary(
    client: Client,
) -> None:
    """Past ``MAX_CARDS`` distinct known errors the page renders that many cards; the count
    and the summary table still cover every one, and the page says where the rest are."""
    from kb.matching.views import MAX_CARDS

    n = MAX_CARDS + 4
    words = [f"{a}{b}" for a in "bcdfghklmn" for b in "aeiou"][:n]
    lines = [
        make_line(
            errorMessage=f"Region {w} refused the lease for tablet {{}}",
            messagePattern=f"Region {w} refused the lease for tablet (.+?)",
        )
        for w in words
    ]
    assert import_lines(*lines).rejected == 0
    log = "\n".join(
        f"ERROR Region {w} refused the lease for tablet {i}" for i, w in enumerate(words)
    )
    html = client.post("/match/", {"text": log}, headers=HX).content.decode()
    assert f"{n} known errors found" in html
    assert html.count('class="card match-card"') == MAX_CARDS
    table = re.search(r'<table class="summary">.*?</table>', html, re.S)
    assert table is not None
    assert len(re.findall(r'<tr class="summary-row"', table.group(0))) == n
    assert "the 4 others are in the summary above" in html


def test_beside_known_errors_only_the_closest_suggestions_are_listed_and_all_counted(
    client: Client, seed: ErrorRecord, fake_matcher: Any
) -> None:
    from kb.matching.views import SUGGESTIONS_BESIDE_CARDS

    n = SUGGESTIONS_BESIDE_CARDS + 2
    close = [SuggestionView(seed, 0.9 - i / 100, f"close {i}") for i in range(n)]

    def listed(html: str) -> int:
        return html[html.index('id="suggestions-title"') :].count("<li>")

    fake_matcher.answer = lambda text: result_for(text, [seed_match(text, seed)], suggestions=close)
    html = client.post("/match/", {"text": LINE}, headers=HX).content.decode()
    assert listed(html) == SUGGESTIONS_BESIDE_CARDS
    assert f"{n} other possibilities" in html
    assert f"{n} came close in all" in html
    # with no known error the suggestions are the answer: every one is listed
    fake_matcher.answer = lambda text: result_for(text, [], suggestions=close)
    html = client.post("/match/", {"text": LINE}, headers=HX).content.decode()
    assert listed(html) == n
    assert "came close in all" not in html


def test_no_known_error_shows_suggestions_and_the_normalised_text(
    client: Client, seed: ErrorRecord, fake_matcher: Any
) -> None:
    fake_matcher.answer = lambda text: result_for(
        text,
        [],
        suggestions=[SuggestionView(seed, 0.81, "similar wording")],
        normalised="Backfill progress for vnode <n> missing",
        steps=["removed ISO timestamp", "collapsed whitespace"],
    )
    html = client.post(
        "/match/", {"text": "2026 Backfill progress for vnode 3 missing"}, headers=HX
    ).content.decode()
    assert "No known error in this text" in html
    assert "81% similar" in html
    assert "similar wording" in html
    assert 'href="/records/c36bebe8cdedec02/"' in html
    assert "Backfill progress for vnode &lt;n&gt; missing" in html
    assert "removed ISO timestamp · collapsed whitespace" in html


def test_empty_paste_asks_for_text(client: Client, fake_matcher: Any) -> None:
    response = client.post("/match/", {"text": "   "}, headers=HX)
    assert response.status_code == 200
    assert "Paste an error message or a log above" in response.content.decode()
    assert fake_matcher.calls == []


def test_too_large_paste_is_a_friendly_413(
    client: Client, settings: Any, fake_matcher: Any
) -> None:
    settings.KB_MAX_PASTE_BYTES = 1000
    fragment = client.post("/match/", {"text": "x" * 1001}, headers=HX)
    assert fragment.status_code == 413
    assert "no-store" in fragment["Cache-Control"]
    body = fragment.content.decode()
    assert "<html" not in body
    assert "That is more than we can match at once" in body
    page = client.post("/match/", {"text": "x" * 1001})
    assert page.status_code == 413
    assert "<!doctype html>" in page.content.decode()


def test_uploaded_log_is_matched_with_the_log_limit(
    client: Client, seed: ErrorRecord, fake_matcher: Any, settings: Any
) -> None:
    fake_matcher.answer = lambda text: result_for(text, [seed_match(text, seed)])
    upload = SimpleUploadedFile("app.log", LINE.encode(), content_type="text/plain")
    response = client.post("/match/", {"text": "", "log": upload}, headers=HX)
    assert response.status_code == 200
    assert fake_matcher.calls == [(LINE, settings.KB_MAX_LOG_BYTES)]
    html = response.content.decode()
    assert "in app.log" in html
    assert "1 known error found" in html


def test_uploaded_log_is_not_echoed_into_the_page(
    client: Client, seed: ErrorRecord, fake_matcher: Any
) -> None:
    fake_matcher.answer = lambda text: result_for(text, [])
    upload = SimpleUploadedFile("app.log", b"secret-line password=hunter2\n")
    html = client.post("/match/", {"text": "", "log": upload}).content.decode()
    assert "password=hunter2" not in html.split('<section id="results"')[0]


def test_match_requires_a_csrf_token(seed: ErrorRecord, fake_matcher: Any) -> None:
    fake_matcher.answer = lambda text: result_for(text, [])
    client = Client(enforce_csrf_checks=True)
    assert client.post("/match/", {"text": LINE}, headers=HX).status_code == 403
    assert (
        client.post("/match/", {"text": LINE}, headers={**HX, "X-CSRFToken": "bogus"}).status_code
        == 403
    )
    html = client.get("/").content.decode()
    token = re.search(r'"X-CSRFToken": "([^"]+)"', html).group(1)
    ok = client.post("/match/", {"text": LINE}, headers={**HX, "X-CSRFToken": token})
    assert ok.status_code == 200


def test_paste_and_records_are_escaped(client: Client, fake_matcher: Any) -> None:
    line = make_line(**hostile_overrides())
    assert import_lines(line).rejected == 0
    record = ErrorRecord.objects.get(pk=line["record"]["id"])
    paste = '<script>alert("paste")</script> Hostile thing <script>alert(3)</script> failed for x'

    def answer(text: str) -> MatchResult:
        start = text.index("Hostile")
        m = MatchView(
            record,
            1,
            (start, len(text)),
            text[start:],
            ["<img src=x onerror=alert(9)>"],
            0.9,
            "<svg onload=alert(1)>",
            10,
            0.5,
            [],
        )
        return result_for(text, [m], suggestions=[SuggestionView(record, 0.5, "<b>x</b>")])

    fake_matcher.answer = answer
    for headers in (HX, {}):
        html = client.post("/match/", {"text": paste}, headers=headers).content.decode()
        assert_inert(html)
        assert '<script>alert("paste")' not in html
        assert "&lt;script&gt;alert(&quot;paste&quot;)&lt;/script&gt;" in html
        assert (
            "<mark>Hostile thing &lt;script&gt;alert(3)&lt;/script&gt; failed for x</mark>" in html
        )


def test_pastes_leave_nothing_behind(client: Client, seed: ErrorRecord, fake_matcher: Any) -> None:
    from django.contrib.sessions.models import Session

    from kb.records.models import ErrorRecord as Model

    fake_matcher.answer = lambda text: result_for(text, [seed_match(text, seed)])
    before = Model.objects.count()
    client.post("/match/", {"text": LINE + " AKIAIOSFODNN7EXAMPLE password=hunter2"}, headers=HX)
    assert Model.objects.count() == before
    assert Session.objects.count() == 0


def test_real_matcher_finds_the_seed_in_a_timestamped_line(
    client: Client, seed: ErrorRecord
) -> None:
    response = client.post("/match/", {"text": LINE}, headers=HX)
    assert response.status_code == 200
    html = response.content.decode()
    assert 'href="/records/c36bebe8cdedec02/"' in html
    assert "<mark>Backfill progress for vnode 17 not found" in html
    assert "Verify the progress table contains one row per vnode" in html


def test_a_paste_costs_the_same_queries_however_many_records_it_matches(
    client: Client, seed: ErrorRecord
) -> None:
    """Matched records are loaded in one query, without the columns no card shows; a
    card that touched a deferred column would cost one more query per matched record."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    others = [
        make_line(
            errorMessage=f"Shard {n} lost its lease while compacting segment 9",
            messagePattern=f"Shard {n} lost its lease while compacting segment (.+?)",
            solutions=[f"Restart shard {n}"],
        )
        for n in ("alpha", "bravo", "charlie")
    ]
    assert import_lines(*others).rejected == 0
    many = "\n".join(
        [LINE]
        + [
            f"ERROR Shard {n} lost its lease while compacting segment 9"
            for n in ("alpha", "bravo", "charlie")
        ]
    )
    counts = []
    for text in (LINE, many, LINE, many):  # twice each: the first may build the matcher
        next_revision()  # records are loaded afresh for a new revision: count that
        with CaptureQueriesContext(connection) as queries:
            response = client.post("/match/", {"text": text}, headers=HX)
        assert response.status_code == 200
        counts.append(len(queries.captured_queries))
    html = response.content.decode()
    assert html.count('class="card match-card"') == 4
    assert "Restart shard charlie" in html
    assert counts[2] == counts[3], counts


def test_records_shown_are_loaded_once_per_revision_and_an_edit_shows(
    client: Client, seed: ErrorRecord
) -> None:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from kb.records.services import save_curated

    def record_reads(queries: CaptureQueriesContext) -> int:
        return sum(
            'FROM "kb_errorrecord"' in q["sql"] and '"id" IN (' in q["sql"]
            for q in queries.captured_queries
        )

    reads = []
    for _ in range(2):
        with CaptureQueriesContext(connection) as queries:
            html = client.post("/match/", {"text": LINE}, headers=HX).content.decode()
        reads.append(record_reads(queries))
    assert "Verify the progress table contains one row per vnode" in html
    assert reads == [1, 0]  # the matched record was read once
    seed.solutions = ["Recreate the backfill state table"]
    save_curated(seed, changed_attrs=["solutions"])
    html = client.post("/match/", {"text": LINE}, headers=HX).content.decode()
    assert "Recreate the backfill state table" in html


def test_body_just_under_the_limit_is_matched_and_just_over_is_a_413(
    client: Client, settings: Any, fake_matcher: Any
) -> None:
    """(That the 413 reads none of the body: ``tests/test_limits.py``.)"""
    fake_matcher.answer = lambda text: result_for(text, [])
    under = "y" * (settings.KB_MAX_PASTE_BYTES - 10)
    assert client.post("/match/", {"text": under}, headers=HX).status_code == 200
    over = "y" * (settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)
    for headers in (HX, {}):
        response = client.post("/match/", {"text": over}, headers=headers)
        assert response.status_code == 413
        body = response.content.decode()
        assert "too large" in body.lower() or "more than we can match" in body
        assert "Traceback" not in body
        assert ("<html" in body) == (not headers)


def test_secrets_in_pastes_are_not_logged(
    client: Client, seed: ErrorRecord, fake_matcher: Any, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    fake_matcher.answer = lambda text: result_for(text, [seed_match(text, seed)])
    caplog.set_level(logging.DEBUG)
    secret = "AKIAIOSFODNN7EXAMPLE password=hunter2"
    response = client.post("/match/", {"text": f"{LINE} {secret}"}, headers=HX)
    assert response.status_code == 200
    assert "no-store" in response["Cache-Control"]
    assert "hunter2" not in caplog.text
    assert "AKIA" not in caplog.text


@pytest.mark.parametrize("severity", ["fatal", "error", "warning"])
def test_a_severity_badge_is_the_same_on_results_record_page_and_list(
    client: Client, fake_matcher: Any, severity: str
) -> None:
    """One badge (``kb/_severity.html``): the paste results, the record page and the record
    list render a severity identically."""
    record = make_record(severity=severity)
    record.error_message = "Backfill progress for vnode 17 not found"
    fake_matcher.answer = lambda text: result_for(text, [seed_match(text, record)])
    badge = re.compile(r'<span class="sev [^"]*">[^<]*</span>')
    pages = {
        "results": client.post("/match/", {"text": LINE}, headers=HX),
        "record": client.get(f"/records/{record.pk}/"),
        "list": client.get("/records/"),
    }
    found = {name: badge.findall(r.content.decode()) for name, r in pages.items()}
    expected = f'<span class="sev sev-{severity}">{severity.capitalize()}</span>'
    assert found == {name: [expected] for name in pages}
