"""What to read first in a whole log: the root cause of a chain, then the earliest error.

A log with several known errors is usually one failure told several times: a Java
exception and its ``Caused by:`` list, a Python traceback chained to the one it was raised
from ("The above exception was the direct cause of the following exception"), an anyhow
``Caused by:`` list. The error to read first is the innermost link of such a chain (the
one the others wrap), then errors in the order they first appeared; an error that wraps
another comes right after the one it wraps. Each group gets a short reason saying why it
is where it is.

Chains are found from their markers (``str.find`` over the text, at C speed); only the
lines around markers are walked one by one, in bounded windows, so a log without chained
exceptions costs three searches and a log full of them costs one pass over their lines.
Record tags are not used as hints: a tag says what an error is about, not what it follows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from .lineclass import INFO_WORDS, is_frame, is_infoish
from .textmap import Text
from .types import Answer, Group

CAUSED = "Caused by"  # Java "Caused by: x.Y: msg"; anyhow "Caused by:" and its list
PY_MARKERS = (
    "The above exception was the direct cause of the following exception",
    "During handling of the above exception, another exception occurred",
)
PY_SHARED = "above exception"
PY_SHARED_AT = max(p.index(PY_SHARED) for p in PY_MARKERS)
MARKER_CHARS = max(map(len, PY_MARKERS))
TRACEBACK = "Traceback (most recent call last)"
MAX_MARKERS = 4000  # markers looked at per text; the rest of a huge log is ordered by time
BACK_LINES = 200  # lines before a chain's first marker searched for the error it wraps
GAP_CHARS = 2000  # markers closer than this are walked in one window
MAX_WALKED_LINES = 200_000
HEAD_LINES = 2  # a log line and the exception line it prints form one head
LINE_HEAD = 400  # characters of a line classified
MAX_INDENT = 40  # a marker counts when only this much space precedes it on its line
_INDENT = (" ", "\t")
_CHATTER_HEAD = 120  # an INFO level word stands this near a line's start
OUTER = -1  # a line that wraps the whole chain (the log line above a traceback)


@dataclass(slots=True)
class Chain:
    """One chained exception: its first line, its deepest link and how it was told."""

    start: int  # offset of its first line
    style: str = "caused-by"  # or "python"
    max_depth: int = 0
    lines: list[tuple[int, int, int]] = field(default_factory=list)  # (start, depth, py_before)
    py_markers: int = 0
    markers: int = 0

    def depth(self, links_above: int, py_before: int) -> int:
        """How deep a line is in the chain: each ``Caused by`` link below the head is one
        deeper; a Python traceback is as deep as the chained tracebacks printed after it
        (those were raised from or while handling it)."""
        return -1 if py_before == OUTER else links_above + self.py_markers - py_before


# Indented lines, each up to its newline: the alternatives never overlap (a line starts
# with a space or a tab, runs to its newline), so the match is linear in what it consumes.
_FRAMES = re.compile(r"(?:[ \t][^\n]*\n)*")


# the level words `is_infoish` looks for, as substrings (an alternation of literals: linear)
_CHATTER_HINT = re.compile("|".join(map(re.escape, sorted(INFO_WORDS))))


def _chatter(line: str) -> bool:
    """`is_infoish`, after a substring pre-check that answers most lines at C speed."""
    low = line[:_CHATTER_HEAD].lower()
    return _CHATTER_HINT.search(low) is not None and is_infoish(line)


def _markers(text: str) -> list[int]:
    """Offsets of the lines that start with a chain marker; two C-speed searches in all
    (both Python sentences hold "above exception")."""
    out: list[int] = []
    for m in (CAUSED, PY_SHARED):
        pos = text.find(m)
        while pos >= 0 and len(out) < MAX_MARKERS:
            ls = text.rfind("\n", 0, pos) + 1
            if pos - ls <= MAX_INDENT + PY_SHARED_AT:
                head = text[ls : ls + MAX_INDENT + MARKER_CHARS].lstrip()
                if head.startswith(CAUSED) or head.startswith(PY_MARKERS):
                    out.append(ls)
            pos = text.find(m, pos + len(m))
    out.sort()
    return out


class _Walk:
    """The forward walk over a window of lines, one chain at a time."""

    def __init__(self, chains: list[Chain]) -> None:
        self.chains = chains
        self.cur: Chain | None = None
        self._reset()

    def _reset(self) -> None:
        self.depth = 0
        self.head = 0
        self.framed = False  # frames (or a link) seen: the next plain line is a new error
        self.in_tb = False  # a Python traceback is open, its exception line not yet seen
        self.after_marker = False
        self.items = False  # inside an anyhow list of causes
        self.item_seen = False

    def close(self) -> None:
        c = self.cur
        if c is not None and c.markers:
            for _s, d, before in c.lines:
                c.max_depth = max(c.max_depth, c.depth(d, before))
            c.style = "python" if c.py_markers else "caused-by"
            self.chains.append(c)
        self.cur = None
        self._reset()

    def _new(self, pos: int) -> Chain:
        self.close()
        self.cur = Chain(pos)
        return self.cur

    def _add(self, pos: int) -> None:
        c = self.cur if self.cur is not None else self._new(pos)
        c.lines.append((pos, self.depth, c.py_markers))

    def line(self, pos: int, s: str) -> bool:
        """Take one line; True when it starts a new chain."""
        if s[:1] in _INDENT and not self.items and CAUSED not in s:
            # the bulk of a trace: an indented frame or source line (a nested "Caused by"
            # under "Suppressed:" goes the long way)
            if s.strip():
                self.framed = True
            return False
        st = s.lstrip()
        fresh = False
        if not st:
            self.items = False
        elif st.startswith(CAUSED):
            rest = st[len(CAUSED) :]
            c = self.cur if self.cur is not None else self._new(pos)
            fresh = c.markers == 0 and not c.lines
            c.markers += 1
            self.framed = True
            if rest.startswith(":") and rest[1:].strip():  # Java: the link is on this line
                self.depth += 1
                self.items = False
                self._add(pos)
            else:  # "Caused by:" / "Caused by these errors (...):": a list follows
                self.items = True
                self.item_seen = False
        elif st.startswith(PY_MARKERS):
            c = self.cur if self.cur is not None else self._new(pos)
            c.markers += 1
            c.py_markers += 1
            self.after_marker = True
        elif st.startswith(TRACEBACK):
            cur = self.cur
            if cur is not None and not self.framed and not cur.markers:
                # `logger.exception`: the log line printed above the traceback wraps it all
                cur.lines = [(s_, d, OUTER) for s_, d, _b in cur.lines]
            elif cur is None or not self.after_marker:
                self._new(pos)
                fresh = True
            self.after_marker = False
            self.in_tb = True
        elif self.items and len(st) < len(s):  # an item of an anyhow list
            digits = len(st) - len(st.lstrip("0123456789"))
            if not self.item_seen or (digits and st[digits : digits + 1] in ":."):
                self.depth += 1
            self.item_seen = True
            self._add(pos)
        elif len(st) < len(s) or is_frame(st) or st.startswith("... "):
            self.framed = True
        elif _chatter(st):  # chatter between errors belongs to no chain
            self.close()
            fresh = True
        elif self.in_tb:  # the exception line that ends a traceback
            self.in_tb = False
            self.framed = True
            self._add(pos)
        elif self.cur is not None and not self.framed and self.head < HEAD_LINES:
            self.head += 1
            self._add(pos)
        else:
            self._new(pos)
            self.head = 1
            self._add(pos)
            fresh = True
        return fresh


def find_chains(text: str) -> list[Chain]:
    """Every chained exception of the text with a marker (bounded, see module doc)."""
    marks = _markers(text)
    chains: list[Chain] = []
    n = len(text)
    cursor = walked = k = 0
    while k < len(marks) and walked < MAX_WALKED_LINES:
        first = marks[k]
        start = text.rfind("\n", 0, first) + 1
        for _ in range(BACK_LINES):  # back to the chatter before the chain's head
            if start <= cursor:
                start = cursor
                break
            p = text.rfind("\n", cursor, start - 1)
            head = text[p + 1 : min(start - 1, p + 1 + LINE_HEAD)]
            if head[:1] not in _INDENT and _chatter(head):  # (frames are indented)
                break
            start = p + 1
            if p < 0:
                start = cursor
                break
        walk = _Walk(chains)
        pos = start
        while pos <= n and walked < MAX_WALKED_LINES:
            if not walk.items and text.startswith(_INDENT, pos):
                # a block of frames in one C-speed step; the long way if it nests a link
                frames = _FRAMES.match(text, pos)
                assert frames is not None  # the pattern matches the empty string too
                end = frames.end()
                if end > pos and text.find(CAUSED, pos, end) < 0:
                    walk.framed = True
                    walked += 1
                    pos = end
                    continue
            nl = text.find("\n", pos)
            le = n if nl < 0 else nl
            walked += 1
            while k < len(marks) and marks[k] < le:
                k += 1
            fresh = walk.line(pos, text[pos : min(le, pos + LINE_HEAD)])
            if fresh and pos > first and (k >= len(marks) or marks[k] > pos + GAP_CHARS):
                walk.cur = None  # this line begins an unrelated error: the next window's
                break
            pos = le + 1
        walk.close()
        cursor = min(pos, n)
    return chains


@dataclass(frozen=True, slots=True)
class Occurrences:
    """One record's hits over a whole log, before ordering."""

    key: str
    count: int
    first_line: int
    last_line: int
    confident: bool
    starts: list[int]  # offsets (in the scanned text) of the lines it hit


