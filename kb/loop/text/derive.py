"""A draft record's pattern from a gap: "Create a record from this gap".

Why bounded groups: a curator publishes the draft into a matcher that runs every pattern
over every paste. A draft made from a handful of samples must not be looser than what
they show, so each variable becomes a group bounded by the samples' values -- digits
`(\\d{1,20})`, a number `([-+]?[0-9.,_:]{1,40})`, one word `([^ \\t\\r\\n]{1,80})`, else any
text `(.{1,80}?)` -- and no group holds another quantifier. The bounds and classes are
kept modest on purpose: Hyperscan expands a bounded repeat when it compiles, so its
compile cost grows with the bound and with the class (Unicode ``\\S`` costs far more than
the explicit ``[^ \\t\\r\\n]``; benchmarks/results/gaps.json has the cost per draft); a
value longer than the bound is a reason for the curator to widen that one group. The
literal parts are the template's text, escaped. The result must compile in RE2 (the `re2`
module) and match every sample; it then goes through the record validation and test
bench like any curator's pattern (docs/reliability.md#r13-pattern-admission).

A gap folded by similarity may hold samples whose wording differs a little from its
template; the draft is then made from the samples' templates merged (`merge_templates`:
differing words become one variable), and `ValueError` says so when even that matches
not all of them (the curator writes it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from difflib import SequenceMatcher

import re2

from .gaps import VAR, template_of

__all__ = ["GROUPS", "MIN_LITERAL_CHARS", "merge_templates", "pattern_from_template"]

#: Variable groups from the most to the least specific; the first whose class every
#: sample value fits is used.
GROUPS = (
    (re.compile(r"\d{1,20}"), r"(\d{1,20})"),
    (re.compile(r"[-+]?[0-9.,_:]{1,40}"), r"([-+]?[0-9.,_:]{1,40})"),
    (re.compile(r"[^ \t\r\n]{1,80}"), r"([^ \t\r\n]{1,80})"),
    (re.compile(r".{1,80}", re.S), r"(.{1,80}?)"),
)
_SPACES = r"[ \t]{1,4}"  # when the samples' spacing differs from the template's single spaces
_ANY = r"(.*?)"  # only to read the samples' values (RE2 is linear), never in a draft
#: A draft with less literal text than this would match too much to publish.
MIN_LITERAL_CHARS = 8
_MAX_SAMPLE_CHARS = 2000


def pattern_from_template(template: str, samples: Sequence[str]) -> str:
    """A bounded, RE2-compatible regex for ``template`` that matches every sample."""
    samples = [s[:_MAX_SAMPLE_CHARS] for s in samples if s]
    merged = merge_templates([template, *(template_of(s) for s in samples)])
    for candidate in dict.fromkeys((template, merged)):
        for flags in ("", "(?i)"):
            for space in (" ", _SPACES):
                pattern = _pattern(candidate, samples, flags, space)
                if pattern is not None:
                    return pattern
    raise ValueError(f"no draft pattern from {template!r} matches all {len(samples)} samples")


def merge_templates(templates: Sequence[str]) -> str:
    """One template covering all: words every template has, in order, stay; each run of
    words where they differ becomes one variable (a gap folded by similarity holds
    reports whose wording differs a little)."""
    merged = templates[0].split(" ") if templates else []
    for other in templates[1:]:
        words = other.split(" ")
        out: list[str] = []
        a = b = 0
        for block in SequenceMatcher(None, merged, words, autojunk=False).get_matching_blocks():
            if (block.a > a or block.b > b) and (not out or out[-1] != VAR):
                out.append(VAR)
            out.extend(merged[block.a : block.a + block.size])
            a, b = block.a + block.size, block.b + block.size
        merged = out
    return " ".join(merged)


def _pattern(template: str, samples: list[str], flags: str, space: str) -> str | None:
    pieces = template.split(VAR)
    literals = [p.strip(" ") for p in pieces]
    if sum(len(p) for p in literals) < MIN_LITERAL_CHARS:
        return None
    escaped = [_escape(p, space) for p in literals]
    # Reading the values: spaces next to a variable are optional, so a variable that is
    # empty in one sample ("peer <*> could" vs "peer could") still reads.
    reader = re2.compile(flags + r"\s*(.*?)\s*".join(escaped))
    values: list[list[str]] = [[] for _ in range(len(literals) - 1)]
    for sample in samples:
        m = reader.search(sample)
        if m is None:
            return None
        for i in range(len(values)):
            values[i].append(m.group(i + 1) or "")
    parts = [flags, escaped[0]]
    for i, vals in enumerate(values):
        # A variable at either end adds nothing to an unanchored search: leave it out.
        edge = (i == 0 and not literals[0]) or (i == len(values) - 1 and not literals[-1])
        if not edge:
            lead = pieces[i].endswith(" ") and bool(literals[i])
            trail = pieces[i + 1].startswith(" ") and bool(literals[i + 1])
            parts.append(_group(vals, lead, trail, space))
        parts.append(escaped[i + 1])
    pattern = "".join(parts)
    try:
        compiled = re2.compile(pattern)
    except re2.error:
        return None
    if not all(compiled.search(s) for s in samples):
        return None
    return pattern


def _escape(literal: str, space: str) -> str:
    return space.join(re.escape(word) for word in literal.split(" ") if word)


def _group(values: list[str], lead: bool, trail: bool, space: str) -> str:
    """The group for one variable, with the spaces the template has around it (optional
    when a sample has the variable empty)."""
    present = [v for v in values if v]
    optional = len(present) < len(values)
    group = r"(.{1,80}?)"
    for shape, candidate in GROUPS:
        if all(shape.fullmatch(v) for v in present):
            group = candidate
            break
    if optional:
        group = group.replace("{1,", "{0,", 1)
        space = r"[ \t]{0,4}" if space != " " else " ?"
    return (space if lead else "") + group + (space if trail else "")
