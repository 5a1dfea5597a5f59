"""A record's releases as the pages show them, and the browse filter by release.

Two reads of the release fields a learn writes (``first_release``, ``last_release``,
``removed_in``, ``release_history``: their shape in ``kb.records.schema``):

- `record_releases`: what the record page, its JSON twin and the admin show of one
  record: its release range, each wording with its range (the current one marked, an
  older one with its word diff against the current), the commit that added the message
  and the one that last changed it (with a link when the record's source is on a known
  host), and where the site was, range by range. Built from the record's own columns: no
  query, and ``None`` for a record without history (most of them), so their pages are
  what they were.
- `release_scope` and `in_release`: "errors that exist in 1.4.x" on the lists. A
  repository's release names are the distinct ``first_release``/``last_release`` values of
  its records (read off ``kb_record_release``, cached per revision); a chosen release, or
  a series of them, keeps the records whose range reaches it. Ranges are compared by
  version order (`kb.extract.versions.version_key`), which SQL does not know, so the
  comparison is made on the names in Python and handed to the database as lists of
  names on the indexed columns: ``first_release IN (names up to the last release asked)
  AND last_release NOT IN (names before the first release asked)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import QuerySet

from kb.engine.worddiff import Segment, WordDiff, word_diff
from kb.extract.versions import VersionError, sorted_versions, version_key
from kb.records.links import commit_url
from kb.records.models import ErrorRecord

__all__ = [
    "Commit",
    "Location",
    "RecordReleases",
    "ReleaseError",
    "ReleaseScope",
    "Wording",
    "alias_patterns",
    "in_release",
    "record_releases",
    "release_scope",
    "series",
    "span",
    "stored_release_names",
    "wording_diff",
]

#: Locations listed before the rest fold under "show all" (a long-lived site moves often).
LOCATIONS_SHOWN = 5
#: Earlier locations a page lists at most (the newest of them): a history may hold
#: thousands, which the JSON twin carries whole.
LOCATIONS_FOLDED = 200
#: Characters of a release asked for that are echoed back in an error.
_ECHO = 60
_SERIES_SUFFIX = re.compile(r"\.(?:x|\*)$", re.IGNORECASE)


def span(first: str | None, last: str | None) -> str:
    """``"1.3.0\u20132.0.1"`` (an en dash between), or one name when both ends are the
    same release."""
    if first and last and first != last:
        return f"{first}\u2013{last}"
    return first or last or ""


# --- one record's history --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Commit:
    sha: str
    subject: str
    date: str  # ISO 8601 as the history has it
    day: str  # its date part (year, month, day): what a page shows
    url: str  # "" when no safe link can be made

    @property
    def short(self) -> str:
        return self.sha[:12]

    def as_json(self) -> dict[str, str | None]:
        return {
            "sha": self.sha,
            "subject": self.subject,
            "date": self.date,
            "url": self.url or None,
        }


@dataclass(frozen=True, slots=True)
class Wording:
    message: str
    pattern: str
    first_release: str
    last_release: str
    current: bool  # the record's own pattern
    retired: bool  # a curator retired it: no longer matched
    diff: WordDiff | None  # an older wording against the current one
    introduced_by: Commit | None
    last_changed_by: Commit | None

    @property
    def span(self) -> str:
        return span(self.first_release, self.last_release)

    def as_json(self) -> dict[str, Any]:
        return {
            "message": self.message,
            "pattern": self.pattern,
            "first_release": self.first_release or None,
            "last_release": self.last_release or None,
            "current": self.current,
            "retired": self.retired,
            "diff": _diff_json(self.diff) if self.diff else None,
            "introduced_by": self.introduced_by.as_json() if self.introduced_by else None,
            "last_changed_by": self.last_changed_by.as_json() if self.last_changed_by else None,
        }


def _diff_json(diff: WordDiff) -> dict[str, Any]:
    """A wording's diff in JSON: `WordDiff.as_json`'s shape, its changes named for what
    they are here (the older wording's words, the current one's), not a paste's."""
    return {
        **diff.as_json(),
        "changes": [{"older": old, "current": new} for old, new in diff.changes],
    }


@dataclass(frozen=True, slots=True)
class Location:
    path: str
    line: int
    first_release: str
    last_release: str

    @property
    def span(self) -> str:
        return span(self.first_release, self.last_release)

    def as_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line": self.line,
            "first_release": self.first_release or None,
            "last_release": self.last_release or None,
        }


