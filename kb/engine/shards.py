"""Compiled pattern shards: one Hyperscan block database (plus an RE2 set) per shard.

Why shards: Hyperscan compile time grows faster than linearly with the number of
patterns. Splitting the set by a stable hash
of the pattern text lets every shard compile on its own, be serialised under a name that
is the hash of its content, and be loaded (far cheaper) instead of compiled whenever its
content has not changed. An edit to one record changes one shard's content; the
`Matcher.with_changes` overlay avoids even that recompile until the next full build.

A shard is identified only by its content (the sorted pattern strings), never by record
keys or positions, so the same cache file serves every build that contains it.
"""

from __future__ import annotations

import hashlib
import threading
import time
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import hyperscan
import re2

from . import cache
from .cache import HYPERSCAN_VERSION
from .patterns import Analysis, analyse

FORMAT = "kb-matcher-shard-v6"  # the first line of a shard file (`cache.pack`)
HS_FLAGS_TEMPLATE = 0  # byte mode, exact case: the cheap form (see patterns._hs_escape)
HS_FLAGS_OPAQUE = hyperscan.HS_FLAG_UTF8 | hyperscan.HS_FLAG_UCP


@dataclass(slots=True)
class ShardData(cache.Serialised):
    """The stored part of a shard (what goes into the cache file and the matcher file)."""

    FORMAT: ClassVar[str] = FORMAT

    patterns: list[str]  # sorted; local id = position
    hs_bytes: bytes | None  # serialised Hyperscan database (full forms and heads)
    hs_local: list[int]  # local ids compiled into Hyperscan
    heads: list[int]  # local ids that also have a head (HS id = len(patterns) + local)
    re2_local: list[int]  # local ids run by RE2 instead
    refused: dict[int, tuple[str, bool]]  # local id -> (engine message, generic)
    compile_s: float = 0.0

    def to_plain(self, blobs: list[bytes]) -> dict[str, Any]:
        hs = None
        if self.hs_bytes is not None:
            hs = len(blobs)
            blobs.append(self.hs_bytes)
        return {
            "patterns": cache.put_texts(self.patterns, blobs),
            "hs": hs,
            "hs_local": cache.put_table(array("I", self.hs_local), blobs),
            "heads": cache.put_table(array("I", self.heads), blobs),
            "re2_local": cache.put_table(array("I", self.re2_local), blobs),
            "refused": [[i, why, generic] for i, (why, generic) in self.refused.items()],
            "compile_s": self.compile_s,
        }

    @classmethod
    def from_plain(cls, plain: dict[str, Any], blobs: Sequence[memoryview]) -> ShardData:
        patterns = cache.get_texts(plain["patterns"], blobs)
        n = len(patterns)
        hs = plain["hs"]
        refused: dict[int, tuple[str, bool]] = {}
        for i, why, generic in plain["refused"]:
            if type(i) is not int or not 0 <= i < n:
                raise ValueError(f"refused pattern {i!r} out of range")
            refused[i] = (str(why), bool(generic))
        return cls(
            patterns,
            None if hs is None else bytes(cache.section(hs, blobs)),
            cache.get_indexes(plain["hs_local"], n, blobs),
            cache.get_indexes(plain["heads"], n, blobs),
            cache.get_indexes(plain["re2_local"], n, blobs),
            refused,
            float(plain["compile_s"]),
        )


def shard_digest(patterns: list[str]) -> str:
    """Content hash of a shard: format, engine version and the sorted patterns."""
    h = hashlib.sha256()
    h.update(FORMAT.encode())
    h.update(HYPERSCAN_VERSION.encode())
    h.update("\x00".join(patterns).encode("utf-8", "surrogatepass"))
    return h.hexdigest()[:32]


def _hs_accepts(expr: str, flags: int) -> str | None:
    """None if Hyperscan compiles the expression alone, else its error message."""
    try:
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(expressions=[expr.encode()], ids=[0], flags=[flags])
    except hyperscan.error as exc:
        return str(exc)
    return None


def _re2_accepts(expr: str) -> str | None:
    try:
        re2.compile(expr)
    except re2.error as exc:
        return str(exc)
    return None


