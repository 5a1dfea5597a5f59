"""The matcher benchmark's data: the real patterns, 100k/1M synthesised from them, and the
lines and logs they are matched against (see ``bench_matcher.py``).

Synthetic sets: each synthetic pattern is a real record's template with 1-3 words
replaced or inserted (words drawn from the records' own vocabulary), re-escaped;
mutants with fewer than 6 literal characters are dropped.
"""

from __future__ import annotations

import json
import os
import random
import re
from pathlib import Path

from kb.engine import Matcher, PatternSpec
from kb.engine.patterns import parse_template

REPO = Path(__file__).resolve().parent.parent
DATA = Path(os.environ.get("KB_DATASET_DIR") or REPO.parent / "shared" / "data")
SAMPLE_VALUES = ["127.0.0.1:5690", "users", "42", "'item-list'", "Connection refused"]
INFO_WORDS = [
    "starting",
    "worker",
    "pool",
    "heartbeat",
    "ok",
    "request",
    "served",
    "cache",
    "warm",
    "tick",
    "flushed",
]


def load_specs() -> list[PatternSpec]:
    out = []
    with (DATA / "records-all.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)["record"]
            out.append(PatternSpec(r["id"], r["messagePattern"], r["errorMessage"]))
    return out


def synthesise(specs: list[PatternSpec], n: int, seed: int = 7) -> list[PatternSpec]:
    """Mutate real templates: replace/insert 1-3 vocabulary words; >= 6 literal chars."""
    rng = random.Random(seed)
    vocab = sorted({w for s in specs for w in re.findall(r"[A-Za-z_]{3,}", s.message)})
    templates = [(s, parse_template(s.pattern)) for s in specs]
    templates = [(s, p) for s, p in templates if p]
    out: list[PatternSpec] = []
    seen = {s.pattern for s in specs}
    i = 0
    while len(out) < n:
        spec, pieces = templates[rng.randrange(len(templates))]
        flat: list[str | None] = []
        for p in pieces:
            flat.extend([None] if p.text is None else [w for w in p.text.split(" ") if w])
        lit_idx = [k for k, w in enumerate(flat) if w]
        if not lit_idx:
            continue
        for _ in range(rng.randint(1, 3)):
            k = rng.choice(lit_idx)
            if rng.random() < 0.5:
                flat[k] = rng.choice(vocab)
            else:
                flat.insert(k, rng.choice(vocab))
                lit_idx = [j for j, w in enumerate(flat) if w]
        text_parts = []
        literal = 0
        for w in flat:
            if w is None:
                text_parts.append("(.+?)")
            else:
                text_parts.append(re.escape(w).replace("\\ ", " "))
                literal += len(w)
        pattern = " ".join(text_parts)
        if literal < 6 or pattern in seen:
            continue
        seen.add(pattern)
        i += 1
        out.append(PatternSpec(f"syn{i:07d}", pattern, spec.message))
    return out


def render(spec: PatternSpec, rng: random.Random) -> str:
    pieces = parse_template(spec.pattern) or []
    return "".join(p.text if p.text is not None else rng.choice(SAMPLE_VALUES) for p in pieces)


def make_lines(specs: list[PatternSpec], n: int, seed: int = 3) -> list[str]:
    """Half error lines (rendered templates with a log prefix), half INFO lines."""
    rng = random.Random(seed)
    lines = []
    for i in range(n):
        ts = f"2026-11-30T01:00:{i % 60:02d}.{i:06d}Z"
        if i % 2 == 0:
            msg = render(specs[rng.randrange(len(specs))], rng)
            lines.append(f"{ts} ERROR app::module: {msg}")
        else:
            body = " ".join(rng.choice(INFO_WORDS) for _ in range(rng.randint(5, 14)))
            lines.append(f"{ts}  INFO app::module: {body} id={rng.randrange(10**6)}")
    return lines


def make_log(specs: list[PatternSpec], mb: float, seed: int = 5) -> str:
    """INFO chatter with 1% error lines, about `mb` megabytes."""
    rng = random.Random(seed)
    out: list[str] = []
    size = 0
    i = 0
    while size < mb * 2**20:
        ts = f"2026-11-30T01:{i // 60 % 60:02d}:{i % 60:02d}.{i % 1000:03d}Z"
        if i % 100 == 0:
            line = f"{ts} ERROR app::module: {render(specs[rng.randrange(len(specs))], rng)}"
        else:
            body = " ".join(rng.choice(INFO_WORDS) for _ in range(rng.randint(5, 14)))
            line = f"{ts}  INFO app::module: {body} id={i}"
        out.append(line)
        size += len(line) + 1
        i += 1
    return "\n".join(out)


def raw_scan(m: Matcher, data: bytes) -> None:
    """Ids-only Hyperscan scan of every shard: no Python work per hit beyond a no-op."""

    def noop(*_a: object) -> None:
        return None

    for sh in m._shards:
        if sh.db is not None:
            sh.db.scan(data, match_event_handler=noop, scratch=sh._scratch())
