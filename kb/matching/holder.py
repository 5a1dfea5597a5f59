"""Django's side of matching: keep a compiled matcher per process, in step with the records.

The matcher (``kb.engine``) is pure Python and knows nothing of the database. This module
builds it from the active records, shares compiled databases between processes through
the on-disk cache (``KB_MATCHER_CACHE_DIR``) and between hosts through the store in front
of it (``KB_MATCHER_STORE``, ``kb.matching.store``: a host whose cache lacks the matcher
fetches it instead of compiling, and one that compiled publishes it), and notices changes
cheaply: at most every ``KB_MATCHER_REFRESH_SECONDS`` it reads the revision counter; when
records changed it folds just those into the running matcher (``with_changes``) instead of
recompiling everything.
Views, the API and the ``match`` command all call ``match_text``.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from itertools import chain
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import DatabaseError, transaction

from kb.engine import Matcher, MatchReport, PatternSpec, cache
from kb.engine.evidence import RecordFacts, repo_name
from kb.engine.logstream import (
    WHOLE_LOG_CHARS,
    Excerpt,
    is_whole_log,
    match_excerpt,
    read_excerpt,
)
from kb.engine.matcher import gc_paused
from kb.engine.releases import Location, ReleaseFacts
from kb.engine.textmap import Text
from kb.engine.types import ReleaseFit, Wording
from kb.engine.worddiff import WordDiff
from kb.extract.versions import version_key
from kb.matching.store import matcher_store
from kb.ops.metrics import timed_build, timed_match
from kb.records.models import ErrorRecord, current_revision

log = logging.getLogger(__name__)

# Past this many records changed since the last full build, rebuild (from the cache).
DELTA_LIMIT = 5000
# A change of at least this many records at once is a bulk write (an import), whose writer
# builds and publishes the whole matcher before it finishes (kb.curation.tasks): the
# process loads that build when the store or its cache has it, instead of compiling the
# changed patterns itself on somebody's page request. Fewer (a curator's edits) fold in
# faster than a whole matcher loads.
BULK_CHANGE = 64
# Records kept loaded for showing results (per process); past it, start afresh.
SHOWN_LIMIT = 4096


@dataclass(slots=True)
class MatchView:
    """A match with its record loaded, ready for templates and JSON."""

    record: ErrorRecord
    line: int
    span: tuple[int, int]
    text: str
    captures: list[str]
    score: float
    reason: str
    literal_chars: int = 0
    coverage: float = 0.0
    same_message: list[ErrorRecord] = field(default_factory=list)
    kind: str = "exact"
    evidence: tuple[str, ...] = ()  # what in the paste says this record raised it
    diff: WordDiff | None = None  # the paste's words against the record's message
    alternative_of: ErrorRecord | None = None  # the better match that read the same text
    wording: Wording | None = None  # the older wording the paste has; None: the current one
    fit: ReleaseFit | None = None  # the releases the paste's own text places it in

    @property
    def partial(self) -> bool:
        return self.kind != "exact"

    @property
    def since(self) -> str:
        """The first release of the record's current wording ("" when unknown)."""
        return current_since(self.record)

    def wording_json(self) -> dict[str, str] | None:
        """``"wording"`` of the match's JSON (the contract's shape, and the old message)."""
        w = self.wording
        if w is None:
            return None
        return {
            "first_release": w.first_release,
            "last_release": w.last_release,
            "current_message": self.record.error_message,
            "message": w.message,
            "since": self.since,
        }


def current_since(record: ErrorRecord) -> str:
    """The first release of ``record``'s current wording, from its history ("" if none)."""
    history = record.release_history
    wordings = history.get("wordings") if isinstance(history, dict) else None
    for w in wordings or ():
        if isinstance(w, dict) and w.get("pattern") == record.message_pattern:
            return str(w.get("firstRelease") or "")
    return ""


@dataclass(slots=True)
class AlternativeView:
    """Another record read on the same text as a card's match, and why it lost."""

    record: ErrorRecord
    why: str


@dataclass(slots=True)
class SuggestionView:
    record: ErrorRecord
    similarity: float
    reason: str
    diff: WordDiff | None = None  # the words reworded between the record and the paste


