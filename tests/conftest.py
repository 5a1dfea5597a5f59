"""Shared test set-up: a real SQLite file (or PostgreSQL via DATABASE_URL), a matcher
cache shared across tests and runs so the full dataset compiles once, and the hypothesis
profile (``tests/hypothesis_profiles.py``) loaded before any test module is imported."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import hypothesis_profiles  # noqa: F401 - loads the profile before any test module
from tests.clocks import FakeClock

ROOT = Path(__file__).resolve().parents[1]


def pytest_configure(config: pytest.Config) -> None:
    (ROOT / ".cache").mkdir(exist_ok=True)


@pytest.fixture(autouse=True)
def _matcher_cache(settings: object, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Every test shares one on-disk matcher cache; each starts with no in-process matcher."""
    from kb.matching.holder import holder

    settings.KB_MATCHER_CACHE_DIR = ROOT / ".cache" / "matcher-test"
    settings.KB_MATCHER_REFRESH_SECONDS = 0
    holder.reset()


@pytest.fixture(autouse=True)
def _tasks_in_process(settings: object) -> None:
    """Tests of the import itself run its task in the test's process, on the test's
    database transaction; tests/test_worker.py runs the real ``db_worker``."""
    settings.TASKS = {"default": {"BACKEND": "django.tasks.backends.immediate.ImmediateBackend"}}


@pytest.fixture(autouse=True)
def _empty_cache() -> Iterator[None]:
    """Cached counts are keyed by revision, and live-server tests reuse revision numbers
    after each flush: start every test with an empty cache."""
    from django.core.cache import caches

    from kb.loop import usage
    from kb.ops.caching import forget_outages
    from kb.ops.middleware import forget_refusals

    caches["fragments"].clear()  # rendered page bodies: keyed by revision too, per process
    caches["explanations"].clear()  # derived from record content: keyed by it, per process
    forget_outages()  # a cache broken on purpose by one test is up again for the next
    forget_refusals()  # the rate limiter's memory of refused clients goes with its counters
    usage.buffer.reset()  # unwritten usage counts: a flush falls due only inside one test
    # Tests without database access (pure matcher tests) have nothing cached.
    with contextlib.suppress(Exception):
        caches["default"].clear()
    yield
    # Nor does a test leave counts for the process's exit hook (kb.wsgi installs one) to
    # write after the test database is gone.
    usage.buffer.reset()


@pytest.fixture(autouse=True)
def _cpu_clock_still(monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process requests cost no CPU time as the rate limit counts it (a report's charge
    would otherwise depend on the machine and on what an earlier test warmed up); the
    tests of that charge put their own clock in (tests/test_ratelimit.py)."""
    from kb.ops import middleware

    monkeypatch.setattr(middleware, "cpu_clock", FakeClock(0.0))


@pytest.fixture(scope="session")
def migrated_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite file for tests that run ``manage.py`` in a real process (copy it,
    ``tests.test_import_atomicity._copy``, before writing)."""
    import os
    import subprocess
    import sys

    db = tmp_path_factory.mktemp("migrated") / "template.sqlite3"
    env = {**os.environ, "DATABASE_URL": f"sqlite:///{db}"}
    done = subprocess.run(
        [sys.executable, "manage.py", "migrate", "--skip-checks", "-v0"],
        cwd=Path(__file__).resolve().parents[1],
        env=env,
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return db


@pytest.fixture
def limiter_clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """The limiter on a clock that stands one second into a window until the test moves it:
    a test's requests never straddle two windows by chance."""
    from kb.ops import middleware

    fake = FakeClock(1_000_000 * middleware.RATE_WINDOW_SECONDS + 1)
    monkeypatch.setattr(middleware, "clock", fake)
    return fake
