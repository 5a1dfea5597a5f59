"""Inputs of the scale benchmark's page cases that a cache cannot answer, beside
``bench_pages``' own (``paste_text``, ``SEARCHES``): a paste of errors the dataset does
not hold, and searches each sent once."""

from __future__ import annotations

import json
import random

from bench_pages import DATA, PASTE_BYTES


def unknown_paste_text() -> str:
    """Up to 8 KiB of real pasted errors the dataset does not hold (the labelled set's
    ``absent`` cases): no confident match, so the page falls back to similar messages."""
    chunks: list[str] = []
    size = 0
    with (DATA / "eval-public.jsonl").open(encoding="utf-8") as fh:
        for line in fh:
            case = json.loads(line)
            if case.get("stratum") != "absent" or not case.get("text"):
                continue
            chunks.append(case["text"])
            size += len(case["text"].encode())
            if size >= PASTE_BYTES:
                break
    return "\n".join(chunks).encode()[:PASTE_BYTES].decode("utf-8", errors="ignore")


def fresh_searches(rng: random.Random, n: int) -> list[str]:
    """``n`` distinct searches, each one or two words of a random published record's
    message: what readers type, each new to the per-revision cache, unlike the repeated
    ``SEARCHES`` (whose p95 is the cached page)."""
    from kb.records.models import ErrorRecord

    ids = list(ErrorRecord.objects.published().values_list("pk", flat=True)[:200_000])
    messages = ErrorRecord.objects.filter(pk__in=rng.sample(ids, min(len(ids), 4 * n)))
    out: dict[str, None] = {}
    for message in messages.values_list("error_message", flat=True):
        words = [w for w in message.split() if len(w) >= 4 and w.isascii() and "{" not in w]
        if words:
            start = rng.randrange(len(words))
            out.setdefault(" ".join(words[start : start + rng.choice((1, 2))]), None)
        if len(out) >= n:
            break
    return list(out)
