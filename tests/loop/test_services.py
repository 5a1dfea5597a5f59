"""The learning loop's writes (`kb.loop.services`), without views: reports fold into gaps
and store only redacted lines, votes count once per browser and day, proposals are
validated and accepted through the curated path, gaps close, purge and export."""

from __future__ import annotations

import io
import json
import re
from datetime import date, timedelta

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.utils import timezone

from kb.loop import services
from kb.loop.models import Gap, GapWord, Proposal, UsageDay, Vote
from kb.loop.text.gaps import template_of
from kb.records.exporter import export_lines
from kb.records.models import ErrorRecord, Status
from kb.records.services import save_curator_edit, set_status
from tests.factories import import_lines, make_line, make_record

pytestmark = pytest.mark.django_db

AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
DSN_PASSWORD = "s3cr3t-Pa55word"
EMAIL = "jane.doe@example.org"


def unknown_error(order: int, user: str, key: str = AWS_KEY) -> str:
    return (
        "2026-01-01 10:00:00 INFO starting worker\n"
        f"2026-01-01 10:00:01 ERROR Widget frobnication failed for order {order} "
        f"owned by {user}: upstream postgres://app:{DSN_PASSWORD}@db.internal:5432/orders "
        f"refused key {key}\n"
    )


def curator() -> User:
    return User.objects.create_user("cur", is_staff=True)


# --- reports ------------------------------------------------------------------------------


def test_the_preview_shows_the_error_lines_redacted_and_says_what_was_replaced() -> None:
    preview = services.preview_report(text=unknown_error(42, EMAIL))
    assert len(preview.lines) == 1
    assert "starting worker" not in preview.redacted
    for secret in (AWS_KEY, DSN_PASSWORD, EMAIL):
        assert secret not in preview.redacted
    assert "Widget frobnication failed for order" in preview.redacted
    assert "<email>" in preview.redacted
    assert "<password>" in preview.redacted
    assert preview.summary != "nothing replaced"