@dataclass(slots=True)
class GroupView:
    record: ErrorRecord
    count: int
    first_line: int
    last_line: int
    order: int = 0  # place in the order of what to read first
    reason: str = ""  # why it is there ("root cause: innermost Caused by", ...)
    cause: ErrorRecord | None = None  # the error this one is a consequence of


@dataclass(slots=True)
class AnswerView:
    """One error of the paste: a card and its summary row (``kb.engine.types.Answer``)."""

    match: MatchView
    alternatives: list[AlternativeView]
    count: int
    first_line: int
    last_line: int
    order: int = 0
    reason: str = ""
    cause: ErrorRecord | None = None

    @property
    def record(self) -> ErrorRecord:
        return self.match.record


@dataclass(slots=True)
class MatchResult:
    matches: list[MatchView]
    suggestions: list[SuggestionView]
    groups: list[GroupView]
    report: MatchReport
    elapsed_ms: float
    answers: list[AnswerView] = field(default_factory=list)  # the cards, in reading order

    def __post_init__(self) -> None:
        # A result put together by hand (a test's stand-in for the matcher) without
        # answers has one per matched record, in the matches' order.
        if not self.answers and self.matches:
            seen: set[str] = set()
            for m in self.matches:
                if m.alternative_of is None and m.record.pk not in seen:
                    seen.add(m.record.pk)
                    self.answers.append(AnswerView(m, [], 1, m.line, m.line))

    @property
    def normalised_text(self) -> str:
        return self.report.normalised.text

    @property
    def steps(self) -> list[str]:
        return list(self.report.normalised.steps)

    def as_json(self) -> dict[str, Any]:
        """The one JSON shape of a result, for ``manage.py match --json`` and the API.

        ``matches`` holds every confident reading, best first: first the best reading of
        each piece of text (one per error, with ``count``, ``evidence`` and the other
        records that read the same text as ``also_matches``), then those others, each
        with ``alternative_of``. ``answers`` is the errors in the order to read them
        (root cause first), as the page's summary and cards show them."""
        answer_of = {a.record.id: a for a in self.answers}
        return {
            "matches": [
                {
                    "record_id": m.record.id,
                    "slug": m.record.slug,
                    "repo": m.record.repo,
                    "line": m.line,
                    "span": list(m.span),
                    "text": m.text,
                    "captures": m.captures,
                    "score": round(m.score, 4),
                    "reason": m.reason,
                    "same_message": [r.id for r in m.same_message],
                    "kind": m.kind,
                    "evidence": list(m.evidence),
                    "reworded": m.diff.as_json() if m.diff is not None else None,
                    "alternative_of": m.alternative_of.id if m.alternative_of else None,
                    "wording": m.wording_json(),
                    "fits_releases": [m.fit.first, m.fit.last] if m.fit is not None else None,
                    "fits": _fit_json(m.fit),
                    "removed_in": m.record.removed_in or None,
                    **_answer_fields(answer_of.get(m.record.id), m),
                }
                for m in self.matches
            ],
            "answers": [
                {
                    "record_id": a.record.id,
                    "count": a.count,
                    "first_line": a.first_line,
                    "last_line": a.last_line,
                    "order": a.order,
                    "reason": a.reason,
                    "cause": a.cause.id if a.cause is not None else None,
                }
                for a in self.answers
            ],
            "suggestions": [
                {
                    "record_id": s.record.id,
                    "slug": s.record.slug,
                    "similarity": round(s.similarity, 4),
                    "reason": s.reason,
                    "reworded": s.diff.as_json() if s.diff is not None else None,
                }
                for s in self.suggestions
            ],
            "groups": [
                {
                    "record_id": g.record.id,
                    "count": g.count,
                    "first_line": g.first_line,
                    "last_line": g.last_line,
                    "order": g.order,
                    "reason": g.reason,
                    "cause": g.cause.id if g.cause is not None else None,
                }
                for g in self.groups
            ],
            "normalisation": self.steps,
            "elapsed_ms": round(self.elapsed_ms, 3),
        }


def _fit_json(fit: ReleaseFit | None) -> dict[str, Any] | None:
    if fit is None:
        return None
    return {"ranges": [list(r) for r in fit.ranges], "by": fit.how, "shown": fit.shown}


