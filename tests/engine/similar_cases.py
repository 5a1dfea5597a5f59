"""The suggestion index's cases and quality measures, shared by ``test_similar.py`` and
``benchmarks/bench_similar.py`` (which times the index on them and reports the figures).

* :func:`load_records` / :func:`load_eval`: the full dataset (env ``KB_DATASET_DIR``, by
  default the full dataset directory beside the clone);
* :func:`drift` / :func:`drift_cases`: real templates rendered with values, then reworded,
  truncated, re-cased, wrapped or given log prefixes, each with the keys that count as a hit;
* :func:`negative_lines`: INFO chatter (hand-written, from a small grammar, and the INFO-ish
  lines of the eval ``negative`` texts) that should get no suggestion;
* :func:`synth_corpus`: the records plus mutants, for the 100k / 1M index sizes;
* :func:`recall_at`, :func:`family_recall_at`, :func:`false_rate`, :func:`eval_drifted`: how
  well an index does on those cases (the tests hold bars on them, the benchmark reports them).

A plain module, not a test module: the benchmark imports it, and no benchmark imports a
test module (``tests/test_house_rules.py``).
"""

from __future__ import annotations

import json
import random
import re
import string
from pathlib import Path

from kb.engine.similar import SimilarityIndex
from kb.engine.similar_text import literal_text, tokens
from tests.datasets import DATASET_DIR as DATA

# ---------------------------------------------------------------- data


def load_records(path: Path | None = None) -> list[tuple[str, str]]:
    path = path or DATA / "records-all.jsonl"
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)["record"]
            out.append((rec["id"], rec["errorMessage"]))
    return out


def load_eval(path: Path | None = None) -> list[dict]:
    path = path or DATA / "eval-public.jsonl"
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


# ------------------------------------------------------ synthetic drift

_PH = re.compile(
    r"%\([^)]{0,40}\)[-#0 +]*\d*(?:\.\d+)?[a-zA-Z]"
    r"|%[-#0 +]*\d*(?:\.\d+)?[a-zA-Z]"
    r"|(?<!\{)\{[^{}\n]{0,60}\}(?!\})"
)

# Plausible rewordings seen between releases (both directions are used).
_SYNONYMS = [
    ("failed", "unable"),
    ("cannot", "can't"),
    ("cannot", "could not"),
    ("invalid", "bad"),
    ("not found", "does not exist"),
    ("not found", "missing"),
    ("unexpected", "unknown"),
    ("error", "failure"),
    ("is not", "isn't"),
    ("must be", "should be"),
    ("unsupported", "not supported"),
    ("get", "fetch"),
    ("create", "build"),
    ("value", "val"),
    ("expected", "expect"),
    ("connection", "conn"),
    ("configuration", "config"),
    ("already", "previously"),
    ("while", "when"),
    ("the", "a"),
]
_FILLERS = ["the", "a", "an", "already", "currently", "still", "now", "given", "requested", "all"]
_PREFIXES = [
    "2026-11-30 02:35:53,290 ERROR ",
    "2024-05-01T12:00:01.123Z  WARN risingwave_meta::barrier: ",
    "[2026-11-30 02:35:58,198] ERROR in app: ",
    "ERROR: ",
    "E1130 02:35:53.290123   12345 server.go:123] ",
    '{"level":"error","ts":1700000000.1,"msg":"',
    "Caused by: ",
    "django.core.exceptions.ImproperlyConfigured: ",
    "org.apache.kafka.common.errors.InvalidRequestException: ",
    "",
    "",
    "",
]