@pytest.mark.parametrize("offset", [-30, -20, -5, 0])
def test_a_secret_across_the_line_cut_is_redacted_whole(offset: int) -> None:
    """Lines are cut to a bound after redaction: a token straddling the cut must not
    leave its first part behind."""
    from kb.loop.text.error_lines import MAX_LINE_CHARS

    token = "ghp_" + "A1b2" * 9
    head = "ValueError: upstream refused " + "x " * 400
    line = head[: MAX_LINE_CHARS + offset - len(token) // 2] + " with " + token + " while syncing"
    preview = services.preview_report(text=line)
    assert preview.lines
    assert "ghp_" not in preview.redacted
    assert "A1b2A1b2" not in preview.redacted
    assert all(len(stored) <= MAX_LINE_CHARS for stored in preview.lines)


def test_a_token_wrapped_onto_the_next_error_line_is_stored_without_its_tail() -> None:
    """A terminal wrapped a line inside a token, and the next line is an error line too, so
    both lines are kept: the tail must go with the head, which redaction sees only when
    it reads the two lines together."""
    token = "ghp_" + "Q7x9" * 9
    text = (
        f"ERROR sync: upstream refused credentials {token[:20]}\n"
        f"{token[20:]} ERROR sync: retrying in 5 s\n"
    )
    preview = services.preview_report(text=text)
    assert len(preview.lines) == 2
    assert token[20:] not in preview.redacted
    assert token[:8] not in preview.redacted
    assert "retrying in 5 s" in preview.redacted
    assert preview.summary != "nothing replaced"


def test_a_closed_gap_reported_again_is_open_again() -> None:
    first = services.file_report(text=unknown_error(42, EMAIL))
    record = make_record()
    Gap.objects.filter(pk=first.gap.pk).update(closed_at=timezone.now(), closed_by=record)
    again = services.file_report(text=unknown_error(7, EMAIL))
    gap = Gap.objects.get(pk=first.gap.pk)
    assert again.gap.pk == gap.pk
    assert (gap.count, gap.closed_at, gap.closed_by) == (2, None, None)


def test_reports_of_one_error_with_other_values_fold_into_one_gap() -> None:
    first = services.file_report(text=unknown_error(42, EMAIL))
    second = services.file_report(
        text=unknown_error(97, "bob@example.com", key="AKIAJ7Q2EXAMPLEKEY99")
    )
    other = services.file_report(text="ERROR Gizmo calibration drifted beyond tolerance 3")

    assert first.created
    assert not second.created
    assert other.created
    assert second.gap.pk == first.gap.pk != other.gap.pk
    gap = Gap.objects.get(pk=first.gap.pk)
    assert gap.count == 2
    assert len(gap.samples) == 2
    assert gap.first_seen <= gap.last_seen
    assert GapWord.objects.filter(gap=gap, word="frobnication").exists()


def test_a_report_folds_by_similarity_when_the_exact_key_differs() -> None:
    first = services.file_report(text="ERROR Widget frobnication failed while syncing the ledger")
    second = services.file_report(
        text="ERROR worker-3 | Widget frobnication failed while syncing the ledger again"
    )
    second_template = template_of(second.preview.headline)
    assert services.gap_key(first.gap.template) != services.gap_key(second_template)
    assert second.gap.pk == first.gap.pk
    assert Gap.objects.get().count == 2


def test_the_server_stores_only_what_it_redacts_itself() -> None:
    filed = services.file_report(text=unknown_error(42, EMAIL))
    stored = json.dumps(list(Gap.objects.values()), default=str)
    for secret in (AWS_KEY, DSN_PASSWORD, EMAIL, "starting worker"):
        assert secret not in stored
    assert filed.gap.samples == [filed.preview.headline]


def test_nothing_to_report_is_refused() -> None:
    with pytest.raises(ValidationError):
        services.file_report(text="   \n\n")
    assert not Gap.objects.exists()


def test_samples_are_bounded() -> None:
    for n in range(12):
        services.file_report(text=f"ERROR Widget frobnication failed for order {n}")
    gap = Gap.objects.get()
    assert gap.count == 12
    assert len(gap.samples) == 5
    assert gap.samples[-1].endswith("order 11")


# --- votes --------------------------------------------------------------------------------


def test_one_vote_per_browser_record_and_day_and_a_new_verdict_replaces_it() -> None:
    record = make_record()
    today = date(2026, 3, 1)
    vote = {"record": record, "voter": "v1", "today": today}
    assert services.cast_vote(verdict="fixed", **vote) is True
    assert services.cast_vote(verdict="fixed", **vote) is False
    assert Vote.objects.count() == 1
    assert services.cast_vote(verdict="not_fixed", **vote) is True
    assert list(Vote.objects.values_list("verdict", flat=True)) == ["not_fixed"]
    assert services.cast_vote(
        verdict="fixed", record=record, voter="v1", today=today + timedelta(1)
    )
    assert services.cast_vote(verdict="fixed", record=record, voter="v2", today=today)
    assert services.cast_vote(verdict="fixed", step=1, **vote) is True
    assert services.cast_vote(verdict="fixed", step=1, **vote) is False
    assert Vote.objects.count() == 4


def test_a_vote_needs_a_known_verdict_and_an_existing_step() -> None:
    record = make_record(solutions=["one", "two"])
    with pytest.raises(ValidationError):
        services.cast_vote(record=record, verdict="meh", voter="v")
    for step in (0, 3):
        with pytest.raises(ValidationError):
            services.cast_vote(record=record, verdict="fixed", voter="v", step=step)
    assert services.cast_vote(record=record, verdict="fixed", voter="v", step=2)


# --- proposals ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "text"),
    [("solutions", "   "), ("nonsense", "Restart it"), ("solutions", "x" * 4001)],
)
def test_a_proposal_needs_a_known_field_and_a_text_within_bounds(field: str, text: str) -> None:
    record = make_record()
    with pytest.raises(ValidationError):
        services.propose(record=record, field=field, text=text)
    assert not Proposal.objects.exists()