def _answer_fields(answer: AnswerView | None, m: MatchView) -> dict[str, Any]:
    if answer is None or answer.match is not m:
        return {}
    also = [
        {"record_id": x.record.id, "slug": x.record.slug, "repo": x.record.repo, "why": x.why}
        for x in answer.alternatives
    ]
    return {"count": answer.count, "also_matches": also}


def _specs(queryset: Any) -> list[PatternSpec]:
    rows = queryset.values_list("id", "message_pattern", "error_message")
    aliases = _aliases(queryset)
    return [
        PatternSpec(key=k, pattern=p, message=m, aliases=aliases.get(k, ()))
        for k, p, m in rows.iterator(chunk_size=5000)
    ]


def _aliases(queryset: Any) -> dict[str, tuple[Wording, ...]]:
    """record id -> its older wordings still matched: every wording of its history but
    its current one and those a curator retired. Only records learned from releases have
    a history, and only its wordings are read (not its locations and commits)."""
    rows = queryset.filter(release_history__isnull=False).values_list(
        "id", "message_pattern", "release_history__wordings", "retired_wordings"
    )
    out: dict[str, tuple[Wording, ...]] = {}
    for key, own, wordings, retired in rows.iterator(chunk_size=2000):
        if got := older_wordings(own, wordings, retired):
            out[key] = got
    return out


def older_wordings(own: str, wordings: Any, retired: Any) -> tuple[Wording, ...]:
    """The wordings of a history's ``wordings`` list still matched beside the current
    pattern ``own``: not ``own``, not among the ``retired`` patterns."""
    if not isinstance(wordings, list):
        return ()
    off = set(retired) if isinstance(retired, list) else set()
    return tuple(
        Wording(
            w["pattern"],
            str(w.get("message") or ""),
            str(w.get("firstRelease") or ""),
            str(w.get("lastRelease") or ""),
        )
        for w in wordings
        if isinstance(w, dict)
        and isinstance(w.get("pattern"), str)
        and w["pattern"]
        and w["pattern"] != own
        and w["pattern"] not in off
    )


# Records made this many seconds apart or more may be in different batches: the shard
# layout may end a run between two batches (``kb.engine.shards.layout``), so an import
# made after the last build most often fills shards of its own.
AGE_STEP_S = 600


