"""Collector envelopes: line prefixes that a log shipper or CI runner adds to every line.

Why this pass exists apart from `_prefix.py`: a prefix the *application* writes appears once
per record, and the message's continuation lines are bare, so leaving it in the scanned text
(patterns are unanchored) costs nothing. A prefix the *collector* writes -- ``kubectl logs
--prefix``, ``stern``, ``docker compose logs``, ``docker logs --timestamps``, journald and
syslog headers, CI runners' timestamps and workflow commands -- is repeated on every physical
line, so a message the application wrapped carries the prefix in the middle of its text and
no pattern can match it. Those are removed here, before the structure pass joins wrapped
lines, and each one removed is named in the steps ("removed kubectl --prefix envelope from
12 lines").

How an envelope is told from text that merely looks like one: most envelopes are only taken
when they open at least ``min_run`` consecutive lines (a one-off ``[a/b] `` in a message
stays), the generic ones must also repeat the same source label (``stern``'s pod and
container) or carry a *strict* form on one line of the run (a timestamp followed by the
message, not by an application's own padding). Workflow commands and syslog headers with a
priority are specific enough to be taken on one line. Stacked envelopes (``kubectl --prefix
--timestamps``, a journald header around a klog header) are peeled in up to `MAX_ROUNDS`
rounds.

Removal keeps the mapping exact: removed characters get no segment in the layer, the rest
is copied. Nothing is put in an envelope's place: a level word written on every line would
make each continuation line look like a new record to the joins, so markers that carry a
level (``##[error]``, ``::warning::``, klog headers) are not envelopes but prefixes the
application's record opens with, read by `_prefix.py`. All regexes are bounded and
anchored at a line start (found through a literal ``\\n``, at C speed), so the pass stays
linear in the paste.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._exports import EXPORT_START, unwrap_exports
from ._mapping import Builder, Layer

MAX_ROUNDS = 3


@dataclass(frozen=True, slots=True)
class Envelope:
    """One collector's line prefix."""

    name: str  # as the steps name it
    rx: str  # regex of the prefix at a line start; group k: the source label
    min_run: int = 2  # consecutive lines that must carry it
    keyed: bool = False  # the run must repeat the same label (group k)
    strict: str | None = None  # lookahead that one line of the run must satisfy
    own: str | None = None  # lookahead that marks the application's own layout: a run
    #                         with one such line is not an envelope
    eat_newline: bool = False  # the marker ended with CR (now a line break): drop it too
    whole_line: bool = False  # the line is the runner's own (a step marker): drop all of it
    suffix: str | None = None  # opens the last field it appends (a JSON object); then
    #                            only that goes, the prefix (with its level) stays


_RFC3339 = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d"
_BSD_TS = r"[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d"
_HOST_IDENT = r" [\w.:-]{1,255} [\w./@-]{1,128}(?:\[\d{1,10}\])?:(?: |(?=\n)|\Z)"
_BODY_FOLLOWS = r"(?=[^ \n])"

