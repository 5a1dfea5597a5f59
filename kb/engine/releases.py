"""The release a paste comes from, read only from what the paste itself shows.

A record learned from a source's releases knows where its raising site was, release by
release (``locations``: a file and a line per range of releases), and which releases
printed each of its wordings. A paste often says which release printed it: a Python
traceback's ``File ".../sqlalchemy/orm/query.py", line 2889``, a Java frame's
``at org.apache.kafka.clients.NetworkClient.poll(NetworkClient.java:562)``, a Go frame's
``/go/pkg/.../server.go:123``, or a version string such as ``SQLAlchemy 1.3.24`` or
``Django version 3.2.5``. This module compares the two: a frame in the record's file whose
line number is a line the site had places the paste in those releases; a version string
naming the record's software (one version only) places it in that release. Nothing is
inferred beyond that: no frame in the record's file at a line it had, and no single
version string, means no fit is claimed.

The caller owns the records and the order of releases (`ReleaseFacts.order`, a sort key
for version names): nothing here knows how a project numbers its releases.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .evidence import Context
from .rank import Candidate
from .types import ReleaseFit

FIT = 2  # weight of a reading whose wording the paste's release fits (minus: contradicts)
NEAR_LINES = 2  # a frame this many lines above a site's line still points at it (a
# statement spanning lines is reported at its first line)
MAX_FRAMES = 2000  # frames read from one paste
MAX_VERSION_HITS = 64  # occurrences of a software's name read for a version string
_JAVA_FRAME = re.compile(
    r"\bat ([\w$.]{1,400})\(([\w$-]{1,200}\.(?:java|kt|scala|groovy)):(\d{1,7})\)"
)
_GO_FRAME = re.compile(r"^[ \t]+(\S{1,400}\.go):(\d{1,7})\b", re.MULTILINE)
# right after a software's name: `1.3.24`, ` version 3.2.5`, `==1.3.24`, `-1.3.24`, `/v3.5.0`
_VERSION_AFTER = re.compile(
    r"(?:[ \t]{0,3}(?:==|[=:/@-])?[ \t]{0,3})(?:version[ \t]{1,3})?v?"
    r"(\d{1,5}(?:\.\d{1,6}){1,3}(?:(?:[-.]?(?:rc|a|b|alpha|beta|dev|post)\.?\d{0,4}))?)"
    r"(?!\w|\.\d|/)",  # a full stop may follow; another part or a path may not
    re.IGNORECASE,
)
_SPLIT = re.compile(r"[/\\]+")


@dataclass(frozen=True, slots=True)
class Location:
    """Where a site was over a run of releases (``path`` as in its repository)."""

    path: str
    line: int
    first: str
    last: str


@dataclass(frozen=True, slots=True)
class ReleaseFacts:
    """What the caller knows of one record's releases."""

    name: str  # what its software is called in a version string ("sqlalchemy")
    order: Callable[[str], Any]  # sort key of a release name (oldest first)
    wordings: Mapping[str, tuple[str, str]]  # pattern -> (first, last), the current included
    locations: tuple[Location, ...] = ()  # oldest first


ReleasesOf = Callable[[Iterable[str]], Mapping[str, ReleaseFacts]]


@dataclass(frozen=True, slots=True)
class PasteFrame:
    path: str  # parts joined by "/", lowercased
    line: int
    shown: str  # as the paste prints it


def frames_of(text: str, ctx: Context) -> list[PasteFrame]:
    """Every frame of the paste with a file and a line: Python's (read by `evidence`),
    Java's and Go's (read here, only when a record with locations matched)."""
    out = [PasteFrame(_norm(f.path), f.line, f'{f.path}", line {f.line}') for f in ctx.frames]
    if any(ext in text for ext in (".java:", ".kt:", ".scala:", ".groovy:")):
        for m in _JAVA_FRAME.finditer(text):
            qualified, file, line = m.group(1), m.group(2), int(m.group(3))
            package = []
            for part in qualified.split(".")[:-1]:  # the method is last
                if not part[:1].islower():
                    break  # the class: the package ends before it
                package.append(part)
            out.append(PasteFrame(_norm("/".join([*package, file])), line, f"{file}:{line}"))
            if len(out) >= MAX_FRAMES:
                break
    if ".go:" in text:
        for m in _GO_FRAME.finditer(text):
            out.append(PasteFrame(_norm(m.group(1)), int(m.group(2)), m.group(0).strip()))
            if len(out) >= MAX_FRAMES:
                break
    return out[:MAX_FRAMES]


def _norm(path: str) -> str:
    return "/".join(p for p in _SPLIT.split(path.lower()) if p)


