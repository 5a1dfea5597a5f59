"""Learning a source: read its files, find their error sites, write them as records.

One learn (`learn`) reads a `Snapshot` of the source (``readers``): every file the first
time, and after that only the files git says changed since the revision learned last.
Each file goes through ``kb.extract`` (``files.skip_reason``, then ``extract_file``); each
site becomes a record of the dataset's schema (``kb.extract.records.to_records``) and the records go
through the importer (``kb.records.importer.import_jsonl``), so a curator's edits are kept
and conflicts reported exactly as for an import, and new records are drafts when the
source says so.

A site that is already a record keeps that record: same repository, file and message
template (``kb.extract.identity.site_key``), looked up over the source's own sites and over every
record of the repository, the dataset's included, whose ids were made another way. Such a
record is written back with its own id, slug, write-up and pattern, and only its source
fields (file, line, snippet, link, revision) from the code. A site of a file read now and
not found in it again, or of a file that left the source, is marked ``gone_since`` the
revision read: its record stays and is still matched.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from kb.extract.extract import MAX_FILE_BYTES, NotText, extract_file
from kb.extract.files import language_of, skip_reason
from kb.extract.identity import site_key
from kb.extract.records import to_records
from kb.records.importer import import_jsonl
from kb.records.models import ErrorRecord, Status, next_revision
from kb.records.schema import BY_KEY, record_to_dataset, to_dataset_value
from kb.sources.models import Kind, LearnedSite, Source
from kb.sources.readers import FileEntry, Snapshot, SourceError, archives, git, index

__all__ = ["LearnResult", "SourceError", "learn", "open_snapshot"]

#: Files read between two progress reports (and heartbeats).
PROGRESS_EVERY = 200
#: Per-file problems listed in a job's report (the rest are only counted).
MAX_LISTED = 200
#: The dataset keys a learn writes onto a record it already has: where the site is (the
#: time of reading last).
SOURCE_KEYS = (
    "filePath", "lineNumber", "sourceCode", "sourceCodeStart", "sourceCodeEnd",
    "githubUrl", "analyzedSha", "analyzedAt",
)  # fmt: skip
#: Of those, the ones that say the site moved or changed. A site whose file changed
#: elsewhere reads the same at its line: its record keeps the link and revision it has,
#: which still show that code, and is not written again.
SITE_KEYS = SOURCE_KEYS[:5]
DATASET_VERSION = "learned"
#: Ids or paths per ``IN (...)`` query (SQLite's parameter limit, with room to spare).
CHUNK = 900


@dataclass(slots=True)
class LearnResult:
    """What one learn did: the contract's ``--json`` counts, and the details for its job."""

    source: str
    revision: str
    since: str = ""
    releases: int = 1  # releases walked (one: a single revision)
    aliases: int = 0  # older wordings recorded beside the current ones
    removed: int = 0  # sites removed before the newest point, kept as records
    files_total: int = 0
    files_read: int = 0
    files_skipped: int = 0
    sites: int = 0
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    gone: int = 0
    errors: int = 0
    conflicts: int = 0
    rejected: int = 0
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> files
    problems: list[dict[str, str]] = field(default_factory=list)  # path, reason
    seconds: float = 0.0

    def contract_json(self) -> dict[str, Any]:
        """``manage.py learn --json``'s object, keys in the contract's order."""
        return {
            "source": self.source,
            "revision": self.revision,
            "releases": self.releases,
            "files_read": self.files_read,
            "sites": self.sites,
            "created": self.created,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "gone": self.gone,
            "seconds": self.seconds,
        }

    def as_json(self) -> dict[str, Any]:
        return asdict(self)

    def note(self, path: str, reason: str) -> None:
        if len(self.problems) < MAX_LISTED:
            self.problems.append({"path": path, "reason": reason})


Progress = Callable[[LearnResult], None]


