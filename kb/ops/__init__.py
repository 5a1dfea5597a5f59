"""Operations: what keeps the site up and tells an operator how it is doing.

Request limits and the rate limiter (``middleware``), the fail-soft cache backends
(``caching``), Prometheus metrics (``metrics``: the registry and timers every app uses;
``exposition``: the scrape), ``/healthz`` and ``/metrics`` (``views``), JSON logging
(``logs``), and the operator's commands: ``backup``, ``repack_sqlite``, ``copy_database``
and ``run_with_worker``.
"""
