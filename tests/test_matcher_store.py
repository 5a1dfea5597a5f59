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
    assert len(MatcherBlob.objects.get(name=source.name).parts) == 4
    assert MatcherBlobPart.objects.count() == 4
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
    MatcherBlobPart.objects.update(data=b"torn")
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
    listed = {d for parts in MatcherBlob.objects.values_list("parts", flat=True) for d in parts}
    assert set(MatcherBlobPart.objects.values_list("digest", flat=True)) <= listed | {
        d for name in gone for d in _part_digests(tmp_path / name)
    }  # the gone objects' parts stay while a writer could be about to list them ...
    store.put("matcher-late.bin", _blob(tmp_path, 10, "matcher-late.bin"))
    MatcherBlob.objects.filter(name="matcher-late.bin").update(used_at=old)
    MatcherBlobPart.objects.update(used_at=old)
    assert store.cleanup({in_use}) == ["matcher-late.bin"]
    left = {d for parts in MatcherBlob.objects.values_list("parts", flat=True) for d in parts}
    assert set(MatcherBlobPart.objects.values_list("digest", flat=True)) == left  # ... then go


def _part_digests(path: Path) -> list[str]:
    import hashlib

    return [hashlib.sha256(path.read_bytes()).hexdigest()]


def _packed(tables: list[bytes]) -> bytes:
    """A file in the cache's format whose byte sections are ``tables``."""
    return cache.pack("kb-test-v1", {"n": len(tables)}, tables)


def _storage(tmp_path: Path, settings: object) -> StorageStore:
    settings.STORAGES = {  # type: ignore[attr-defined]
        **settings.STORAGES,  # type: ignore[attr-defined]
        "matchers": {
            "BACKEND": "django.core.files.storage.FileSystemStorage",
            "OPTIONS": {"location": str(tmp_path / "bucket")},
        },
    }
    return StorageStore("matchers")


@pytest.mark.parametrize("kind", ["database", "storage"])
@pytest.mark.django_db
def test_a_second_object_stores_only_the_sections_the_first_lacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: object, kind: str
) -> None:
    """The matcher built after an import: the shards alike, every table longer at its
    end. Its parts are cut where the sections start, so it stores the new shard and the
    tables' last parts only, and both objects read back whole."""
    from kb.matching import store as module

    monkeypatch.setattr(module, "PART_BYTES", 1000)
    store: DatabaseStore | StorageStore = DatabaseStore()
    count = MatcherBlobPart.objects.count
    if kind == "storage":
        store = _storage(tmp_path, settings)

        def count() -> int:
            return len(list((tmp_path / "bucket" / module.PARTS_DIR).iterdir()))

    shards = [os.urandom(2500) for _ in range(3)]
    table = os.urandom(3300)
    first = tmp_path / "matcher-first.bin"
    first.write_bytes(_packed([*shards, table]))
    second = tmp_path / "matcher-second.bin"
    second.write_bytes(_packed([*shards, os.urandom(2500), table + os.urandom(200)]))
    assert cache.publish(store, first) is True
    stored = count()
    assert stored == 1 + 3 * 3 + 4  # the header, three parts per shard, four for the table
    assert cache.publish(store, second) is True
    new = count() - stored
    assert new == 1 + 3 + 1  # its header, the new shard, the table's grown last part
    for path in (first, second):
        out = io.BytesIO()
        assert store.get(path.name, out) is True
        assert out.getvalue() == path.read_bytes()


@pytest.mark.django_db
def test_storage_cleanup_drops_the_parts_no_kept_object_lists(
    tmp_path: Path, settings: object
) -> None:
    store = _storage(tmp_path, settings)
    names = [f"matcher-{i:03d}.bin" for i in range(cache.KEEP_UNUSED + 2)]
    for name in names:
        assert store.put(name, _blob(tmp_path, 10, name))
    parts = tmp_path / "bucket" / "kb-matcher" / "parts"
    markers = tmp_path / "bucket" / "kb-matcher"
    old = time.time() - cache.MAX_UNUSED_AGE_S - 60
    for i, name in enumerate(names):
        os.utime(markers / f"{name}.json", (old + i, old + i))
    for part in parts.iterdir():
        os.utime(part, (old, old))
    assert sorted(store.cleanup(set())) == names[:2]
    assert len(list(parts.iterdir())) == cache.KEEP_UNUSED
    out = io.BytesIO()
    assert store.get(names[-1], out) is True
    assert out.getvalue() == (tmp_path / names[-1]).read_bytes()
    assert store.get(names[0], io.BytesIO()) is False


