"""What near-miss search compares: a template's literal words, a pasted line's words.

Why this exists apart from `similar.py`: the index (postings, IDF weights, scoring) only
ever sees words. Turning a message template into its literal text (placeholders in the
source's own syntax dropped), a pasted line into comparable text (bounded, paths and URLs
blanked, in linear time whatever its shape) and both into word tokens -- and putting a
suggestion's evidence back into words for people (`explain`) -- is text handling with its
own pitfalls (ReDoS, printf/format syntaxes), tested on its own.
"""

from __future__ import annotations

import re
from array import array

from rapidfuzz import fuzz

# Placeholders in the source's own syntax: Python %(name)s, printf %s %d %5.2f
# %v %q %w, Rust/Python/SLF4J {} {:?} {0} {name} {:#?}. Literal braces written
# as {{ }} in Rust expect() texts are kept as text.
_PLACEHOLDER_FORMS = (
    r"%\([^)]{0,40}\)[-#0 +]*\d*(?:\.\d+)?[a-zA-Z]",  # Python %(name)s
    r"%[-#0 +]*\d*(?:\.\d+)?[a-zA-Z]",  # printf
    r"(?<!\{)\{[^{}\n]{0,60}\}(?!\})",  # Rust, Python, SLF4J braces
)
_PLACEHOLDER = re.compile("|".join(_PLACEHOLDER_FORMS))
_TOKEN = re.compile(r"[a-z0-9_]+")
# In a pasted line, paths and URLs (anything with a slash) are values or stack
# frames, not message wording: "at ./src/stream/executor/error.rs:40" must not
# look like the template "Executor error: {}".
# A token (a run of characters other than whitespace and '"()[]{}<>,;) is path-like when
# it holds two or more slashes, or a slash not preceded by a word character ("./x", "/x",
# "http://"); one slash inside a word ("i/o", "Topic/Partition") is wording. Tokens are
# found by one split on a single greedy separator class (linear time: no backtracking on
# long unbroken tokens such as "x=x=x=..."), and judged with str methods.
_SEPARATORS = re.compile(r"([\s'\"()\[\]{}<>,;]+)")
_HAS_ALPHA = re.compile(r"[a-z]")

_MAX_QUERY_CHARS = 2000  # longer lines are cut before scoring


def literal_text(template: str) -> str:
    """The template with its placeholders removed (runs of spaces collapsed)."""
    text = _PLACEHOLDER.sub(" ", template).replace("{{", "{").replace("}}", "}")
    return " ".join(text.split())


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens that contain a letter (pure numbers are values)."""
    return [t for t in _TOKEN.findall(text.lower()) if _HAS_ALPHA.search(t)]


def _clean_line(line: str) -> str:
    """The part of a pasted line that is compared: bounded, paths and URLs blanked.

    Linear in the line's length whatever its shape (see `_SEPARATORS`).
    """
    line = line[:_MAX_QUERY_CHARS]
    if "/" not in line and "\\" not in line:
        return line
    parts = _SEPARATORS.split(line)
    for i in range(0, len(parts), 2):  # even indices: tokens; odd: separator runs
        tok = parts[i]
        if ("/" in tok or "\\" in tok) and _pathlike(tok):
            parts[i] = " "
    return "".join(parts)


def _pathlike(tok: str) -> bool:
    slashes = tok.count("/") + tok.count("\\")
    if slashes >= 2:
        return True
    i = max(tok.find("/"), tok.find("\\"))
    if i == 0:
        return True
    prev = tok[i - 1]
    return not (prev.isalnum() or prev == "_")


def explain(
    lit: str, line: str, qtoks: set[str], vocab: dict[str, int], idf: array, score: float
) -> str:
    """Why template text ``lit`` was suggested for ``line``: aligned wording, rare words
    shared, words the line lacks (``qtoks``: the line's tokens; ``vocab``/``idf``: the
    index's word ids and weights)."""
    line = _clean_line(line)
    etoks = list(dict.fromkeys(tokens(lit)))
    shared = sorted((t for t in etoks if t in qtoks), key=lambda t: -idf[vocab[t]])
    missing = sorted((t for t in etoks if t not in qtoks), key=lambda t: -idf[vocab[t]])
    parts = []
    al = fuzz.partial_ratio_alignment(lit, line, processor=None)
    if al is not None and al.score >= 60:
        snippet_t = _clip(_widen(lit, al.src_start, al.src_end))
        snippet_l = _clip(_widen(line, al.dest_start, al.dest_end))
        parts.append(f"{round(score * 100)}% similar wording: '{snippet_t}' ≈ '{snippet_l}'")
    else:
        parts.append(f"{round(score * 100)}% similar")
    shared = [t for t in shared if len(t) > 2] or shared
    missing = [t for t in missing if len(t) > 2]
    rare = [t for t in shared if idf[vocab[t]] >= 3.0][:4] or shared[:3]
    if rare:
        parts.append("shares rare words: " + ", ".join(rare))
    if missing:
        parts.append("line lacks: " + ", ".join(missing[:3]))
    return "; ".join(parts)


def _widen(text: str, start: int, end: int) -> str:
    """``text[start:end]`` extended to whole words at both ends."""
    while start > 0 and text[start - 1].isalnum():
        start -= 1
    while end < len(text) and text[end].isalnum():
        end += 1
    return text[start:end]


def _clip(s: str, n: int = 60) -> str:
    s = " ".join(s.split())
    return s if len(s) <= n else s[: n - 1] + "…"