def active_specs() -> list[PatternSpec]:
    """Every active record's spec, oldest first, with its batch (when it was made, in
    steps of ``AGE_STEP_S``): the order and the cuts the matcher lays its shards out by
    (``kb.engine.shards.layout``), so the records an import or a learn adds fall into the
    last shards and a rebuild compiles those alone."""
    active = ErrorRecord.objects.active()
    rows = active.order_by("created_at", "id").values_list(
        "id", "message_pattern", "error_message", "created_at"
    )
    aliases = _aliases(active)
    return [
        PatternSpec(k, p, m, aliases.get(k, ()), int(made.timestamp()) // AGE_STEP_S)
        # fetched whole, not by a server-side cursor: PostgreSQL then scans and sorts the
        # table in parallel, and the list holds every row anyway
        for k, p, m, made in list(rows)
    ]


# Repositories read one index seek each (`distinct_repos`) before the rest are read at once.
REPO_SEEKS = 64


def distinct_repos() -> frozenset[str]:
    """The repositories of the active records, each found by one seek along the list
    index (the next repository after the last one found): ``SELECT DISTINCT`` reads every
    active row, while there are a handful of repositories. Past ``REPO_SEEKS`` of them the
    rest are read in one ``DISTINCT``."""
    active = ErrorRecord.objects.active().order_by("repo").values_list("repo", flat=True)
    found: list[str] = []
    while len(found) < REPO_SEEKS:
        after = active.filter(repo__gt=found[-1]) if found else active
        repo = after.first()
        if repo is None:
            return frozenset(found)
        found.append(repo)
    rest = active.filter(repo__gt=found[-1]).order_by().distinct()
    return frozenset([*found, *rest])


class MatcherHolder:
    """One per process: the current matcher and the revision it reflects."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._matcher: Matcher | None = None
        self._revision = -1
        self._checked_at = 0.0
        self._delta_size = 0
        # Matched records as results show them, for the revision the matcher reflects.
        self._shown: dict[str, ErrorRecord] = {}
        self._shown_revision = -1
        # What the paste's evidence is weighed against, per record shown (kept with them).
        self._facts: dict[str, RecordFacts] = {}
        self._repos: frozenset[str] = frozenset()
        self._repos_revision = -1
        self._releases: dict[str, ReleaseFacts | None] = {}
        self._releases_revision = -1

    def reset(self) -> None:
        with self._lock:
            self._matcher = None
            self._revision = -1
            self._checked_at = 0.0
            self._shown = {}
            self._facts = {}

    def expire(self) -> None:
        """Read the revision on the next ``get``: for a writer that must match its own
        write at once (a publish closing the gaps it answers)."""
        self._checked_at = 0.0

    def records(self, keys: list[str]) -> dict[str, ErrorRecord]:
        """The records ``keys`` name, loaded once per revision of the matcher.

        Results then show records as of the revision that matched them (what a record
        looks like catches up with its pattern, within ``KB_MATCHER_REFRESH_SECONDS``);
        a paste naming records already shown costs no query.
        """
        shown, revision = self._shown, self._revision
        if revision != self._shown_revision:
            shown = self._shown = {}
            self._facts = {}
            self._shown_revision = revision
        missing = [k for k in keys if k not in shown]
        if missing:
            if len(shown) + len(missing) > SHOWN_LIMIT:
                shown = self._shown = {}
                self._facts = {}
            shown.update(ErrorRecord.objects.defer(*NOT_SHOWN).order_by().in_bulk(missing))
        return {k: shown[k] for k in keys if k in shown}

    def repos(self) -> frozenset[str]:
        """Every repository the records come from (read once per revision): frames of
        a paste that point at one of them say which software printed it."""
        if self._repos_revision != self._revision:
            self._repos = distinct_repos()
            self._repos_revision = self._revision
        return self._repos

    def facts(self, keys: Iterable[str]) -> dict[str, RecordFacts]:
        """What the paste's context is weighed against, from the records shown anyway;
        made once per record and revision, like the records (`records`), not per paste."""
        records = self.records(list(keys))
        made = self._facts
        out: dict[str, RecordFacts] = {}
        for k, r in records.items():
            f = made.get(k)
            if f is None:
                f = made[k] = RecordFacts(
                    r.repo, r.file_path, r.error_class or "", r.line_number, r.removed_in or ""
                )
            out[k] = f
        return out

    def releases(self, keys: Iterable[str]) -> dict[str, ReleaseFacts]:
        """What the paste's frames and version strings are compared with, for the
        records ``keys`` that were learned from releases: from the records shown anyway
        (no query of its own), each made once per revision."""
        if self._releases_revision != self._revision or len(self._releases) > SHOWN_LIMIT:
            self._releases = {}
            self._releases_revision = self._revision
        known = self._releases
        keys = list(keys)
        missing = [k for k in keys if k not in known]
        if missing:
            for k, r in self.records(missing).items():
                known[k] = release_facts(
                    r.repo, r.message_pattern, r.release_history, r.first_release, r.last_release
                )
        return {k: f for k in keys if (f := known.get(k)) is not None}

    def get(self) -> Matcher:
        now = time.monotonic()
        if (
            self._matcher is not None
            and now - self._checked_at < settings.KB_MATCHER_REFRESH_SECONDS
        ):
            return self._matcher
        with self._lock:
            self._checked_at = time.monotonic()
            revision = current_revision()
            if self._matcher is None:
                self._full_build(revision)
            elif revision != self._revision:
                self._apply_changes(revision)
            assert self._matcher is not None
            return self._matcher

    @timed_build
    def _full_build(self, revision: int, specs: list[PatternSpec] | None = None) -> None:
        if specs is None:
            with gc_paused():  # a million specs, no cycles (`gc_paused`)
                specs = active_specs()
        cache_dir = settings.KB_MATCHER_CACHE_DIR
        self._matcher = None  # the old one can go before the new one is loaded
        digest = _build_digest(specs)
        path = _build_path(digest)
        store = matcher_store()
        started = time.perf_counter()
        fetched = store is not None and not path.exists() and _store_call(cache.fetch, store, path)
        fetch = None
        if store is not None:  # the shards this host lacks, from whoever compiled them

            def fetch(shard: Path) -> bool:
                return _store_call(cache.fetch, store, shard)

        self._matcher = Matcher.build(
            specs,
            cache_dir=cache_dir,
            fetch=fetch,
            shard_size=settings.KB_MATCHER_SHARD_SIZE,
            digest=digest,
        )
        # A fetched file the cache refused (not in its format) was compiled over: only a
        # file the build loaded counts as loaded from the store.
        loaded = bool(fetched) and bool(self._matcher.stats.get("matcher_from_cache"))
        self._matcher.stats["matcher_from_store"] = loaded
        if loaded:
            took = time.perf_counter() - started
            n = len(self._matcher)
            log.info("matcher loaded from store: %s (%d patterns, %.2f s)", path.name, n, took)
        elif fetched:
            log.warning("stored matcher %s refused by the cache: compiled instead", path.name)
        elif store is not None:
            shards = [cache_dir / name for name in self._matcher.shard_files()]
            if _store_call(partial(cache.publish, also=shards), store, path):
                log.info("matcher published to store: %s", path.name)
        _log_refused_aliases(self._matcher)
        self._revision = revision
        self._delta_size = 0
        # The matcher lives as long as the process: keep the garbage collector from walking
        # its millions of objects on every full collection, which would land in the middle
        # of somebody's paste. Refcounting still frees what is dropped. Frozen objects also
        # stay in the pages a preloading gunicorn arbiter shares with its workers. No
        # collection first: the build ran with the collector paused and makes no cycles to
        # speak of, and a collection would walk every one of those objects once more.
        gc.freeze()

    def _apply_changes(self, revision: int) -> None:
        changed = ErrorRecord.objects.filter(revision__gt=self._revision)
        # the changed rows with their wordings, in one read: a history is small next to
        # the rows of a rebuild, and most records have none
        rows = list(
            changed.values_list(
                "id", "message_pattern", "error_message", "status", "disabled_reason",
                "release_history__wordings", "retired_wordings",
            )
        )  # fmt: skip
        self._delta_size += len(rows)
        if self._delta_size > DELTA_LIMIT:
            self._full_build(revision)
            return
        if len(rows) >= BULK_CHANGE:
            specs = active_specs()
            if _built(specs):
                self._full_build(revision, specs)
                return
        live = [
            PatternSpec(key=k, pattern=p, message=m, aliases=older_wordings(p, w, retired))
            for k, p, m, status, disabled, w, retired in rows
            if status == "published" and not disabled
        ]
        gone = {k for k, _p, _m, status, disabled, *_ in rows if status != "published" or disabled}
        assert self._matcher is not None
        vanished, missing = _reconcile(self._matcher, gone, {s.key for s in live})
        live += missing
        self._matcher = self._matcher.with_changes(live, gone | vanished)
        _log_refused_aliases(self._matcher, {spec.key for spec in live if spec.aliases})
        self._revision = revision


def release_facts(
    repo: str, own: str, history: Any, first: str | None, last: str | None
) -> ReleaseFacts | None:
    """A record's releases as the matcher compares a paste with them (None: nothing to
    compare). Wordings without ranges are left out; the current wording falls back to
    the record's own range."""
    if not isinstance(history, dict):
        return None
    wordings: dict[str, tuple[str, str]] = {}
    for w in history.get("wordings") or ():
        if isinstance(w, dict) and w.get("pattern") and w.get("firstRelease"):
            wordings[w["pattern"]] = (w["firstRelease"], w.get("lastRelease") or w["firstRelease"])
    if own not in wordings and first:
        wordings[own] = (first, last or first)
    locations = tuple(
        Location(str(x["path"]), int(x["line"]), str(x["firstRelease"]),
                 str(x.get("lastRelease") or x["firstRelease"]))
        for x in history.get("locations") or ()
        if isinstance(x, dict) and x.get("path") and isinstance(x.get("line"), int)
        and x.get("firstRelease")
    )  # fmt: skip
    if not wordings and not locations:
        return None
    return ReleaseFacts(repo_name(repo), version_key, wordings, locations)


