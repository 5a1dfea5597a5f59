"""Matcher core behaviour on small, hand-made pattern sets (fast: tiny compiles)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from kb.engine import Matcher, PasteTooLarge, PatternSpec, admit_pattern
from kb.engine.shards import ShardData

SPECS = [
    PatternSpec("k-vnode", r"Backfill progress for vnode (.+?) not found, backfill_state", "m1"),
    PatternSpec("k-meta", r"Failed to connect to meta server (.+?), trying again", "m2"),
    PatternSpec("k-meta2", r"Failed to connect to meta server (.+?), trying again", "m2"),
    PatternSpec("k-conn", r"connection", "connection"),
    PatternSpec("k-fixture", r"No fixture named '(.+?)' found\.", "No fixture named '%s' found."),
    PatternSpec("k-multi", "'(.+?)' is not a registered tag library\\. Must be one of:\n(.+?)", ""),
]


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Matcher:
    return Matcher.build(SPECS, cache_dir=tmp_path_factory.mktemp("mcache"))


@pytest.mark.parametrize(
    ("pattern", "fragment"),
    [
        (r"(a)\1", "backreference"),
        (r"foo(?=bar)", "lookaround"),
        (r"(?<!x)error", "lookaround"),
        (r"x{1001}", "repeat"),
        (r"(.+?)", "empty"),
        (r"a*", "empty"),
        (r"(unclosed", "compile"),
    ],
)
def test_admission_refuses_with_reason(pattern: str, fragment: str) -> None:
    adm = admit_pattern(pattern)
    assert not adm.ok
    assert adm.engine is None
    assert fragment in (adm.reason or "").lower()


def test_admission_engines_and_specificity() -> None:
    adm = admit_pattern(r"Failed to connect to meta server (.+?), trying again")
    assert adm.ok
    assert adm.engine == "hyperscan"
    assert adm.specificity == len("Failed to connect to meta server , trying again")
    assert not adm.generic
    assert admit_pattern(r"connection").generic
    assert admit_pattern(r"(.+?) not found").generic
    assert admit_pattern(r"\d+ errors? in [a-z_]+ module loading").ok  # opaque regex
    # \u escapes are Python syntax that Hyperscan does not take: read as the literal
    adm = admit_pattern(r"caf\u00e9 was closed unexpectedly")
    assert adm.ok
    assert adm.specificity == len("café was closed unexpectedly")


def test_match_span_captures_and_reason(small: Matcher) -> None:
    text = (
        "INFO starting\n"
        "2024-01-26T05:40:23Z  WARN meta_client: Failed to connect to meta server "
        "127.0.0.1:5690, trying again error=transport\n"
    )
    rep = small.match(text)
    assert rep.matches, rep.suggestions
    m = rep.matches[0]
    assert m.key == "k-meta"
    assert m.same_message == ["k-meta2"]
    assert m.line == 2
    assert text[m.span[0] : m.span[1]] == m.text
    assert m.text.startswith("Failed to connect")
    assert m.captures == ["127.0.0.1:5690"]
    assert m.coverage == 1.0
    assert "line 2" in m.reason
    assert "literal characters" in m.reason


def test_generic_pattern_is_only_a_suggestion(small: Matcher) -> None:
    rep = small.match("lost the connection to the upstream\n")
    assert rep.matches == []
    assert any(s.key == "k-conn" and "generic" in s.reason for s in rep.suggestions)


def test_non_ascii_offsets_map_back(small: Matcher) -> None:
    text = "Ünïcödé prefix → No fixture named 'données' found.\n"
    m = small.match(text).matches[0]
    assert m.key == "k-fixture"
    assert text[m.span[0] : m.span[1]] == m.text == "No fixture named 'données' found."
    assert m.captures == ["données"]


def test_multiline_pattern(small: Matcher) -> None:
    text = "Traceback...\n'humanize' is not a registered tag library. Must be one of:\nadmin_list\n"
    assert small.match(text).matches[0].key == "k-multi"


def test_paste_too_large(small: Matcher) -> None:
    with pytest.raises(PasteTooLarge) as err:
        small.match("x" * 2000, max_bytes=1000)
    assert err.value.limit == 1000
    assert err.value.size == 2000
    small.match("x" * 1000, max_bytes=1000)  # at the limit is fine


def test_groups_count_lines_in_a_log(small: Matcher) -> None:
    line = "WARN Failed to connect to meta server 10.0.0.{i}:5690, trying again"
    log = "\n".join(
        ["INFO boot"] + [line.format(i=i) if i % 3 == 0 else f"INFO tick {i}" for i in range(30)]
    )
    rep = small.match(log)
    g = next(g for g in rep.groups if g.key == "k-meta")
    assert g.count == 10
    assert (g.first_line, g.last_line) == (2, 29)
    assert g.confident


def test_with_changes_edit_remove_add(small: Matcher, tmp_path: Path) -> None:
    edited = small.with_changes(
        [
            PatternSpec("k-fixture", r"No fixture called '(.+?)' exists\.", "edited"),
            PatternSpec("k-new", r"Brand new failure mode number (.+?) happened", "new"),
        ],
        removed=["k-vnode"],
    )
    assert edited.match("No fixture called 'x' exists.").matches[0].key == "k-fixture"
    assert not edited.match("No fixture named 'x' found.").matches
    assert edited.match("Brand new failure mode number 7 happened").matches[0].key == "k-new"
    assert not edited.match("Backfill progress for vnode 3 not found, backfill_state").matches
    # the original is untouched
    assert small.match("No fixture named 'x' found.").matches[0].key == "k-fixture"
    again = edited.with_changes([], removed=["k-new"])
    assert not again.match("Brand new failure mode number 7 happened").matches
    assert again.match("No fixture called 'x' exists.").matches[0].key == "k-fixture"


def test_build_loads_unchanged_shards_from_cache(tmp_path: Path) -> None:
    first = Matcher.build(SPECS, cache_dir=tmp_path)
    assert first.stats["shards_from_cache"] == 0
    second = Matcher.build(list(reversed(SPECS)), cache_dir=tmp_path)  # order is irrelevant
    assert second.stats["shards_from_cache"] == second.stats["shards"]
    assert second.match("No fixture named 'a' found.").matches[0].key == "k-fixture"


def test_serialised_round_trip(small: Matcher) -> None:
    clone = Matcher.loads(small.dumps())
    assert clone.match("No fixture named 'a' found.").matches[0].key == "k-fixture"
    assert clone.keys() == small.keys()
    assert clone.refused() == small.refused()


def test_threads_share_one_matcher(small: Matcher) -> None:
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            for _ in range(50):
                rep = small.match(f"No fixture named 'f{i}' found.")
                assert rep.matches[0].captures == [f"f{i}"]
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_refused_patterns_are_reported_not_dropped(tmp_path: Path) -> None:
    m = Matcher.build(
        [*SPECS, PatternSpec("k-bad", r"(a)\1 twice", ""), PatternSpec("k-empty", "(.+?)", "")],
        cache_dir=tmp_path,
        with_similarity=False,
    )
    refused = m.refused()
    assert set(refused) == {"k-bad", "k-empty"}
    assert not m.admission("k-bad").ok
    assert "backreference" in (m.admission("k-bad").reason or "")
    assert m.admission("k-fixture").ok


def test_build_loads_the_whole_matcher_from_cache_when_specs_are_unchanged(
    tmp_path: Path,
) -> None:
    first = Matcher.build(SPECS, cache_dir=tmp_path)
    assert not first.stats.get("matcher_from_cache")
    again = Matcher.build(iter(SPECS), cache_dir=tmp_path)  # any iterable
    assert again.stats["matcher_from_cache"] is True
    assert again.stats["shards_from_cache"] == again.stats["shards"]
    assert again.match("No fixture named 'a' found.").matches[0].key == "k-fixture"
    changed = [*SPECS[:-1], PatternSpec(SPECS[-1].key, SPECS[-1].pattern, "new message")]
    assert not Matcher.build(changed, cache_dir=tmp_path).stats.get("matcher_from_cache")


def test_the_matcher_file_names_its_shards_and_a_lost_one_is_fetched(tmp_path: Path) -> None:
    """The full build's file holds what only it has and names its shards' files (saved and
    published once, not again inside every matcher): loading it reads them from the
    directory, asks the store (``fetch``) for one that is gone, and builds afresh when it
    cannot be had."""
    first = Matcher.build(SPECS, cache_dir=tmp_path, shard_size=2)
    (built,) = tmp_path.glob("matcher-*.bin")
    shards = [tmp_path / name for name in first.shard_files()]
    assert len(shards) >= 2
    assert all(p.is_file() for p in shards)
    kept = shards[0].read_bytes()
    database = ShardData.loads(kept).hs_bytes
    assert database
    assert database not in built.read_bytes()
    shards[0].unlink()
    asked: list[str] = []

    def fetch(path: Path) -> bool:
        asked.append(path.name)
        path.write_bytes(kept)
        return True

    again = Matcher.build(SPECS, cache_dir=tmp_path, shard_size=2, fetch=fetch)
    assert again.stats["matcher_from_cache"] is True
    assert asked == [shards[0].name]
    assert again.match("No fixture named 'a' found.").matches[0].key == "k-fixture"
    shards[0].unlink()
    rebuilt = Matcher.build(SPECS, cache_dir=tmp_path, shard_size=2)  # nowhere to fetch from
    assert not rebuilt.stats.get("matcher_from_cache")
    assert rebuilt.stats["shards_compiled"] == 1
    assert ShardData.loads(shards[0].read_bytes()).patterns == ShardData.loads(kept).patterns


def test_cache_cleanup_keeps_used_and_recent_files_only(tmp_path: Path) -> None:
    import os

    from kb.engine import cache

    now = 1_000_000_000.0
    day = cache.MAX_UNUSED_AGE_S
    names = [f"shard-{i:02d}.bin" for i in range(cache.KEEP_UNUSED + 5)]
    for i, name in enumerate(names):  # shard-00 newest ... the last ones 2+ days old
        p = tmp_path / name
        p.write_bytes(b"x")
        age = 60 * i if i < cache.KEEP_UNUSED else 2 * day + i
        os.utime(p, (now - age, now - age))
    (tmp_path / "unrelated.txt").write_text("mine")
    old_tmp = tmp_path / ".tmp-shard-abc"
    old_tmp.write_bytes(b"")
    os.utime(old_tmp, (now - 2 * cache.TMP_AGE_S,) * 2)
    in_use = {names[-1]}  # old but used by the current build
    removed = cache.cleanup(tmp_path, in_use, now=now)
    left = {p.name for p in tmp_path.iterdir()}
    assert names[-1] in left
    assert "unrelated.txt" in left
    assert set(names[: cache.KEEP_UNUSED]) <= left
    assert set(removed) == set(names[cache.KEEP_UNUSED : -1]) | {".tmp-shard-abc"}


def test_a_build_cleans_up_old_unused_cache_files(tmp_path: Path) -> None:
    import os

    from kb.engine import cache

    stale = [tmp_path / f"shard-stale{i}.bin" for i in range(cache.KEEP_UNUSED + 3)]
    for p in stale:
        p.write_bytes(b"x")
        os.utime(p, (0, 0))  # 1970: long unused
    Matcher.build(SPECS, cache_dir=tmp_path)
    assert sum(p.exists() for p in stale) == cache.KEEP_UNUSED
    assert any(p.name.startswith("matcher-") for p in tmp_path.iterdir())


def test_an_edited_message_is_found_at_once_and_the_old_wording_no_longer(
    tmp_path: Path,
) -> None:
    """`with_changes` keeps near-miss suggestions right without rebuilding the big
    similarity index: the new wording is suggested, the old one no longer points at it."""
    specs = [
        PatternSpec(
            "k-lease",
            r"Worker (.+?) lost its lease on partition (.+?) while compacting segments",
            "Worker {} lost its lease on partition {} while compacting segments",
        ),
        PatternSpec(
            "k-disk",
            r"Volume (.+?) ran out of inodes during snapshot restore",
            "Volume {} ran out of inodes during snapshot restore",
        ),
    ]
    base = Matcher.build(specs, cache_dir=tmp_path)

    def found(m: Matcher, text: str) -> set[str]:  # near misses: loose matches or suggestions
        report = m.match(text)
        return {x.key for x in report.matches} | {x.key for x in report.suggestions}

    old_wording = "ERROR worker 7 lost the lease on partition 3 during segment compaction"
    new_wording = "ERROR replica 7 dropped its leadership of shard 3 during rebalancing"
    assert "k-lease" in found(base, old_wording)
    assert "k-lease" not in found(base, new_wording)
    edited = base.with_changes(
        [
            PatternSpec(
                "k-lease",
                r"Replica (.+?) dropped its leadership of shard (.+?) while rebalancing",
                "Replica {} dropped its leadership of shard {} while rebalancing",
            )
        ],
        removed=[],
    )
    assert "k-lease" in found(edited, new_wording)
    assert "k-lease" not in found(edited, old_wording)
    gone = edited.with_changes([], removed=["k-lease"])
    assert "k-lease" not in found(gone, new_wording)
    clone = Matcher.loads(edited.dumps())
    assert "k-lease" in found(clone, new_wording)
    assert "k-disk" in found(edited, "Volume data-2 ran out of inodes in snapshot restore")


def test_a_line_shared_by_many_look_alike_records_costs_bounded_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dozens of versions of one message (a large dataset) all share the line's first
    words; only the `MAX_HEADS_PER_LINE` largest are walked, and the longest still wins."""
    from kb.engine import candidates

    head = "Compaction task for table catalog failed while uploading"
    specs = [
        PatternSpec(f"k-{i:02d}", f"{head} (.+?) {'x' * i} part {i} of the manifest", "m")
        for i in range(1, 61)
    ]
    m = Matcher.build(specs, cache_dir=tmp_path)
    walked: list[int] = []
    real = candidates.confirm_truncated

    def counting(ntext: str, pid: int, *args: object) -> object:
        walked.append(pid)
        return real(ntext, pid, *args)

    monkeypatch.setattr(candidates, "confirm_truncated", counting)
    line = f"ERROR {head} sst-17 {'x' * 60} part 60 of the manifes"  # cut short
    report = m.match(line)
    assert 0 < len(walked) <= candidates.MAX_HEADS_PER_LINE
    found = [x.key for x in report.matches] + [x.key for x in report.suggestions]
    assert found[:1] == ["k-60"], found[:3]


def test_an_opaque_confirm_that_runs_out_of_time_is_said_in_the_notes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Whether a regex finishes within its timeout depends on the machine: the report says
    when one did not, instead of looking complete (the hit is then not confirmed)."""
    m = Matcher.build([PatternSpec("opaque", r"\d+ errors? in [a-z_]+ module loading", "")])
    text = "boot: 12 errors in foo module loading"
    assert [x.key for x in m.match(text).matches] == ["opaque"]
    assert not m.match(text).notes

    monkeypatch.setattr("kb.engine.candidates.CONFIRM_TIMEOUT_S", 0)
    report = m.match(text)
    assert report.matches == []
    assert any("timed out" in n for n in report.notes), report.notes