def _value(rng: random.Random) -> str:
    kind = rng.randrange(8)
    if kind == 0:
        return str(rng.randrange(0, 100000))
    if kind == 1:
        return "".join(rng.choices(string.ascii_lowercase, k=rng.randint(4, 10)))
    if kind == 2:
        return f"'{rng.choice(['users', 'orders', 'mv_1', 'tbl_t2'])}'"
    if kind == 3:
        a, b, c = rng.randrange(256), rng.randrange(256), rng.randrange(256)
        return f"10.{a}.{b}.{c}:{rng.randrange(65536)}"
    if kind == 4:
        return "/var/lib/app/" + "".join(rng.choices(string.ascii_lowercase, k=6)) + ".db"
    if kind == 5:
        return f"0x{rng.randrange(1 << 32):08x}"
    if kind == 6:
        return f"Some({rng.randrange(1000)})"
    return "TopicPartition(topic=t" + str(rng.randrange(9)) + ")"


def render(template: str, rng: random.Random) -> str:
    """Fill placeholders with sample values."""
    return _PH.sub(lambda _m: _value(rng), template)


_WRAPPERS = [
    "Executor error: ",
    "gRPC error (Internal error): ",
    "failed to handle request: ",
    "Caused by: java.lang.RuntimeException: ",
    "QueryError: internal error: ",
    "rejected connection from 10.0.0.7:37194 (",
    "error in stream: ",
]


def drift(template: str, rng: random.Random) -> str:
    """A plausible later/earlier wording of ``template``'s rendered message."""
    text = render(template, rng)
    ops = rng.sample(
        ["syn", "ins", "del", "trunc", "case", "punct", "swap", "wrap", "syn"], k=rng.randint(1, 3)
    )
    for op in ops:
        words = text.split(" ")
        if op == "syn":
            pairs = [(a, b) for a, b in _SYNONYMS if f" {a} " in f" {text.lower()} "]
            pairs += [(b, a) for a, b in _SYNONYMS if f" {b} " in f" {text.lower()} "]
            if pairs:
                a, b = rng.choice(pairs)
                text = re.sub(rf"(?i)\b{re.escape(a)}\b", b, text, count=1)
            elif len(words) > 2:
                i = rng.randrange(len(words))
                words[i] = rng.choice(["operation", "request", "entry", "item", "object"])
                text = " ".join(words)
        elif op == "ins" and len(words) > 1:
            words.insert(rng.randrange(1, len(words)), rng.choice(_FILLERS))
            text = " ".join(words)
        elif op == "del" and len(words) > 4:
            del words[rng.randrange(len(words))]
            text = " ".join(words)
        elif op == "trunc" and len(text) > 40:
            text = text[: int(len(text) * rng.uniform(0.55, 0.85))]
        elif op == "case":
            text = rng.choice([text.lower(), text.upper(), text[:1].upper() + text[1:]])
        elif op == "punct":
            text = text.replace(":", " -", 1).replace("'", '"').rstrip(".") + rng.choice(
                ["", ".", "!"]
            )
        elif op == "wrap":
            text = rng.choice(_WRAPPERS) + text
        elif op == "swap" and len(words) > 3:
            i = rng.randrange(len(words) - 1)
            words[i], words[i + 1] = words[i + 1], words[i]
            text = " ".join(words)
    return rng.choice(_PREFIXES) + text


def drift_cases(
    records: list[tuple[str, str]], n: int, seed: int = 7
) -> list[tuple[str, set[str]]]:
    """``n`` (drifted line, acceptable keys) pairs from templates with enough literal text."""
    rng = random.Random(seed)
    by_t: dict[str, set[str]] = {}
    for k, t in records:
        by_t.setdefault(t, set()).add(k)
    pool = [t for t in by_t if len(tokens(literal_text(t))) >= 3]
    return [(drift(t, rng), by_t[t]) for t in rng.sample(pool, n)]