def _log_refused_aliases(matcher: Matcher, keys: set[str] | None = None) -> None:
    """A bad older wording is left out of matching (its record still matches): said at
    each build, and for the records of each change (``keys``), so a curator can retire it
    or the learner can be fixed."""
    refused = matcher.refused_aliases()
    if keys is not None:
        refused = {k: v for k, v in refused.items() if k in keys}
    if refused:
        n = sum(map(len, refused.values()))
        some = ", ".join(sorted(refused)[:5])
        log.warning("%d older wording(s) not compiled (bad pattern), of records %s", n, some)


def _build_digest(specs: list[PatternSpec]) -> str:
    """The name of the whole build of ``specs`` (the hash of their content)."""
    options = cache.build_options(settings.KB_MATCHER_SHARD_SIZE, True)
    return cache.specs_digest(specs, options)


def _build_path(digest: str) -> Path:
    """Where this host's cache keeps the whole build named ``digest``."""
    cache_dir = settings.KB_MATCHER_CACHE_DIR
    cache_dir.mkdir(parents=True, exist_ok=True)
    return cache.matcher_path(cache_dir, digest)


def _built(specs: list[PatternSpec]) -> bool:
    """Whether the whole build of ``specs`` is in this host's cache, or in the store (then
    fetched into the cache): a bulk writer published it."""
    path = _build_path(_build_digest(specs))
    if path.exists():
        return True
    store = matcher_store()
    return store is not None and _store_call(cache.fetch, store, path)