def open_snapshot(source: Source, revision: str | None, stack: ExitStack) -> Snapshot:
    """The files of ``source`` to read at ``revision`` (the source's own by default), only
    those changed since its last learned revision where git can tell."""
    location = source.location
    rev = revision or source.revision or "HEAD"
    max_bytes, max_files = settings.KB_ARCHIVE_MAX_BYTES, settings.KB_ARCHIVE_MAX_FILES
    if source.kind in {Kind.GIT, Kind.REMOTE}:
        if source.kind == Kind.REMOTE:
            git_dir = git.mirror_remote(location, Path(settings.KB_SOURCES_CACHE_DIR))
        else:
            git_dir = git.git_dir_of(Path(location))
        repository = git.GitRepository(git_dir)
        return git.snapshot(repository, rev, source.last_revision or None)
    if source.kind == Kind.ARCHIVE:
        return archives.snapshot(Path(location), max_bytes=max_bytes, max_files=max_files)
    name, version = index.parse_spec(location)
    target = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="kb-release-")))
    release = index.download_release(
        name,
        version,
        target,
        index_url=settings.KB_PACKAGE_INDEX_URL,
        max_bytes=settings.KB_ARCHIVE_MAX_BYTES,
    )
    return archives.snapshot(
        release.path,
        max_bytes=max_bytes,
        max_files=max_files,
        revision=version,
        browse_url=release.browse_url,
    )


def _candidates(snapshot: Snapshot, source: Source, result: LearnResult) -> list[FileEntry]:
    """The files worth reading: a language an extractor reads, not left out by path, not
    past the size limit (skipped and counted without reading them)."""
    wanted = []
    for entry in snapshot.files:
        if language_of(entry.path) is None:
            continue
        reason = skip_reason(entry.path, tests=source.include_tests)
        if reason is None and entry.size > MAX_FILE_BYTES:
            reason = f"larger than {MAX_FILE_BYTES} bytes"  # as extract_file says it
        if reason:
            result.skipped[reason] = result.skipped.get(reason, 0) + 1
            result.files_skipped += 1
            continue
        wanted.append(entry)
    return wanted


@dataclass(slots=True)
class _Found:
    key: str
    record: dict[str, Any]
    path: str
    line: int
    moved_from: str = ""  # the key the site had under its file's old name (a rename)