def test_a_proposal_is_pending_and_changes_nothing_until_accepted() -> None:
    record = make_record(solutions=[])
    proposal = services.propose(record=record, field="solutions", text="  Restart the actor\r\n")
    assert proposal.status == Proposal.State.PENDING
    assert proposal.text == "Restart the actor"
    assert ErrorRecord.objects.get(pk=record.pk).solutions == []


def test_an_accepted_proposal_is_curated_survives_a_reimport_and_is_exported() -> None:
    line = make_line(solutions=["Check the progress table"], documentation=None)
    import_lines(line)
    record = ErrorRecord.objects.get(pk=line["record"]["id"])
    user = curator()
    step = services.propose(record=record, field="solutions", text="Reinitialise the vnode")
    note = services.propose(record=record, field="documentation", text="Seen after a rescale.")

    services.accept_proposal(proposal=step, user=user)
    services.accept_proposal(proposal=note, user=user)

    record.refresh_from_db()
    assert record.solutions == ["Check the progress table", "Reinitialise the vnode"]
    assert record.documentation == "Seen after a rescale."
    assert set(record.curated_fields) == {"solutions", "documentation"}
    step.refresh_from_db()
    assert (step.status, step.decided_by) == (Proposal.State.ACCEPTED, user)
    assert record.history.latest().history_user == user

    line["record"]["solutions"] = ["A newer dataset answer"]
    line["record"]["contentChangedAt"] = "2026-11-30T00:00:00.000Z"
    report = import_lines(line, source="update.jsonl")
    assert report.conflicts >= 1
    record.refresh_from_db()
    assert record.solutions[-1] == "Reinitialise the vnode"
    assert record.conflicts["solutions"]["incoming"] == ["A newer dataset answer"]
    (exported,) = export_lines(ErrorRecord.objects.filter(pk=record.pk))
    assert "Reinitialise the vnode" in json.loads(exported)["record"]["solutions"]

    with pytest.raises(ValidationError):
        services.accept_proposal(proposal=step, user=user)  # decided already


def test_a_rejected_proposal_changes_nothing() -> None:
    record = make_record(solutions=["one"])
    proposal = services.propose(record=record, field="solutions", text="spam")
    services.reject_proposal(proposal=proposal, user=curator())
    assert proposal.status == Proposal.State.REJECTED
    record.refresh_from_db()
    assert record.solutions == ["one"]
    assert record.curated_fields == []


# --- gaps: drafts and closing -------------------------------------------------------------

GAP_TEXT = "ERROR Widget frobnication failed for order {n} in region eu-west"


def test_a_draft_from_a_gap_matches_its_samples_and_a_published_record_closes_it() -> None:
    for n in (42, 97):
        filed = services.file_report(text=GAP_TEXT.format(n=n))
    gap = Gap.objects.get(pk=filed.gap.pk)
    draft = services.draft_from_gap(gap=gap)
    assert draft["status"] == Status.DRAFT
    assert all(re.search(draft["message_pattern"], s) for s in gap.samples)

    record = make_record(messagePattern=draft["message_pattern"], errorMessage=gap.template)
    ErrorRecord.objects.filter(pk=record.pk).update(status=Status.DRAFT)
    assert services.close_matched_gaps() == 0  # a draft closes nothing

    set_status([ErrorRecord.objects.get(pk=record.pk)], Status.PUBLISHED)
    assert services.close_matched_gaps() == 1
    gap.refresh_from_db()
    assert gap.closed_by_id == record.pk
    assert not gap.is_open
    assert services.close_matched_gaps() == 0  # closed gaps are not read again


