"""Record validation shared by the admin, the importer and the API.

``admit_pattern`` asks the matcher whether it can compile a pattern (Hyperscan, else RE2);
a record whose pattern is refused is still stored by the importer, disabled with the
engine's reason. ``validate_record`` is what ``ErrorRecord.clean()`` runs, so every path
that calls ``full_clean()`` (admin, API) refuses what the matcher could not use:

- every dataset field has the dataset's type and length;
- the pattern compiles in the matcher's engines;
- the message, rendered with sample values in place of its placeholders, is matched by
  the pattern (checked when the pattern or message is new or edited: a handful of
  dataset records print a literal ``{}`` and would fail a check they never asked for);
- the pattern does not newly match the sample messages of other records (a *collision*).
  A collision is something a curator may accept: set ``record.accept_collisions = True``
  (the admin form has a checkbox) and it becomes a warning.

The module is pure: it reads the record's attributes and whatever the caller hands it
(the stored pattern and message, a lookup of the records a pattern matches), and never
queries the database itself. The model owns those lookups
(``ErrorRecord.objects.colliding_with``), so models import validation and never the
other way round.

``record_warnings`` lists what is allowed but worth a curator's attention (generic
patterns, accepted collisions); the admin shows them after saving.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import regex

from kb.engine import admit_pattern as matcher_admit
from kb.records.schema import FIELDS, FieldError, clean_value

# Placeholders of the source languages the dataset's messages are written in:
# Rust/SLF4J/Python-format braces, printf verbs, Python %(name)s.
PLACEHOLDER_RE = re.compile(
    r"\{\{|\}\}"  # escaped braces (Rust/Python format): kept as one literal brace
    r"|\{(?:[^{}]|\{[^{}]*\}){0,300}\}"  # {}, {:?}, {name}, f-string {expr} (one nesting)
    r"|%n"  # Java's platform newline
    r"|%\([A-Za-z_][A-Za-z0-9_]*\)[-#0 +]*\d*(?:\.\d+)?[a-zA-Z]"
    r"|%[-#0 +]*\d*(?:\.\d+)?[sdifvqwrxXeEgGcpbouTt]"
)
# Any one set whose rendering the pattern matches passes: a curator who tightens a
# placeholder to ``(\d+)`` or ``(\w+)`` must not be refused for it.
SAMPLE_VALUES: tuple[str, ...] = ("42", "x1", "some value", "/srv/a.b-c_d", "ä'\"(*)[?]")
# Python's regex engine backtracks: a pattern that is catastrophic on one rendering gives
# up on that rendering instead of holding the save. The collision search as a whole has a
# budget too (a curator waits for it), and lists enough collisions to show the problem.
REGEX_TIMEOUT_S = 0.05
COLLISION_BUDGET_S = 2.0
COLLISION_LIMIT = 20


@dataclass(frozen=True, slots=True)
class PatternVerdict:
    ok: bool
    engine: str
    reason: str
    generic: bool = False


@dataclass(frozen=True, slots=True)
class Collision:
    """Another record whose sample message the pattern matches."""

    id: str
    slug: str
    message: str


@lru_cache(maxsize=65536)
def admit_pattern(pattern: str) -> PatternVerdict:
    """Can the matcher compile this pattern? Cached: the answer depends on the text only."""
    verdict = matcher_admit(pattern)
    return PatternVerdict(
        ok=verdict.ok,
        engine=verdict.engine or "",
        reason=verdict.reason or "",
        generic=verdict.generic,
    )


# --- rendering messages and trying patterns on them -----------------------------------
def render_message(message: str, value: str) -> str:
    """The message template with every placeholder replaced by ``value``."""

    literal = {"{{": "{", "}}": "}", "%n": "\n"}

    def sub(m: re.Match[str]) -> str:
        return literal.get(m.group(0), value)

    return PLACEHOLDER_RE.sub(sub, message)


def sample_renderings(message: str) -> list[str]:
    """The message rendered once per sample value, plus the template as written (for
    messages whose braces or percent signs are literal text)."""
    out = [render_message(message, v) for v in SAMPLE_VALUES]
    if message not in out:
        out.append(message)
    return out


@lru_cache(maxsize=4096)
def compile_pattern(pattern: str) -> regex.Pattern[str] | None:
    """The pattern as Python ``re`` reads it, compiled by ``regex`` (which has timeouts)."""
    try:
        return regex.compile(pattern, regex.VERSION0)
    except (regex.error, OverflowError, RecursionError, ValueError):
        return None


def matches_any(rx: regex.Pattern[str], texts: list[str]) -> bool:
    for text in texts:
        try:
            if rx.search(text, timeout=REGEX_TIMEOUT_S) is not None:
                return True
        except TimeoutError:
            continue
    return False


def message_is_matched(pattern: str, message: str) -> bool:
    rx = compile_pattern(pattern)
    return rx is not None and matches_any(rx, sample_renderings(message))


def _literal_runs(pattern: str) -> list[str] | None:
    """Runs of text every match of ``pattern`` must contain; None when there are no
    required runs to rely on (alternation)."""
    if re.search(r"\)(?:\?|\*|\{0)", pattern):
        return None  # an optional group: its text is not required
    runs: list[str] = []
    cur: list[str] = []

    def flush() -> None:
        if cur:
            runs.append("".join(cur))
            cur.clear()

    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            d = pattern[i + 1]
            if d.isalnum() or d == "_":
                flush()  # \d, \w, \b, \n...: not plain text
            else:
                cur.append(d)
            i += 2
            continue
        if c == "|":
            return None
        if c == "[":  # a character class: skip to its end
            flush()
            i += 1
            while i < n and pattern[i] != "]":
                i += 2 if pattern[i] == "\\" else 1
            i += 1
            continue
        if c in "?*+{":
            if cur:
                cur.pop()  # the quantified character is optional
            flush()
            if c == "{":
                while i < n and pattern[i] != "}":
                    i += 1
            i += 1
            continue
        if c in ".^$()}]":
            flush()
            i += 1
            continue
        cur.append(c)
        i += 1
    flush()
    return runs


def prefilter_word(pattern: str) -> str:
    """The longest word (4+ letters) the pattern requires, for a cheap database filter.

    A word, not a whole run: a run may reach into text that sample values supply.
    """
    runs = _literal_runs(pattern)
    if not runs:
        return ""
    words = [w for run in runs for w in re.findall(r"[^\W\d_]{4,}", run)]
    return max(words, key=len, default="")


def find_collisions(
    pattern: str,
    candidates: Iterable[tuple[str, str, str]],
    *,
    limit: int = COLLISION_LIMIT,
    budget_s: float = COLLISION_BUDGET_S,
) -> tuple[list[Collision], bool]:
    """The ``(id, slug, message)`` candidates whose rendered sample messages ``pattern``
    matches, at most ``limit`` of them.

    Returns (collisions, complete); ``complete`` is False when the time budget ran out. The
    candidates are read lazily, so a caller can hand in a database iterator and only the
    rows inspected within the budget are fetched.
    """
    rx = compile_pattern(pattern)
    if rx is None:
        return [], True
    deadline = time.perf_counter() + budget_s
    found: list[Collision] = []
    for pk, slug, message in candidates:
        if time.perf_counter() > deadline:
            return found, False
        if matches_any(rx, sample_renderings(message)):
            found.append(Collision(pk, slug, message))
            if len(found) >= limit:
                break
    return found, True


# --- the model's clean() --------------------------------------------------------------
def new_collisions(collisions: list[Collision], stored_pattern: str | None) -> list[Collision]:
    """The collisions that the stored pattern did not already have: two records that
    always shared a message stay saveable."""
    old = compile_pattern(stored_pattern) if stored_pattern else None
    if old is None:
        return collisions
    return [c for c in collisions if not matches_any(old, sample_renderings(c.message))]


def describe_collisions(collisions: Sequence[Collision]) -> str:
    shown = "; ".join(f"{c.id} ({c.message[:80]})" for c in collisions[:5])
    more = f" and {len(collisions) - 5} more" if len(collisions) > 5 else ""
    return f"{shown}{more}"


@dataclass(frozen=True, slots=True)
class Validation:
    """What ``validate_record`` found: field errors keyed by model attribute (empty when
    valid) and the collisions the pattern newly has (refused unless accepted)."""

    errors: dict[str, list[str]]
    collisions: list[Collision]


def validate_record(
    record: Any,
    *,
    stored: tuple[str, str] | None,
    colliding_with: Callable[[str], list[Collision]],
) -> Validation:
    """Validate a record instance.

    ``stored`` is the (pattern, message) pair as saved, None for a record not saved yet;
    ``colliding_with(pattern)`` lists the other records a pattern matches. It is only
    called when the pattern is new or edited and otherwise sound, because it reads rows.
    """
    errors: dict[str, list[str]] = {}
    for field in FIELDS:
        if field.optional and not hasattr(record, field.attr):
            continue  # parsed from a line that leaves it out
        try:
            value = getattr(record, field.attr)
            if field.kind == "datetime":
                continue  # model fields already hold datetimes
            clean_value(field, value)
        except FieldError as exc:
            errors.setdefault(field.attr, []).append(f"{field.key} {exc.message}")
    pattern = record.message_pattern or ""
    if not pattern or "message_pattern" in errors:
        return Validation(errors, [])
    verdict = admit_pattern(pattern)
    if not verdict.ok:
        errors.setdefault("message_pattern", []).append(
            f"The matcher cannot use this pattern: {verdict.reason}"
        )
        return Validation(errors, [])
    if stored == (pattern, record.error_message):
        return Validation(errors, [])  # neither edited: the dataset's own pairing stands
    if "error_message" not in errors and not message_is_matched(pattern, record.error_message):
        sample = render_message(record.error_message, SAMPLE_VALUES[1])
        errors.setdefault("message_pattern", []).append(
            "The pattern does not match its own message: with sample values in the "
            f"placeholders the message reads {sample[:200]!r}, and the pattern matches "
            "none of the renderings. Fix the pattern (placeholders are usually (.+?)) "
            "or the message."
        )
        return Validation(errors, [])
    if stored is not None and stored[0] == pattern:
        return Validation(errors, [])  # the pattern's collisions are the ones it had
    collisions = new_collisions(colliding_with(pattern), stored[0] if stored else None)
    if collisions and not record.accept_collisions:
        errors.setdefault("message_pattern", []).append(
            f"This pattern also matches the messages of {len(collisions)} other "
            f"record(s): {describe_collisions(collisions)}. Make it more specific, or "
            "tick “accept collisions” to save it anyway."
        )
    return Validation(errors, collisions)


def record_warnings(pattern: str, *, accepted_collisions: Sequence[Collision] = ()) -> list[str]:
    """What is allowed but worth telling the curator after a save."""
    warnings: list[str] = []
    if pattern:
        verdict = admit_pattern(pattern)
        if verdict.ok and verdict.generic:
            warnings.append(
                "The pattern is generic (few literal characters): the matcher only "
                "suggests it, never reports it as a confident match."
            )
        if not verdict.ok:
            warnings.append(f"The pattern is disabled: {verdict.reason}")
    if accepted_collisions:
        warnings.append(
            f"Saved with collisions accepted: the pattern also matches "
            f"{describe_collisions(accepted_collisions)}."
        )
    return warnings