def _by_a_trace(text: str, start: int) -> bool:
    """Whether the hit line at ``start`` can be part of a chained exception: it is a link
    or a frame itself, or a frame, a link, a traceback or a blank line follows it. When no
    hit line is, the marker searches over the whole text are skipped."""
    line = text[start : start + LINE_HEAD]
    if line[:1] in _INDENT or line.startswith(CAUSED):
        return True
    nl = text.find("\n", start)
    if nl < 0:
        return False
    nxt = text[nl + 1 : nl + 1 + LINE_HEAD]
    return nxt[:1] in _INDENT or not nxt.strip() or nxt.startswith((CAUSED, TRACEBACK))


def order_groups(text: str, items: list[Occurrences]) -> list[Group]:
    """``items`` as `Group`s, in the order to read them, each with its reason.

    Roots are placed by their first lines (the errors of one chain are placed by their
    links, not by their lines), so no offset is mapped back to the original paste here.
    """
    near = any(_by_a_trace(text, s) for it in items for s in it.starts)
    chains = find_chains(text) if near else []
    links: dict[int, tuple[int, int]] = {}
    for ci, chain in enumerate(chains):
        for s, d, before in chain.lines:
            links.setdefault(s, (ci, chain.depth(d, before)))
    occ: dict[int, tuple[int, int, int]] = {}  # item -> (chain, depth, line start)
    for i, it in enumerate(items):
        for s in it.starts:
            hit = links.get(s)
            if hit is not None and (i not in occ or s < occ[i][2]):
                occ[i] = (hit[0], hit[1], s)
    # a weak (generic pattern) hit neither causes nor follows a confident one: confident
    # groups stay first
    by_chain: dict[tuple[int, bool], list[tuple[int, int, int]]] = {}
    for i, (ci, d, s) in occ.items():
        by_chain.setdefault((ci, items[i].confident), []).append((d, s, i))
    cause: dict[int, int] = {}
    for members in by_chain.values():
        members.sort()
        for pos, (d, _s, i) in enumerate(members):
            deeper = next((m for m in members[pos + 1 :] if m[0] > d), None)
            if deeper is not None:
                cause[i] = deeper[2]
    children: dict[int, list[int]] = {}
    for i, j in cause.items():
        children.setdefault(j, []).append(i)

    roots = sorted(
        (i for i in range(len(items)) if i not in cause),
        key=lambda i: (not items[i].confident, items[i].first_line),
    )
    out: list[Group] = []
    for r in roots:
        stack = [r]
        while stack:
            i = stack.pop()
            it = items[i]
            why = _reason(i, len(out), occ, chains, cause, items)
            c = cause.get(i)
            out.append(
                Group(it.key, it.count, it.first_line, it.last_line, it.confident,
                      len(out) + 1, why, items[c].key if c is not None else None)
            )  # fmt: skip
            # direct consequences first (the shallower link wraps the deeper one)
            kids = children.get(i)
            if kids:
                kids.sort(key=lambda j: (-occ[j][1], items[j].first_line))
                stack.extend(reversed(kids))
    return out


