"""Learning a source's releases: every release oldest to newest, each message's wordings,
places and commits across them (docs/learning-a-codebase.md, "Releases").

A git source's releases are its tags that match the source's pattern (``rel_*``, ``v*``),
named by the version each tag reads as (`kb.extract.versions.version_of`) and ordered by
`version_key`, from ``since`` on. The first release is read whole; each later one only
in the files git's diff (``--name-status -M``) says changed since the one before, with its
renames. After the newest release the walk reads the source's own revision (``HEAD`` by
default) the same way, as an unnamed last point: the dataset's snapshot of a repository
is usually newer than its last tag, and its wording is the current one.

A package-index source (``pypi:NAME``) takes the versions the index holds in a PEP 440
range (pre-releases only when the range names one, as pip does), downloads each release's
sdist (else its pure-Python wheel), and reads only the files whose bytes differ from the
release before (a file at a new path with the bytes of one gone is a rename).

`kb.extract.history.History` pairs the sites of each changed file with those before.
At the end every site is a record: one the newest point still has keeps the record that
its repository, file and template name (`kb.sources.learning._Known`: the dataset's
own included), a site removed before becomes a record of its own, its snippet and link
taken at the last release that had it, and all of them carry ``firstRelease``,
``lastRelease``, ``removedIn`` and ``releaseHistory`` through the importer (so a curator's
edits are kept).
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from kb.extract.extract import MAX_FILE_BYTES, NotText, extract_file
from kb.extract.files import language_of, skip_reason
from kb.extract.history import History, Seen, Tracked, Wording
from kb.extract.identity import site_key
from kb.extract.records import admissible, to_records
from kb.extract.versions import VersionError, version_key, version_of
from kb.records.importer import import_jsonl
from kb.records.models import ErrorRecord, Status
from kb.records.schema import record_to_dataset
from kb.sources.learning import (
    DATASET_VERSION,
    SITE_KEYS,
    SOURCE_KEYS,
    LearnResult,
    Progress,
    _chunks,
    _Found,
    _keep_sites,
    _Known,
    _line,
    _nth,
)  # fmt: skip
from kb.sources.models import Kind, LearnedSite, Source
from kb.sources.readers import FileEntry, SourceError, archives, git, index

__all__ = ["Release", "git_releases", "index_releases", "learn_releases"]

HISTORY_KEYS = ("firstRelease", "lastRelease", "removedIn", "releaseHistory")


@dataclass(frozen=True, slots=True)
class Release:
    """One release: its version, and what names it (a tag's commit, an index file)."""

    version: str
    ref: str  # the tag (git) or the file name (index)
    target: Any  # the commit id (git) or the index's entry of the file


def _separator(core: str) -> str:
    """``_`` for tags that write ``1_3_0``, else ``.``."""
    return "_" if "_" in core and "." not in core else "."


def git_releases(
    repository: git.GitRepository, pattern: str, since: str = "", separator: str = ""
) -> list[Release]:
    """The tags of ``repository`` that ``pattern`` names, as releases oldest first, from
    ``since`` (a version) on. Two tags of one version keep the first by name."""
    if "*" not in pattern:
        raise SourceError(f"{pattern!r}: a release pattern needs one '*' (such as rel_* or v*)")
    floor = _floor(since)
    found: dict[str, Release] = {}
    for tag, commit in sorted(repository.tags()):
        head, _, tail = pattern.partition("*")
        core = tag[len(head) : len(tag) - len(tail)] if len(tag) > len(head) + len(tail) else ""
        version = version_of(tag, pattern, separator or _separator(core))
        if version is None or (floor and version_key(version) < floor):
            continue
        found.setdefault(version, Release(version, tag, commit))
    return sorted(found.values(), key=lambda r: version_key(r.version))


def _floor(since: str) -> tuple[int, ...] | None:
    if not since:
        return None
    try:
        return version_key(since)
    except VersionError:
        raise SourceError(f"--since {since!r}: not a version") from None


def index_releases(name: str, spec: str, since: str = "") -> list[Release]:
    """The versions of ``name`` on the index within the PEP 440 range ``spec`` (and from
    ``since`` on), oldest first, each with the file to download."""
    text = ",".join(part for part in (spec.strip(), f">={since}" if since else "") if part)
    try:
        wanted = SpecifierSet(text)
    except InvalidSpecifier:
        raise SourceError(f"{spec!r}: not a version range (such as >=1.11,<2.1)") from None
    files = index.release_files(name, index_url=settings.KB_PACKAGE_INDEX_URL)
    # pre-releases only when the range names one (as pip reads a range)
    pre = bool(wanted.prereleases)
    keep = []
    for version, entry in files.items():
        try:
            if not wanted.contains(Version(version), prereleases=pre):
                continue
            key = version_key(version)
        except (InvalidVersion, VersionError):
            continue
        keep.append((key, Release(version, str(entry.get("filename", "")), entry)))
    return [release for _key, release in sorted(keep, key=lambda pair: pair[0])]


# reading one point ----------------------------------------------------------------------


@dataclass(slots=True)
class _Point:
    version: str | None
    revision: str  # what records' snippets and links are read at
    files: dict[str, list[Seen]]
    removed: list[str]
    renamed: dict[str, str]


class _Reader:
    """Reads the changed files of each point and extracts their sites."""

    def __init__(self, source: Source, result: LearnResult, progress: Progress | None) -> None:
        self.source, self.result, self.progress = source, result, progress

    def wanted(self, entries: list[FileEntry]) -> list[FileEntry]:
        out = []
        for entry in entries:
            if language_of(entry.path) is None:
                continue
            reason = skip_reason(entry.path, tests=self.source.include_tests)
            if reason is None and entry.size > MAX_FILE_BYTES:
                reason = f"larger than {MAX_FILE_BYTES} bytes"
            if reason:
                self.result.files_skipped += 1
                continue
            out.append(entry)
        return out

    def sites(
        self, chunks: Iterator[tuple[FileEntry, bytes]], *, revision: str, url: str | None,
        link: str | None,
    ) -> dict[str, list[Seen]]:  # fmt: skip
        files: dict[str, list[Seen]] = {}
        for entry, data in chunks:
            files[entry.path] = []
            try:
                if skip_reason(entry.path, data[:2048], tests=self.source.include_tests):
                    raise NotText("left out")
                found = [site for site in extract_file(entry.path, data) if admissible(site)]
            except NotText:
                self.result.files_skipped += 1
                continue
            except Exception as error:  # one file an extractor cannot read loses only it
                self.result.errors += 1
                self.result.note(entry.path, f"{type(error).__name__}: {error}")
                continue
            self.result.files_read += 1
            if not found:
                continue
            lines = data.decode("utf-8").split("\n")
            records = to_records(
                found, repo=self.source.repo, revision=revision, lines=lines, url=url, link=link
            )
            files[entry.path] = [Seen(s, r) for s, r in zip(found, records, strict=True)]
            self.result.sites += len(found)
        return files


def _git_points(
    source: Source,
    repository: git.GitRepository,
    url: str | None,
    releases: list[Release],
    reader: _Reader,
) -> Iterator[tuple[_Point, str]]:
    """Each release, then the source's own revision when it is past the newest one; with
    the commit of the point before (``""`` for the first)."""
    points: list[tuple[str | None, str]] = [(r.version, r.target) for r in releases]
    # The source's own revision is the last point when it is past the newest release (not
    # when it is that release or older: a walk never goes back).
    final = repository.resolve(source.revision or "HEAD")
    if not points or not repository.is_ancestor(final, points[-1][1]):
        points.append((None, final))
    previous = ""
    for version, commit in points:
        entries, missing = repository.files(commit)
        removed: list[str] = []
        renamed: dict[str, str] = {}
        if previous:
            changed, removed, renamed = repository.changes(previous, commit)
            entries = [entry for entry in entries if entry.path in changed]
            missing = [m for m in missing if m.path in changed]
        for refused in missing:
            reader.result.errors += 1
            reader.result.note(refused.path, f"refused: {refused.reason}")
        wanted = reader.wanted(entries)
        reader.result.files_total += len(wanted)
        files = reader.sites(repository.blobs(wanted), revision=commit, url=url, link=None)
        yield _Point(version, commit, files, removed, renamed), previous
        previous = commit


def _index_points(
    source: Source, name: str, releases: list[Release], reader: _Reader
) -> Iterator[tuple[_Point, str]]:
    """Each release downloaded in turn; only the files whose bytes changed are read."""
    max_bytes, max_files = settings.KB_ARCHIVE_MAX_BYTES, settings.KB_ARCHIVE_MAX_FILES
    hashes: dict[str, str] = {}  # path -> sha256 of the release before
    for release in releases:
        with tempfile.TemporaryDirectory(prefix="kb-release-") as folder:
            got = index.download_file(
                name, release.version, release.target, Path(folder), max_bytes=max_bytes
            )
            snapshot = archives.snapshot(
                got.path, max_bytes=max_bytes, max_files=max_files,
                revision=release.version, browse_url=got.browse_url,
            )  # fmt: skip
            wanted = reader.wanted(snapshot.files)
            now: dict[str, str] = {}
            data_of: dict[str, tuple[FileEntry, bytes]] = {}
            for entry, data in snapshot.read(wanted):
                now[entry.path] = hashlib.sha256(data).hexdigest()
                data_of[entry.path] = (entry, data)
        changed = [path for path, digest in now.items() if hashes.get(path) != digest]
        removed = [path for path in hashes if path not in now]
        gone_by_hash = {hashes[path]: path for path in removed}
        renamed = {
            path: gone_by_hash[now[path]]
            for path in changed
            if path not in hashes and now[path] in gone_by_hash
        }
        reader.result.files_total += len(changed)
        files = reader.sites(
            (data_of[path] for path in changed),
            revision=release.version,
            url=None,
            link=snapshot.link or None,
        )
        hashes = now
        yield _Point(release.version, release.version, files, removed, renamed), ""


# commits ---------------------------------------------------------------------------------


def _commits(
    repository: git.GitRepository,
    new: list[tuple[Tracked, Wording]],
    since: str,
    commit: str,
    url: str | None,
) -> None:
    """Set each new wording's ``introduced_by``: the newest commit after ``since`` that
    changed the lines of its site at ``commit`` (one blame per file)."""
    by_path: dict[str, list[tuple[Tracked, Wording]]] = {}
    for item, wording in new:
        by_path.setdefault(item.seen.site.path, []).append((item, wording))
    for path, items in by_path.items():
        ranges = [(i.seen.site.line, i.seen.site.end_line) for i, _w in items]
        lines, info = repository.blame(path, ranges, since, commit)
        for item, wording in items:
            site = item.seen.site
            shas = {lines[n] for n in range(site.line, max(site.line, site.end_line) + 1)
                    if n in lines}  # fmt: skip
            if not shas:
                continue
            sha = max(shas, key=lambda s: info[s][1])
            subject, stamp = info[sha]
            found = {
                "sha": sha,
                "subject": subject[:500],
                "date": datetime.fromtimestamp(stamp, UTC).isoformat().replace("+00:00", "Z"),
            }
            if url and url.startswith("https://github.com/"):
                found["url"] = f"{url}/commit/{sha}"
            wording.introduced_by = found


# the walk ---------------------------------------------------------------------------------


def learn_releases(source: Source, *, progress: Progress | None = None) -> LearnResult:
    """Learn every release of ``source`` (its ``releases`` pattern or range, from its
    ``since`` on); raises `SourceError` when the source or its releases cannot be read
    (nothing learned before is touched then)."""
    started = time.perf_counter()
    result = LearnResult(source=source.location, revision="")
    history = History()
    reader = _Reader(source, result, progress)
    repository: git.GitRepository | None = None
    url: str | None = None
    if source.kind == Kind.RELEASE:
        name = source.location.removeprefix("pypi:").partition("==")[0]
        releases = index_releases(name, source.releases, source.since)
        if not releases:
            raise SourceError(f"{source.location}: no release on the index in that range")
        points = _index_points(source, name, releases, reader)
    elif source.kind in {Kind.GIT, Kind.REMOTE}:
        if source.kind == Kind.REMOTE:
            git_dir = git.mirror_remote(source.location, Path(settings.KB_SOURCES_CACHE_DIR))
        else:
            git_dir = git.git_dir_of(Path(source.location))
        repository = git.GitRepository(git_dir)
        url = source.web_url.rstrip("/") or git.github_page(repository.origin()) or None
        releases = git_releases(
            repository, source.releases or "*", source.since, source.release_separator
        )
        if not releases:
            raise SourceError(f"{source.location}: no tag matches {source.releases!r}")
        points = _git_points(source, repository, url, releases, reader)
    else:
        raise SourceError(f"{source.location}: an archive has no releases to walk")
    result.releases = len(releases)
    for point, previous in points:
        new = history.step(point.version, point.files, point.removed, point.renamed)
        if repository is not None and previous:
            _commits(repository, new, previous, point.revision, url)
        result.revision = point.revision
        if progress:
            progress(result)
    _write(source, history, result)
    result.seconds = round(time.perf_counter() - started, 3)
    if progress:
        progress(result)
    return result


def _write(source: Source, history: History, result: LearnResult) -> None:
    """Every tracked site as an import line, then its learned-site row."""
    known = _Known(source)
    alive = [item for item in history.tracked if item.alive]
    removed = [item for item in history.tracked if not item.alive]
    keyed: list[tuple[str, Tracked]] = []
    alive_keys: set[str] = set()
    for group in (alive, removed):
        seen: dict[str, int] = {}
        for item in sorted(group, key=lambda t: (t.seen.site.path, t.seen.site.line)):
            record = item.seen.record
            key = site_key(source.repo, record["filePath"], record["errorMessage"])
            n = seen.get(key, 0)
            seen[key] = n + 1
            key = _nth(key, n)
            if group is alive:
                alive_keys.add(key)
            elif key in alive_keys:  # the same wording at the same place, alive again
                key = hashlib.sha256(f"{key}@{item.number}".encode()).hexdigest()[:32]
            keyed.append((key, item))
    found: list[_Found] = []
    used: set[str] = set()
    for key, item in keyed:
        record = dict(item.seen.record)
        record_id = known.get(key)
        if record_id is None or record_id in used:
            record_id = record["id"]
        if record_id in used:
            record_id = hashlib.sha256(f"{record_id}@{item.number}".encode()).hexdigest()[:32]
        used.add(record_id)
        record["id"] = record_id
        record.update(history.ranges(item))
        found.append(_Found(key, record, record["filePath"], record["lineNumber"] or 0))
    stored = {
        r.id: r
        for chunk in _chunks([f.record["id"] for f in found])
        for r in ErrorRecord.objects.filter(pk__in=chunk)
    }
    lines, as_stored = [], 0
    for entry in found:
        current = stored.get(entry.record["id"])
        if current is None:
            lines.append(_line(entry.record, DATASET_VERSION))
            continue
        merged = record_to_dataset(current)
        # A record whose place and history read as stored is left as it is (its link and
        # revision still show that code): counted unchanged, not written again.
        if all(merged.get(k) == entry.record.get(k) for k in (*SITE_KEYS, *HISTORY_KEYS)):
            as_stored += 1
            continue
        for key in (*SOURCE_KEYS, *HISTORY_KEYS):
            merged[key] = entry.record.get(key)
        lines.append(_line(merged, current.dataset_version))
    report = import_jsonl(
        lines,
        source=f"learn {source.location} releases {source.releases or '*'}",
        new_status=Status.PUBLISHED if source.publish else Status.DRAFT,
    )
    result.created, result.updated, result.unchanged = (
        report.created, report.updated, report.unchanged + as_stored,
    )  # fmt: skip
    result.conflicts, result.rejected = report.conflicts, report.rejected
    for error in report.errors:
        result.errors += 1
        result.note(f"record {error.line}", f"{error.field}: {error.message}")
    result.removed = len(removed)
    result.aliases = sum(len(item.wordings) - 1 for item in history.tracked)
    gone_keys = {key: item for key, item in keyed if not item.alive}
    with transaction.atomic():
        _keep_sites(source, found, result.revision)
        for key, item in gone_keys.items():
            since = history.versions[item.removed_at or 0] or result.revision
            LearnedSite.objects.filter(source=source, key=key).update(gone_since=since[:200])
        result.gone = len(gone_keys)
        Source.objects.filter(pk=source.pk).update(
            last_revision=result.revision[:200],
            last_learned_at=timezone.now(),
            state=Source.State.LEARNED,
            last_error="",
        )
    source.refresh_from_db()
