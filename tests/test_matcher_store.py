"""The compiled matcher store every host reads (kb/matching/store.py): round trips through
the database and a Django storage, two processes writing one digest at once, a fresh host
that loads instead of compiling, and the store never being needed to serve."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kb.engine import cache
from kb.matching.models import MatcherBlob, MatcherBlobPart
from kb.matching.store import PART_BYTES, DatabaseStore, StorageStore, matcher_store
from kb.records.models import ErrorRecord
from tests.factories import make_record
from tests.servers import ROOT, SECRET_KEY, Gunicorn, app_env, matched_ids


def _blob(tmp_path: Path, size: int, name: str = "matcher-abc.bin") -> Path:
    path = tmp_path / name
    path.write_bytes(os.urandom(size))
    return path


@pytest.mark.django_db
def test_database_store_round_trip_in_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from kb.matching import store as module

    monkeypatch.setattr(module, "PART_BYTES", 1000)  # several parts from a small file
    source = _blob(tmp_path, 3500)
    store = DatabaseStore()
    assert store.put(source.name, source) is True
    assert MatcherBlobPart.objects.filter(blob_id=source.name).count() == 4
    assert store.put(source.name, source) is False  # written once: the second put is a no-op
    out = io.BytesIO()
    assert store.get(source.name, out) is True
    assert out.getvalue() == source.read_bytes()
    assert store.get("matcher-other.bin", io.BytesIO()) is False


@pytest.mark.django_db
def test_a_damaged_stored_matcher_counts_as_absent(tmp_path: Path) -> None:
    source = _blob(tmp_path, 5000)
    store = DatabaseStore()
    store.put(source.name, source)
    MatcherBlobPart.objects.filter(blob_id=source.name).update(data=b"torn")
    target = tmp_path / "cache" / source.name
    assert cache.fetch(store, target) is False
    assert not target.exists()
    assert list(target.parent.iterdir()) == []  # no temporary file left behind


@pytest.mark.django_db
def test_storage_store_round_trip(tmp_path: Path, settings: object) -> None:
    settings.STORAGES = {  # type: ignore[attr-defined]
        **settings.STORAGES,  # type: ignore[attr-defined]
        "matchers": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(tmp_path / "bucket")},
        },
    }
    settings.KB_MATCHER_STORE = "storage:matchers"  # type: ignore[attr-defined]
    store = matcher_store()
    assert isinstance(store, StorageStore)
    source = _blob(tmp_path, PART_BYTES + 10)
    assert cache.publish(store, source) is True
    assert cache.publish(store, source) is False
    target = tmp_path / "host-b" / source.name
    assert cache.fetch(store, target) is True
    assert target.read_bytes() == source.read_bytes()
    assert cache.fetch(store, tmp_path / "host-b" / "matcher-none.bin") is False


@pytest.mark.django_db
def test_store_cleanup_keeps_what_is_in_use_and_the_recent_ones(tmp_path: Path) -> None:
    from datetime import timedelta

    from django.utils import timezone

    store = DatabaseStore()
    old = timezone.now() - timedelta(seconds=cache.MAX_UNUSED_AGE_S + 60)
    names = [f"matcher-{i:03d}.bin" for i in range(cache.KEEP_UNUSED + 3)]
    for i, name in enumerate(names):
        store.put(name, _blob(tmp_path, 10, name))
        MatcherBlob.objects.filter(name=name).update(used_at=old + timedelta(seconds=i))
    in_use = names[0]  # the oldest, but a current build uses it
    gone = store.cleanup({in_use})
    assert sorted(gone) == names[1:3]  # beyond the most recent KEEP_UNUSED, and old
    assert set(MatcherBlob.objects.values_list("name", flat=True)) == {in_use, *names[3:]}
    assert not MatcherBlobPart.objects.filter(blob_id__in=gone).exists()


WRITER = """
import sys, time, django
django.setup()
from pathlib import Path
from kb.matching.store import DatabaseStore
from kb.matching.models import MatcherBlob
MatcherBlob.objects.exists()  # connected
go = Path(sys.argv[2])
while not go.exists():
    time.sleep(0.005)
