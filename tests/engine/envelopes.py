"""Wrap a paste in the envelope a log collector, CI runner or logging layout puts around it.

Why a helper: the envelope tests and the labelled-set test need the same envelopes, written
out from each tool's documented format, applied to any text. Collector envelopes
(`WRAPPING`) repeat on every physical line; their lines are also cut at `WIDTH` columns
first, as a container runtime or a terminal does to a long message, so the prefix lands in
the middle of a message. Layouts and JSON exports wrap each line of the paste as one record.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from kb.engine import Matcher, PatternSpec

WIDTH = 100
POD = "api-7d9f8b6c5-xk2lp"

# the envelope tests' record, and a message wrapped over two physical lines
MSG = "Failed to connect to meta server (.+?), trying again"
SPECS = [
    PatternSpec("k-meta", MSG, "Failed to connect to meta server %s, trying again"),
    PatternSpec("k-other", r"connection reset by peer", "connection reset by peer"),
]
HEAD = "WARN meta_client: Failed to connect to meta server 127.0.0.1:5690,"
TAIL = "trying again error=transport error: connection refused"
JOINED = "Failed to connect to meta server 127.0.0.1:5690, trying again"

# Synthetic whole logs: runs of one envelope each, in this order (`mixed_line`).
MIXED_KINDS = ("plain", "kubectl", "journald", "json")
KUBECTL_PREFIX = "[pod/api-7d9f8b-x2k4q/app] "


def mixed_line(kind: str, i: int, level: str, msg: str) -> str:
    """Line ``i`` of a synthetic log: ``msg`` at ``level`` with a timestamp of its own,
    as a plain line, behind kubectl's --prefix, in journald's short format, or as a JSON
    log record (``kind``, one of `MIXED_KINDS`)."""
    ts = f"2026-11-30T01:{i // 60 % 60:02d}:{i % 60:02d}.{i % 1000:03d}Z"
    if kind == "json":
        return json.dumps({"level": level.lower(), "ts": ts, "msg": msg})
    body = f"{ts} {level:>5} app::module: {msg}"
    if kind == "kubectl":
        return KUBECTL_PREFIX + body
    if kind == "journald":
        return f"Nov 30 01:{i // 60 % 60:02d}:{i % 60:02d} node-3 app[4242]: {body}"
    return body


def build_matcher(cache_dir: Path) -> Matcher:
    """A matcher over `SPECS` alone (no database, a tiny compile)."""
    return Matcher.build(SPECS, cache_dir=cache_dir)


def two_lines(first: str, second: str) -> str:
    """The wrapped message, each physical line under its envelope."""
    return f"{first}{HEAD}\n{second}{TAIL}\n"


def _cut(lines: list[str], width: int | None) -> list[str]:
    if width is None:
        return lines
    out: list[str] = []
    for line in lines:
        if len(line) <= width:
            out.append(line)
            continue
        out.extend(line[i : i + width] for i in range(0, len(line), width))
    return out


def _ts(i: int, digits: int = 9) -> str:
    frac = f"{(123456789 + i * 1000) % 10**9:09d}"[:digits]
    return f"2024-01-10T12:00:{i % 60:02d}.{frac}Z"


def _nano(i: int) -> str:
    # RFC3339Nano drops trailing zeros of the fraction
    frac = f"{(123456780 + i * 1000) % 10**9:09d}".rstrip("0") or "0"
    return f"2024-01-10T12:00:{i % 60:02d}.{frac}Z"


def _json(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def _logfmt(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


_CHAT = str.maketrans({"'": "\u2019"})


def _chat(line: str) -> str:
    out = []
    opened = False
    for ch in line.replace("...", "\u2026"):
        if ch == '"':
            out.append("\u201d" if opened else "\u201c")
            opened = not opened
        else:
            out.append(ch)
    text = "".join(out).translate(_CHAT)
    # a zero-width space where a chat client breaks long words
    return "\u200b".join(text[i : i + 24] for i in range(0, len(text), 24))


# name -> (prefix of physical line i, or a whole-line function)
PREFIXES: dict[str, Callable[[int], str]] = {
    "kubectl --prefix": lambda i: f"[pod/{POD}/api] ",
    "stern": lambda i: f"{POD} api ",
    "docker compose logs": lambda i: "api-1  | ",
    "docker logs --timestamps": lambda i: f"{_nano(i)} ",
    "journalctl short": lambda i: f"Jan 10 12:00:{i % 60:02d} node-1 api[1234]: ",
    "journalctl short-iso": lambda i: f"2024-01-10T12:00:{i % 60:02d}+0000 node-1 api[1234]: ",
    "journalctl short-precise": lambda i: (
        f"Jan 10 12:00:{i % 60:02d}.{123456 + i:06d} node-1 api[1234]: "
    ),
    "syslog RFC 3164": lambda i: f"<11>Jan 10 12:00:{i % 60:02d} node-1 api[1234]: ",
    "syslog RFC 5424": lambda i: f"<11>1 {_ts(i, 6)} node-1 api 1234 ID47 - ",
    "GitHub Actions timestamp": lambda i: f"{_ts(i, 7)} ",
    "Jenkins timestamper": lambda i: f"[{_ts(i, 3)}] ",
    "e-mail quoting": lambda i: "> > ",
}
WRAPPING = frozenset(PREFIXES)

LINES: dict[str, Callable[[int, str], str]] = {
    "CloudWatch export": lambda i, s: (
        f'{{"timestamp":{1704888000000 + i},"message":{_json(s)},'
        f'"ingestionTime":{1704888000500 + i}}}'
    ),
    "Cloud Logging textPayload": lambda i, s: (
        f'{{"insertId":"k{i}","resource":{{"type":"k8s_container"}},'
        f'"severity":"ERROR","textPayload":{_json(s)},"timestamp":"{_ts(i)}"}}'
    ),
    "Cloud Logging jsonPayload": lambda i, s: (
        f'{{"jsonPayload":{{"message":{_json(s)},"logger":"api"}},'
        f'"severity":"ERROR","timestamp":"{_ts(i)}"}}'
    ),
    "logfmt": lambda i, s: f"ts={_ts(i, 3)} level=error caller=main.go:42 msg={_logfmt(s)}",
    "logback with MDC": lambda i, s: (
        f"2024-01-10 12:00:{i % 60:02d}.123 [http-nio-8080-exec-1] "
        f"[traceId=4bf92f35 user=bob] ERROR c.e.api.OrderService - {s}"
    ),
    "log4j": lambda i, s: f"2024-01-10 12:00:{i % 60:02d},123 ERROR [main] c.e.api.App: {s}",
    "Python logging default": lambda i, s: f"ERROR:api.orders:{s}",
    "Python logging asctime": lambda i, s: (
        f"2024-01-10 12:00:{i % 60:02d},123 - api.orders - ERROR - {s}"
    ),
    "Rust tracing span": lambda i, s: (
        f"{_ts(i, 6)} ERROR request{{method=GET uri=/api}}: api::handler: {s}"
    ),
    "zap JSON": lambda i, s: (
        f'{{"level":"error","ts":1704888000.{i:03d},"caller":"api/main.go:42","msg":{_json(s)}}}'
    ),
    "zap console": lambda i, s: f'{_ts(i, 3)}\tERROR\tapi/main.go:42\t{s}\t{{"attempt": 3}}',
    "zerolog": lambda i, s: f'{{"level":"error","time":"{_ts(i, 0)[:-2]}Z","message":{_json(s)}}}',
    "klog header": lambda i, s: (
        f"E0110 12:00:{i % 60:02d}.{123456 + i:06d}    1234 main.go:42] {s}"
    ),
    "chat client": lambda i, s: _chat(s),
}

CI_BLOCKS = ("GitLab CI section", "Jenkins [Pipeline]", "GitHub Actions group")
NAMES = (*PREFIXES, *LINES, *CI_BLOCKS)


def wrap(text: str, name: str, width: int | None = WIDTH) -> str:
    """``text`` as the tool called ``name`` prints it (see `NAMES`)."""
    lines = text.split("\n")
    if name in PREFIXES:
        prefix = PREFIXES[name]
        return "\n".join(prefix(i) + s for i, s in enumerate(_cut(lines, width)))
    if name in LINES:
        line = LINES[name]
        return "\n".join(line(i, s) for i, s in enumerate(lines))
    if name == "GitLab CI section":
        return (
            "section_start:1704888000:step_script\r\x1b[0K"
            '\x1b[32;1mExecuting "step_script" stage of the job script\x1b[0;m\n'
            f"{text}\n"
            "section_end:1704888009:step_script\r\x1b[0K\n"
            "\x1b[31;1mERROR: Job failed: exit code 1\x1b[0;m"
        )
    if name == "Jenkins [Pipeline]":
        body = "\n".join(f"{_elapsed(i + 2)} {s}" for i, s in enumerate(_cut(lines, width)))
        return (
            "[Pipeline] stage\n[Pipeline] { (Test)\n"
            f"{_elapsed(0)} [Pipeline] sh\n{_elapsed(1)} + ./run-tests.sh\n{body}\n"
            "[Pipeline] }\n[Pipeline] // stage"
        )
    if name == "GitHub Actions group":
        body = "\n".join(f"{_ts(i + 2, 7)} {s}" for i, s in enumerate(_cut(lines, width)))
        return (
            f"{_ts(0, 7)} ##[group]Run ./run-tests.sh\n{_ts(1, 7)} ##[endgroup]\n{body}\n"
            f"{_ts(90, 7)} ##[error]Process completed with exit code 1."
        )
    raise KeyError(name)


def _elapsed(i: int) -> str:
    return f"00:00:{i % 60:02d}.{(i * 37) % 1000:03d}"
