"""Log-line prefixes: timestamps, levels, threads, module paths, syslog and klog headers.

Patterns are unanchored, so a prefix never stops a match; but a pattern that starts with a
placeholder (`(.+?)`) would capture it, and the ranking wants to know an INFO line from an
ERROR one. `prefix_info` peels prefixes off the start of a line (several may be stacked:
journald + klog, `[error]` + timestamp + level + `[module]`) and reports the level found.
"""

from __future__ import annotations

import re

_TS = (
    r"(?:\d{4}[-/]\d{2}[-/]\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?"
    r"|\d{2}:\d{2}:\d{2}(?:[.,]\d+)?)"
)
_LEVEL_WORDS = (
    r"TRACE|DEBUG|INFO|NOTICE|WARN|WARNING|ERROR|ERR|SEVERE|FATAL|CRITICAL|CRIT|PANIC|DPANIC"
    r"|EMERG|ALERT"
)
_LEVEL = rf"(?:{_LEVEL_WORDS}|[Tt]race|[Dd]ebug|[Ii]nfo|[Ww]arn(?:ing)?|[Ee]rror|[Ff]atal)"

# Each alternative is tried at the current position; the first that matches is removed and
# the loop runs again. Group ``lvl`` (when present) holds the level.
_PREFIXES: list[re.Pattern[str]] = [
    # Markdown quote markers and docker-compose service columns: `web_1  | `
    re.compile(r"[\w.-]+\s+\|[ \t]"),
    # syslog / journald: `Jan 10 hh:mm:ss host proc[820]: ` or `kubelet[1495]: `
    re.compile(
        r"(?:[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}(?:\.\d+)? [\w.-]+ )?"
        r"[\w./-]+(?:\[\d+\])?: (?=\S)(?<=\]: )"
    ),
    re.compile(r"[A-Z][a-z]{2} [ \d]\d \d{2}:\d{2}:\d{2}(?:\.\d+)? [\w.-]+ [\w./-]+: "),
    # klog / glog: `E1120 hh:mm:ss.ffffff    1495 file.go:12] `
    re.compile(r"(?P<lvl>[IWEF])\d{4} \d{2}:\d{2}:\d{2}\.\d+\s+\d+ [\w./-]+:\d+\] "),
    # env_logger: `[<ISO timestamp> ERROR my_crate::module] `
    re.compile(rf"\[(?:{_TS} +)?(?P<lvl>{_LEVEL}) +[\w:.-]*\] "),
    # bracketed timestamp: `[YYYY-MM-DD hh:mm:ss,fff] `, Django's `[DD/Mon/YYYY hh:mm:ss] `
    re.compile(rf"\[(?:{_TS}|\d{{2}}/\w{{3}}/\d{{4}}[: ]\d{{2}}:\d{{2}}:\d{{2}}[^\]]*)\] "),
    # capnslog: `YYYY-MM-DD hh:mm:ss.ffffff W | etcdserver: `
    re.compile(rf"{_TS} (?P<lvl>[DINWECF]) \| (?:[\w./-]+: )?"),
    # Python's `%(asctime)s - %(name)s - %(levelname)s - %(message)s`
    re.compile(rf"{_TS} - [\w.$-]{{1,200}} - (?P<lvl>{_LEVEL}) - "),
    # zap's console encoder: `<ts>\tERROR\t[logger\t]caller.go:42\t`
    re.compile(rf"{_TS}\t(?P<lvl>{_LEVEL})\t(?:[\w./@:-]{{1,200}}\t){{0,2}}"),
    # timestamp (+ level) (+ pid --- [thread] [MDC]) (+ level) (+ tracing spans and target,
    # or logger): tracing, log4j, logback
    re.compile(
        rf"{_TS}(?: +(?P<lvl>{_LEVEL}))?"
        r"(?: +\d+ +---)?(?: +\[[^\]\n]{1,80}\]){0,3}"
        rf"(?: +(?P<lvl2>{_LEVEL})(?= ))?"
        r"(?: +(?:[\w]+\{[^}\n]{0,200}\}:){1,8})?"
        r"(?: +(?:[\w-]+ +)?[\w]+(?:::[\w]+)+(?:\{[^}\n]*\})?:)?"
        r"(?: +[\w$.]+ +(?:-|:) | +[a-z_][\w$-]*(?:\.[\w$-]+)+:(?= ))?[ \t]?"
    ),
    # GitHub Actions workflow commands: `##[error]`, `::error file=app.py,line=3::`
    re.compile(
        r"##\[(?P<lvl>error|warning|notice|debug)\]"
        r"|::(?P<lvl2>error|warning|notice|debug)(?: (?:[^:\n]|:(?!:)){0,500})?::"
    ),
    # level first: `ERROR YYYY-MM-DD hh:mm:ss,fff `, `[error] `, `ERROR:django.request:`
    re.compile(rf"\[(?P<lvl>{_LEVEL})\][ \t]"),
    re.compile(rf"(?P<lvl>{_LEVEL_WORDS}):(?:[\w.]+:)(?=\S)"),
    re.compile(
        rf"(?P<lvl>{_LEVEL_WORDS})(?::[ \t]{{1,2}}|[ \t])(?:\[[\w .:=,$/-]{{1,80}}\][ \t])?"
        # the module a timestamped line names after its level: the same line with its
        # timestamp taken off by an envelope (`docker logs -t`) must keep the same body
        r"(?:[\w]+(?:::[\w]+)+(?:\{[^}\n]*\})?: |[a-z_][\w$-]*(?:\.[\w$-]+)+: )?"
    ),
    # logrus/logfmt: `time="..." level=fatal msg="`, `ts=... level=error caller=x.go:1 msg=`
    re.compile(
        r'(?:[\w.-]{1,40}=(?:"[^"\n]{0,200}"|[^\s"=]{1,200}) +){0,4}level=(?P<lvl>\w+) +'
        r'(?:(?!msg=)[\w.-]{1,40}=(?:"[^"\n]{0,200}"|[^\s"]{1,200}) +){0,6}msg="?'
    ),
]