@dataclass(frozen=True, slots=True)
class RecordReleases:
    """What is known of a record across its source's releases."""

    first_release: str
    last_release: str
    removed_in: str
    introduced_by: Commit | None
    last_changed_by: Commit | None
    wordings: tuple[Wording, ...]
    locations: tuple[Location, ...]

    @property
    def span(self) -> str:
        """The release range; ``"<range>, removed in 2.0.0"`` for a site gone."""
        text = span(self.first_release, self.last_release)
        if self.removed_in:
            text = (
                f"{text}, removed in {self.removed_in}" if text else f"removed in {self.removed_in}"
            )
        return text

    @property
    def sentence(self) -> str:
        """What the page says: "In releases <range>", "Removed in 2.0.0" when only
        that is known, "" when only the history is."""
        if self.first_release or self.last_release:
            return f"In releases {self.span}"
        return f"Removed in {self.removed_in}" if self.removed_in else ""

    @property
    def older_wordings(self) -> bool:
        return any(not w.current for w in self.wordings)

    @property
    def locations_shown(self) -> tuple[Location, ...]:
        return self.locations[-LOCATIONS_SHOWN:]  # the newest ranges: where it is now

    @property
    def locations_earlier(self) -> int:
        """How many locations come before the ones shown."""
        return max(len(self.locations) - LOCATIONS_SHOWN, 0)

    @property
    def locations_folded(self) -> tuple[Location, ...]:
        earlier = self.locations_earlier
        return self.locations[max(earlier - LOCATIONS_FOLDED, 0) : earlier]

    def as_json(self) -> dict[str, Any]:
        return {
            "span": self.span,
            "sentence": self.sentence,
            "first_release": self.first_release or None,
            "last_release": self.last_release or None,
            "removed_in": self.removed_in or None,
            "introduced_by": self.introduced_by.as_json() if self.introduced_by else None,
            "last_changed_by": self.last_changed_by.as_json() if self.last_changed_by else None,
            "wordings": [w.as_json() for w in self.wordings],
            "locations": [loc.as_json() for loc in self.locations],
        }


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _day(value: str) -> str:
    try:
        return datetime.fromisoformat(value).date().isoformat()
    except ValueError:
        return value[:10]  # shown as given (escaped by the template), never a failure


def _commit(value: Any, source_url: str | None) -> Commit | None:
    """A history's commit object as shown; ``None`` for a missing or malformed one (the
    schema checks imports, but a page never fails on a row written another way)."""
    if not isinstance(value, dict) or not _text(value.get("sha")):
        return None
    sha, date = _text(value["sha"]), _text(value.get("date"))
    return Commit(
        sha=sha,
        subject=_text(value.get("subject")),
        date=date,
        day=_day(date),
        url=commit_url(sha, given=_text(value.get("url")), source_url=source_url),
    )


_EDGE = "\x02"  # a word no message has, put at both ends of both messages


def wording_diff(older: str, current: str) -> WordDiff | None:
    """The words an older wording has where the current one has others ("for → when";
    ``del`` runs are the older words, ``ins`` the current ones); ``None`` when only
    placeholders differ.

    `word_diff` aligns a template with a pasted log line, whose words before and after the
    message are the log's envelope and are dropped; between two wordings every word
    counts, so both are framed by the same edge word, which aligns and is taken out after.
    """
    found = word_diff(f"{_EDGE} {older} {_EDGE}", f"{_EDGE} {current} {_EDGE}")
    if found is None:
        return None
    segments = []
    for seg in found.segments:
        text = " ".join(w for w in seg.text.split(" ") if w != _EDGE)
        if text:
            segments.append(Segment(seg.op, text))
    return WordDiff(found.summary, found.changes, tuple(segments))


def record_releases(record: ErrorRecord) -> RecordReleases | None:
    """``record``'s releases, or ``None`` when it has none (never learned from releases)."""
    history = record.release_history if isinstance(record.release_history, dict) else {}
    if not (record.first_release or record.last_release or record.removed_in or history):
        return None
    source = record.github_url
    retired = set(record.retired_wordings or [])
    raw = [w for w in history.get("wordings") or [] if isinstance(w, dict)]
    current_message = next(
        (_text(w.get("message")) for w in raw if w.get("pattern") == record.message_pattern),
        record.error_message,
    )
    wordings = []
    for item in raw:
        pattern, message = _text(item.get("pattern")), _text(item.get("message"))
        current = pattern == record.message_pattern
        wordings.append(
            Wording(
                message=message,
                pattern=pattern,
                first_release=_text(item.get("firstRelease")),
                last_release=_text(item.get("lastRelease")),
                current=current,
                retired=not current and pattern in retired,
                # the older wording's words against today's: "rfc1738 → SQLAlchemy"
                diff=None if current else wording_diff(message, current_message),
                introduced_by=_commit(item.get("introducedBy"), source),
                last_changed_by=_commit(item.get("lastChangedBy"), source),
            )
        )
    locations = [
        Location(
            path=_text(item.get("path")),
            line=item["line"] if isinstance(item.get("line"), int) else 0,
            first_release=_text(item.get("firstRelease")),
            last_release=_text(item.get("lastRelease")),
        )
        for item in history.get("locations") or []
        if isinstance(item, dict)
    ]
    return RecordReleases(
        first_release=record.first_release or "",
        last_release=record.last_release or "",
        removed_in=record.removed_in or "",
        introduced_by=_commit(history.get("introducedBy"), source),
        last_changed_by=_commit(history.get("lastChangedBy"), source),
        wordings=tuple(wordings),
        locations=tuple(locations),
    )