ENVELOPES: tuple[Envelope, ...] = (
    Envelope(
        "GitLab CI section marker",
        r"section_(?:start|end):\d{1,20}:[\w.-]{1,200}(?:\[[^\]\n]{0,200}\])?",
        min_run=1,
        eat_newline=True,
    ),
    Envelope(
        "GitHub Actions workflow command",
        r"(?:##\[(?:group|endgroup|command|section)\]|::(?:group|endgroup)::)",
        min_run=1,
    ),
    Envelope("Jenkins [Pipeline] marker", r"\[Pipeline\] ?", min_run=1, whole_line=True),
    Envelope(
        "syslog (RFC 5424)",
        r"<\d{1,3}>1 (?:-|" + _RFC3339 + r"(?:\.\d{1,6})?(?:Z|[+-]\d\d:\d\d))"
        r" \S{1,255} \S{1,48} \S{1,128} \S{1,32}"
        r" (?:-|(?:\[(?:[^\]\\\n]|\\.){0,1024}\]){1,16})(?: |(?=\n)|\Z)",
        min_run=1,
    ),
    Envelope(
        "syslog (RFC 3164)",
        r"<\d{1,3}>" + _BSD_TS + _HOST_IDENT,
        min_run=1,
    ),
    Envelope("journalctl/syslog short", _BSD_TS + _HOST_IDENT),
    Envelope("journalctl short-precise", _BSD_TS + r"\.\d{6}" + _HOST_IDENT),
    Envelope(
        "journalctl short-iso",
        _RFC3339 + r"(?:\.\d{6})?(?:Z|[+-]\d\d:?\d\d)" + _HOST_IDENT,
    ),
    Envelope(
        "kubectl --prefix",
        r"\[(?:pod/)?[a-z0-9][-a-z0-9.]{0,252}/[a-z0-9][-a-z0-9]{0,62}\](?: |(?=\n)|\Z)",
    ),
    Envelope(
        "stern",
        r"(?P<k>[a-z0-9][-a-z0-9.]{0,252}-[a-z0-9]{1,20} [a-z0-9][-a-z0-9]{0,62}) ",
        keyed=True,
    ),
    Envelope(
        "docker compose logs",
        r"[\w][\w.-]{0,63} {1,40}\|(?: |(?=\n)|\Z)",
    ),
    Envelope(
        "zap console fields",
        _RFC3339 + r"(?:\.\d{1,9})?(?:Z|[+-]\d\d:?\d\d)\t[A-Za-z]{3,6}\t",
        suffix='\t{"',
    ),
    Envelope("GitHub Actions timestamp", _RFC3339 + r"\.\d{7}Z ", strict=_BODY_FOLLOWS),
    Envelope(
        "docker logs --timestamps",
        _RFC3339 + r"(?:\.\d{1,9})?Z ",
        strict=_BODY_FOLLOWS,
        # tracing pads its level to five columns (`<ts>  INFO`, `<ts> ERROR`): its own
        own=r"(?= (?:TRACE|DEBUG|INFO|WARN)\b)",
    ),
    Envelope(
        "Jenkins timestamper",
        r"\[" + _RFC3339 + r"(?:\.\d{1,9})?Z\] ",
    ),
    Envelope(
        "Jenkins timestamper (elapsed)",
        r"\d\d:\d\d:\d\d\.\d{3} ",
        strict=r"(?=\[Pipeline\]|\+ )",
    ),
)


def _alternative(i: int, env: Envelope) -> str:
    body = env.rx
    body = body.replace("(?P<k>", f"(?P<k{i}_>")
    strict = f"(?:{env.strict}(?P<s{i}_>))?" if env.strict else ""
    own = f"(?:{env.own}(?P<o{i}_>))?" if env.own else ""
    return f"(?P<e{i}>{body}){strict}{own}"


_BODY = "|".join(_alternative(i, env) for i, env in enumerate(ENVELOPES))
_FIRST_RE = re.compile(f"(?:{_BODY})")
_REST_RE = re.compile(f"\\n(?:{_BODY})")
# the last group a match closes names its envelope (its strict or own mark, if matched)
_INDEX = {
    f"{g}{i}{t}": i for i in range(len(ENVELOPES)) for g, t in (("e", ""), ("s", "_"), ("o", "_"))
}
# the strict forms only, groups dropped: their absence means no run can be taken
_STRICT_BODY = "|".join(
    re.sub(r"\(\?P<\w+>", "(?:", f"(?:{env.rx}){env.strict or ''}") for env in ENVELOPES
)
_STRICT_FIRST_RE = re.compile(f"(?:{_STRICT_BODY}|{EXPORT_START})")
_STRICT_REST_RE = re.compile(f"\\n(?:{_STRICT_BODY}|{EXPORT_START})")


SAMPLE = 1 << 18  # a whole log is judged by its start


def envelopes_in_sample(src: str) -> bool:
    """Would `strip_envelopes` find an envelope in the first `SAMPLE` characters of
    ``src``? A whole log is judged by its start: its envelope (a collector's) is on every
    line, and judging all of it would cost a Python step per line of a plain log."""
    sample = src[:SAMPLE]
    if len(src) > SAMPLE:
        sample = sample[: sample.rfind("\n") + 1]
    if not might_have_envelopes(sample):
        return False
    return bool(unwrap_exports(sample)[2]) or bool(_taken(sample, _hits(sample)))


def might_have_envelopes(src: str) -> bool:
    """False when no line of ``src`` opens with an envelope in its strict form (then
    `strip_envelopes` would leave it as it is). One regex search, at C speed."""
    return _STRICT_FIRST_RE.match(src) is not None or _STRICT_REST_RE.search(src) is not None