_INFO = [
    "Starting development server at http://127.0.0.1:8000/",
    "Quit the server with CONTROL-C.",
    "Watching for file changes with StatReloader",
    "Performing system checks...",
    "Applying contenttypes.0001_initial... OK",
    "Operations to perform:",
    "Apply all migrations: admin, auth, contenttypes, sessions",
    "Running migrations:",
    "Server started on port 8080",
    "Listening on 0.0.0.0:9092",
    "Connected to database postgres at localhost:5432",
    "Loaded 23 plugins in 120 ms",
    "Checkpoint complete: wrote 1204 buffers (7.4%)",
    "Successfully built image abc123",
    "Compiling risingwave_common v1.9.0 (/risingwave/src/common)",
    "Finished release [optimized] target(s) in 3m 12s",
    "Kafka version: 3.7.0",
    "Kafka commitId: 2ae524ed625438c5",
    "[GroupCoordinator 1]: Preparing to rebalance group test-group in state PreparingRebalance",
    "Registered broker 1 at path /brokers/ids/1 with addresses: PLAINTEXT://localhost:9092",
    "etcd server is now ready to serve client requests",
    "raft.node: 8e9e05c52164694d elected leader 8e9e05c52164694d at term 2",
    "published local member to cluster through raft",
    "ready to serve client requests",
    "serving insecure client requests on 127.0.0.1:2379, this is strongly discouraged!",
    "added member 8e9e05c52164694d [http://localhost:2380] to cluster cdf818194e3a8c32",
    "INFO sqlalchemy.engine.Engine BEGIN (implicit)",
    "INFO sqlalchemy.engine.Engine SELECT users.id, users.name FROM users WHERE users.id = ?",
    "INFO sqlalchemy.engine.Engine [generated in 0.00015s] (5,)",
    "INFO sqlalchemy.engine.Engine COMMIT",
    '[30/Nov/2026 01:39:57] "GET /static/css/site.css HTTP/1.1" 200 1234',
    "GET /api/v1/users 200 12ms",
    "User admin logged in from 192.168.1.10",
    "Cache warmed: 1532 keys in 0.8s",
    "Scheduled job cleanup-sessions completed in 120ms",
    "Health check passed",
    "Received SIGTERM, shutting down gracefully",
    "Worker 3 booted with pid 4123",
    "Booting worker with pid: 4123",
    "Creating table users",
    "Created topic orders with 3 partitions",
    "Snapshot saved at index 600060",
    "compacted raft log at 595060",
    "Deploying version 2.4.1 to production",
    "Backup finished successfully, 3 files copied",
    "Downloading dependencies...",
    "Build succeeded in 41.2s",
    "test_login (accounts.tests.LoginTest) ... ok",
    "Ran 42 tests in 1.234s",
    "Collecting requests>=2.0",
    "Successfully installed Django-6.1.3 asgiref-3.13.0",
    "Frontend meta node started",
    "Compute node started with parallelism 4",
    "Barrier manager initialized",
    "Streaming job created: mv_orders",
    "Welcome to the dashboard, have a nice day",
    "Replication slot created for database orders",
    "Opened new log segment at offset 1024",
    "Rolled new log segment for topic-0 in 2 ms",
    "Session 0x10001 established with negotiated timeout 18000",
]


_SUBJECTS = [
    "server",
    "worker",
    "scheduler",
    "compactor",
    "meta node",
    "frontend",
    "consumer group",
    "replica manager",
    "cache",
    "session",
    "migration",
    "connector",
    "snapshot",
    "index",
    "http listener",
    "grpc server",
    "raft node",
    "backup job",
    "metrics reporter",
    "pool",
]
_VERBS = [
    "started",
    "stopped",
    "initialized",
    "loaded",
    "created",
    "registered",
    "connected",
    "completed",
    "finished",
    "scheduled",
    "refreshed",
    "flushed",
    "opened",
    "closed",
    "elected",
    "joined",
    "synced",
    "rotated",
    "warmed up",
    "ready",
]
_TAILS = [
    "in {ms} ms",
    "on port {port}",
    "with {n} partitions",
    "at offset {n}",
    "for tenant {w}",
    "successfully",
    "after {n} retries",
    "(took {ms}ms)",
    "id={n}",
    "version {n}.{n}.{n}",
    "with {n} entries",
    "from {ip}",
    "to {ip}",
    "at term {n}",
    "for epoch {n}",
    "",
]