def _reason(
    i: int,
    placed: int,
    occ: dict[int, tuple[int, int, int]],
    chains: list[Chain],
    cause: dict[int, int],
    items: list[Occurrences],
) -> str:
    c = cause.get(i)
    if c is not None:
        chain = chains[occ[i][0]]
        link = (
            'a chained traceback ("The above exception ..." / "During handling ...")'
            if chain.style == "python"
            else 'a "Caused by" line'
        )
        return f"consequence of the error on line {items[c].first_line}, linked by {link}"
    if i in occ:
        chain = chains[occ[i][0]]
        if occ[i][1] < chain.max_depth:
            return "innermost known cause of its chain (deeper causes match no record)"
        if chain.style == "python":
            return "root cause: the first exception of a chained traceback"
        return "root cause: innermost Caused by"
    if placed == 0 and items[i].confident:
        return "first error in the log"
    return f"first seen on line {items[i].first_line}"


# `request_id=abc123`, `"trace_id": "4bf92f35"`, `X-Request-ID: 9f1c…`: one request's errors
_REQUEST_ID = re.compile(
    r"(?i)\b(?:x-)?(?:request|req|trace|correlation)[_-]?id[\"']?[ \t]*[:=][ \t]*[\"']?"
    r"([\w.:/-]{6,80})"
)
# a fixed part of each spelling `_REQUEST_ID` reads, lowercased: without one a line names
# no id (none of their letters has a non-ASCII case twin, so lowercasing keeps them in a row)
_ID_WORDS = ("req", "trace", "correlat")