def test_section_starts_are_where_the_packed_sections_begin(tmp_path: Path) -> None:
    tables = [b"abc", b"", b"defgh"]
    path = tmp_path / "f.bin"
    path.write_bytes(_packed(tables))
    data = path.read_bytes()
    starts = cache.section_starts(path)
    assert [data[a : a + len(t)] for a, t in zip(starts, tables, strict=True)] == tables
    assert starts[-1] + len(tables[-1]) == len(data)
    path.write_bytes(b"not a packed file at all")
    assert cache.section_starts(path) == []
    path.write_bytes(b"kb-x\n" + b"\xff" * 8 + b"{}")  # a header longer than the file
    assert cache.section_starts(path) == []


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
    # host A published what it compiled: the matcher, and its shard on its own
    stored = MatcherBlob.objects.filter(name__startswith="matcher-")
    assert stored.count() == 1
    assert MatcherBlob.objects.filter(name__startswith="shard-").count() == 1
    fresh = _warm(tmp_path / "host-b")  # an empty cache directory: a new host
    assert "(loaded from store)" in fresh
    assert "matcher loaded from store" in fresh  # the log line operators look for
    assert [p.name for p in (tmp_path / "host-b").glob("matcher-*.bin")] == [stored.get().name]
    again = _warm(tmp_path / "host-b")
    assert "(loaded from local cache)" in again  # the directory stays a cache in front
    alone = _warm(tmp_path / "host-c", KB_MATCHER_STORE="none")
    assert "compiled 1 shards" in alone  # without the store, a new host compiles


def _many_records(n: int, start: int = 0) -> list[str]:
    """``n`` records with patterns of their own, made in that order (oldest first)."""
    return [
        make_record(
            errorMessage=f"Quokka pen {i} lost its {{}} keeper",
            messagePattern=f"Quokka pen {i} lost its (.+?) keeper",
        ).pk
        for i in range(start, start + n)
    ]


SHARDS = {"KB_MATCHER_SHARD_SIZE": "8"}  # several shards from a test's few records


@pytest.mark.django_db(transaction=True)
def test_a_host_with_other_records_fetches_the_shards_it_shares(tmp_path: Path) -> None:
    """Host A compiles and publishes every shard; records are added; host B, with an
    empty cache, finds no matcher of the new records in the store, fetches every shard
    it shares with A's build and compiles only those the new records are in, then
    publishes them, so a third host compiles nothing."""
    _many_records(60)
    first = _warm(tmp_path / "host-a", **SHARDS)
    shards = MatcherBlob.objects.filter(name__startswith="shard-")
    built = shards.count()
    assert built >= 4
    assert f"compiled {built} shards" in first
    _many_records(2, start=100)  # an import of a few newer records: they join the last shards
    host_b = _warm(tmp_path / "host-b", **SHARDS)
    assert "(loaded from store)" not in host_b
    compiled = int(host_b.split("compiled ", 1)[1].split(" ")[0])
    fetched = int(host_b.split(" fetched from store", 1)[0].rsplit(", ", 1)[1])
    assert 1 <= compiled <= 2
    assert fetched >= built - 2
    assert shards.count() == built + compiled  # B published what it compiled
    host_c = _warm(tmp_path / "host-c", **SHARDS)
    assert "(loaded from store)" in host_c


@pytest.mark.parametrize("damage", ["torn", "pickle"])
@pytest.mark.django_db(transaction=True)
def test_a_damaged_stored_shard_is_refused_and_compiled(
    tmp_path: Path, settings: object, damage: str
) -> None:
    """A stored shard whose bytes were changed (the MAC no longer fits), or replaced by a
    pickle under a valid MAC (whoever writes the table holds SECRET_KEY): refused with its
    log line, never loaded, the shard compiled instead (docs/reliability.md#r30)."""
    import pickle

    settings.SECRET_KEY = SECRET_KEY  # type: ignore[attr-defined]  # the hosts' deployment
    _many_records(40)
    _warm(tmp_path / "host-a", **SHARDS)
    _many_records(1, start=100)  # host B builds other records: it fetches shards, not the matcher
    victims = list(MatcherBlob.objects.filter(name__startswith="shard-"))
    assert len(victims) >= 4  # host A published its shards one by one
    marker = tmp_path / "pwned"
    for victim in victims:  # every stored shard: host B asks for all but the last
        if damage == "torn":
            MatcherBlobPart.objects.filter(digest__in=victim.parts).update(data=b"torn")
        else:
            evil = tmp_path / victim.name
            evil.write_bytes(pickle.dumps(_Payload(str(marker)), protocol=5))
            MatcherBlob.objects.filter(name=victim.name).delete()
            assert DatabaseStore().put(victim.name, evil)  # a valid MAC, bytes no host wrote
    out = _warm(tmp_path / "host-b", **SHARDS)
    assert not marker.exists()
    refused = [
        v.name
        for v in victims
        if f"stored matcher {v.name} is damaged" in out
        or f"cache file {tmp_path / 'host-b' / v.name} refused" in out
    ]
    assert len(refused) >= len(victims) - 1
    assert "fetched from store" not in out
    assert "(loaded from" not in out
    again = _warm(tmp_path / "host-b", **SHARDS)
    assert "(loaded from local cache)" in again  # the refused shards were compiled over


class _Payload:
    """Loading this pickle would run a command that leaves a marker file."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (f"touch {self.marker}",))


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
