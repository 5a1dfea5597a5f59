"""Usage counts are never lost silently (docs/reliability.md#r36-nothing-lost): real server
processes that stop cleanly (gunicorn on ``SIGTERM``, ``manage.py runserver`` on ``SIGINT``
or ``SIGTERM``) write every count they buffered, and counts that cannot be written at
the last flush are counted in ``/metrics`` and logged with their number.

The flush interval is set far beyond the test, so only the stop can write the counts."""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from django.db import DatabaseError
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from kb.loop import usage
from kb.loop.models import UsageDay
from tests.factories import SEED, import_lines
from tests.servers import ROOT, Gunicorn, app_env, free_port, json_post, static_root

HIT = (
    "2026-11-30T03:00:00Z ERROR Backfill progress for vnode 17 not found, "
    "backfill_state not initialized properly"
)
MISS = "nothing anyone has ever seen before, truly"
NEVER = str(24 * 3600)  # a flush interval no test reaches: only the stop may write
TOKEN = "test-metrics-token-0123456789"


def stored_hits() -> int:
    return sum(UsageDay.objects.exclude(record_id="").values_list("hits", flat=True))


def stored_misses() -> int:
    return sum(UsageDay.objects.filter(record_id="").values_list("misses", flat=True))


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize(
    "sig", [signal.SIGTERM, signal.SIGINT, signal.SIGQUIT], ids=lambda s: s.name
)
def test_a_gunicorn_stopped_with_a_signal_writes_every_count(
    tmp_path: Path, workers: int, sig: signal.Signals
) -> None:
    """``SIGTERM`` (systemd, the local runner) and the quick stops, ``SIGQUIT`` and Ctrl-C's
    ``SIGINT``, sent to the whole group as a terminal does: each worker then gets the
    signal twice (once from the arbiter), the second one while it writes its counts."""
    assert import_lines(SEED).rejected == 0
    n_hits, n_misses = 40, 7
    with Gunicorn(workers=workers, log_dir=tmp_path, KB_USAGE_FLUSH_SECONDS=NEVER) as server:
        for text in [HIT] * n_hits + [MISS] * n_misses:
            status, _headers, body = json_post(server, "/api/match", {"text": text})
            assert status == 200, body[:300]
        assert not UsageDay.objects.exists()  # still in the workers' buffers
        assert server.proc is not None
        os.killpg(server.proc.pid, sig)
        server.proc.wait(timeout=30)
        errors = server.errors()
    assert stored_hits() == n_hits
    assert stored_misses() == n_misses
    assert "usage counts" not in errors  # neither lost nor left unflushed


class Runserver:
    """A real ``manage.py runserver --noreload`` on the test database, in its own process
    group (as honcho and a terminal run it)."""

    def __init__(self, log: Path, **env: str) -> None:
        self.port = free_port()
        self.log = log
        self.env = app_env(STATIC_ROOT=str(static_root()), **env)
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> Runserver:
        cmd = [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{self.port}"]
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                cmd,
                cwd=ROOT,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"runserver exited: {self.log.read_text()[-2000:]}")
            try:
                if self.request("GET", "/healthz", timeout=2)[0] == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"runserver did not answer: {self.log.read_text()[-2000:]}")

    # the same client as for gunicorn: only the base address differs
    request = Gunicorn.request

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def signal(self, sig: signal.Signals) -> None:
        """``sig`` to the whole group, as Ctrl-C in a terminal or honcho's stop sends it,
        then wait for every process of the group to end."""
        assert self.proc is not None
        os.killpg(self.proc.pid, sig)
        self.proc.wait(timeout=30)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                os.killpg(self.proc.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)
        raise AssertionError("runserver's processes did not stop")

    def kill(self) -> None:
        if self.proc:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_runserver_stopped_with_a_signal_writes_every_count(
    tmp_path: Path, sig: signal.Signals
) -> None:
    """``--noreload``: with the autoreloader, a ``SIGTERM`` reaches Django's reloader
    process too, which kills the serving process outright (docs/deployment.md)."""
    assert import_lines(SEED).rejected == 0
    log = tmp_path / "runserver.log"
    server = Runserver(log, KB_USAGE_FLUSH_SECONDS=NEVER).start()
    try:
        for text in [HIT] * 25 + [MISS] * 5:
            status, _headers, body = json_post(server, "/api/match", {"text": text})  # type: ignore[arg-type]
            assert status == 200, body[:300]
        assert not UsageDay.objects.exists()
        server.signal(sig)
    finally:
        server.kill()
    assert (stored_hits(), stored_misses()) == (25, 5), server.log.read_text()[-2000:]


@pytest.mark.django_db
def test_counts_a_last_flush_cannot_write_are_counted_and_logged(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, settings: Any
) -> None:
    """The database refuses the last flush (down, or its write lock held): the counts are
    gone with the process, so they are counted in ``/metrics`` and logged with their number."""
    settings.KB_METRICS_TOKEN = TOKEN
    monkeypatch.setattr(usage, "buffer", usage.UsageBuffer())

    def refused(rows: object) -> None:
        raise DatabaseError("database is locked")

    def lost() -> float:
        response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")
        for family in text_string_to_metric_families(response.content.decode()):
            for sample in family.samples:
                if sample.name == "kb_usage_counts_lost_total":
                    return sample.value
        return 0.0

    before = lost()
    usage.buffer.count({"a", "b"})
    usage.buffer.count({"a"})
    usage.buffer.count(set())
    monkeypatch.setattr(usage, "_upsert", refused)
    with caplog.at_level(logging.WARNING, logger="kb.loop.usage"):
        assert usage.flush(final=True) == 0
    assert lost() - before == 4  # two hits of a, one of b, one miss
    assert "4 usage counts lost" in caplog.text
    assert len(usage.buffer) == 0


@pytest.mark.django_db
def test_a_failed_flush_that_is_not_the_last_keeps_its_counts_and_counts_nothing_lost(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kb.ops.metrics import USAGE_LOST

    monkeypatch.setattr(usage, "buffer", usage.UsageBuffer())
    usage.buffer.count({"a"})
    before = USAGE_LOST._value.get()
    with monkeypatch.context() as patched:
        patched.setattr(usage, "_upsert", lambda rows: (_ for _ in ()).throw(DatabaseError()))
        assert usage.flush() == 0
    assert USAGE_LOST._value.get() == before
    assert usage.flush() == 1


@pytest.mark.django_db(transaction=True)
def test_a_stop_inside_a_transaction_leaves_the_counts_for_the_exit_hook(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """gunicorn's ``worker_int`` runs wherever the signal found the worker, possibly inside
    a request's transaction, which the stop then rolls back with anything written in it:
    the counts wait for ``worker_exit``, which runs after the request has unwound."""
    from django.db import transaction

    monkeypatch.setattr(usage, "buffer", usage.UsageBuffer())
    usage.buffer.count({"a"})
    written_inside: list[int] = []

    def request_interrupted_by_a_stop() -> None:
        with transaction.atomic():
            written_inside.append(usage.flush_at_exit())
            raise SystemExit(0)  # what gunicorn's quick stop does next

    with pytest.raises(SystemExit):
        request_interrupted_by_a_stop()
    assert written_inside == [0]
    assert len(usage.buffer) == 1
    assert usage.flush_at_exit() == 1
    assert stored_hits() == 1
