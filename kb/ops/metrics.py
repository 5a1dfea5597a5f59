"""Prometheus metrics: what the app counts, and the one place that counts it.

Each process records into prometheus-client's metric objects. Under gunicorn every worker
is its own process, so ``kb/gunicorn_conf.py`` points ``PROMETHEUS_MULTIPROC_DIR`` at a
directory before any worker starts: prometheus-client then keeps each worker's values in
a small memory-mapped file there, a scrape (``kb.ops.exposition``) adds them up, and
the arbiter marks a dead worker's gauges as gone. Without that variable (``runserver``, a
single process, the tests) the values live in this process and a scrape reports them as
they are: in one process, there is nothing to add up.

Label values are bounded by construction: a view is named by its resolved URL name (a
path would give one series per record), a method outside the standard verbs counts as
``other``, and a status is one of HTTP's codes. Nothing from a paste or a client ever
becomes a label.

The hook points in the rest of the app are one line each: the middleware below, and the
decorators ``timed_match`` (``kb.matching.holder.match_text``) and ``timed_build`` (the matcher
holder's full build).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

from prometheus_client import Counter, Gauge, Histogram

# Pages and API calls: most answer within a few tens of milliseconds, uploads and the
# admin's lists take longer; the buckets cover both ends without a series per millisecond.
REQUEST_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
# A match is CPU-bound and short, a whole log longer: finer buckets at the short end.
MATCH_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0)
# A build from the compiled store is quick, a compile of every shard is not.
BUILD_BUCKETS = (0.1, 0.5, 1.0, 5.0, 15.0, 60.0, 300.0, 1800.0)

METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNRESOLVED = "<unresolved>"

REQUEST_SECONDS = Histogram(
    "kb_request_duration_seconds",
    "Time to answer a request, by view (resolved URL name) and method.",
    ["view", "method"],
    buckets=REQUEST_BUCKETS,
)
REQUESTS = Counter(
    "kb_requests",
    "Requests answered, by view (resolved URL name), method and status code.",
    ["view", "method", "status"],
)
MATCH_SECONDS = Histogram(
    "kb_match_duration_seconds",
    "Time to match one paste or log against every active record.",
    buckets=MATCH_BUCKETS,
)
PASTES = Counter(
    "kb_pastes",
    "Pastes matched, by outcome: matched (at least one confident match) or unmatched.",
    ["outcome"],
)
BUILD_SECONDS = Histogram(
    "kb_matcher_build_duration_seconds",
    "Time of a full matcher build, by source: compiled, or loaded from the compiled store.",
    ["source"],
    buckets=BUILD_BUCKETS,
)
USAGE_FLUSH_FAILURES = Counter(
    "kb_usage_flush_failures",
    "Usage flushes (kb.loop.usage) the database refused; their counts were kept for the "
    "next flush, unless it was a stopping process's last.",
)
USAGE_LOST = Counter(
    "kb_usage_counts_lost",
    "Usage counts (hits and misses) dropped: the last flush before a process stopped "
    "could not write them.",
)
# Every worker holds the same matcher once it caught up: the most recent value of a live
# worker is the answer, and a dead worker's value must not linger.
MATCHER_GAUGES = {
    key: Gauge(f"kb_matcher_{key}", text, multiprocess_mode="livemostrecent")
    for key, text in {
        "records": "Records in the loaded matcher.",
        "patterns": "Distinct patterns in the loaded matcher.",
        "shards": "Compiled pattern databases (shards) in the loaded matcher.",
        "serialised_bytes": "Size of the loaded matcher's compiled databases.",
    }.items()
}


def view_label(request: Any) -> str:
    """The resolved URL name of ``request`` (``namespace:name``), or ``<unresolved>`` for
    a request no URL matched or one answered before resolution (413, 429)."""
    match = getattr(request, "resolver_match", None)
    if match is None:
        return UNRESOLVED
    return match.view_name or UNRESOLVED


def observe_request(request: Any, status: int, seconds: float) -> None:
    view = view_label(request)
    method = request.method if request.method in METHODS else "other"
    REQUEST_SECONDS.labels(view, method).observe(seconds)
    REQUESTS.labels(view, method, str(status)).inc()


def observe_match(result: Any, seconds: float) -> None:
    MATCH_SECONDS.observe(seconds)
    PASTES.labels("matched" if result.matches else "unmatched").inc()


def observe_build(matcher: Any, seconds: float) -> None:
    stats = getattr(matcher, "stats", None) or {}
    source = "store" if stats.get("matcher_from_cache") else "compiled"
    BUILD_SECONDS.labels(source).observe(seconds)
    for key, gauge in MATCHER_GAUGES.items():
        value = stats.get(key)
        if isinstance(value, int | float):
            gauge.set(value)
    if "records" not in stats and matcher is not None:
        MATCHER_GAUGES["records"].set(len(matcher))


def timed_match[F: Callable[..., Any]](func: F) -> F:
    """Decorate the function that matches a paste: its latency and its outcome."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        result = func(*args, **kwargs)
        observe_match(result, time.perf_counter() - started)
        return result

    return wrapper  # type: ignore[return-value]


def timed_build[F: Callable[..., Any]](func: F) -> F:
    """Decorate the matcher holder's full build: its time, and the new matcher's size."""

    @functools.wraps(func)
    def wrapper(holder: Any, *args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        result = func(holder, *args, **kwargs)
        observe_build(getattr(holder, "_matcher", None), time.perf_counter() - started)
        return result

    return wrapper  # type: ignore[return-value]


class RequestMetricsMiddleware:
    """Times every request, first in the chain so that early answers count too."""

    def __init__(self, get_response: Callable[[Any], Any]) -> None:
        self.get_response = get_response

    def __call__(self, request: Any) -> Any:
        started = time.perf_counter()
        response = self.get_response(request)
        observe_request(request, response.status_code, time.perf_counter() - started)
        return response