@dataclass(slots=True)
class _Hit:
    ls: int  # line start
    end: int  # end of the envelope
    env: int
    key: str | None
    strict: bool
    own: bool


def _hits(src: str) -> list[_Hit]:
    out: list[_Hit] = []
    m = _FIRST_RE.match(src)
    if m is not None:
        out.append(_hit(m, 0))
    for m in _REST_RE.finditer(src):
        out.append(_hit(m, m.start() + 1))
    return out


def _hit(m: re.Match[str], ls: int) -> _Hit:
    assert m.lastgroup is not None  # every group the match can close last is named
    i = _INDEX[m.lastgroup]
    env = ENVELOPES[i]
    key = m.group(f"k{i}_") if env.keyed else None
    strict = env.strict is None or m.group(f"s{i}_") is not None
    own = env.own is not None and m.group(f"o{i}_") is not None
    return _Hit(ls, m.end(f"e{i}"), i, key, strict, own)


def _taken(src: str, hits: list[_Hit]) -> list[_Hit]:
    """The hits that belong to runs regular enough to be an envelope."""
    taken: list[_Hit] = []
    run: list[_Hit] = []

    def close() -> None:
        if not run:
            return
        env = ENVELOPES[run[0].env]
        if len(run) >= env.min_run and any(h.strict for h in run) and not any(h.own for h in run):
            taken.extend(run)

    prev_end = -2
    for h in hits:
        same = (
            run
            and h.ls == prev_end + 1
            and h.env == run[-1].env
            and (not ENVELOPES[h.env].keyed or h.key == run[-1].key)
        )
        if not same:
            close()
            run = []
        run.append(h)
        le = src.find("\n", h.ls)
        prev_end = len(src) if le < 0 else le
    close()
    return taken


def _suffix_start(src: str, h: _Hit, opener: str) -> int:
    """Where the trailing JSON field of an enveloped line starts, or -1.

    The last field (JSON has no raw tabs, so it is after the last tab), and only when a
    caller field and a message lie between the prefix and it: a JSON *message* with no
    fields after it is not taken for them."""
    le = src.find("\n", h.ls)
    le = len(src) if le < 0 else le
    k = src.rfind(opener, h.end, le)
    if k < 0 or src.find("\t", k + 1, le) >= 0 or not src[k:le].rstrip().endswith("}"):
        return -1
    if src.find("\t", h.end, k) < 0:
        return -1  # the caller field ends at k: what follows is the message
    return k


def _strip_once(src: str) -> tuple[str, Layer, dict[str, int]] | None:
    taken = _taken(src, _hits(src))
    if not taken:
        return None
    b = Builder()
    pos = 0
    counts: dict[str, int] = {}
    n = len(src)
    for h in taken:
        env = ENVELOPES[h.env]
        if env.suffix is not None:
            cut = _suffix_start(src, h, env.suffix)
            if cut < 0:
                continue
            le = src.find("\n", cut)
            b.copy(src, pos, cut)
            pos = n if le < 0 else le
            counts[env.name] = counts.get(env.name, 0) + 1
            continue
        end = h.end
        if env.whole_line:
            le = src.find("\n", end)
            end = n if le < 0 else le
        if (env.eat_newline or env.whole_line) and end < n and src[end] == "\n":
            end += 1
        b.copy(src, pos, h.ls)
        pos = end
        counts[env.name] = counts.get(env.name, 0) + 1
    if not counts:
        return None
    b.copy(src, pos, n)
    out, layer = b.finish(n)
    return out, layer, counts


def strip_envelopes(src: str) -> tuple[str, list[Layer], list[str]]:
    """Remove collector envelopes (see module doc): (text, layers, steps)."""
    layers: list[Layer] = []
    if not might_have_envelopes(src):
        return src, layers, []
    cur, layer, counts = unwrap_exports(src)
    if layer is not None:
        layers.append(layer)
    for _ in range(MAX_ROUNDS):
        got = _strip_once(cur)
        if got is None:
            break
        cur, layer, c = got
        layers.append(layer)
        for name, k in c.items():
            counts[name] = counts.get(name, 0) + k
    steps = [f"removed {name} envelope from {k} line{'s' * (k != 1)}" for name, k in counts.items()]
    return cur, layers, steps
