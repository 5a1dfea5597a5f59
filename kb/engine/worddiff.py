"""Why a suggestion is only a suggestion: the words that differ from the record's message.

A suggestion for a reworded message ("Could not parse rfc1738 URL" in the record, "Could
not parse SQLAlchemy URL" in the paste) is more convincing, and quicker to judge, when the
page says which words changed. This module aligns the record's message template with the
pasted line word by word (`difflib` on word keys) and names the changed runs.

The template's placeholders (``{}``, ``%s``, ``%(name)s``...) are wildcards: whatever the
paste has there is a value, not a rewording, so a placeholder's gap absorbs the pasted
words inserted at it. Words the paste has before the message's first word or after its
last are the log line's own envelope (timestamp, level, logger) and are not changes
either. Input is cut to a bounded number of words so the quadratic worst case of the
alignment stays small whatever is pasted.
"""

from __future__ import annotations

from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache

from .similar_text import _PLACEHOLDER

MAX_WORDS = 120  # words of each side aligned (the alignment is quadratic in the worst case)
MAX_LINE_CHARS = 2000
MAX_CHANGES = 4  # changes named in the summary line
_STRIP = ".,:;!?'\"`()[]{}<>\u201c\u201d\u2018\u2019\u00ab\u00bb"  # quotes chat tools insert too
_HOLE = "\x00"  # a placeholder in the template's word list


@dataclass(frozen=True, slots=True)
class Segment:
    """One run of the aligned message: ``op`` is "same", "del" (the record's words the
    paste lacks), "ins" (the paste's words the record lacks) or "value" (a placeholder's
    value in the paste)."""

    op: str
    text: str


@dataclass(frozen=True, slots=True)
class WordDiff:
    """The word-level difference between a record's message and a pasted line."""

    summary: str  # "reworded: rfc1738 → SQLAlchemy"
    changes: tuple[tuple[str, str], ...]  # (record's words, paste's words); "" when none
    segments: tuple[Segment, ...]  # the record's message as the paste has it, run by run

    def as_json(self) -> dict[str, object]:
        return {
            "summary": self.summary,
            "changes": [{"record": a, "paste": b} for a, b in self.changes],
            "segments": [{"op": s.op, "text": s.text} for s in self.segments],
        }


@lru_cache(maxsize=4096)
def _template_words(template: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(display words, comparison keys) of a template; a placeholder's word is a hole.
    Kept per template: a record's message is split the same way on every paste that
    suggests it (the paste's line is not kept: it is new each time)."""
    marked = _PLACEHOLDER.sub(f" {_HOLE} ", template[:MAX_LINE_CHARS])
    shown: list[str] = []
    keys: list[str] = []
    for w in marked.split()[: MAX_WORDS * 2]:
        if _HOLE in w:
            if keys and keys[-1] == _HOLE:
                continue  # "{}{}" or "{} {}": one gap of values
            shown.append(_HOLE)
            keys.append(_HOLE)
            continue
        k = w.strip(_STRIP).lower()
        if k:
            shown.append(w.replace("{{", "{").replace("}}", "}"))
            keys.append(k)
    return tuple(shown[:MAX_WORDS]), tuple(keys[:MAX_WORDS])


def _line_words(line: str) -> tuple[list[str], list[str]]:
    # a long line keeps its head and its tail: the message is at one end of it (after a
    # log envelope, or before a dump of values)
    if len(line) > MAX_LINE_CHARS:
        line = line[: MAX_LINE_CHARS // 2] + " " + line[-MAX_LINE_CHARS // 2 :]
    shown = line.split()
    keys = [w.strip(_STRIP).lower() for w in shown]
    if "" in keys:  # a word of punctuation only is no word
        shown = [w for w, k in zip(shown, keys, strict=True) if k]
        keys = [k for k in keys if k]
    if len(keys) > 2 * MAX_WORDS:
        shown = shown[:MAX_WORDS] + shown[-MAX_WORDS:]
        keys = keys[:MAX_WORDS] + keys[-MAX_WORDS:]
    return shown, keys


LineWords = dict[str, tuple[list[str], list[str]]]


def word_diff(template: str, line: str, lines: LineWords | None = None) -> WordDiff | None:
    """The changed words between ``template`` (a record's message) and ``line`` (the
    pasted line it was suggested for); None when only values differ or nothing aligns.
    ``lines`` keeps each line's words for the other records suggested on the same line
    of one paste (several usually are)."""
    t_shown, t_keys = _template_words(template)
    if lines is None:
        l_shown, l_keys = _line_words(line)
    else:
        got = lines.get(line)
        if got is None:
            got = lines[line] = _line_words(line)
        l_shown, l_keys = got
    words = [k for k in t_keys if k != _HOLE]
    if not words or not l_keys:
        return None
    holes = set()  # gap i: a placeholder stands before the template's i-th word
    t_words: list[str] = []
    t_show: list[str] = []
    for shown, k in zip(t_shown, t_keys, strict=True):
        if k == _HOLE:
            holes.add(len(t_words))
        else:
            t_words.append(k)
            t_show.append(shown)
    if holes <= {0, len(t_words)} and _in_a_row(t_words, l_keys):
        # the alignment would be the message's words in one block, the rest of the line
        # outside it (envelope, or the value of a placeholder at an end): no change
        return None
    sm = SequenceMatcher(None, t_words, l_keys, autojunk=False)
    blocks = [b for b in sm.get_matching_blocks() if b.size]
    if not blocks:
        return None
    # only the pasted words between the first and last aligned word are the message
    lo, hi = blocks[0].b, blocks[-1].b + blocks[-1].size
    if len(t_words) in holes:  # the message ends with a value: the line's end is it
        hi = len(l_keys)
    segments: list[Segment] = []
    changes: list[tuple[str, str]] = []
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        j1, j2 = max(j1, lo), min(j2, hi)
        told = " ".join(t_show[i1:i2])
        tnew = " ".join(l_shown[j1:j2]) if j2 > j1 else ""
        if op == "equal":
            segments.append(Segment("same", " ".join(l_shown[j1:j2])))
            continue
        if not told and not tnew:
            continue
        if not told and any(g in holes for g in range(i1, i2 + 1)):
            segments.append(Segment("value", tnew))  # what the paste put at a placeholder
            continue
        if told:
            segments.append(Segment("del", told))
        if tnew:
            segments.append(Segment("ins", tnew))
        changes.append((told, tnew))
    if not changes:
        return None
    return WordDiff(_summary(changes), tuple(changes), tuple(segments))


def _in_a_row(words: list[str], line: list[str]) -> bool:
    """Is ``words`` a run of consecutive words of ``line``?"""
    n = len(words)
    at = 0
    while True:
        try:
            at = line.index(words[0], at, len(line) - n + 1)
        except ValueError:
            return False
        if line[at : at + n] == words:
            return True
        at += 1


def _summary(changes: list[tuple[str, str]]) -> str:
    parts = []
    for old, new in changes[:MAX_CHANGES]:
        if old and new:
            parts.append(f"{_clip(old)} → {_clip(new)}")
        elif old:
            parts.append(f"{_clip(old)} missing")
        else:
            parts.append(f"added {_clip(new)}")
    more = len(changes) - MAX_CHANGES
    return "reworded: " + "; ".join(parts) + (f"; {more} more" if more > 0 else "")


def _clip(s: str, n: int = 40) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"
