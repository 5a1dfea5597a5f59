"""The shard layout (kb/engine/shards.py): a change of a few records recompiles only the
shards they are in, counted (never timed), and a full build compiles on every worker."""

from __future__ import annotations

import threading
import zlib
from pathlib import Path

import pytest

from kb.engine import Matcher, PatternSpec
from kb.engine import shards as shards_module
from kb.engine.shards import layout, target_size

TARGET = 64  # patterns a shard aims at: a few dozen shards from the specs below


def _specs(n: int, start: int = 0, batch: int = 0) -> list[PatternSpec]:
    return [
        PatternSpec(
            f"k{i}", f"Quokka number {i} failed at stage (.+?) of the run", f"m{i}", batch=batch
        )
        for i in range(start, start + n)
    ]


def _compiled(m: Matcher) -> int:
    """Shards this build compiled: all of them but those its cache held."""
    return int(m.stats["shards"]) - int(m.stats["shards_from_cache"])


@pytest.fixture
def base(tmp_path: Path) -> list[PatternSpec]:
    specs = _specs(2000)
    first = Matcher.build(specs, cache_dir=tmp_path, shard_size=TARGET, with_similarity=False)
    assert int(first.stats["shards"]) >= 10
    assert _compiled(first) == first.stats["shards"]
    return specs


def test_records_added_recompile_only_the_last_shards(base, tmp_path: Path) -> None:
    """An import of 1% new records (the newest last, as the holder orders them) compiles
    the shard they join and any they make, not the others."""
    added = [*base, *_specs(20, start=5000)]
    m = Matcher.build(added, cache_dir=tmp_path, shard_size=TARGET, with_similarity=False)
    assert _compiled(m) <= 2
    assert m.stats["shards_from_cache"] >= int(m.stats["shards"]) - 2
    hit = m.match("Quokka number 5007 failed at stage seven of the run")
    assert [x.key for x in hit.matches] == ["k5007"]


def test_an_import_made_later_fills_a_shard_of_its_own(base, tmp_path: Path) -> None:
    """Records made later than the others (another batch, as the holder tells them apart)
    end the last run there unless it is very short: the import compiles only its own
    patterns, or, after a last run shorter than a sixteenth of a target, that run's too."""
    tail = Matcher.build(base, shard_size=TARGET, with_similarity=False)._shards[-1]
    added = [*base, *_specs(20, start=5000, batch=1)]
    m = Matcher.build(added, cache_dir=tmp_path, shard_size=TARGET, with_similarity=False)
    if len(tail.data.patterns) >= TARGET // shards_module.BATCH_SHARE:
        assert m.stats["patterns_compiled"] == 20  # the import alone
    else:
        assert m.stats["patterns_compiled"] == len(tail.data.patterns) + 20
    assert m.stats["shards_compiled"] == 1
    later = [*added, *_specs(40, start=6000, batch=2)]  # and the next import: its own again
    again = Matcher.build(later, cache_dir=tmp_path, shard_size=TARGET, with_similarity=False)
    assert again.stats["patterns_compiled"] <= 40 + TARGET // shards_module.BATCH_SHARE