def _store_call(op: Any, store: cache.BlobStore, path: Path) -> bool:
    """``op(store, path)``, or False with a log line when the store fails: the store saves
    compiling, it is never needed to serve (docs/deployment.md, "Compiled matcher store").
    In a savepoint, so a failing store query cannot abort a caller's transaction."""
    try:
        with transaction.atomic():
            return bool(op(store, path))
    except (DatabaseError, OSError) as exc:
        log.warning("matcher store unavailable (%s): %s", path.name, exc)
        return False


def _reconcile(
    matcher: Matcher, gone: set[str], live: set[str]
) -> tuple[set[str], list[PatternSpec]]:
    """What the changed rows cannot tell: keys ``matcher`` holds whose record was deleted
    (a deletion leaves no row behind), and active records it lacks (none, unless a write
    skipped the revision).

    Every write that makes a record active stamps it with a new revision, so once the
    changed rows are folded in, the matcher holds every active record, plus any deleted
    ones: equal sizes mean equal sets, and cost one count. Otherwise the active keys are
    read and compared key by key, and the difference is folded in like any other change;
    a full build could not know more, and would recompile every shard a deletion touches.
    """
    held = len(matcher) - sum(k in matcher for k in gone | live) + len(live)
    active = ErrorRecord.objects.active()
    if held == active.count():
        return set(), []
    keys = set(active.values_list("id", flat=True))
    vanished = set(matcher.keys() - gone - live - keys)
    missing = keys - live - matcher.keys()
    return vanished, _specs(active.filter(pk__in=missing)) if missing else []


holder = MatcherHolder()


def get_matcher() -> Matcher:
    return holder.get()


# Columns no match result shows (the record page loads them): left out of the query each
# paste makes, which would otherwise carry every matched record's source snippet and
# analysis text from the database for nothing.
NOT_SHOWN = (
    "source_code",
    "documentation",
    "trigger_scenarios",
    "common_situations",
    "example_fix",
    "validation_code",
    "type_guard",
    "try_catch_pattern",
    "prevention_tips",
    "extra",
    "curated_fields",
    "conflicts",
)


@timed_match
def match_text(text: str, *, max_bytes: int | None = None) -> MatchResult:
    """Match ``text`` against every active record; records loaded for display.

    Raises ``kb.engine.PasteTooLarge`` past ``max_bytes`` (default ``KB_MAX_PASTE_BYTES``).
    """
    started = time.perf_counter()
    limit = settings.KB_MAX_PASTE_BYTES if max_bytes is None else max_bytes
    matcher = get_matcher()
    report = matcher.match(
        text, max_bytes=limit, facts=holder.facts, repos=holder.repos(), releases=holder.releases
    )
    return _result(report, started)