def synthetic_info(n: int = 300, seed: int = 3) -> list[str]:
    """Plausible INFO chatter built from a small grammar (no error wording)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        tail = rng.choice(_TAILS).format(
            ms=rng.randrange(1, 999),
            port=rng.randrange(1024, 65535),
            n=rng.randrange(0, 500),
            w="".join(rng.choices(string.ascii_lowercase, k=5)),
            ip=f"10.0.{rng.randrange(256)}.{rng.randrange(256)}:{rng.randrange(65535)}",
        )
        prefix = rng.choice(["", "INFO ", "I1130 02:35:53.290123 1 main.go:42] ", "[info] "])
        subj = rng.choice(_SUBJECTS)
        out.append(f"{prefix}{subj[:1].upper()}{subj[1:]} {rng.choice(_VERBS)} {tail}".strip())
    return out


def negative_lines() -> list[str]:
    """Non-error lines: INFO chatter (hand-written + grammar) + INFO-ish eval negative lines."""
    lines = list(_INFO) + synthetic_info()
    for case in load_eval():
        if case["stratum"] != "negative":
            continue
        for ln in case["text"].splitlines():
            low = ln.lower()
            if ln.strip() and ("info" in low or "version" in low or "system check" in low):
                lines.append(ln.strip())
    return lines


# ------------------------------------------------------ larger corpora


def synth_corpus(records: list[tuple[str, str]], n: int, seed: int = 11) -> list[tuple[str, str]]:
    """Real records plus mutants (1-3 words replaced/inserted from the records' vocabulary)."""
    rng = random.Random(seed)
    vocab = sorted({w for _, t in records for w in literal_text(t).split() if w.isalpha()})
    out = list(records)
    i = 0
    while len(out) < n:
        _k, t = records[rng.randrange(len(records))]
        words = t.split(" ")
        for _ in range(rng.randint(1, 3)):
            if rng.random() < 0.5 and len(words) > 1:
                words[rng.randrange(len(words))] = rng.choice(vocab)
            else:
                words.insert(rng.randrange(len(words) + 1), rng.choice(vocab))
        out.append((f"syn{i:07d}:{_k}", " ".join(words)))  # the key names its parent
        i += 1
    return out


# ------------------------------------------------------------ quality


def recall_at(idx: SimilarityIndex, cases: list[tuple[str, set[str]]], k: int = 3, **kw) -> float:
    hits = 0
    for line, keys in cases:
        res = idx.query(line, limit=k, **kw)
        if any(key in keys for key, _ in res):
            hits += 1
    return hits / len(cases)


def family_recall_at(idx: SimilarityIndex, cases: list[tuple[str, set[str]]], k: int = 3) -> float:
    """Like recall_at, but a synthetic mutant of the expected template also counts."""
    hits = 0
    for line, keys in cases:
        if any(key.rsplit(":", 1)[-1] in keys for key, _ in idx.query(line, limit=k)):
            hits += 1
    return hits / len(cases)


def false_rate(idx: SimilarityIndex, lines: list[str], **kw) -> float:
    return sum(1 for ln in lines if idx.query(ln, limit=1, **kw)) / len(lines)


def eval_drifted(idx: SimilarityIndex, records: list[tuple[str, str]]) -> list[dict]:
    """The published ``drifted`` cases: rank of the expected record among suggestions."""
    by_key = dict(records)
    groups: dict[str, set[str]] = {}
    for k, t in records:
        groups.setdefault(t, set()).add(k)
    out = []
    for case in load_eval():
        if case["stratum"] != "drifted":
            continue
        ok = set()
        for k in case["expected"]:
            ok |= groups.get(by_key.get(k, ""), {k})
        best = None
        for ln in case["text"].splitlines():
            for rank, (key, _s) in enumerate(idx.query(ln, limit=3)):
                if key in ok and (best is None or rank < best):
                    best = rank
        out.append({"id": case["id"], "rank": best})
    return out
