"""Near-miss suggestions when no pattern matched confidently.

The similarity index itself is a colleague's module (`kb.engine.similar`); this module
only decides which lines of a paste are worth asking about (lines that look like an
error, not INFO chatter or traceback frames) and turns its answers into `Suggestion`s.
If `similar.py` is missing the matcher simply makes no similarity suggestions.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from . import cache
from .lineclass import is_errorish, is_frame, is_infoish
from .similar import SimilarityIndex

MAX_QUERY_LINES = 12
MAX_SCAN_LINES = 5000
MAX_SUGGESTIONS = 5
LONG_TOKEN = 60
_LONG_TOKEN = re.compile(rf"\S{{{LONG_TOKEN + 1},}}")  # linear: one greedy class


# The last build's index carried on over these items, or None (`SimilarityIndex.resumed`).
Resume = Callable[[list[tuple[str, str]]], SimilarityIndex | None]


def similarity_index(messages: dict[str, str], *, resume: Resume | None = None) -> SimilarityIndex:
    """The index of ``messages`` (key -> template; empty ones are not indexed): the one
    ``resume`` gives when the last build's index was of the first of them (a build after
    an import indexes its own records only), else built anew."""
    items = [(k, m) for k, m in messages.items() if m]
    if resume is not None and (index := resume(items)) is not None:
        return index
    return SimilarityIndex.build(items)


def similar_to_plain(similar: object, blobs: list[bytes]) -> dict[str, Any] | None:
    """A matcher's similarity part (none, an index, or an index with edits) as plain data."""
    if similar is None:
        return None
    if isinstance(similar, EditedSimilarity):
        return {
            "base": similar_to_plain(similar.base, blobs),
            "edited": similar.edited,
            "gone": cache.put_texts(sorted(similar.gone), blobs),
        }
    assert isinstance(similar, SimilarityIndex)
    return {"index": similar.to_plain(blobs)}


def similar_from_plain(plain: Any, blobs: Sequence[memoryview]) -> object:
    """What `similar_to_plain` wrote (checked, as every part of a stored matcher)."""
    if plain is None:
        return None
    if "index" in plain:
        return SimilarityIndex.from_plain(plain["index"], blobs)
    edited = plain["edited"]
    if not isinstance(edited, dict) or not all(isinstance(m, str) for m in edited.values()):
        raise TypeError("edited messages are not text by key")
    base = similar_from_plain(plain["base"], blobs)
    if isinstance(base, EditedSimilarity):
        raise ValueError("edits on top of edits")
    return EditedSimilarity(base, edited, frozenset(cache.get_texts(plain["gone"], blobs)))


def error_line_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of lines that look like an error message, most promising first."""
    picked: list[tuple[int, int]] = []
    fallback: list[tuple[int, int]] = []
    n = len(text)
    # whole logs: look at the last MAX_SCAN_LINES lines only (bounded work per paste)
    pos = 0
    cut = n
    for _ in range(MAX_SCAN_LINES):
        cut = text.rfind("\n", 0, cut)
        if cut < 0:
            break
    if cut > 0:
        pos = cut + 1
    while pos <= n:
        nl = text.find("\n", pos)
        end = n if nl < 0 else nl
        line = text[pos : min(end, pos + 2000)].strip()
        if len(line) >= 12 and not is_frame(line) and not is_infoish(line):
            fallback.append((pos, end))
            if is_errorish(line):
                picked.append((pos, end))
        if nl < 0:
            break
        pos = nl + 1
    if not picked:  # no error marker at all: the last non-empty lines are the best bet
        picked = fallback[-3:]
    seen: dict[str, tuple[int, int]] = {}
    for s, e in reversed(picked):  # the last error of a traceback is the raised one
        seen.setdefault(text[s:e].strip(), (s, e))
    return list(seen.values())[:MAX_QUERY_LINES]


def similar_hits(
    index: Any,
    text: str,
    spans: list[tuple[int, int]],
    key_pid: Mapping[str, int],
    keys: list[list[str]],
) -> list[tuple[str, float, str, tuple[int, int]]]:
    """(key, score, reason, line span) for records the lines resemble; best first."""
    best: dict[str, tuple[float, str, tuple[int, int]]] = {}
    for s, e in spans:
        # Bound the work the index does per line: cut the line, and cut very long
        # unbroken tokens (base64 blobs, "x=x=x=..." runs): message wording has spaces.
        line = _LONG_TOKEN.sub(lambda m: m.group()[:LONG_TOKEN], text[s:e].strip()[:1000])
        try:
            hits = [(h.key, h.score, h.reason) for h in index.query_explained(line, limit=3)]
        except AttributeError:
            hits = [(k, sc, f"{sc:.0%} similar") for k, sc in index.query(line, limit=3)]
        for key, score, why in hits:
            pid = key_pid.get(key)
            if pid is None or not keys[pid]:
                continue  # removed since the index was built
            if key not in best or best[key][0] < score:
                best[key] = (score, why, (s, e))
    ranked = sorted(best.items(), key=lambda kv: -kv[1][0])[: MAX_SUGGESTIONS * 2]
    return [(k, sc, why, span) for k, (sc, why, span) in ranked]


class EditedSimilarity:
    """The similarity index of a full build plus the messages edited since (`with_changes`).

    The big index is shared, never rebuilt for an edit: its hits for edited or removed
    records are dropped (their message there is the old one), and a small index of the
    edited messages answers for them, so a curator's new wording is suggested at once.
    """

    __slots__ = ("base", "edited", "gone", "index")

    def __init__(self, base: Any, edited: dict[str, str], gone: frozenset[str]) -> None:
        self.base = base
        self.edited = edited
        self.gone = gone
        self.index = similarity_index(edited) if edited else None

    @classmethod
    def apply(cls, current: Any, changed: dict[str, str], removed: set[str]) -> Any:
        """``current`` (an index, an `EditedSimilarity` or None) with these edits on top."""
        if current is None:
            return None
        if isinstance(current, cls):
            base, edited, gone = current.base, dict(current.edited), set(current.gone)
        else:
            base, edited, gone = current, {}, set()
        for key in removed:
            edited.pop(key, None)
        edited.update(changed)
        gone |= removed | changed.keys()
        return cls(base, edited, frozenset(gone))

    def query_explained(self, line: str, *, limit: int = 5) -> list[Any]:
        hits = []
        room = limit + min(len(self.gone), 3 * limit)  # some top hits may be dropped
        for hit in self.base.query_explained(line, limit=room):
            live = [k for k in hit.same_message if k not in self.gone]
            if live:
                hits.append(replace(hit, key=live[0], same_message=tuple(live)))
        if self.index is not None:
            hits += self.index.query_explained(line, limit=limit)
        hits.sort(key=lambda h: -h.score)
        return hits[:limit]