def test_an_import_after_a_short_tail_makes_a_shard_of_its_own() -> None:
    """The runs themselves: a batch change cuts a run of a sixteenth of a target or more
    (not only of half a target), and no sooner, so a trickle of one-record batches joins
    the run before it."""
    target = 256
    patterns = [f"pattern {i} (.+?)" for i in range(400)]
    for tail in (target // 16, target // 4):  # both short of half a target
        batches = [0] * tail + [1] * 100
        runs = layout(patterns[: tail + 100], target, batches)
        assert [len(r) for r in runs] == [tail, 100]
    trickle = layout(patterns[:20], target, list(range(20)))  # every pattern a batch
    assert [len(r) for r in trickle] == [16, 4]


def test_an_import_that_adds_removes_and_edits_recompiles_only_their_shards(
    base, tmp_path: Path
) -> None:
    """Twenty records added, three gone and one edited, spread over the set: the last
    shards and those of the four changed records, at most (an edited pattern stays where
    its record is: the holder orders records by age, not by pattern)."""
    gone = {"k100", "k900", "k1500"}
    specs = [s for s in base if s.key not in gone]
    at = next(i for i, s in enumerate(specs) if s.key == "k1200")
    specs[at] = PatternSpec("k1200", "Quokka twelve hundred stalled on (.+?) again", "m")
    specs += _specs(20, start=5000)
    m = Matcher.build(specs, cache_dir=tmp_path, shard_size=TARGET, with_similarity=False)
    assert _compiled(m) <= 2 + 4 * 2  # each change can at most split or join its run
    assert not m.match("Quokka number 900 failed at stage x of the run").matches
    assert [x.key for x in m.match("Quokka twelve hundred stalled on y again").matches] == ["k1200"]
    assert [x.key for x in m.match("Quokka number 5019 failed at stage z of the run").matches] == [
        "k5019"
    ]


def test_the_layout_is_cut_by_content_so_a_change_stays_local() -> None:
    patterns = [f"pattern number {i} (.+?) here" for i in range(3000)]
    runs = layout(patterns, TARGET)
    assert sum(map(len, runs)) == len(patterns)
    assert all(len(r) <= 4 * TARGET for r in runs)
    assert all(len(r) >= TARGET // 4 for r in runs[:-1])
    assert layout(patterns, TARGET) == runs  # the same in every process
    before = {tuple(r) for r in runs}
    inserted = [*patterns[:1500], "a new pattern (.+?) in the middle", *patterns[1500:]]
    after = {tuple(r) for r in layout(inserted, TARGET)}
    assert len(after - before) <= 2  # the run it joined (and one it may have cut)
    # a boundary is where the pattern's hash says, whatever came before it
    cut = next(p for p in patterns[100:] if zlib.crc32(p.encode()) & (TARGET - 1) == 0)
    assert any(r[-1] == cut or cut in r for r in layout(patterns, TARGET))


def test_the_shard_count_grows_slower_than_the_set() -> None:
    assert target_size(10) == shards_module.MIN_TARGET
    small, large = target_size(16_720), target_size(1_000_000)
    assert 1 < 16_720 / small <= 4  # a few shards at the dataset's size
    assert 4 <= 1_000_000 / large <= 16  # about ten at a million patterns
    assert target_size(10**9) == shards_module.MAX_TARGET
    sizes = [target_size(n) for n in range(1_000, 3_000_000, 7_919)]
    assert sizes == sorted(sizes)  # a larger set never aims at smaller shards


def test_a_full_build_compiles_on_every_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads: set[int] = set()
    lock = threading.Lock()
    barrier = threading.Barrier(2, timeout=30)
    compile_shard = shards_module.compile_shard

    def counted(patterns, analyses):  # the real compile, noting which thread ran it
        with lock:
            first = threading.get_ident() not in threads
            threads.add(threading.get_ident())
        if first:
            barrier.wait()  # the first compile of each thread: the two meet, so both ran at once
        return compile_shard(patterns, analyses)

    monkeypatch.setattr(shards_module, "compile_shard", counted)
    m = Matcher.build(_specs(600), cache_dir=tmp_path, shard_size=TARGET, workers=2)
    assert len(threads) == 2
    assert m.stats["shards_compiled"] == m.stats["shards"]


def _similarity_tables(m: Matcher) -> list[bytes]:
    blobs: list[bytes] = []
    m._similar.to_plain(blobs)  # type: ignore[union-attr]
    return [bytes(b) for b in blobs]


def test_an_import_indexes_only_its_own_messages_for_similarity(tmp_path: Path) -> None:
    """The build after an import carries the last build's similarity index on over the
    new records (read back from the cache directory) and gives the index a build from
    nothing gives; a build of other records (one deleted) indexes them all anew."""
    specs = [
        PatternSpec(f"k{i}", f"Quokka stage {i} failed (.+)", f"Quokka stage {i} failed: {{}}")
        for i in range(300)
    ]
    first = Matcher.build(specs, cache_dir=tmp_path, shard_size=TARGET)
    assert first.stats["similarity_resumed"] is False
    grown = [
        *specs,
        *(PatternSpec(f"n{i}", f"Wombat lease {i} lost (.+)", f"Wombat lease {i} lost: {{}}")
          for i in range(20)),
    ]  # fmt: skip
    after = Matcher.build(grown, cache_dir=tmp_path, shard_size=TARGET)
    assert after.stats["similarity_resumed"] is True
    fresh = Matcher.build(grown, cache_dir=tmp_path / "elsewhere", shard_size=TARGET)
    assert fresh.stats["similarity_resumed"] is False
    assert _similarity_tables(after) == _similarity_tables(fresh)
    assert after._similar.query("the Wombat lease 7 was lost")[0][0] == "n7"  # type: ignore[union-attr]
    edited = grown[1:]  # the first record deleted: not the last build's start
    assert (
        Matcher.build(edited, cache_dir=tmp_path, shard_size=TARGET).stats["similarity_resumed"]
        is False
    )
