"""The whole-log benchmark's input (see ``bench_logs.py``): a synthetic log with one error
line in 100, in runs of mixed envelopes as a collector's output holds them: plain lines,
``kubectl logs --prefix`` lines, journald (``journalctl`` short) lines and zap-style JSON
lines. Error lines render a real record's template (`matcher_data.render`). Deterministic
(seeded).
"""

from __future__ import annotations

import json
import random

from matcher_data import INFO_WORDS, render

from kb.engine import PatternSpec

KINDS = ("plain", "kubectl", "journald", "json")


def _line(kind: str, i: int, level: str, msg: str) -> str:
    ts = f"2026-11-30T01:{i // 60 % 60:02d}:{i % 60:02d}.{i % 1000:03d}Z"
    if kind == "json":
        return json.dumps({"level": level.lower(), "ts": ts, "logger": "app", "msg": msg})
    pad = " " if level == "ERROR" else "  "
    body = f"{ts}{pad}{level} app::module: {msg}"
    if kind == "kubectl":
        return f"[pod/api-7d9f8b-x2k4q/app] {body}"
    if kind == "journald":
        return f"Nov 30 01:{i // 60 % 60:02d}:{i % 60:02d} node-3 app[4242]: {body}"
    return body


def make_mixed_log(specs: list[PatternSpec], size: int, seed: int = 11) -> str:
    """About ``size`` characters: runs of 200..2000 lines, each run one envelope kind."""
    rng = random.Random(seed)
    out: list[str] = []
    total = 0
    i = 0
    while total < size:
        kind = KINDS[rng.randrange(len(KINDS))]
        for _ in range(rng.randint(200, 2000)):
            if i % 100 == 0:
                line = _line(kind, i, "ERROR", render(specs[rng.randrange(len(specs))], rng))
            else:
                words = " ".join(rng.choice(INFO_WORDS) for _ in range(rng.randint(5, 14)))
                line = _line(kind, i, "INFO", f"{words} id={i}")
            out.append(line)
            total += len(line) + 1
            i += 1
            if total >= size:
                break
    return "\n".join(out) + "\n"
