"""Whoever changes records in bulk builds and publishes the matcher before finishing, so no
page request compiles it (docs/importing.md): ``manage.py import_records`` in a real
process leaves the build of the new records in the shared store, and a fresh process's
first paste loads it from there. Compiles are counted by the build metric
(``kb_matcher_build_duration_seconds`` by ``source``), never timed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from kb.matching.models import MatcherBlob
from tests.factories import FIXTURES
from tests.servers import ROOT, app_env, static_root

DEMO = FIXTURES / "demo-records.jsonl"

# A fresh process's first page request: the paste page, posted as a browser would; prints
# how many matcher builds the process compiled and how many it loaded.
FIRST_PASTE = """
import json, django
django.setup()
from django.test import Client
from prometheus_client import REGISTRY
response = Client(HTTP_HOST="localhost").post(
    "/match/", {"text": "java.io.IOException: Client was shutdown before response was read"}
)
count = lambda source: REGISTRY.get_sample_value(
    "kb_matcher_build_duration_seconds_count", {"source": source}
) or 0
print(json.dumps({
    "status": response.status_code,
    "found": "fe7f836f23ff8f06" in response.content.decode(),
    "compiled": count("compiled"),
    "loaded": count("store"),
}))
"""


def run(*args: str, cache_dir: Path) -> subprocess.CompletedProcess[str]:
    env = app_env(
        KB_MATCHER_CACHE_DIR=str(cache_dir),
        KB_MATCHER_STORE="database",
        STATIC_ROOT=str(static_root()),  # the page's static files, as a deployment has them
    )
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)  # one process: its own registry
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.django_db(transaction=True)
def test_after_import_records_a_fresh_process_loads_the_matcher_instead_of_compiling(
    tmp_path: Path,
) -> None:
    imported = run("manage.py", "import_records", str(DEMO), "--json", cache_dir=tmp_path / "a")
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["created"] > 400  # stdout stays the contract's object
    # The command published the build of the records it wrote, under their content's name
    # (and its shards, each under its own).
    assert MatcherBlob.objects.filter(name__startswith="matcher-").count() == 1

    # Another host (an empty cache directory), its first paste: loaded, not compiled.
    first = run("-c", FIRST_PASTE, cache_dir=tmp_path / "b")
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout.splitlines()[-1]) == {
        "status": 200,
        "found": True,
        "compiled": 0,
        "loaded": 1,
    }
    assert "matcher loaded from store" in first.stderr

    # A dry run changes nothing and builds nothing; --no-matcher imports only.
    for flag in ("--dry-run", "--no-matcher"):
        idle = tmp_path / flag.strip("-")
        done = run("manage.py", "import_records", str(DEMO), flag, cache_dir=idle)
        assert done.returncode == 0, done.stderr
        assert not idle.exists() or not any(idle.iterdir()), flag