_LEVEL_MAP = {
    "T": "TRACE",
    "D": "DEBUG",
    "I": "INFO",
    "N": "INFO",
    "W": "WARN",
    "E": "ERROR",
    "C": "FATAL",
    "F": "FATAL",
    "TRACE": "TRACE",
    "DEBUG": "DEBUG",
    "INFO": "INFO",
    "NOTICE": "INFO",
    "WARN": "WARN",
    "WARNING": "WARN",
    "ERROR": "ERROR",
    "ERR": "ERROR",
    "SEVERE": "ERROR",
    "FATAL": "FATAL",
    "CRITICAL": "FATAL",
    "CRIT": "FATAL",
    "PANIC": "FATAL",
    "DPANIC": "FATAL",
    "EMERG": "FATAL",
    "ALERT": "FATAL",
}


def canonical_level(word: str | None) -> str | None:
    """`warn`, `W`, `WARNING` -> "WARN"; unknown -> None."""
    if not word:
        return None
    return _LEVEL_MAP.get(word.upper())


def _combine(patterns: list[re.Pattern[str]]) -> re.Pattern[str]:
    """One alternation of all prefix patterns (tried in order), level groups renamed."""
    parts = []
    for i, rx in enumerate(patterns):
        body = rx.pattern.replace("(?P<lvl2>", f"(?P<lvm{i}>").replace("(?P<lvl>", f"(?P<lvl{i}>")
        parts.append(f"(?P<p{i}>{body})")
    return re.compile("|".join(parts))


_ANY_PREFIX_RE = _combine(_PREFIXES)
_LEVEL_GROUPS = [f"lvl{i}" for i, rx in enumerate(_PREFIXES) if "(?P<lvl>" in rx.pattern] + [
    f"lvm{i}" for i, rx in enumerate(_PREFIXES) if "(?P<lvl2>" in rx.pattern
]


def prefix_info(line: str) -> tuple[int, str | None]:
    """(length of the prefixes at the start of ``line``, level found in them or None)."""
    if not line or line[0] in " \t":
        return 0, None
    pos = 0
    level: str | None = None
    match = _ANY_PREFIX_RE.match
    for _ in range(6):
        m = match(line, pos)
        if m is None or m.end() == pos:
            break
        if level is None:
            for g in _LEVEL_GROUPS:
                lv = m.group(g)
                if lv:
                    level = canonical_level(lv)
                    break
        pos = m.end()
    if pos and pos >= len(line.rstrip()):
        # a line that is only a prefix keeps its text (nothing after it to match)
        return (pos if line[:pos].strip() else 0), level
    return pos, level


def strip_prefix(line: str) -> int:
    """Length of the timestamp/level/module prefix at the start of ``line`` (0 if none)."""
    return prefix_info(line)[0]
