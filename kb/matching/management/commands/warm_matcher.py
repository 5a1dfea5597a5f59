"""``manage.py warm_matcher``: compile the matcher once, before the web server starts.

Compiling the pattern databases for the full dataset is the slow part of a start; doing it
here fills the on-disk cache (``KB_MATCHER_CACHE_DIR``) so each gunicorn worker only loads
it, and the first paste after a deploy is as fast as any other. Run it after ``migrate``.

The line it prints says where the matcher came from (compiled, the local cache, or the
store shared by every host, ``KB_MATCHER_STORE``), so a deploy can check that a new host
did not compile what another host already had.
"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand

from kb.matching.holder import get_matcher


class Command(BaseCommand):
    help = "Build (or load) the compiled matcher cache for the current records."

    def handle(self, *args: Any, **options: Any) -> None:
        started = time.perf_counter()
        matcher = get_matcher()
        elapsed = time.perf_counter() - started
        size = len(matcher)
        stats = matcher.stats
        if stats.get("matcher_from_store"):
            source = "loaded from store"
        elif stats.get("matcher_from_cache"):
            source = "loaded from local cache"
        else:
            source = f"compiled {stats.get('shards_compiled', 0)} shards"
            if stats.get("shards_fetched"):  # the others' shards another host compiled
                source += f", {stats['shards_fetched']} fetched from store"
        self.stdout.write(f"Matcher ready: {size} patterns in {elapsed:.2f} s ({source})")