def _may_name_an_id(line: str) -> bool:
    low = line.lower()
    return any(w in low for w in _ID_WORDS)


GO_CHAIN = ": "  # Go's fmt.Errorf("...: %w", err) prints the wrapped error after this
LINK_LINE_CHARS = 4000  # characters of a line searched for an id or a chained message


def link_answers(answers: list[Answer], text: Text) -> list[Answer]:
    """Errors a chained exception does not link, linked by what else ties them: the same
    request or trace id on both lines, or a Go error chain (a later line ending with
    ``": "`` and an earlier error's message: the later one wraps it). A consequence comes
    right after the error it follows, and its reason names the link; the earlier error
    is the cause, so links never form a cycle. ``text`` is the original paste."""
    if len(answers) < 2:
        return answers
    line_of: dict[str, str] = {}
    ids: dict[str, set[str]] = {}
    for a in answers:
        s, e = a.match.span
        ls = text.rfind("\n", 0, s) + 1
        le = text.find("\n", e)
        line = text[ls : len(text) if le < 0 else le][:LINK_LINE_CHARS]
        line_of[a.key] = line
        ids[a.key] = set(_REQUEST_ID.findall(line)) if _may_name_an_id(line) else set()
    # the first earlier answer (in `answers` order) tied to each: found through indexes by
    # id and by message, not by trying every pair (a whole log has thousands of answers)
    by_id: dict[str, list[int]] = {}
    by_inner: dict[str, list[int]] = {}
    for i, a in enumerate(answers):
        for x in ids[a.key]:
            by_id.setdefault(x, []).append(i)
        inner = a.match.text.strip()
        if inner:
            by_inner.setdefault(inner, []).append(i)
    links: dict[str, tuple[Answer, str]] = {}
    for b in answers:
        if b.cause is not None:
            continue
        found: set[int] = set()
        for x in ids[b.key]:
            found.update(by_id[x])
        line = line_of[b.key].rstrip()
        at = line.find(GO_CHAIN)
        while at >= 0:
            found.update(by_inner.get(line[at + len(GO_CHAIN) :], ()))
            at = line.find(GO_CHAIN, at + 1)
        for i in sorted(found):
            a = answers[i]
            if a is b or a.first_line >= b.first_line:
                continue
            shared = ids[a.key] & ids[b.key]
            if shared:
                links[b.key] = (a, f"the same request id {min(shared)}")
            else:
                why = f"a Go error chain (this message ends with the error of line {a.first_line})"
                links[b.key] = (a, why)
            break
    if not links:
        return answers
    children: dict[str, list[Answer]] = {}
    for b in answers:
        if b.key in links:
            children.setdefault(links[b.key][0].key, []).append(b)
    out: list[Answer] = []

    def place(a: Answer) -> None:
        link = links.get(a.key)
        if link is not None:
            cause, why = link
            reason = f"consequence of the error on line {cause.first_line}, linked by {why}"
            a = replace(a, reason=reason, cause=cause.key)
        out.append(replace(a, order=len(out) + 1))
        for child in children.get(a.key, ()):
            place(child)

    for a in answers:
        if a.key not in links:
            place(a)
    return out
