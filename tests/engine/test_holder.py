"""The per-process matcher follows the records: real SQLite, real matcher, real writes.

A deletion leaves no changed row behind, so the holder must notice it by the keys it holds;
these tests delete, retire, edit and publish through ``kb.records.services`` (the path the admin,
the API and the importer take) and look at what the next refresh matches: in one holder,
in two holders that share the database and the matcher cache, and in two real gunicorn
workers (``tests/servers.py``) answering ``POST /api/match``.
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from kb.matching.holder import MatcherHolder, match_text
from kb.records.models import ErrorRecord, Status
from kb.records.services import delete_records, save_curated, set_status
from tests.factories import make_record
from tests.servers import Gunicorn, json_post

pytestmark = pytest.mark.django_db

LEASE = "Shard 7 lost its lease while compacting the write-ahead log"
QUOTA = "Tenant acme exceeded its ingest quota of 40 partitions per node"
EDITED = "Shard 9 refused a snapshot from an unknown leader"
BUDGET = "Replica r2 fell behind the retention budget for segment uploads"


def _record(message: str, **overrides: object) -> ErrorRecord:
    """A record whose message is ``message`` with its first word after the noun as the
    placeholder (``Shard {} lost ...``)."""
    words = message.split(" ")
    template = " ".join([words[0], "{}", *words[2:]])
    pattern = " ".join([words[0], "(.+?)", *words[2:]])
    return make_record(errorMessage=template, messagePattern=pattern, **overrides)


def _matched(holder: MatcherHolder, text: str) -> set[str]:
    report = holder.get().match(text)
    return {k for m in report.matches for k in (m.key, *m.same_message)}


def test_a_deleted_record_is_never_matched_again() -> None:
    record = _record(LEASE)
    holder = MatcherHolder()
    assert _matched(holder, LEASE) == {record.pk}

    delete_records([record])

    assert _matched(holder, LEASE) == set()
    assert record.pk not in holder.get()
    assert _matched(holder, LEASE) == set()  # and not on a later refresh either
    assert match_text(LEASE).matches == []  # the process's own holder agrees


def test_a_retired_record_is_never_matched_again() -> None:
    record = _record(LEASE)
    holder = MatcherHolder()
    assert _matched(holder, LEASE) == {record.pk}

    set_status([record], Status.RETIRED)

    assert _matched(holder, LEASE) == set()
    assert record.pk not in holder.get()


def test_a_deletion_and_a_new_record_in_one_refresh_window() -> None:
    """The number of active records is unchanged (one gone, one new): the deleted one must
    still go, by its key."""
    old = _record(LEASE)
    holder = MatcherHolder()
    assert _matched(holder, LEASE) == {old.pk}
    active = ErrorRecord.objects.active().count()

    delete_records([old])
    new = _record(QUOTA)
    assert ErrorRecord.objects.active().count() == active

    assert _matched(holder, LEASE) == set()
    assert _matched(holder, QUOTA) == {new.pk}
    assert holder.get().keys() == set(ErrorRecord.objects.active().values_list("id", flat=True))


def test_a_deletion_and_a_publication_in_one_refresh_window() -> None:
    """The same with a draft published (a status change, not a new row) in the window."""
    old = _record(LEASE)
    draft = _record(BUDGET)
    set_status([draft], Status.DRAFT)
    holder = MatcherHolder()
    assert _matched(holder, BUDGET) == set()

    delete_records([old])
    set_status([ErrorRecord.objects.get(pk=draft.pk)], Status.PUBLISHED)

    assert _matched(holder, LEASE) == set()
    assert _matched(holder, BUDGET) == {draft.pk}


def test_record_facts_are_made_once_per_record_and_revision() -> None:
    """What a paste's evidence is weighed against (`RecordFacts`, with the parts of it
    each paste compares) is made when a record is first shown and kept with it until
    its revision changes, not made again for every paste."""
    record = _record(
        LEASE, repo="acme/ledger", filePath="ledger/shard/lease.py", errorClass="ledger.LeaseLost"
    )
    holder = MatcherHolder()
    holder.get()
    first = holder.facts([record.pk])[record.pk]
    assert (first.name, first.own_class, first.tail2) == ("ledger", "LeaseLost", "shard/lease")
    assert holder.facts([record.pk])[record.pk] is first  # the next paste: the same facts

    record.file_path = "ledger/shard/renewal.py"
    save_curated(record, changed_attrs=["file_path"])
    holder.get()  # the refresh reads the new revision
    again = holder.facts([record.pk])[record.pk]
    assert again is not first
    assert again.tail2 == "shard/renewal"


def test_a_refresh_without_deletions_reads_no_keys() -> None:
    """Telling a deletion by key costs one count when nothing was deleted; the active keys
    are read only when the count says something vanished."""
    record = _record(LEASE)
    other = _record(QUOTA)
    holder = MatcherHolder()
    holder.get()

    record.error_message = "Shard {} refused a snapshot from an unknown leader"
    record.message_pattern = "Shard (.+?) refused a snapshot from an unknown leader"
    save_curated(record, changed_attrs=["error_message", "message_pattern"])
    with CaptureQueriesContext(connection) as edit:
        assert _matched(holder, EDITED) == {record.pk}

    delete_records([other])
    with CaptureQueriesContext(connection) as deletion:
        assert _matched(holder, QUOTA) == set()

    # revision, changed rows, active count; a deletion adds the read of the active keys
    assert len(edit.captured_queries) == 3, edit.captured_queries
    assert len(deletion.captured_queries) == 4, deletion.captured_queries


def test_two_workers_each_see_the_others_edits_and_deletions() -> None:
    """Two holders (two worker processes' state) on one database and one matcher cache:
    whichever process served the curator, the other's next refresh has the change."""
    lease, quota = _record(LEASE), _record(QUOTA)
    first, second = MatcherHolder(), MatcherHolder()
    assert _matched(first, LEASE) == _matched(second, LEASE) == {lease.pk}

    lease.error_message = "Shard {} refused a snapshot from an unknown leader"
    lease.message_pattern = "Shard (.+?) refused a snapshot from an unknown leader"
    save_curated(lease, changed_attrs=["error_message", "message_pattern"])
    for holder in (first, second):
        assert _matched(holder, LEASE) == set()
        assert _matched(holder, EDITED) == {lease.pk}

    delete_records([quota])
    assert _matched(first, QUOTA) == set()
    assert _matched(second, QUOTA) == set()

    delete_records([lease])
    assert _matched(second, EDITED) == set()
    assert _matched(first, EDITED) == set()
    assert (
        first.get().keys()
        == second.get().keys()
        == frozenset(ErrorRecord.objects.active().values_list("id", flat=True))
    )


def _served(server: Gunicorn, text: str, requests: int = 8) -> tuple[set[str], set[int], list[str]]:
    """Record ids matched over ``requests`` concurrent pastes, the workers that served, and
    the matches' reasons (which say how many candidates a match was ranked among)."""
    logged = len(server.worker_pids())
    with ThreadPoolExecutor(max_workers=requests) as pool:
        answers = list(
            pool.map(lambda _: json_post(server, "/api/match", {"text": text}), range(requests))
        )
    assert all(status == 200 for status, _h, _b in answers), answers
    matches = [m for _s, _h, body in answers for m in json.loads(body)["matches"]]
    ids = {m["record_id"] for m in matches}
    return ids, set(server.worker_pids()[logged:]), [m["reason"] for m in matches]


@pytest.mark.django_db(transaction=True)
def test_two_server_processes_drop_a_deleted_record(tmp_path: Path) -> None:
    """Two real gunicorn workers on the test database and the shared matcher cache: a
    deletion made by another process reaches each worker's next refresh."""
    lease = _record(LEASE)
    # a less specific record on the same line: ranked below the deleted one while that
    # one is still (wrongly) matched, even though only it is shown
    make_record(
        errorMessage="lost its lease while compacting {}",
        messagePattern="lost its lease while compacting (.+?)",
    )
    with Gunicorn(
        workers=2, log_dir=tmp_path, KB_RATE_LIMIT_PER_MINUTE="0", KB_MATCHER_REFRESH_SECONDS="0"
    ) as server:
        ids, _workers, reasons = _served(server, LEASE)
        assert lease.pk in ids
        assert any("ranked 2 of 2" in r for r in reasons)

        delete_records([lease])

        served: set[int] = set()
        for _ in range(6):  # on a busy machine one worker may take a whole round
            ids, workers, reasons = _served(server, LEASE)
            assert lease.pk not in ids
            assert not any("confident candidates" in r for r in reasons), reasons
            served |= workers
            if len(served) == 2:
                break
        assert len(served) == 2, "both workers should have served a paste after the deletion"


def test_a_bulk_change_loads_the_whole_build_its_writer_published_instead_of_compiling() -> None:
    """An import changes many records at once and publishes the whole matcher before it
    finishes (``kb.curation.tasks.publish_matcher``): a process that was serving before the
    import loads that build on its next refresh, so no page request compiles the imported
    patterns; a curator's single edit is still folded in."""
    from kb.curation.tasks import publish_matcher

    first = _record(LEASE)
    serving = MatcherHolder()
    assert _matched(serving, LEASE) == {first.pk}

    imported = [
        make_record(
            errorMessage=f"Segment {{}} of bulk batch {i} was rejected by the broker",
            messagePattern=f"Segment (.+?) of bulk batch {i} was rejected by the broker",
        )
        for i in range(64)  # holder.BULK_CHANGE
    ]
    publish_matcher()  # what the import command and the worker's import task do last

    after = serving.get()
    assert after._delta is None  # nothing compiled on top: the published build, loaded whole
    assert after.stats.get("matcher_from_cache") is True
    assert {r.pk for r in imported} <= after.keys()
    assert _matched(serving, "Segment 12 of bulk batch 7 was rejected by the broker") == {
        imported[7].pk
    }

    first.error_message = "Shard {} lost its lease while compacting the log"
    first.message_pattern = "Shard (.+?) lost its lease while compacting the log"
    save_curated(first, changed_attrs=["error_message", "message_pattern"])
    assert _matched(serving, "Shard 7 lost its lease while compacting the log") == {first.pk}
    assert serving.get()._delta is not None  # one edit is folded in (compiled), not loaded


@pytest.mark.parametrize("seeks", [64, 2])
def test_the_repositories_are_those_of_the_active_records(
    seeks: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found a seek each (and past ``REPO_SEEKS``, the rest in one read): the same set as
    every active record's repository, field records (no repository) included, and none
    of a record that is not active."""
    import kb.matching.holder as holder_module

    monkeypatch.setattr(holder_module, "REPO_SEEKS", seeks)
    for i, repo in enumerate(["acme/b", "acme/a", "acme/c", "acme/a", "", "zeta/z"]):
        _record(f"Shard {i} lost its lease while compacting log {repo or 'none'}", repo=repo)
    _record("Shard 9 lost its lease while compacting a retired log", repo="gone/x").delete()
    draft = _record("Shard 8 lost its lease while compacting a draft log", repo="draft/x")
    ErrorRecord.objects.filter(pk=draft.pk).update(status=Status.DRAFT)
    expected = set(ErrorRecord.objects.active().values_list("repo", flat=True))
    assert "draft/x" not in expected
    assert holder_module.distinct_repos() == frozenset(expected)
    assert {"acme/a", "acme/b", "acme/c", "", "zeta/z"} <= expected
