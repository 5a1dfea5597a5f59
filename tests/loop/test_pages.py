"""The learning loop's pages (`kb.loop.views`): report, feedback and proposal forms, each
as a whole page without htmx and as its partial with it; CSRF, 403 when turned off, the
rate limit and the size limit; hostile text rendered inert; the forms on the paste and
record pages."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from kb.loop.models import Gap, Proposal, Vote
from kb.loop.votes import VOTER_COOKIE
from kb.ops.middleware import forget_refusals
from kb.records.models import ErrorRecord
from tests.factories import make_record
from tests.hostile import PAYLOAD, assert_inert

pytestmark = pytest.mark.django_db

HX = {"HX-Request": "true"}
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
DSN_PASSWORD = "s3cr3t-Pa55word"
EMAIL = "jane.doe@example.org"


def unknown_error(order: int = 42, user: str = EMAIL) -> str:
    return (
        "2026-01-01 10:00:00 INFO starting worker\n"
        f"2026-01-01 10:00:01 ERROR Widget frobnication failed for order {order} owned by "
        f"{user}: upstream postgres://app:{DSN_PASSWORD}@db.internal:5432/orders refused key "
        f"{AWS_KEY}\n"
    )


@pytest.fixture
def record() -> ErrorRecord:
    return make_record()


def is_fragment(html: str) -> bool:
    return "<html" not in html and "<body" not in html


# --- reports -------------------------------------------------------------------------------


@pytest.mark.parametrize("headers", [{}, HX], ids=["page", "htmx"])
def test_a_preview_shows_the_redacted_error_lines_and_stores_nothing(
    client: Client, headers: dict[str, str]
) -> None:
    response = client.post(reverse("loop:report"), {"text": unknown_error()}, headers=headers)
    html = response.content.decode()
    assert response.status_code == 200
    assert is_fragment(html) == bool(headers)
    assert "exactly what would be stored" in html
    preview = html.split('data-testid="report-preview">')[1].split("</pre>")[0]
    assert "Widget frobnication failed for order" in preview
    assert "starting worker" not in preview
    for secret in (AWS_KEY, DSN_PASSWORD, EMAIL):
        assert secret not in preview
    assert 'name="action" value="send"' in html
    assert Gap.objects.count() == 0
    assert "no-store" in response["Cache-Control"]
    assert "HX-Request" in response["Vary"]


@pytest.mark.parametrize("headers", [{}, HX], ids=["page", "htmx"])
def test_sending_folds_reports_of_one_error_into_one_gap(
    client: Client, headers: dict[str, str]
) -> None:
    url = reverse("loop:report")
    first = client.post(url, {"text": unknown_error(), "action": "send"}, headers=headers)
    assert first.status_code == 201
    assert is_fragment(first.content.decode()) == bool(headers)
    assert "first report" in first.content.decode()
    second = client.post(
        url, {"text": unknown_error(7, "bob@example.net"), "action": "send"}, headers=headers
    )
    assert second.status_code == 201
    assert "reported 2 times" in second.content.decode()
    gap = Gap.objects.get()
    assert gap.count == 2
    stored = " ".join(gap.samples) + gap.template
    for secret in (AWS_KEY, DSN_PASSWORD, EMAIL, "bob@example.net"):
        assert secret not in stored


def test_an_empty_report_is_refused_with_a_message(client: Client) -> None:
    response = client.post(reverse("loop:report"), {"text": "  "}, headers=HX)
    assert response.status_code == 400
    assert "nothing to report" in response.content.decode()


def test_a_report_over_the_paste_limit_is_a_413_refusal(client: Client, settings: Any) -> None:
    settings.KB_MAX_PASTE_BYTES = 100
    response = client.post(reverse("loop:report"), {"text": "E" * 101}, headers=HX)
    assert response.status_code == 413
    assert "more than we can match" in response.content.decode()


def test_hostile_report_text_is_inert_in_the_preview_and_the_thanks(client: Client) -> None:
    text = f"ERROR Widget failed {PAYLOAD} for order 1"
    preview = client.post(reverse("loop:report"), {"text": text})
    assert_inert(preview.content.decode())
    sent = client.post(reverse("loop:report"), {"text": text, "action": "send"}, headers=HX)
    assert sent.status_code == 201
    assert "<script>alert" not in sent.content.decode().lower()


# --- gates shared by the three forms ---------------------------------------------------------


def forms(record: ErrorRecord) -> list[tuple[str, dict[str, str], str]]:
    return [
        (reverse("loop:report"), {"text": unknown_error()}, "KB_REPORTS_ENABLED"),
        (
            reverse("loop:feedback"),
            {"record_id": record.pk, "verdict": "fixed"},
            "KB_FEEDBACK_ENABLED",
        ),
        (
            reverse("loop:propose", args=[record.pk]),
            {"field": "solutions", "text": "Restart the widget"},
            "KB_PROPOSALS_ENABLED",
        ),
    ]


def test_each_form_needs_a_csrf_token(record: ErrorRecord) -> None:
    client = Client(enforce_csrf_checks=True)
    for url, data, _setting in forms(record):
        assert client.post(url, data).status_code == 403, url
    assert Gap.objects.count() + Vote.objects.count() + Proposal.objects.count() == 0


def test_each_form_answers_403_when_its_feature_is_off(
    client: Client, record: ErrorRecord, settings: Any
) -> None:
    for url, data, setting in forms(record):
        setattr(settings, setting, False)
        for headers in ({}, HX):
            response = client.post(url, data, headers=headers)
            assert response.status_code == 403, url
            assert "turned off" in response.content.decode()
        setattr(settings, setting, True)
    assert Gap.objects.count() + Vote.objects.count() + Proposal.objects.count() == 0


def test_each_form_counts_against_the_match_rate_limit(
    client: Client, record: ErrorRecord, settings: Any
) -> None:
    settings.KB_RATE_LIMIT_PER_MINUTE = 1
    forget_refusals()
    for url, data, _setting in forms(record):
        assert client.post(reverse("match"), {"text": "warm up"}).status_code in (200, 429)
        response = client.post(url, data, headers=HX)
        assert response.status_code == 429, url
        assert int(response["Retry-After"]) >= 1
    forget_refusals()


def test_the_forms_take_post_only(client: Client, record: ErrorRecord) -> None:
    for url, _data, _setting in forms(record):
        assert client.get(url).status_code == 405


# --- feedback --------------------------------------------------------------------------------


@pytest.mark.parametrize("headers", [{}, HX], ids=["page", "htmx"])
def test_a_vote_counts_once_per_browser_and_day(
    client: Client, record: ErrorRecord, headers: dict[str, str]
) -> None:
    url = reverse("loop:feedback")
    data = {"record_id": record.pk, "verdict": "not_fixed"}
    visit(client, record)
    assert VOTER_COOKIE in client.cookies  # the page with the form gave it its voter id
    first = client.post(url, data, headers=headers)
    assert first.status_code == 201
    assert is_fragment(first.content.decode()) == bool(headers)
    assert "counted" in first.content.decode()
    assert VOTER_COOKIE not in first.cookies  # the id stays the one the page issued
    again = client.post(url, data, headers=headers)
    assert again.status_code == 200
    assert "Already counted today" in again.content.decode()
    assert Vote.objects.filter(record=record).count() == 1
    # Dropping the voter id: counted as its address from then on, once a day.
    client.cookies.pop(VOTER_COOKIE)
    assert client.post(url, data, headers=headers).status_code == 201
    assert client.post(url, data, headers=headers).status_code == 200
    other_browser = visit(Client(REMOTE_ADDR="198.51.100.20"), record)
    assert other_browser.post(url, data, headers=headers).status_code == 201
    assert Vote.objects.filter(record=record, verdict="not_fixed").count() == 3


def visit(client: Client, record: ErrorRecord) -> Client:
    """Open the record page, as a browser does before it can press a vote button (the
    page's forms give it its CSRF cookie)."""
    assert client.get(reverse("record_detail", args=[record.pk])).status_code == 200
    assert "csrftoken" in client.cookies
    return client


def test_a_step_button_votes_for_its_step(client: Client, record: ErrorRecord) -> None:
    url = reverse("loop:feedback")
    response = client.post(url, {"record_id": record.pk, "verdict": "fixed:2"}, headers=HX)
    assert response.status_code == 201
    assert "for step 2" in response.content.decode()
    vote = Vote.objects.get()
    assert (vote.verdict, vote.step) == ("fixed", 2)


@pytest.mark.parametrize("verdict", ["", "great", "fixed:0", "fixed:x", "fixed:99"])
def test_an_unreadable_vote_is_a_400_and_stores_nothing(
    client: Client, record: ErrorRecord, verdict: str
) -> None:
    response = client.post(
        reverse("loop:feedback"), {"record_id": record.pk, "verdict": verdict}, headers=HX
    )
    assert response.status_code == 400
    assert Vote.objects.count() == 0


def test_a_vote_on_an_unknown_or_draft_record_is_a_404(client: Client) -> None:
    draft = make_record(status="draft")
    ErrorRecord.objects.filter(pk=draft.pk).update(status="draft")
    for record_id in ("nope", draft.pk, ""):
        data = {"record_id": record_id, "verdict": "fixed"}
        response = client.post(reverse("loop:feedback"), data)
        assert response.status_code == 404
    assert Vote.objects.count() == 0


# --- proposals -------------------------------------------------------------------------------


@pytest.mark.parametrize("headers", [{}, HX], ids=["page", "htmx"])
def test_a_proposal_is_stored_pending_and_not_shown_publicly(
    client: Client, record: ErrorRecord, headers: dict[str, str]
) -> None:
    url = reverse("loop:propose", args=[record.pk])
    data = {"field": "solutions", "text": "Restart the widget daemon", "author": "Sam"}
    response = client.post(url, data, headers=headers)
    assert response.status_code == 201
    assert is_fragment(response.content.decode()) == bool(headers)
    assert "A curator will read your proposal" in response.content.decode()
    proposal = Proposal.objects.get()
    assert (proposal.status, proposal.field, proposal.author) == ("pending", "solutions", "Sam")
    page = client.get(reverse("record_detail", args=[record.pk])).content.decode()
    assert "Restart the widget daemon" not in page


def test_a_filled_honeypot_is_answered_as_sent_and_dropped(
    client: Client, record: ErrorRecord
) -> None:
    url = reverse("loop:propose", args=[record.pk])
    data = {"field": "solutions", "text": "Buy cheap pills", "website": "http://spam.example"}
    response = client.post(url, data, headers=HX)
    assert response.status_code == 201
    assert "A curator will read your proposal" in response.content.decode()
    assert Proposal.objects.count() == 0


@pytest.mark.parametrize(
    "data",
    [{"field": "solutions", "text": "  "}, {"field": "nonsense", "text": "x"}],
    ids=["empty", "unknown-field"],
)
def test_an_invalid_proposal_shows_the_form_again_with_the_reason(
    client: Client, record: ErrorRecord, data: dict[str, str]
) -> None:
    response = client.post(reverse("loop:propose", args=[record.pk]), data, headers=HX)
    assert response.status_code == 400
    html = response.content.decode()
    assert 'role="alert"' in html
    assert "<form" in html
    assert Proposal.objects.count() == 0


def test_an_oversized_proposal_is_refused(
    client: Client, record: ErrorRecord, settings: Any
) -> None:
    settings.KB_PROPOSAL_MAX_CHARS = 50
    data = {"field": "solutions", "text": "x" * 51}
    response = client.post(reverse("loop:propose", args=[record.pk]), data, headers=HX)
    assert response.status_code == 400
    assert Proposal.objects.count() == 0


def test_hostile_proposal_text_is_inert_when_the_form_comes_back(
    client: Client, record: ErrorRecord, settings: Any
) -> None:
    settings.KB_PROPOSAL_MAX_CHARS = 10  # the form comes back with the text in it
    data = {"field": "solutions", "text": PAYLOAD, "author": PAYLOAD[:90]}
    response = client.post(reverse("loop:propose", args=[record.pk]), data)
    assert response.status_code == 400
    assert_inert(response.content.decode())


# --- the forms on the paste and record pages ---------------------------------------------------


def test_the_record_page_offers_feedback_per_record_and_step_and_a_proposal_form(
    client: Client, record: ErrorRecord
) -> None:
    html = client.get(reverse("record_detail", args=[record.pk])).content.decode()
    steps = [
        f'form="record-feedback" name="verdict" value="{verdict}:{n}"'
        for n in range(1, len(record.solutions) + 1)
        for verdict in ("fixed", "not_fixed")
    ]
    for part in ('id="record-feedback"', "How did you fix it?", 'name="website"', *steps):
        assert part in html
    # The forms carry a CSRF token, so they are outside the page's shared cached fragment.
    assert html.index('name="csrfmiddlewaretoken"') > html.index("</article>")


def test_the_record_page_hides_what_is_turned_off(
    client: Client, record: ErrorRecord, settings: Any
) -> None:
    settings.KB_FEEDBACK_ENABLED = False
    settings.KB_PROPOSALS_ENABLED = False
    html = client.get(reverse("record_detail", args=[record.pk])).content.decode()
    assert "record-feedback" not in html
    assert "How did you fix it?" not in html


def step_texts(html: str) -> list[int]:
    return [int(part.split('"')[0]) for part in html.split('class="step-vote" data-step="')[1:]]


def test_steps_are_reordered_by_votes_once_past_the_threshold(
    client: Client, record: ErrorRecord, settings: Any
) -> None:
    settings.KB_VOTE_THRESHOLD = 3
    url = reverse("record_detail", args=[record.pk])
    assert step_texts(client.get(url).content.decode()) == [1, 2, 3]
    for n in range(3):  # three people, each from their own address
        voter = visit(Client(REMOTE_ADDR=f"198.51.100.{n + 1}"), record)
        voter.post(reverse("loop:feedback"), {"record_id": record.pk, "verdict": "fixed:3"})
        if n == 1:  # below the threshold the curator's order holds
            assert step_texts(client.get(url).content.decode()) == [1, 2, 3]
    assert step_texts(client.get(url).content.decode()) == [3, 1, 2]


def test_an_unknown_paste_offers_a_report_and_a_match_offers_votes(
    client: Client, record: ErrorRecord
) -> None:
    miss = client.post(reverse("match"), {"text": unknown_error()}, headers=HX).content.decode()
    assert "Report this unknown error" in miss
    assert "Wrong match" not in miss
    line = "ERROR Backfill progress for vnode 17 not found, backfill_state not initialized properly"
    hit = client.post(reverse("match"), {"text": line}, headers=HX).content.decode()
    assert "Report this unknown error" not in hit
    for label in ("This fixed it", "Didn't help", "Wrong match"):
        assert label in hit
    assert f'name="record_id" value="{record.pk}"' in hit


def test_the_report_button_is_gone_when_reporting_is_off(client: Client, settings: Any) -> None:
    settings.KB_REPORTS_ENABLED = False
    miss = client.post(reverse("match"), {"text": unknown_error()}, headers=HX).content.decode()
    assert "No known error" in miss
    assert "Report this unknown error" not in miss