def _same_file(frame: str, site: str) -> bool:
    """The frame's path ends with the site's last three parts (or all, if fewer): the
    package-relative path, which an installed copy shares with the repository."""
    parts = site.split("/")
    tail = "/".join(parts[-3:])
    return frame == tail or frame.endswith("/" + tail)


def fit_of(text: str, frames: list[PasteFrame], facts: ReleaseFacts) -> ReleaseFit | None:
    """The releases the paste places this record in, or None when it does not say."""
    by_lines = _by_lines(frames, facts)
    if by_lines is not None:
        return by_lines
    return _by_version(text, facts)


def _by_lines(frames: list[PasteFrame], facts: ReleaseFacts) -> ReleaseFit | None:
    if not facts.locations or not frames:
        return None
    sites = [(_norm(loc.path), loc) for loc in facts.locations]
    exact: list[int] = []
    near: list[int] = []
    shown = ""
    for fr in frames:
        for i, (path, loc) in enumerate(sites):
            if not _same_file(fr.path, path):
                continue
            if fr.line == loc.line:
                exact.append(i)
                shown = shown or fr.shown
            elif loc.line - NEAR_LINES <= fr.line < loc.line:
                near.append(i)
                shown = shown or fr.shown
    hits = sorted(set(exact or near))
    if not hits:
        return None
    runs: list[tuple[str, str]] = []
    prev = -2
    for i in hits:  # adjacent ranges of the list are adjacent releases: one run
        loc = facts.locations[i]
        if i == prev + 1 and runs:
            runs[-1] = (runs[-1][0], loc.last)
        else:
            runs.append((loc.first, loc.last))
        prev = i
    return ReleaseFit(tuple(runs), "line numbers", shown)


def _by_version(text: str, facts: ReleaseFacts) -> ReleaseFit | None:
    """One version of the record's software named in the paste (several: no claim)."""
    name = facts.name.lower()
    if len(name) < 3:
        return None
    low = text.lower() if text.isascii() else text.casefold()
    if len(low) != len(text):
        return None  # case folding moved offsets: read nothing rather than misread
    found: dict[str, str] = {}
    at = low.find(name)
    seen = 0
    while at >= 0 and seen < MAX_VERSION_HITS:
        seen += 1
        end = at + len(name)
        before = low[at - 1] if at else " "
        if not (before.isalnum() or before in "_-./"):
            m = _VERSION_AFTER.match(text, end)
            if m is not None:
                found.setdefault(m.group(1), text[at : m.end()].strip())
        at = low.find(name, end)
    if len(found) != 1:
        return None
    version, shown = next(iter(found.items()))
    return ReleaseFit(((version, version),), "version", shown)


def consistent(fit: ReleaseFit, span: tuple[str, str], order: Callable[[str], Any]) -> bool:
    """Whether the releases ``span`` (first, last) overlap one of the fit's runs."""
    try:
        lo, hi = order(span[0]), order(span[1])
        return any(order(a) <= hi and lo <= order(b) for a, b in fit.ranges)
    except (TypeError, ValueError):
        return False


def place(
    text: str,
    ctx: Context,
    sure: list[Candidate],
    keys_of: Callable[[int], list[str]],
    pattern_of: Callable[[int], str],
    facts: Mapping[str, ReleaseFacts],
) -> tuple[dict[str, ReleaseFit], dict[int, list[str]], dict[int, int]]:
    """For each confident candidate: the fit of each of its records, its records
    reordered so that those whose wording the fit agrees with come first, and a weight
    (`FIT`, or minus it when the fit contradicts the wording read, 0 without a fit).
    Returns (key -> fit, pid -> keys reordered, pid -> weight)."""
    fits: dict[str, ReleaseFit] = {}
    order_of: dict[int, list[str]] = {}
    weight: dict[int, int] = {}
    frames: list[PasteFrame] | None = None
    done: set[str] = set()
    for c in sure:
        ks = keys_of(c.pid)
        pattern = pattern_of(c.pid)
        score: dict[str, int] = {}
        for k in ks:
            f = facts.get(k)
            if f is None:
                continue
            if k not in done:
                done.add(k)
                if frames is None and f.locations:
                    frames = frames_of(text, ctx)
                got = fit_of(text, frames or [], f)
                if got is not None:
                    fits[k] = got
            fit = fits.get(k)
            span = f.wordings.get(pattern)
            if fit is not None and span is not None:
                score[k] = FIT if consistent(fit, span, f.order) else -FIT
        if score:
            ordered = sorted(ks, key=lambda k: -score.get(k, 0))  # stable: evidence order kept
            order_of[c.pid] = ordered
            weight[c.pid] = score.get(ordered[0], 0)
    return fits, order_of, weight