@dataclass(slots=True)
class LogMatch:
    """`match_log`'s answer: the result, and the text its spans can be shown from."""

    result: MatchResult
    text: Text  # the whole log, or the excerpt of it that was matched (`kb.engine.logstream`)
    excerpt: Excerpt | None = None  # maps the log's offsets into ``text`` when an excerpt

    def to_text(self, offset: int) -> int:
        return offset if self.excerpt is None else self.excerpt.to_excerpt(offset)


def match_log(blocks: Iterable[bytes], *, max_bytes: int) -> LogMatch:
    """`match_text` for a log whose bytes ``blocks`` yield (already bounded by the caller
    and decompressed), in bounded memory: up to ``KB_MATCH_WHOLE_BYTES`` it is read whole
    and matched as text; past it, read in blocks of lines and matched from its excerpt
    (`kb.engine.logstream`), with the answer of reading it whole."""
    started = time.perf_counter()
    it = iter(blocks)
    head: list[bytes] = []
    size = 0
    for block in it:
        head.append(block)
        size += len(block)
        if size > settings.KB_MATCH_WHOLE_BYTES and size > WHOLE_LOG_CHARS:
            data = b"".join(head)
            head = [data]
            # a text of few characters for its bytes may still be a paste to the normaliser:
            # read on until it is not (at most 4 bytes a character)
            if is_whole_log(data):
                head = []
                excerpt = read_excerpt(get_matcher(), chain([data], it))
                del data
                return _excerpt_result(excerpt, started)
    text = b"".join(head).decode("utf-8", errors="replace")
    return LogMatch(match_text(text, max_bytes=max_bytes), text)


@timed_match
def _excerpt_match(excerpt: Excerpt, started: float) -> MatchResult:
    matcher = get_matcher()
    report = match_excerpt(
        matcher,
        excerpt,
        facts=holder.facts,
        repos=holder.repos(),
        releases=holder.releases,
        started=started,
    )
    return _result(report, started)


def _excerpt_result(excerpt: Excerpt, started: float) -> LogMatch:
    result = _excerpt_match(excerpt, started)
    # the excerpt's text, decoded once by the match (its bytes were the match's to let go)
    return LogMatch(result, result.report.normalised.original, excerpt)


def _result(report: MatchReport, started: float) -> MatchResult:
    """The result of ``report`` with its records loaded for display."""
    keys: set[str] = set()
    for m in report.matches:
        keys.add(m.key)
        keys.update(m.same_message)
    keys.update(s.key for s in report.suggestions)
    keys.update(g.key for g in report.groups)
    records = holder.records(list(keys))
    alt_of = {x.key: a.match.key for a in report.answers for x in a.alternatives}
    views = {
        m.key: MatchView(
            record=records[m.key],
            line=m.line,
            span=m.span,
            text=m.text,
            captures=list(m.captures),
            score=m.score,
            reason=m.reason,
            literal_chars=m.literal_chars,
            coverage=m.coverage,
            same_message=[records[k] for k in m.same_message if k in records],
            kind=m.kind,
            evidence=m.evidence,
            diff=m.diff,
            alternative_of=records.get(alt_of[m.key]) if m.key in alt_of else None,
            wording=m.wording,
            fit=m.fit,
        )
        for m in report.matches
        if m.key in records
    }
    matches = list(views.values())
    suggestions = [
        SuggestionView(records[s.key], s.similarity, s.reason, s.diff)
        for s in report.suggestions
        if s.key in records
    ]
    groups = [
        GroupView(
            records[g.key],
            g.count,
            g.first_line,
            g.last_line,
            g.order,
            g.reason,
            records.get(g.cause) if g.cause else None,
        )
        for g in report.groups
        if g.key in records
    ]
    answers = [
        AnswerView(
            views[a.key],
            [AlternativeView(records[x.key], x.why) for x in a.alternatives if x.key in records],
            a.count,
            a.first_line,
            a.last_line,
            a.order,
            a.reason,
            records.get(a.cause) if a.cause else None,
        )
        for a in report.answers
        if a.key in views
    ]
    elapsed = (time.perf_counter() - started) * 1000
    return MatchResult(matches, suggestions, groups, report, elapsed, answers)
