"""The Django side of ``kb.explain``: one record's explanation, computed lazily and cached.

An explanation is a pure function of the record's snippet, its position, its file's
language and its message, so the cache key is the record id plus a hash of exactly those
(and of ``EXPLAIN_VERSION``, bumped when ``kb.explain`` changes what it derives): an
edited record or a new release of the explainer is simply a new key. It is computed on
first view rather than at import, so imports stay as fast as they are and records no one
opens cost nothing.

In front of that cache sits a small per-process memo keyed by the record's id and
``revision`` (every write to a record takes a new revision, an import's included), so a
page that shows a record already explained in this process costs no query at all: not
even the load of the deferred ``source_code`` that the hash needs. The result card relies
on it to keep a paste's query count independent of how many records it matches.

A page never fails because of an explanation: a cache that cannot be read or written is
skipped (the explanation is computed), and an explainer error is logged and shown as no
explanation.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from typing import Any

from django.core.cache import caches

from kb.browse.highlight import language_for
from kb.explain import Explanation, explain

log = logging.getLogger(__name__)

EXPLAIN_VERSION = "1"
# The cache alias (a per-process memory cache: see its entry in the settings).
CACHE = "explanations"
_NONE = "none"  # cached for records with nothing to explain, so they are not re-parsed
# Entries are small (a few short strings); this many covers every record a busy worker
# shows between two imports without growing without bound.
MEMO_SIZE = 4096
_memo: dict[tuple[Any, ...], Explanation | None] = {}
_memo_lock = threading.Lock()


def _memo_key(record: Any) -> tuple[Any, ...]:
    return (EXPLAIN_VERSION, record.pk, record.revision, record.line_number, record.file_path)


def clear_memo() -> None:
    """Forget this process's explanations (tests; the cache alias is left alone)."""
    with _memo_lock:
        _memo.clear()


def cache_key(record: Any) -> str:
    digest = hashlib.blake2b(digest_size=12)
    for part in (
        EXPLAIN_VERSION,
        record.file_path,
        str(record.source_code_start),
        str(record.line_number),
        record.error_message,
        record.source_code,
    ):
        digest.update(str(part or "").encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    return f"kb:explain:{record.pk}:{digest.hexdigest()}"


def compute(record: Any) -> Explanation | None:
    """The explanation, or ``None``; never raises."""
    language = language_for(record.file_path)
    if not record.source_code or not language:
        return None
    try:
        return explain(
            record.source_code,
            language=language,
            first_line=int(record.source_code_start or 1),
            site_line=int(record.line_number or 0),
            message=record.error_message or "",
        )
    except Exception:  # a parser bug must not take a record page down
        log.exception("explaining record %s failed", record.pk)
        return None


def explanation_for(record: Any) -> Explanation | None:
    """The record's explanation (memoised per process, cached in ``explanations``), or ``None``."""
    key = _memo_key(record)
    try:
        return _memo[key]  # None too: a record without an explanation is memoised
    except KeyError:
        pass
    found = _cached(record)
    with _memo_lock:
        if len(_memo) >= MEMO_SIZE:
            _memo.clear()  # a new import or a long day: start again rather than track age
        _memo[key] = found
    return found


def _cached(record: Any) -> Explanation | None:
    if not record.source_code or not language_for(record.file_path):
        return None
    key = cache_key(record)
    cache = caches[CACHE]
    try:
        cached = cache.get(key)
    except Exception:
        log.warning("explanation cache unreadable; computing", exc_info=True)
        cached = None
    if cached == _NONE:
        return None
    if isinstance(cached, Explanation):
        return cached
    found = compute(record)
    try:
        cache.set(key, found if found is not None else _NONE)
    except Exception:
        log.warning("explanation cache unwritable", exc_info=True)
    return found
