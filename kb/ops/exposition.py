"""What a scrape of ``/metrics`` reports: the processes' metrics plus the database's.

Jobs and queued tasks live in the database, not in any one process, so they are read at
scrape time by a collector (``DatabaseCollector``) instead of being counted as they
change: every worker would otherwise keep its own, disagreeing, idea of the queue. The
collector is added to a registry built for each scrape, never to prometheus-client's
global one, so nothing else that walks the global registry runs database queries.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator

from django.apps import apps
from django.db.models import Count
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import REGISTRY, GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector

from kb.records.models import ImportJob

logger = logging.getLogger(__name__)

TASKS_APP = "django_tasks_db"


def multiprocess_dir() -> str | None:
    """The directory where gunicorn's workers keep their values, when there is one."""
    return os.environ.get("PROMETHEUS_MULTIPROC_DIR") or None


class DatabaseCollector:
    """Import jobs by state and tasks waiting for a worker, read when scraped."""

    def collect(self) -> Iterator[Metric]:
        up = GaugeMetricFamily(
            "kb_metrics_database_up", "1 when the database answered this scrape's queries."
        )
        try:
            families = [self._import_jobs(), *self._tasks()]
        except Exception as exc:  # a scrape must still answer, and say the database did not
            logger.warning("metrics: database gauges unavailable: %s", type(exc).__name__)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from families

    @staticmethod
    def _import_jobs() -> GaugeMetricFamily:
        family = GaugeMetricFamily(
            "kb_import_jobs", "Admin import jobs, by state.", labels=["state"]
        )
        counts = dict.fromkeys(ImportJob.State.values, 0)
        rows = ImportJob.objects.order_by().values_list("state").annotate(n=Count("pk"))
        counts.update(dict(rows))
        for state, count in sorted(counts.items()):
            family.add_metric([state], count)
        return family

    @staticmethod
    def _tasks() -> list[GaugeMetricFamily]:
        """Tasks of the database task backend: those ready to run (the queue depth) and
        those a worker runs now. Nothing when that backend is not installed."""
        if not apps.is_installed(TASKS_APP):
            return []
        from django_tasks_db.models import DBTaskResult  # installed only with that backend

        depth = GaugeMetricFamily(
            "kb_task_queue_depth",
            "Tasks ready to run and waiting for a worker, by queue.",
            labels=["queue"],
        )
        running = GaugeMetricFamily(
            "kb_tasks_running", "Tasks a worker is running, by queue.", labels=["queue"]
        )
        for family, queryset in (
            (depth, DBTaskResult.objects.ready()),
            (running, DBTaskResult.objects.running()),
        ):
            rows = queryset.order_by().values_list("queue_name").annotate(n=Count("pk"))
            counts = {"default": 0, **dict(rows)}
            for queue, count in sorted(counts.items()):
                family.add_metric([queue], count)
        return [depth, running]


class _ThisProcess:
    """prometheus-client's global registry (this process's metrics and its process and
    platform collectors), as one collector of a scrape's registry."""

    def collect(self) -> Iterator[Metric]:
        yield from REGISTRY.collect()


def scrape() -> bytes:
    """The text exposition of every worker's metrics and the database gauges."""
    registry = CollectorRegistry()
    path = multiprocess_dir()
    if path:
        MultiProcessCollector(registry, path=path)
    else:
        registry.register(_ThisProcess())
    registry.register(DatabaseCollector())
    return generate_latest(registry)
