"""gunicorn settings for production: ``gunicorn -c python:kb.gunicorn_conf kb.wsgi``.

Why a file: the worker count, timeouts and hooks belong together and need comments. Sync
workers suit this app: a match is CPU-bound and short (milliseconds), so one request per
process keeps latency predictable and a hostile paste can stall at most one worker, for at
most ``timeout`` seconds. Each worker loads the compiled matcher at boot (from the on-disk
cache that ``manage.py warm_matcher`` filled), so no visitor waits for a compile.

Workers share one copy of the matcher: the app is preloaded (``preload_app``) and the
arbiter loads the matcher before it forks (``when_ready``), so the compiled Hyperscan
databases and the pattern tables sit in pages every worker shares copy-on-write instead
of one copy per worker. What a worker changes afterwards is its own: an edit folds a small
delta into that worker's matcher (the shared shards stay shared), and a full rebuild past
``kb.matching.holder.DELTA_LIMIT`` gives that worker a private copy until it is recycled
(``max_requests``) and forked afresh from the arbiter. ``GUNICORN_PRELOAD=0`` turns the
preload off (each worker then loads its own copy, as before).

Every value can be overridden on the command line or through ``GUNICORN_CMD_ARGS``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

# gunicorn reads this file before Django is set up (without the preload, the arbiter never
# sets it up at all), so the hooks import Django and the app when they run, not up here.

bind = f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ.get('PORT', '8000')}"
# Two per core is a good start for a CPU-bound app with short requests.
workers = int(os.environ.get("WEB_CONCURRENCY", os.environ.get("WORKERS", "2")))
worker_class = "sync"
# A request that runs this long is a bug or an attack: kill the worker, start a new one.
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "30"))
graceful_timeout = 20
keepalive = 5
preload_app = os.environ.get("GUNICORN_PRELOAD", "1") != "0"
# Recycle workers now and then so slow leaks cannot accumulate; not so often that a busy
# worker keeps dropping its warm caches (the per-worker page cache and loaded matcher).
max_requests = 50_000
max_requests_jitter = 5_000
# Heartbeat files in memory, not on a possibly slow disk (a stalled disk must not make
# the arbiter kill healthy workers).
worker_tmp_dir = "/dev/shm" if os.path.isdir("/dev/shm") else None  # noqa: S108
# Request line and headers stay small; bodies are bounded by the app (kb.ops.middleware).
limit_request_line = 8190
limit_request_fields = 100
# The access log has method, path, status, size and time: never a body, a query string
# (pastes travel in POST bodies only) or the client's address.
accesslog = os.environ.get("GUNICORN_ACCESS_LOG", "-")
access_log_format = '"%(m)s %(U)s" %(s)s %(B)s %(M)sms'
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")
# LOG_FORMAT=json: the error and access logs as JSON lines too, wherever they are written.
if os.environ.get("LOG_FORMAT", "text").strip().lower() == "json":
    logger_class = "kb.ops.logs.GunicornJsonLogger"
# Several gunicorns on one host would share the default control socket path.
control_socket_disable = True
# Behind a TLS proxy on the same host, trust its X-Forwarded-* headers.
forwarded_allow_ips = os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1,::1")


def when_ready(server: Any) -> None:
    """Load the matcher in the arbiter, before any worker is forked (``preload_app``)."""
    if not server.cfg.preload_app:
        return
    _load_matcher(server.log)


def _load_matcher(logger: Any) -> None:
    try:
        from kb.matching.holder import get_matcher

        get_matcher()
    except Exception as exc:  # e.g. database not migrated yet: first request will build it
        logger.warning("matcher not preloaded: %s", exc)
    finally:
        from django.db import connections

        connections.close_all()


def post_fork(server: Any, worker: Any) -> None:
    """No database connection may cross a fork (only matters with ``--preload``: without
    it, Django is not even set up yet in the arbiter)."""
    from django.conf import settings

    if settings.configured:
        from django.db import connections

        connections.close_all()


def post_worker_init(worker: Any) -> None:
    """Load the matcher before the first request reaches this worker (with the preload,
    only the revision check: the arbiter's matcher came with the fork)."""
    _load_matcher(worker.log)


def worker_int(worker: Any) -> None:
    """``SIGINT``/``SIGQUIT`` (a quick stop, Ctrl-C): write the usage counts now, before
    gunicorn's handler exits the worker from wherever the signal found it."""
    _flush_usage(worker)


def worker_exit(server: Any, worker: Any) -> None:
    """Write the worker's buffered usage counts (kb.loop.usage) before it goes."""
    _flush_usage(worker)


def _flush_usage(worker: Any) -> None:
    from django.conf import settings

    if not settings.configured:  # the app never loaded in this worker: nothing was counted
        return
    try:
        from kb.loop.usage import flush_at_exit

        flush_at_exit()  # what it cannot write, it counts and logs as lost
    except Exception as exc:
        worker.log.warning("usage counts not flushed: %s", exc)


# --- Metrics (kb.ops.metrics): every worker writes its values to files in one directory,
# which a scrape adds up. Set before any worker starts (workers inherit the environment);
# an operator's PROMETHEUS_MULTIPROC_DIR (systemd's RuntimeDirectory) wins.
os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", tempfile.mkdtemp(prefix="kb-metrics-"))


def on_starting(server: Any) -> None:
    """Start the metrics from zero: files left by a previous run's workers would be added
    to this run's (their counters would never go down, their gauges would never go)."""
    directory = Path(os.environ["PROMETHEUS_MULTIPROC_DIR"])
    directory.mkdir(parents=True, exist_ok=True)
    for stale in directory.glob("*.db"):
        stale.unlink(missing_ok=True)


def child_exit(server: Any, worker: Any) -> None:
    """A worker that exited (recycled, killed, crashed) stops counting in the live gauges;
    its counters and histograms stay in the sums, as Prometheus expects of counters."""
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(worker.pid)
