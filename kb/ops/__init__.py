"""Operations: what keeps the site up and tells an operator how it is doing.

Request limits, the rate limiter and the 503 for a write the database declines for now
(``middleware``), the fail-soft cache backends (``caching``), waiting briefly for SQLite's
write lock (``locks``), backoff (``retry``), Prometheus metrics (``metrics``: the registry
and timers every app uses; ``exposition``: the scrape), ``/healthz`` and ``/metrics``
(``views``), JSON logging (``logs``), and the operator's commands: ``backup``,
``repack_sqlite``, ``copy_database``, ``run_with_worker`` and ``db_worker`` (the task
worker, which waits out a locked database).
"""
