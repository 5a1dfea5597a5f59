"""Cheap, linear-time classification of log lines: error-looking, INFO chatter, frames.

Used for tie-breaking in the ranking and for choosing which lines to ask the similarity
index about. Deliberately no backtracking regexes: these run on user text of any shape
(a 5,000-character run of one letter made the obvious regex quadratic), so they work on
words from `str.split` and single-class scans, and look only at a bounded prefix.
"""

from __future__ import annotations

import re

MAX_CHARS = 400
_WORDS = re.compile(r"[A-Za-z]+")  # one character class, greedy: linear
_ERROR_WORDS = frozenset(
    [
        "error",
        "err",
        "errors",
        "fatal",
        "critical",
        "panic",
        "panicked",
        "exception",
        "warn",
        "warning",
        "failed",
        "failure",
        "invalid",
        "cannot",
        "unable",
        "refused",
        "denied",
        "traceback",
    ]
)
_ERROR_PHRASES = ("caused by", "not found", "timed out", "timeout", "can't", "could not")
_CLASS_SUFFIXES = ("Error", "Exception", "Warning")
INFO_WORDS = frozenset(("info", "debug", "trace", "notice"))
_INFO_WORDS = INFO_WORDS
_FRAME_PREFIXES = ('File "', "Traceback (most recent", "at ", "... ")


def words(text: str) -> list[str]:
    return _WORDS.findall(text[:MAX_CHARS])


def is_errorish(text: str) -> bool:
    """A level word, an exception class name or an error phrase in the text."""
    head = text[:MAX_CHARS]
    for w in _WORDS.findall(head):
        if w.lower() in _ERROR_WORDS or (len(w) > 5 and w.endswith(_CLASS_SUFFIXES)):
            return True
    low = head.lower()
    return any(p in low for p in _ERROR_PHRASES)


def is_infoish(text: str) -> bool:
    """An INFO/DEBUG/TRACE level among the first few tokens."""
    for tok in text[:MAX_CHARS].split(None, 5)[:5]:
        if tok.strip("[]():|<>-").lower() in _INFO_WORDS:
            return True
    return False


def is_frame(text: str) -> bool:
    """A stack-trace frame or traceback header rather than a message."""
    s = text[:MAX_CHARS].lstrip()
    if s.startswith(_FRAME_PREFIXES) and ("(" in s or s.startswith(('File "', "Traceback"))):
        return True
    digits = len(s) - len(s.lstrip("0123456789"))
    return 0 < digits < 4 and s[digits : digits + 2] == ": " and "::" in s