def alias_patterns(record: ErrorRecord) -> list[str]:
    """The patterns of ``record``'s older wordings (its aliases), oldest first, each once:
    what a curator may retire."""
    history = record.release_history if isinstance(record.release_history, dict) else {}
    out: list[str] = []
    for item in history.get("wordings") or []:
        pattern = _text(item.get("pattern")) if isinstance(item, dict) else ""
        if pattern and pattern != record.message_pattern and pattern not in out:
            out.append(pattern)
    return out


# --- the filter by release -------------------------------------------------------------


class ReleaseError(ValueError):
    """A release asked for that the repository does not have, said in words for the page."""


@dataclass(frozen=True, slots=True)
class ReleaseScope:
    """The releases a filter asks for, and the names that bound the records it keeps."""

    repo: str
    asked: str
    label: str  # "1.4.0" or "1.4.x"
    releases: tuple[str, ...]  # the repository's releases asked for, oldest first
    starts: tuple[str, ...]  # first_release values at or before the last release asked
    ended: tuple[str, ...]  # last_release values before the first release asked


def stored_release_names(repo: str) -> list[str]:
    """The release names ``repo``'s records carry, oldest first (names that do not read as
    versions left out): the distinct pairs of ``kb_record_release``, read off the index.
    ``kb.browse.selectors.release_names`` caches it per revision."""
    if not repo or "\x00" in repo:
        return []
    pairs = (
        ErrorRecord.objects.filter(repo=repo, first_release__isnull=False)
        .order_by()
        .values_list("first_release", "last_release")
        .distinct()
    )
    return sorted_versions({name for pair in pairs for name in pair if name})


def series(names: list[str]) -> list[str]:
    """The ``major.minor`` series the names fall into, oldest first (``"1.4"`` for
    ``1.4.0``... ``1.4.52``): what the filter offers beside each release."""
    out: list[str] = []
    for name in names:
        parts = re.match(r"v?(\d+)\.(\d+)", name)
        if parts:
            head = f"{parts[1]}.{parts[2]}"
            if head not in out:
                out.append(head)
    return out


def _in_series(name: str, head: str) -> bool:
    bare = name[1:] if name[:1] in "vV" and name[1:2].isdigit() else name
    return bare == head or (bare.startswith(head) and not bare[len(head)].isdigit())


def release_scope(repo: str, asked: str, names: list[str]) -> ReleaseScope:
    """What ``asked`` (a release of ``repo``, or a series: ``1.4``, ``1.4.x``) covers among
    ``names`` (the repository's release names, oldest first); raises `ReleaseError`,
    saying why, for anything else."""
    asked = asked.strip()
    shown = "".join(ch if ch.isprintable() else "\ufffd" for ch in asked[:_ECHO])
    if not repo:
        raise ReleaseError("Choose a repository first: release names are each repository's own.")
    if not names:
        raise ReleaseError(f"No record of {repo[:200]} says which releases have it.")
    try:
        if not asked.isprintable():
            raise VersionError(shown)
        version_key(_SERIES_SUFFIX.sub("", asked))
    except VersionError:
        raise ReleaseError(f"“{shown}” is not a release name (such as {names[-1]}).") from None
    if asked in names and not _SERIES_SUFFIX.search(asked):
        chosen, label = [asked], asked
    else:
        head = _SERIES_SUFFIX.sub("", asked)
        chosen, label = [n for n in names if _in_series(n, head)], f"{head}.x"
    if not chosen:
        raise ReleaseError(
            f"{repo[:200]} has no release {shown} among its records "
            f"(they run {span(names[0], names[-1])})."
        )
    lo, hi = version_key(chosen[0]), version_key(chosen[-1])
    return ReleaseScope(
        repo=repo,
        asked=asked,
        label=label,
        releases=tuple(chosen),
        starts=tuple(n for n in names if version_key(n) <= hi),
        ended=tuple(n for n in names if version_key(n) < lo),
    )


def in_release(queryset: QuerySet[ErrorRecord], scope: ReleaseScope) -> QuerySet[ErrorRecord]:
    """The records of ``queryset`` whose release range reaches ``scope`` (records without
    a range have none, and are left out).

    The ids in the release come from ``kb_record_release``, as a subquery: one seek per
    name of ``starts``, the last release tested in the index entries it reaches (``NOT IN``
    the names before the release: two ``IN`` lists would be a seek per pair of names,
    hundreds of thousands for a source with a thousand releases). The list then walks its
    own covering index (``kb_record_listing``: status, repository, list order) testing
    each id against them. With the name lists on the outer query instead, SQLite walks the
    list index and reads every row of the repository to compare its release columns,
    which a record's large text columns make costly.
    """
    ids = ErrorRecord.objects.filter(repo=scope.repo, first_release__in=scope.starts)
    if scope.ended:
        ids = ids.exclude(last_release__in=scope.ended)
    return queryset.filter(repo=scope.repo, pk__in=ids.order_by().values("pk"))
