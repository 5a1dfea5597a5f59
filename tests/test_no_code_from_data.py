"""No code from data (docs/reliability.md#r30-no-code-from-data): whatever is written into
the matcher store (its table, a storage) or the local matcher cache, loading it runs no
code. A pickle that would create a marker file when loaded is written where a host looks
for its compiled matcher -- the store's rows, with a checksum and with a valid MAC, and
the cache directory's matcher and shard files -- and a host loads: the marker never
appears, the bytes are refused with a log line, and the host compiles instead."""

from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from kb.engine import Matcher, PatternSpec, cache
from kb.engine.shards import ShardData, shard_digest
from kb.matching.holder import MatcherHolder, active_specs
from kb.matching.models import MatcherBlob
from kb.matching.store import DatabaseStore
from tests.factories import make_record
from tests.servers import ROOT, SECRET_KEY, app_env
from tests.source_imports import imports

LINE = "Backfill progress for vnode 7 not found, backfill_state not initialized properly"


class _Payload:
    """Unpickling this runs ``touch <marker>``: what an attacker would write."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (f"touch {self.marker}",))


def _evil(marker: Path) -> bytes:
    data = pickle.dumps(_Payload(marker), protocol=5)
    assert b"system" in data  # the pickle names os.system: loading it would run it
    return data


def _matcher_name() -> str:
    """The name a host asks the store and its cache for, for the current records."""
    digest = cache.specs_digest(active_specs(), cache.build_options(0, True))
    return cache.matcher_path(Path("."), digest).name


def _warm(cache_dir: Path) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", "warm_matcher"],
        cwd=ROOT,
        env=app_env(DEBUG="1", KB_MATCHER_CACHE_DIR=str(cache_dir)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout + done.stderr


@pytest.mark.parametrize("proof", ["checksum", "mac"])
@pytest.mark.django_db(transaction=True)
def test_a_pickle_in_the_store_never_runs_on_warm_matcher(
    tmp_path: Path, settings: object, proof: str
) -> None:
    """The probe of issue 22: the store's rows replaced by a pickle that runs ``os.system``,
    with its sha256 (what anyone who can write the table computes) or even a valid MAC
    (the table's writer also holds SECRET_KEY); ``warm_matcher`` with an empty cache."""
    settings.SECRET_KEY = SECRET_KEY  # type: ignore[attr-defined]  # the hosts' deployment
    make_record()
    marker = tmp_path / "pwned"
    name = _matcher_name()
    evil = tmp_path / name
    evil.write_bytes(_evil(marker))
    assert DatabaseStore().put(name, evil)  # stored as a host would: a valid MAC
    if proof == "checksum":
        MatcherBlob.objects.filter(name=name).update(
            mac=hashlib.sha256(evil.read_bytes()).hexdigest()
        )

    out = _warm(tmp_path / "fresh-host")

    assert not marker.exists()
    assert "compiled 1 shards" in out  # a fresh build instead
    if proof == "checksum":
        assert f"stored matcher {name} is not signed with this deployment's SECRET_KEY" in out
    else:
        assert f"cache file {tmp_path / 'fresh-host' / name} refused" in out
        assert f"stored matcher {name} refused by the cache: compiled instead" in out
    assert "(loaded from store)" not in out


@pytest.mark.django_db
def test_a_pickle_in_the_cache_directory_never_runs_in_the_holder(
    tmp_path: Path, settings: object, caplog: pytest.LogCaptureFixture
) -> None:
    """The same payload as the matcher file and as the shard file of the local cache
    directory, loaded by the process's holder (the path every worker takes)."""
    settings.KB_MATCHER_CACHE_DIR = tmp_path / "cache"  # type: ignore[attr-defined]
    settings.KB_MATCHER_STORE = "none"  # type: ignore[attr-defined]
    record = make_record()
    marker = tmp_path / "pwned"
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    matcher_file = cache_dir / _matcher_name()
    matcher_file.write_bytes(_evil(marker))
    shard_file = cache_dir / f"shard-{shard_digest([record.message_pattern])}.bin"
    shard_file.write_bytes(_evil(marker))

    with caplog.at_level("WARNING", logger="kb.engine.cache"):
        matcher = MatcherHolder().get()

    assert not marker.exists()
    assert f"cache file {matcher_file} refused" in caplog.text
    assert f"cache file {shard_file} refused" in caplog.text
    assert not matcher.stats.get("matcher_from_cache")
    assert matcher.stats["shards_from_cache"] == 0  # compiled, not loaded
    assert [m.key for m in matcher.match(LINE).matches] == [record.pk]
    # The refused files were replaced by the fresh build, which the next start loads.
    assert (again := Matcher.load(matcher_file)) is not None
    assert again.keys() == {record.pk}
    assert ShardData.loads(shard_file.read_bytes()).patterns == [record.message_pattern]


SPECS = [
    PatternSpec("k-vnode", r"Backfill progress for vnode (.+?) not found, backfill_state", "m1"),
    PatternSpec("k-meta", r"Failed to connect to meta server (.+?), trying again", "m2"),
    PatternSpec("k-regex", r"disk (?:sd[a-z]|nvme\d+n\d+) is failing", "disk {} is failing"),
]


def test_damaged_or_foreign_bytes_are_refused_never_half_loaded(tmp_path: Path) -> None:
    """Every cut of a matcher file, a pickle, the previous format, and headers whose
    counts lie are each `cache.Refused` (a miss); a byte changed anywhere in the header
    either still loads (it landed in a string) or is refused, never another exception."""
    data = Matcher.build(SPECS, cache_dir=tmp_path).dumps()
    assert Matcher.loads(data).keys() == {"k-vnode", "k-meta", "k-regex"}
    plain, blobs = cache.unpack(cache.MATCHER_FORMAT, data)
    sections = [bytes(b) for b in blobs]
    lies = [
        {"keys": plain["shards"][0][1]["patterns"]},  # keys for fewer patterns than held
        {"shards": [[1, plain["shards"][0][1]]]},  # a shard that does not start at 0
        {"similar": {"index": {**plain["similar"]["index"], "tables": {}}}},
    ]
    refused = [data[:cut] for cut in range(0, len(data), max(1, len(data) // 300))]
    refused.append(pickle.dumps({"keys": ["k-vnode"]}))
    refused.append(data.replace(f"{cache.MATCHER_FORMAT}\n".encode(), b"kb-matcher-built-v1\n", 1))
    refused += [cache.pack(cache.MATCHER_FORMAT, {**plain, **lie}, sections) for lie in lies]
    for blob in refused:
        with pytest.raises(cache.Refused):
            Matcher.loads(blob)
    header_end = len(data) - sum(map(len, sections))
    for i in range(0, header_end):
        changed = data[:i] + bytes([data[i] ^ 0x20]) + data[i + 1 :]
        with contextlib.suppress(cache.Refused):
            Matcher.loads(changed)


def test_no_module_of_kb_can_load_a_pickle() -> None:
    """``grep -rn pickle kb/`` in a test: no module imports a deserialiser that can run code
    (pickle and its relatives), so nothing read from the database, a storage or the
    cache directory can become code, whoever wrote it."""
    unsafe = {"pickle", "_pickle", "cPickle", "dill", "cloudpickle", "marshal", "shelve"}
    found = []
    for path in sorted((ROOT / "kb").rglob("*.py")):
        rel = path.relative_to(ROOT)
        package = ".".join(rel.with_suffix("").parts[:-1])
        for line, name in imports(path.read_text(), package):
            if name.split(".")[0] in unsafe:
                found.append(f"{rel}:{line} imports {name}")
    assert found == []