class _Known:
    """Which record each site key already is: the source's own sites first, then every
    record of the repository (the dataset's included), keyed the same way."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.by_key: dict[str, str] = {}
        rows = (
            ErrorRecord.objects.filter(repo=source.repo)
            .order_by("file_path", "line_number", "id")
            .values_list("id", "file_path", "error_message")
        )
        seen: dict[str, int] = {}
        for record_id, path, message in rows:
            key = site_key(source.repo, path, message)
            n = seen.get(key, 0)
            seen[key] = n + 1
            self.by_key[_nth(key, n)] = record_id
        for key, record_id in LearnedSite.objects.filter(source=source).values_list(
            "key", "record_id"
        ):
            self.by_key[key] = record_id

    def get(self, key: str) -> str | None:
        return self.by_key.get(key)


def _sites(
    snapshot: Snapshot,
    files: list[FileEntry],
    source: Source,
    result: LearnResult,
    progress: Progress | None,
) -> Iterator[_Found]:
    """Every site of ``files`` as a record (in the source's order), counting as it goes."""
    # The source's own web page, else its GitHub origin remote's; a local repository with
    # neither gives records no link.
    url = source.web_url.rstrip("/") or snapshot.web_url or None
    link = snapshot.link or None  # a release's files, read on the index's own browser
    for number, (entry, data) in enumerate(snapshot.read(files), 1):
        reason = skip_reason(entry.path, data[:2048], tests=source.include_tests)
        try:
            if reason:
                raise NotText(reason)
            found = extract_file(entry.path, data)
        except NotText as skipped:
            result.files_skipped += 1
            kind = str(skipped).split(" (")[0]  # "not UTF-8 (byte 7)": counted as "not UTF-8"
            result.skipped[kind] = result.skipped.get(kind, 0) + 1
            result.note(entry.path, str(skipped))
            found = []
        except Exception as error:  # one file an extractor cannot read loses only that file
            result.errors += 1
            result.note(entry.path, f"{type(error).__name__}: {error}")
            found = []
        else:
            result.files_read += 1
        if found:
            result.sites += len(found)
            # split("\n"), not splitlines(): line numbers count newlines only, as the
            # extractors' and the dataset's do (a form feed is no line break there)
            lines = data.decode("utf-8").split("\n")
            records = to_records(
                found,
                repo=source.repo,
                revision=snapshot.revision,
                lines=lines,
                url=url,
                link=link,
            )
            yield from _keyed(source.repo, records)
        if progress and number % PROGRESS_EVERY == 0:
            progress(result)


def _keyed(repo: str, records: list[dict[str, Any]]) -> Iterator[_Found]:
    """One file's records with their site keys: the same message in one file a second
    time is a site of its own, keyed ``KEY#1`` (then ``#2``...) in line order, as
    `_Known` keys the stored records."""
    seen: dict[str, int] = {}
    for record in records:
        key = site_key(repo, record["filePath"], record["errorMessage"])
        n = seen.get(key, 0)
        seen[key] = n + 1
        yield _Found(_nth(key, n), record, record["filePath"], record["lineNumber"] or 0)


def _nth(key: str, n: int) -> str:
    return f"{key}#{n}" if n else key


def _chunks[T](items: Iterable[T]) -> Iterator[list[T]]:
    """``items`` in lists short enough for one ``IN (...)`` on every backend."""
    items = list(items)
    for start in range(0, len(items), CHUNK):
        yield items[start : start + CHUNK]


def _line(record: dict[str, Any], version: str) -> bytes:
    return json.dumps({"record": record, "datasetVersion": version}).encode() + b"\n"


def _merged(
    found: list[_Found], known: _Known, renamed: dict[str, str], repo: str
) -> tuple[list[bytes], int]:
    """The import lines: a new site's record as built, a known one's stored record with
    its source fields from the code when its site moved or changed; and how many known
    sites are as stored (left out of the import)."""
    for item in found:
        record_id = known.get(item.key)
        if record_id is None and item.path in renamed:  # a file moved: same site, old path
            template = item.record.get("errorMessage", "")
            _key, _hash, n = item.key.partition("#")
            old_key = _nth(site_key(repo, renamed[item.path], template), int(n or 0))
            record_id = known.get(old_key)
            if record_id is not None:
                item.moved_from = old_key
        if record_id is not None:
            item.record["id"] = record_id
    # Where each known site is stored, read alone: a site that reads as stored leaves its
    # record as it is (counted unchanged), and only the records whose site moved or
    # changed are loaded whole (most of a relearn's, or of a learn of a repository the
    # dataset already holds, are as stored).
    fields = [BY_KEY[k] for k in SITE_KEYS]
    sites = {
        row[0]: {f.key: to_dataset_value(f, v) for f, v in zip(fields, row[1:], strict=True)}
        for chunk in _chunks({item.record["id"] for item in found})
        for row in ErrorRecord.objects.filter(pk__in=chunk).values_list(
            "id", *(f.attr for f in fields)
        )
    }
    moved = [
        item
        for item in found
        if (site := sites.get(item.record["id"])) is not None
        and any(site[k] != item.record[k] for k in SITE_KEYS if k in item.record)
    ]
    stored = {
        r.id: r
        for chunk in _chunks({item.record["id"] for item in moved})
        for r in ErrorRecord.objects.filter(pk__in=chunk)
    }
    lines, unchanged = [], 0
    for item in found:
        if item.record["id"] not in sites:
            lines.append(_line(item.record, DATASET_VERSION))
            continue
        current = stored.get(item.record["id"])
        if current is None:  # as stored
            unchanged += 1
            continue
        merged = record_to_dataset(current)
        for key in SOURCE_KEYS:
            if key in item.record:
                merged[key] = item.record[key]
        lines.append(_line(merged, current.dataset_version))
    return lines, unchanged


def _keep_sites(source: Source, found: list[_Found], revision: str) -> None:
    """Point each site at its record (rows of records the importer refused are left
    out), found at ``revision`` and no longer gone."""
    ids = {item.record["id"] for item in found}
    present = {
        pk
        for chunk in _chunks(ids)
        for pk in ErrorRecord.objects.filter(pk__in=chunk).values_list("id", flat=True)
    }
    keys = [item.key for item in found] + [item.moved_from for item in found if item.moved_from]
    rows = {
        row.key: row
        for chunk in _chunks(keys)
        for row in LearnedSite.objects.filter(source=source, key__in=chunk)
    }
    new, changed = [], []
    for item in found:
        if item.record["id"] not in present:
            continue
        row = rows.get(item.key)
        if row is None and item.moved_from in rows:  # its file was renamed: the row moves
            row = rows.pop(item.moved_from)
            row.key = item.key
        if row is None:
            new.append(
                LearnedSite(
                    source=source,
                    key=item.key,
                    record_id=item.record["id"],
                    path=item.path,
                    line=item.line,
                    revision=revision,
                )
            )
            continue
        now = (row.key, item.record["id"], item.path, item.line, revision, "")
        if (row.key, row.record_id, row.path, row.line, row.revision, row.gone_since) != now:
            row.key, row.record_id, row.path, row.line, row.revision, row.gone_since = now
            changed.append(row)
    # The rows that changed are written again whole, keeping their ids: ``bulk_update``
    # builds a CASE per field and row, which for the thousands of sites of a relearn cost
    # more than the rest of the learn; and one prepared INSERT run over every row, not
    # ``bulk_create``, whose SQL for a thousand rows at a time costs more to build than to run.
    for chunk in _chunks([row.pk for row in changed]):
        LearnedSite.objects.filter(pk__in=chunk).delete()
    _insert_sites(new, with_ids=False)
    _insert_sites(changed, with_ids=True)


def _insert_sites(rows: list[LearnedSite], *, with_ids: bool) -> None:
    """``rows`` inserted as they are (their ids too when ``with_ids``)."""
    if not rows:
        return
    fields = [f for f in LearnedSite._meta.concrete_fields if with_ids or not f.primary_key]
    quote = connection.ops.quote_name
    sql = "INSERT INTO {} ({}) VALUES ({})".format(
        quote(LearnedSite._meta.db_table),
        ", ".join(quote(str(f.column)) for f in fields),  # a concrete field has one
        ", ".join(["%s"] * len(fields)),
    )
    params = [
        [f.get_db_prep_save(getattr(row, f.attname), connection) for f in fields] for row in rows
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, params)


def _mark_gone(
    source: Source, snapshot: Snapshot, read: list[FileEntry], found: list[_Found]
) -> int:
    """Mark gone the sites of the files read (or removed) that were not found again;
    returns how many."""
    seen = {item.key for item in found}
    still = LearnedSite.objects.filter(source=source, gone_since="")
    if snapshot.partial:
        paths = {entry.path for entry in read} | set(snapshot.removed)
        rows = [
            row
            for chunk in _chunks(paths)
            for row in still.filter(path__in=chunk).values_list("pk", "key")
        ]
    else:
        rows = list(still.values_list("pk", "key"))
    gone = [pk for pk, key in rows if key not in seen]
    for chunk in _chunks(gone):
        LearnedSite.objects.filter(pk__in=chunk).update(gone_since=snapshot.revision)
    if gone:
        next_revision()  # the record pages cached per data revision say so now
    return len(gone)


def learn(
    source: Source, *, revision: str | None = None, progress: Progress | None = None
) -> LearnResult:
    """Learn ``source`` at ``revision``; raises `SourceError` with the reason when it cannot
    be read (nothing learned before is touched then)."""
    started = time.perf_counter()
    with ExitStack() as stack:
        snapshot = open_snapshot(source, revision, stack)
        since = source.last_revision if snapshot.partial else ""
        result = LearnResult(source=source.location, revision=snapshot.revision, since=since)
        for refused in snapshot.refused:
            result.errors += 1
            result.note(refused.path, f"refused: {refused.reason}")
        files = _candidates(snapshot, source, result)
        result.files_total = len(files)
        if progress:
            progress(result)
        known = _Known(source)
        found: list[_Found] = []
        keys: set[str] = set()
        for item in _sites(snapshot, files, source, result, progress):
            if item.key not in keys:  # the same message twice in a file: one site
                keys.add(item.key)
                found.append(item)
    lines, as_stored = _merged(found, known, snapshot.renamed, source.repo)
    report = import_jsonl(
        lines,
        source=f"learn {source.location}@{snapshot.revision}",
        new_status=Status.PUBLISHED if source.publish else Status.DRAFT,
    )
    result.created, result.updated, result.unchanged = (
        report.created,
        report.updated,
        report.unchanged + as_stored,
    )
    result.conflicts, result.rejected = report.conflicts, report.rejected
    for error in report.errors:
        result.errors += 1
        result.note(f"record {error.line}", f"{error.field}: {error.message}")
    with transaction.atomic():
        _keep_sites(source, found, snapshot.revision)
        result.gone = _mark_gone(source, snapshot, files, found)
        Source.objects.filter(pk=source.pk).update(
            last_revision=snapshot.revision,
            last_learned_at=timezone.now(),
            state=Source.State.LEARNED,
            last_error="",
        )
    source.refresh_from_db()
    result.seconds = round(time.perf_counter() - started, 3)
    if progress:
        progress(result)
    return result