print(DatabaseStore().put(Path(sys.argv[1]).name, Path(sys.argv[1])))
"""


@pytest.mark.django_db(transaction=True)
def test_two_processes_storing_one_digest_at_once(tmp_path: Path, settings: object) -> None:
    """Both publish the same name at the same moment: one writes, the other finds it (or
    loses the race on the key) and says so, and the stored bytes are whole."""
    settings.SECRET_KEY = SECRET_KEY  # type: ignore[attr-defined]  # the writers' deployment
    source = _blob(tmp_path, 3 * 2**20)
    go = tmp_path / "go"
    env = app_env(DEBUG="1")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(source), str(go)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    time.sleep(1.5)  # both connected and waiting on the file
    go.touch()
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [e[-2000:] for _o, e in outs]
    assert sorted(o.strip().splitlines()[-1] for o, _e in outs) == ["False", "True"]
    out = io.BytesIO()
    assert DatabaseStore().get(source.name, out) is True
    assert out.getvalue() == source.read_bytes()


def _warm(cache_dir: Path, **env: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", "warm_matcher"],
        cwd=ROOT,
        env=app_env(DEBUG="1", KB_MATCHER_CACHE_DIR=str(cache_dir), **env),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout + done.stderr


@pytest.mark.django_db(transaction=True)
def test_a_fresh_host_loads_from_the_store_without_compiling(tmp_path: Path) -> None:
    make_record()
    make_record(
        errorMessage="Quokka store {} unreachable", messagePattern="Quokka store (.+?) unreachable"
    )
    first = _warm(tmp_path / "host-a")
    assert "compiled 1 shards" in first
    assert MatcherBlob.objects.count() == 1  # host A published what it compiled
    fresh = _warm(tmp_path / "host-b")  # an empty cache directory: a new host
    assert "(loaded from store)" in fresh
    assert "matcher loaded from store" in fresh  # the log line operators look for
    assert [p.name for p in (tmp_path / "host-b").glob("matcher-*.bin")] == [
        MatcherBlob.objects.get().name
    ]
    again = _warm(tmp_path / "host-b")
    assert "(loaded from local cache)" in again  # the directory stays a cache in front
    alone = _warm(tmp_path / "host-c", KB_MATCHER_STORE="none")
    assert "compiled 1 shards" in alone  # without the store, a new host compiles


@pytest.mark.django_db(transaction=True)
def test_a_missing_store_table_costs_a_compile_never_a_failure(tmp_path: Path) -> None:
    from django.db import connection

    make_record()
    with connection.cursor() as cur:
        cur.execute("DROP TABLE kb_matcherblobpart")
        cur.execute("DROP TABLE kb_matcherblob")
    try:
        out = _warm(tmp_path / "host-a")
        assert "compiled 1 shards" in out
        assert "matcher store unavailable" in out
    finally:  # the schema back for the tests after this one
        with connection.schema_editor() as editor:
            editor.create_model(MatcherBlob)
            editor.create_model(MatcherBlobPart)


EDITOR = """
import sys, django
django.setup()
from kb.records.models import ErrorRecord
from kb.records.services import save_curated
record = ErrorRecord.objects.get(pk=sys.argv[1])
record.error_message = "Quokka gateway {} refused the handshake"
record.message_pattern = "Quokka gateway (.+?) refused the handshake"
save_curated(record, changed_attrs=["error_message", "message_pattern"], reason="store test")
"""


LOGS = {"GUNICORN_CMD_ARGS": "--capture-output"}  # the app's log lines in the error log


@pytest.mark.django_db(transaction=True)
def test_two_hosts_one_database_an_edit_on_one_matches_on_the_other(tmp_path: Path) -> None:
    """Two real servers with their own matcher cache directories on one database: the
    second serves from the store without compiling, and an edit made through the first
    matches on both within the bound of docs/deployment.md (revision polling)."""
    record = make_record()
    other = make_record()
    with Gunicorn(
        workers=1, log_dir=tmp_path, KB_MATCHER_CACHE_DIR=str(tmp_path / "a"), **LOGS
    ) as host_a:
        line = "Backfill progress for vnode 7 not found, backfill_state not initialized properly"
        assert record.pk in matched_ids(host_a, line)
        with Gunicorn(
            workers=1, log_dir=tmp_path, KB_MATCHER_CACHE_DIR=str(tmp_path / "b"), **LOGS
        ) as host_b:
            assert record.pk in matched_ids(host_b, line)
            assert "matcher loaded from store" in host_b.errors()
            assert "matcher published to store" in host_a.errors()
            # A curator's edit on host A, through kb.records.services (the path the admin's save
            # takes), in a process of its own with host A's settings.
            fresh = "Quokka gateway 12 refused the handshake"
            edit = subprocess.run(
                [sys.executable, "-c", EDITOR, other.pk],
                cwd=ROOT,
                env=host_a.env,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert edit.returncode == 0, edit.stderr[-2000:]
            deadline = time.monotonic() + 2.0
            seen = {"a": False, "b": False}
            while time.monotonic() < deadline and not all(seen.values()):
                seen["a"] = seen["a"] or other.pk in matched_ids(host_a, fresh)
                seen["b"] = seen["b"] or other.pk in matched_ids(host_b, fresh)
            assert seen == {"a": True, "b": True}


@pytest.mark.django_db
def test_a_failing_store_inside_a_transaction_leaves_it_usable(
    caplog: pytest.LogCaptureFixture, tmp_path: Path, settings: object
) -> None:
    """The build may run inside a caller's transaction (a request, a task): a store query
    that fails must not abort it (PostgreSQL refuses every later query of an aborted one).
    The tables are dropped inside the test's own transaction, rolled back after it."""
    from django.db import connection

    from kb.matching.holder import holder

    settings.KB_MATCHER_CACHE_DIR = tmp_path / "empty"  # type: ignore[attr-defined]
    record = make_record()
    with connection.cursor() as cur:
        cur.execute("DROP TABLE kb_matcherblobpart")
        cur.execute("DROP TABLE kb_matcherblob")
    with caplog.at_level("WARNING", logger="kb.matching.holder"):
        matcher = holder.get()
    assert len(matcher) == 1
    assert "matcher store unavailable" in caplog.text
    assert ErrorRecord.objects.filter(pk=record.pk).exists()  # the transaction still works