def test_publishing_a_record_closes_the_gaps_it_answers(django_capture_on_commit_callbacks) -> None:
    filed = services.file_report(text=GAP_TEXT.format(n=1))
    pattern = services.draft_from_gap(gap=filed.gap)["message_pattern"]
    record = make_record(messagePattern=pattern)
    ErrorRecord.objects.filter(pk=record.pk).update(status=Status.DRAFT)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        set_status(list(ErrorRecord.objects.filter(pk=record.pk)), Status.PUBLISHED)
    assert len(callbacks) == 1
    assert Gap.objects.get(pk=filed.gap.pk).closed_by_id == record.pk


def test_a_curator_edit_that_cannot_change_matching_schedules_no_gap_closing(
    django_capture_on_commit_callbacks,
) -> None:
    filed = services.file_report(text=GAP_TEXT.format(n=1))
    record = make_record()
    user = curator()
    record.documentation = "A note"
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        save_curator_edit(record=record, changed_fields=["documentation"], user=user)
    assert callbacks == []
    record.message_pattern = services.draft_from_gap(gap=filed.gap)["message_pattern"]
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        save_curator_edit(record=record, changed_fields=["message_pattern"], user=user)
    assert len(callbacks) == 1
    assert Gap.objects.get(pk=filed.gap.pk).closed_by_id == record.pk


def test_a_plain_save_closes_nothing_any_more(django_capture_on_commit_callbacks) -> None:
    """The closing is the publishers' explicit call, not a signal on every save."""
    services.file_report(text=GAP_TEXT.format(n=1))
    record = make_record()
    with django_capture_on_commit_callbacks() as callbacks:
        record.save()
    assert callbacks == []


def test_a_gap_lists_the_nearest_records() -> None:
    record = make_record()
    filed = services.file_report(
        text="ERROR Backfill progress for vnode not found, backfill state not initialised"
    )
    assert record.pk in [n["record_id"] for n in filed.gap.nearest]
    assert all(0 < n["similarity"] <= 1 for n in filed.gap.nearest)


# --- retention and export -----------------------------------------------------------------


def test_purge_deletes_what_the_retention_no_longer_keeps() -> None:
    record = make_record()
    now = timezone.now()
    old, recent = now - timedelta(days=200), now - timedelta(days=1)
    services.file_report(text="ERROR Old gizmo failure happened here", now=old)
    services.file_report(text=GAP_TEXT.format(n=1), now=recent)
    UsageDay.objects.create(record_id=record.pk, day=old.date(), hits=3)
    UsageDay.objects.create(record_id="", day=recent.date(), misses=2)
    services.cast_vote(record=record, verdict="fixed", voter="a", today=old.date())
    services.cast_vote(record=record, verdict="fixed", voter="a", today=recent.date())
    spam = services.propose(record=record, field="solutions", text="spam")
    services.reject_proposal(proposal=spam, user=curator())
    Proposal.objects.filter(pk=spam.pk).update(decided_at=old)
    services.propose(record=record, field="solutions", text="pending stays")

    done = services.purge(older_than=now - timedelta(days=180))

    assert done == {"usage": 1, "votes": 1, "gaps": 1, "proposals": 1}
    assert Gap.objects.count() == UsageDay.objects.count() == Vote.objects.count() == 1
    assert list(Proposal.objects.values_list("text", flat=True)) == ["pending stays"]
    assert not GapWord.objects.filter(gap__last_seen__lt=now - timedelta(days=180)).exists()


def test_export_writes_gaps_and_proposals_as_json_lines() -> None:
    record = make_record()
    filed = services.file_report(text=GAP_TEXT.format(n=1))
    services.propose(record=record, field="triggerScenarios", text="<script>x</script>")
    out = io.StringIO()
    assert services.export_jsonl(out) == 2
    gap, proposal = (json.loads(line) for line in out.getvalue().splitlines())
    assert gap["kind"] == "gap"
    assert gap["id"] == str(filed.gap.pk)
    assert gap["count"] == 1
    assert proposal == proposal | {"kind": "proposal", "record_id": record.pk, "status": "pending"}
    assert proposal["text"] == "<script>x</script>"  # data, escaped wherever it is shown