def compile_shard(patterns: list[str], analyses: dict[str, Analysis]) -> ShardData:
    """Compile one shard (patterns sorted); analyses are reused when already computed."""
    t0 = time.perf_counter()
    exprs: list[bytes] = []
    ids: list[int] = []
    flags: list[int] = []
    hs_local: list[int] = []
    heads: list[int] = []
    re2_local: list[int] = []
    refused: dict[int, tuple[str, bool]] = {}
    n = len(patterns)
    for i, p in enumerate(patterns):
        a = analyses.get(p) or analyse(p)
        analyses[p] = a
        if not a.ok:
            refused[i] = (a.reason or "refused", a.generic)
            continue
        if a.template:
            exprs.append(a.scan_form().encode())
            ids.append(i)
            # A generic pattern ("connection") would report on every other line of a
            # log; it can only ever be a suggestion, so one report per scan is enough.
            flags.append(HS_FLAGS_TEMPLATE | (hyperscan.HS_FLAG_SINGLEMATCH if a.generic else 0))
            hs_local.append(i)
            head = a.head_form()
            if head:
                exprs.append(head.encode())
                ids.append(n + i)
                flags.append(HS_FLAGS_TEMPLATE)
                heads.append(i)
            continue
        hs_err = _hs_accepts(a.pattern, HS_FLAGS_OPAQUE)
        if hs_err is None:
            exprs.append(a.pattern.encode())
            ids.append(i)
            # An arbitrary regex may end at every position of a line ("(.*a){25}"): one
            # report per scan keeps the callback count bounded (no per-log counts for it).
            flags.append(HS_FLAGS_OPAQUE | hyperscan.HS_FLAG_SINGLEMATCH)
            hs_local.append(i)
            continue
        re2_err = _re2_accepts(a.pattern)
        if re2_err is None:
            re2_local.append(i)
        else:
            refused[i] = (f"Hyperscan: {hs_err}; RE2: {re2_err}", a.generic)
    hs_bytes = None
    if exprs:
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(expressions=exprs, ids=ids, flags=flags)
        hs_bytes = hyperscan.dumpb(db)
    return ShardData(
        patterns, hs_bytes, hs_local, heads, re2_local, refused, time.perf_counter() - t0
    )


def load_or_compile(
    patterns: list[str],
    analyses: dict[str, Analysis],
    cache_dir: Path | None,
    names: list[str] | None = None,
) -> tuple[ShardData, bool]:
    """Return the shard and whether it came from the cache (its file name is appended to
    ``names`` when given: the files a build uses are kept by `cache.cleanup`)."""
    path = None
    if cache_dir is not None:
        path = Path(cache_dir) / f"shard-{shard_digest(patterns)}.bin"
        if names is not None:
            names.append(path.name)
        data = cache.load(path, ShardData)
        if data is not None and data.patterns == patterns:
            return data, True
    data = compile_shard(patterns, analyses)
    if path is not None:
        cache.save(path, data)
    return data, False


@dataclass(slots=True)
class Shard:
    """A loaded shard: the database plus per-thread scratch space."""

    data: ShardData
    base: int  # global index of local id 0
    db: hyperscan.Database | None = None
    re2_set: re2.Set | None = None
    _local: threading.local = field(default_factory=threading.local)

    def __post_init__(self) -> None:
        if self.data.hs_bytes:
            self.db = hyperscan.loadb(self.data.hs_bytes, hyperscan.HS_MODE_BLOCK)
        if self.data.re2_local:
            s = re2.Set.SearchSet(re2.Options())
            for i in self.data.re2_local:
                s.Add(self.data.patterns[i])
            s.Compile()
            self.re2_set = s

    def _scratch(self) -> hyperscan.Scratch:
        s = getattr(self._local, "scratch", None)
        if s is None:
            s = hyperscan.Scratch(self.db)
            self._local.scratch = s
        return s

    def scan(self, data: bytes, text: str, out: list[tuple[int, int, bool]]) -> None:
        """Append (global id, end byte offset, is_head) for every hit.

        RE2 patterns report end offsets found by RE2's own (linear-time) search.
        """
        n = len(self.data.patterns)
        base = self.base
        if self.db is not None:

            def on_match(hid: int, _frm: int, to: int, _flags: int, _ctx: object) -> None:
                if hid >= n:
                    out.append((base + hid - n, to, True))
                else:
                    out.append((base + hid, to, False))

            self.db.scan(data, match_event_handler=on_match, scratch=self._scratch())
        if self.re2_set is not None:
            hits = self.re2_set.Match(text)
            for k in hits or ():
                local = self.data.re2_local[k]
                rx = re2.compile(self.data.patterns[local])
                for m in rx.finditer(text):
                    out.append((base + local, len(text[: m.end()].encode()), False))


def _compile_to_cache(args: tuple[list[str], str]) -> bool:
    patterns, cache_dir = args
    _, hit = load_or_compile(patterns, {}, Path(cache_dir))
    return hit


def precompile(buckets: list[list[str]], cache_dir: Path, workers: int) -> None:
    """Compile the shards missing from the cache in `workers` processes (cache only)."""
    from concurrent.futures import ProcessPoolExecutor

    missing = [
        b for b in buckets if not (Path(cache_dir) / f"shard-{shard_digest(b)}.bin").exists()
    ]
    if len(missing) < 2:
        return
    with ProcessPoolExecutor(max_workers=min(workers, len(missing))) as pool:
        list(pool.map(_compile_to_cache, [(b, str(cache_dir)) for b in missing]))
