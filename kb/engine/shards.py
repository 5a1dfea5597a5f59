"""Compiled pattern shards: one Hyperscan block database (plus an RE2 set) per shard.

Why shards: every shard compiles on its own (in parallel: Hyperscan's compile releases
the GIL, so threads use every core), is serialised under a name that is the hash of its
content, and is loaded (far cheaper) instead of compiled whenever its content has not
changed. So the layout decides what a change costs: a pattern added or removed should
change one shard, not all of them.

The layout (`layout`): the distinct patterns in the order the caller gives them (the
holder gives the records oldest first), cut where a pattern's hash says so (content-defined
boundaries, as rsync and backup tools cut files), and where the records' age steps (a
later import). A boundary depends only on the pattern at it and its record's age, so
adding or removing a pattern changes only the run around it, and records that arrive
together (an import, a learn) land in the last runs, most often a run of their own,
leaving the older shards as they were. How many patterns a shard aims at grows with the
set, a little slower than it (`target_size`): every shard is scanned separately, so a
paste pays a little per shard, while a change recompiles about one shard and an import
its own shards (a few shards at the dataset's size, about ten at a million patterns).

A shard is identified only by its content (the sorted pattern strings), never by record
keys or positions, so the same cache file (and store object) serves every build that
contains it.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import threading
import time
import zlib
from array import array
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import hyperscan
import re2

from . import cache
from .cache import HYPERSCAN_VERSION
from .patterns import Analysis, analyse, literal_form

FORMAT = "kb-matcher-shard-v7"  # the first line of a shard file (`cache.pack`)
HS_FLAGS_TEMPLATE = 0  # byte mode, exact case: the cheap form (see patterns._hs_escape)
HS_FLAGS_OPAQUE = hyperscan.HS_FLAG_UTF8 | hyperscan.HS_FLAG_UCP


@dataclass(slots=True)
class ShardData(cache.Serialised):
    """The stored part of a shard (what goes into the cache file and the matcher file)."""

    FORMAT: ClassVar[str] = FORMAT

    patterns: list[str]  # sorted; local id = position
    hs_bytes: bytes | None  # serialised Hyperscan database (full forms and heads)
    hs_local: list[int]  # local ids compiled into Hyperscan
    # the line literal (`Analysis.line_literal`) of each of `hs_local`, in its order,
    # joined by NUL (empty: none); kept as one string of bytes, read only by whole logs
    literals: bytes
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
            "literals": cache.put_bytes(self.literals, blobs),
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
        hs_local = cache.get_indexes(plain["hs_local"], n, blobs)
        literals = bytes(cache.section(plain["literals"], blobs))
        if literals.count(0) != max(len(hs_local) - 1, 0):
            raise ValueError("a line literal for each Hyperscan pattern expected")
        return cls(
            patterns,
            None if hs is None else bytes(cache.section(hs, blobs)),
            hs_local,
            literals,
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
    literals: list[bytes] = []
    heads: list[int] = []
    re2_local: list[int] = []
    refused: dict[int, tuple[str, bool]] = {}
    n = len(patterns)
    for i, p in enumerate(patterns):
        a = analyses.get(p) or analyses.setdefault(p, analyse(p))
        if not a.ok:
            refused[i] = (a.reason or "refused", a.generic)
            continue
        if not a.template:
            hs_err = _hs_accepts(a.pattern, HS_FLAGS_OPAQUE)
            if hs_err is not None:
                re2_err = _re2_accepts(a.pattern)
                if re2_err is None:
                    re2_local.append(i)
                else:
                    refused[i] = (f"Hyperscan: {hs_err}; RE2: {re2_err}", a.generic)
                continue
        for expr, flag, head in scan_expressions(a):
            exprs.append(expr)
            ids.append(n + i if head else i)
            flags.append(flag)
            if head:
                heads.append(i)
        hs_local.append(i)
        literals.append(a.line_literal() or b"")
    hs_bytes = None
    if exprs:
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(expressions=exprs, ids=ids, flags=flags)
        hs_bytes = hyperscan.dumpb(db)
    return ShardData(
        patterns, hs_bytes, hs_local, b"\x00".join(literals), heads, re2_local, refused,
        time.perf_counter() - t0,
    )  # fmt: skip


def scan_expressions(a: Analysis) -> list[tuple[bytes, int, bool]]:
    """(expression, flags, is_head) that Hyperscan scans for pattern ``a``: a template's
    scan form and its head, or an opaque pattern as written."""
    if not a.template:
        # An arbitrary regex may end at every position of a line ("(.*a){25}"): one
        # report per scan keeps the callback count bounded (no per-log counts for it).
        return [(a.pattern.encode(), HS_FLAGS_OPAQUE | hyperscan.HS_FLAG_SINGLEMATCH, False)]
    # A generic pattern ("connection") would report on every other line of a log; it
    # can only ever be a suggestion, so one report per scan is enough.
    out = [
        (
            a.scan_form().encode(),
            HS_FLAGS_TEMPLATE | (hyperscan.HS_FLAG_SINGLEMATCH if a.generic else 0),
            False,
        )
    ]
    head = a.head_form()
    if head:
        out.append((head.encode(), HS_FLAGS_TEMPLATE, True))
    return out


def lines_database(shards: Sequence[Shard]) -> hyperscan.Database | None:
    """One Hyperscan database that finds, in a whole log, every line where a pattern of
    ``shards`` may match (ids: global pattern ids): each pattern by its line literal
    (`Analysis.line_literal`), or by its own expressions when it has none.

    One database for every shard, not one each: Hyperscan finds many literals at once
    for about the cost of a few, so a scan of each shard's literals would cost several
    times the scan of all of them."""
    exprs: list[bytes] = []
    ids: list[int] = []
    flags: list[int] = []
    for sh in shards:
        d = sh.data
        literals = d.literals.split(b"\x00") if d.hs_local else []
        for local, literal in zip(d.hs_local, literals, strict=True):
            if literal:
                exprs.append(literal_form(literal.decode()).encode())
                ids.append(sh.base + local)
                flags.append(HS_FLAGS_TEMPLATE)
                continue
            for expr, flag, _head in scan_expressions(analyse(d.patterns[local])):
                exprs.append(expr)
                ids.append(sh.base + local)
                flags.append(flag)
    if not exprs:
        return None
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(expressions=exprs, ids=ids, flags=flags)
    return db


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


class Hits:
    """Scan hits, a column each: a whole log's excerpt has hundreds of thousands, held as
    numbers in arrays rather than as a tuple each."""

    __slots__ = ("ends", "heads", "pids")

    def __init__(self) -> None:
        self.pids = array("q")  # global pattern id
        self.ends = array("q")  # end byte offset
        self.heads = bytearray()  # 1: a prefix-only (head) pattern's hit

    def __iter__(self) -> Iterator[tuple[int, int, bool]]:
        """(pattern id, end byte offset, is_head) of each hit, in the order found."""
        return zip(self.pids, self.ends, map(bool, self.heads), strict=True)

    def add(self, pid: int, end: int, head: bool) -> None:
        self.pids.append(pid)
        self.ends.append(end)
        self.heads.append(head)


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

    def scan(self, data: bytes | bytearray, text: str, out: Hits) -> None:
        """Add (global id, end byte offset, is_head) for every hit to ``out``.

        RE2 patterns report end offsets found by RE2's own (linear-time) search.
        """
        n = len(self.data.patterns)
        base = self.base
        pid, end, head = out.pids.append, out.ends.append, out.heads.append
        if self.db is not None:

            def on_match(hid: int, _frm: int, to: int, _flags: int, _ctx: object) -> None:
                if hid >= n:
                    pid(base + hid - n)
                    head(1)
                else:
                    pid(base + hid)
                    head(0)
                end(to)

            # the binding reads any buffer (a whole log's normalised bytearray); its stubs
            # name only str and bytes
            self.db.scan(
                data,  # type: ignore[type-var]
                match_event_handler=on_match,
                scratch=self._scratch(),
            )
        self.scan_re2(text, out)

    def scan_re2(self, text: str, out: Hits) -> None:
        """Add the hits of the RE2 patterns (those Hyperscan refused) in ``text``."""
        base = self.base
        if self.re2_set is not None:
            hits = self.re2_set.Match(text)
            for k in hits or ():
                local = self.data.re2_local[k]
                rx = re2.compile(self.data.patterns[local])
                for m in rx.finditer(text):
                    out.add(base + local, len(text[: m.end()].encode()), False)


# A shard aims at about SHARD_SCALE * patterns^(2/3) patterns, a power of two (so the
# boundaries move, and every shard is compiled again, only when the set has grown or
# shrunk about threefold), within MIN_TARGET and MAX_TARGET. A paste pays a fixed cost per
# shard scanned (the scan's setup and its callback's Python frames), which at a million
# patterns outweighs what a larger shard adds to the scan itself, so the shard count grows
# with the cube root of the set: a few shards at the dataset's size, about ten at a
# million. What an import recompiles stays small whatever the target: records that arrive
# together are a batch, and a batch ends a run (`layout`), so their patterns make shards
# of their own.
SHARD_SCALE = 14
MIN_TARGET = 256
MAX_TARGET = 262_144


def target_size(n_patterns: int) -> int:
    """Patterns a shard aims at for a set of ``n_patterns`` (see the module docstring)."""
    aim = 2 ** round(math.log2(SHARD_SCALE * max(1, n_patterns) ** (2 / 3)))
    return min(MAX_TARGET, max(MIN_TARGET, aim))


# A batch change ends a run once it holds this share of a target: an import then compiles
# its own patterns and not the last shard's too (a run's tail before an import is most
# often short of half a target), while a trickle of one-record batches (edits, a curator's
# new records) still joins a run instead of making a shard each.
BATCH_SHARE = 16


def _cuts_after(pattern: str, mask: int) -> bool:
    """Whether a run may end after ``pattern`` (crc32: the same in every process)."""
    return zlib.crc32(pattern.encode("utf-8", "surrogatepass")) & mask == 0


def layout(
    patterns: Sequence[str], target: int, batches: Sequence[int] | None = None
) -> list[list[str]]:
    """``patterns`` (distinct, in the caller's order) cut into runs of about ``target``.

    Once a run holds half of ``target``, it ends after a pattern whose hash has its low
    bits zero (one pattern in half of ``target``); once it holds ``target /
    BATCH_SHARE``, also after a pattern whose batch (``batches``, one per pattern: when its
    record was made) differs from the next one's; a run never passes twice ``target``. So
    runs hold about ``target`` patterns, and the patterns of a later import start a run of
    their own unless the run before them is very short. Each run is returned sorted (a
    shard's local ids are positions in its sorted patterns).
    """
    low = max(1, target // 2)
    mask, high = low - 1, max(1, 2 * target)
    batch_low = max(1, target // BATCH_SHARE)
    runs: list[list[str]] = []
    run: list[str] = []
    last = len(patterns) - 1
    for i, p in enumerate(patterns):
        run.append(p)
        n = len(run)
        if (
            n >= high
            or (n >= low and _cuts_after(p, mask))
            or (
                n >= batch_low and batches is not None and i < last and batches[i] != batches[i + 1]
            )
        ):
            runs.append(run)
            run = []
    if run:
        runs.append(run)
    for r in runs:
        r.sort()
    return runs


def shard_path(cache_dir: Path, patterns: list[str]) -> Path:
    return Path(cache_dir) / f"shard-{shard_digest(patterns)}.bin"


# Brings a cache file in from elsewhere (the store every host reads) and says whether it
# came: the engine knows no store, its caller passes one in.
Fetch = Callable[[Path], bool]


@dataclass(slots=True)
class Loaded:
    """The shards of a layout and where each came from."""

    shards: list[ShardData]
    names: list[str]  # their cache file names (kept by `cache.cleanup`, published)
    from_cache: int = 0
    fetched: int = 0
    compiled: int = 0
    patterns_compiled: int = 0
    compile_s: float = 0.0  # summed over the compiled shards (threads overlap them)


def load_or_compile_all(
    runs: list[list[str]],
    analyses: dict[str, Analysis],
    cache_dir: Path | None,
    *,
    workers: int = 1,
    fetch: Fetch | None = None,
) -> Loaded:
    """Every run's shard: from the cache directory, else fetched, else compiled, the
    compiles spread over ``workers`` threads (Hyperscan's compile releases the GIL)."""
    out: list[ShardData | None] = [None] * len(runs)
    loaded = Loaded([], [])
    missing: list[int] = []
    for i, run in enumerate(runs):
        path = None if cache_dir is None else shard_path(cache_dir, run)
        if path is not None:
            loaded.names.append(path.name)
            data = _load_shard(path, run)
            if data is not None:
                loaded.from_cache += 1
            elif fetch is not None and fetch(path):
                data = _load_shard(path, run)
                loaded.fetched += data is not None
            if data is not None:
                out[i] = data
                continue
        missing.append(i)
    for run_index in missing:  # the analyses, once and in this thread (a shared dict)
        for p in runs[run_index]:
            if p not in analyses:
                analyses[p] = analyse(p)

    def build(i: int) -> ShardData:
        data = compile_shard(runs[i], analyses)
        if cache_dir is not None:
            # a read-only or full cache directory costs speed, not correctness
            with contextlib.suppress(OSError):
                cache.save(shard_path(cache_dir, runs[i]), data)
        return data

    if len(missing) > 1 and workers > 1:
        with ThreadPoolExecutor(max_workers=min(workers, len(missing))) as pool:
            built = list(pool.map(build, missing))
    else:
        built = [build(i) for i in missing]
    for i, data in zip(missing, built, strict=True):
        out[i] = data
        loaded.compile_s += data.compile_s
        loaded.patterns_compiled += len(data.patterns)
    loaded.compiled = len(missing)
    loaded.shards = [d for d in out if d is not None]
    return loaded


def _load_shard(path: Path, patterns: list[str]) -> ShardData | None:
    data = cache.load(path, ShardData)
    return data if data is not None and data.patterns == patterns else None
