"""Settings for the error knowledge base, read from the environment.

One module for every deployment: development defaults are safe and need nothing set;
production sets ``DEBUG=0``, ``SECRET_KEY``, ``ALLOWED_HOSTS`` and usually ``DATABASE_URL``.
Each helper below fails loudly on a malformed value instead of guessing.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured
from django.utils.csp import CSP

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    value = raw.strip().lower()
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use 1/0, true/false, yes/no)")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None


def env_list(name: str, default: list[str]) -> list[str]:
    raw = os.environ.get(name)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


DEBUG = env_bool("DEBUG", True)

_DEV_SECRET = "django-insecure-dev-only-key-never-used-in-production-0123456789"  # noqa: S105
SECRET_KEY = env_str("SECRET_KEY", _DEV_SECRET if DEBUG else "")
if not SECRET_KEY:
    raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off")

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django_htmx",
    "django_filters",
    "simple_history",
    # Before django_tasks_db: its ``db_worker`` command is kb.ops' (a locked database pauses
    # the worker instead of ending it), and the first app listed wins a command's name.
    "kb.ops",
    "django_tasks_db",
    "kb.records",
    "kb.sources",
    "kb.curation",
    "kb.matching",
    "kb.loop",
    "kb.browse",
]

# Header-setting middleware comes first so that every response gets the headers, including
# those answered early (413/429 below, 400 for a bad Host from CommonMiddleware).
MIDDLEWARE = [
    # First, so that every answer is timed, the early ones included (kb.ops.metrics).
    "kb.ops.metrics.RequestMetricsMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django.middleware.csp.ContentSecurityPolicyMiddleware",
    # Before sessions and CSRF: an oversized or rate-limited request is answered (413/429)
    # without reading its body or touching a session.
    "kb.ops.middleware.RequestLimitsMiddleware",
    # A write the database declines for now (locked, read-only) is a 503 with Retry-After,
    # not a 500 (its process_exception sees every view's error).
    "kb.ops.middleware.WriteUnavailableMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    # Sets the voter id a page's vote form issued, as the CSRF middleware sets its cookie.
    "kb.loop.votes.VoterCookieMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "simple_history.middleware.HistoryRequestMiddleware",
]

ROOT_URLCONF = "kb.urls"
WSGI_APPLICATION = "kb.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.template.context_processors.csp",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    }
]

# --- Database -------------------------------------------------------------------------
# SQLite is the zero-setup default; DATABASE_URL=postgres://user:pass@host:port/name
# selects PostgreSQL (psycopg 3, with its connection pool when DB_POOL=1).
DATABASE_URL = env_str("DATABASE_URL", f"sqlite:///{BASE_DIR / 'kb.sqlite3'}")
_db = dj_database_url.parse(DATABASE_URL, conn_max_age=0)
if _db["ENGINE"] == "django.db.backends.sqlite3":
    _db["OPTIONS"] = {
        # WAL lets readers run beside the single writer; IMMEDIATE takes the write lock at
        # BEGIN so two writers queue on busy_timeout instead of failing mid-transaction.
        "transaction_mode": "IMMEDIATE",
        # What a request waits for the write lock (sqlite3's ``timeout`` is the connection's
        # busy_timeout): long enough to queue behind another request's write, short enough
        # that a lock held by an import or an open shell answers 503 with Retry-After
        # (kb.ops.middleware.WriteUnavailableMiddleware) instead of holding a sync worker.
        # The task worker waits longer (SQLITE_WORKER_BUSY_TIMEOUT, kb.ops db_worker).
        "timeout": env_int("SQLITE_BUSY_TIMEOUT", 5),
        "init_command": (
            # Only a new database takes it (before its first table): a record spans a few
            # small pages, and a page large enough to hold it whole saves the overflow
            # chain on every read and write (benchmarks/bench_import.py measures it).
            "PRAGMA page_size=16384;"
            "PRAGMA journal_mode=WAL;"
            "PRAGMA synchronous=FULL;"
            "PRAGMA foreign_keys=ON;"
            "PRAGMA cache_size=-64000;"
            "PRAGMA temp_store=MEMORY;"
        ),
    }
    # Keep a worker's connection between requests: opening one and running the pragmas
    # above is a noticeable share of a cheap request such as a match.
    _db["CONN_MAX_AGE"] = env_int("DB_CONN_MAX_AGE", 60)
    _db["CONN_HEALTH_CHECKS"] = True
    # Tests run on a real SQLite file (WAL and all), not an in-memory database.
    _db["TEST"] = {"NAME": env_str("SQLITE_TEST_NAME", str(BASE_DIR / ".cache" / "test.sqlite3"))}
elif _db["ENGINE"] == "django.db.backends.postgresql":
    # What a statement waits for a row or table lock another transaction holds (a long
    # import or admin action): then PostgreSQL cancels it (SQLSTATE 55P03) and a request
    # answers 503 with Retry-After, as SQLite's busy timeout does; 0 waits for ever.
    _options = _db.setdefault("OPTIONS", {})
    _lock_timeout = f"-c lock_timeout={env_int('PG_LOCK_TIMEOUT', 5) * 1000}"
    _options["options"] = f"{_options.get('options', '')} {_lock_timeout}".strip()
    _db["CONN_MAX_AGE"] = 0 if env_bool("DB_POOL", False) else env_int("DB_CONN_MAX_AGE", 60)
    _db["CONN_HEALTH_CHECKS"] = True
    if env_bool("DB_POOL", False):
        _db.setdefault("OPTIONS", {})["pool"] = {"min_size": 1, "max_size": 8}
    if "TEST" not in _db:
        _db["TEST"] = {"NAME": env_str("DATABASE_TEST_NAME", f"test_{_db['NAME']}")}
DATABASES = {"default": _db}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Cache (shared by worker processes: the rate limiter counts here) ---------------------
# The shared cache is the database by default: every worker and every host on the same
# database counts the rate limit in one place, with no extra service (a per-process cache
# would multiply the limit by the number of workers). Its table comes with ``migrate``
# (migration 0016_cache_table). ``CACHE_URL=redis://host:port/db`` selects Redis for
# several hosts. Either way the backend fails soft (``kb.ops.caching``): a cache outage is
# slower pages and one log line, never a 500.
CACHE_URL = env_str("CACHE_URL", "")
if CACHE_URL:
    _default_cache: dict[str, Any] = {
        "BACKEND": "kb.ops.caching.RedisCache",
        "LOCATION": CACHE_URL,
        # An unreachable Redis must cost a page little: connect and reply bounded, and no
        # retries (kb.ops.caching stops calling it for a while after the first failure).
        "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
    }
else:
    _default_cache = {"BACKEND": "kb.ops.caching.DatabaseCache", "LOCATION": "kb_cache"}
CACHES = {
    "default": _default_cache,
    # Rendered page bodies (record page, record and tag lists), per process: each key
    # carries the data revision, so an entry is only reused while nothing has changed
    # (``kb.browse.views.fragment_key``, ``kb.browse.record_page.record_detail``).
    "fragments": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "kb-fragments",
        "TIMEOUT": 600,
        # Bounded by count: page bodies are small, so a few hundred of them stay well
        # inside a worker's memory.
        "OPTIONS": {"MAX_ENTRIES": 500},
    },
    # What the code says (``kb.browse.explanations``): derived from the record alone, so each
    # worker keeps its own rather than writing to the database on a page view (a GET
    # that waits for an import's commit to store a few strings would stall pages).
    "explanations": {
        "BACKEND": "django.core.cache.backends.locmem.LocMemCache",
        "LOCATION": "kb-explanations",
        "TIMEOUT": 24 * 3600,
        "OPTIONS": {"MAX_ENTRIES": 20000},
    },
}

# --- Static files ---------------------------------------------------------------------
STATIC_URL = "/static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(BASE_DIR / "staticfiles")))
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": (
            "django.contrib.staticfiles.storage.StaticFilesStorage"
            if DEBUG
            else "whitenoise.storage.CompressedManifestStaticFilesStorage"
        )
    },
}

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- Security -------------------------------------------------------------------------
SECURE_CSP = {
    "default-src": [CSP.SELF],
    "script-src": [CSP.SELF, CSP.NONCE],
    "style-src": [CSP.SELF],
    "img-src": [CSP.SELF, "data:"],
    "connect-src": [CSP.SELF],
    "font-src": [CSP.SELF],
    "object-src": [CSP.NONE],
    "base-uri": [CSP.NONE],
    "frame-ancestors": [CSP.NONE],
    "form-action": [CSP.SELF],
}
X_FRAME_OPTIONS = "DENY"
CSRF_FAILURE_VIEW = "kb.http.csrf_failure"
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SECURE_CROSS_ORIGIN_OPENER_POLICY = "same-origin"
SESSION_COOKIE_HTTPONLY = True
CSRF_COOKIE_HTTPONLY = False  # htmx reads no cookie: the token travels in hx-headers
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_X_FORWARDED_PROTO", "https") if env_bool("BEHIND_TLS_PROXY", False) else None
)
# Production (DEBUG off) is HTTPS-only. SecurityMiddleware sends HSTS on secure requests
# only, so behind a TLS proxy set BEHIND_TLS_PROXY=1 (trusts X-Forwarded-Proto).
if not DEBUG:
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31536000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
    SESSION_COOKIE_SECURE = True
    CSRF_COOKIE_SECURE = True
# Load balancers probe /healthz over plain HTTP on the private network: no redirect there.
# A scraper reads /metrics from each host's gunicorn directly (plain HTTP on the private
# network, docs/deployment.md): no redirect there either; the bearer token guards it.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^metrics$"]
SESSION_COOKIE_SAMESITE = "Lax"
CSRF_COOKIE_SAMESITE = "Lax"
# Silenced deploy checks, each with its reason (docs/reliability.md#r1-deploy-check):
# - security.W021 (HSTS preload): opt-in via SECURE_HSTS_PRELOAD=1; preloading is a one-way
#   commitment for the whole domain that an operator must make knowingly.
SILENCED_SYSTEM_CHECKS = ["security.W021"]
# Error reports (500 mails, debug pages) never show POST data: pastes may hold secrets.
DEFAULT_EXCEPTION_REPORTER_FILTER = "kb.ops.middleware.NoRequestBodyReporterFilter"

# --- Limits ---------------------------------------------------------------------------
# A paste larger than this is refused with a friendly message (HTML partial or JSON 413).
KB_MAX_PASTE_BYTES = env_int("KB_MAX_PASTE_BYTES", 256 * 1024)
# Whole log files (upload or stdin of `manage.py match`) may be larger.
KB_MAX_LOG_BYTES = env_int("KB_MAX_LOG_BYTES", 64 * 1024 * 1024)
# A log up to this size is read whole; a larger one (from `manage.py match` or a log body
# of POST /api/match) is read in blocks and matched from the lines that matter
# (kb.engine.logstream), in bounded memory.
KB_MATCH_WHOLE_BYTES = env_int("KB_MATCH_WHOLE_BYTES", 32 * 1024 * 1024)
# Non-file request bodies. A form-encoded paste grows when percent-encoded (up to three
# times for non-ASCII text), so the body cap leaves room and the matcher enforces the
# exact paste limit; bodies past this are answered 413 by kb.ops.middleware before anything
# reads them.
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int(
    "DATA_UPLOAD_MAX_MEMORY_SIZE", 3 * KB_MAX_PASTE_BYTES + 64 * 1024
)
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
# The deepest JSON body taken (arrays and objects open at once); deeper ones get 400 before
# anything parses them. Every body the API takes nests two or three levels.
KB_MAX_JSON_DEPTH = env_int("KB_MAX_JSON_DEPTH", 32)
# Whole multipart bodies (admin JSONL upload) may be up to this size.
KB_MAX_UPLOAD_BYTES = env_int("KB_MAX_UPLOAD_BYTES", KB_MAX_LOG_BYTES + 1024 * 1024)
# An import job that shows no sign of life for this long is shown as stalled (its worker
# most likely stopped; the batches it committed are kept, re-uploading finishes it).
KB_IMPORT_STALL_SECONDS = env_int("KB_IMPORT_STALL_SECONDS", 300)
# Requests per minute per client on the matching endpoints (0 disables). Counted in the
# default cache (the database), so the limit holds across gunicorn workers and hosts.
KB_RATE_LIMIT_PER_MINUTE = env_int("KB_RATE_LIMIT_PER_MINUTE", 600)
# A match request counts once per started unit of body: big pastes use more of the budget.
KB_RATE_LIMIT_UNIT_BYTES = env_int("KB_RATE_LIMIT_UNIT_BYTES", 32 * 1024)
# Reports and proposals also count their handling's CPU time, one unit per started this many
# milliseconds (when that is more than their body's units): the budget is then at most
# KB_RATE_LIMIT_PER_MINUTE x this much CPU a minute per client, whatever the text makes
# redaction and folding cost. 0 turns it off.
KB_RATE_LIMIT_CPU_UNIT_MS = env_int("KB_RATE_LIMIT_CPU_UNIT_MS", 10)
# How many reverse proxies in front of the app append to X-Forwarded-For; the client is the
# address that many hops from the right. 0 (no proxy): REMOTE_ADDR is the client.
KB_TRUSTED_PROXY_COUNT = env_int("KB_TRUSTED_PROXY_COUNT", 0)

# --- Learning loop (docs/learning-loop.md) ---------------------------------------------
# Each way people send something back can be turned off on its own: unknown-error reports,
# proposals ("How did you fix it?") and feedback votes. Off answers 403 and hides the form.
KB_REPORTS_ENABLED = env_bool("KB_REPORTS_ENABLED", True)
KB_PROPOSALS_ENABLED = env_bool("KB_PROPOSALS_ENABLED", True)
KB_FEEDBACK_ENABLED = env_bool("KB_FEEDBACK_ENABLED", True)
# Usage rows, votes, gap samples and rejected proposals older than this many days are
# deleted by `manage.py purge_learning`: aggregates are for spotting trends, not archives.
KB_LEARNING_RETENTION_DAYS = env_int("KB_LEARNING_RETENTION_DAYS", 180)
# Count which records pastes hit and how many matched nothing (kb.loop.usage); off keeps
# the paste path exactly as without the learning loop (the bench compares the two).
KB_USAGE_ENABLED = env_bool("KB_USAGE_ENABLED", True)
# A worker writes its buffered hit/miss counts at most this often (and at exit): a crash
# loses at most one interval of one worker's counts, the paste path writes nothing.
KB_USAGE_FLUSH_SECONDS = env_int("KB_USAGE_FLUSH_SECONDS", 30)
# The longest proposal text taken: a solution step or a note, not an article.
KB_PROPOSAL_MAX_CHARS = env_int("KB_PROPOSAL_MAX_CHARS", 4000)
# Pending proposals one address may have on one record (per day: the address is known only
# through the day's salted digest). A person proposes a step or two; past this it is a flood.
KB_PROPOSALS_PENDING_PER_ADDRESS = env_int("KB_PROPOSALS_PENDING_PER_ADDRESS", 3)
# Distinct voters on a record's steps before the page orders the steps by helpfulness,
# counted by address and day (kb.loop.selectors.step_order), since voter ids cost nothing
# to collect. Below it, a single visitor's one or two clicks would reorder what the
# curator wrote; five is the smallest count where a majority of them outweighs one person
# voting on several days.
KB_VOTE_THRESHOLD = env_int("KB_VOTE_THRESHOLD", 5)
# Voters counted from one address per record and day, whatever voter ids they carry
# (kb.loop.votes): a few people behind one office or home address each count, a client
# collecting ids counts no more than they do.
KB_VOTERS_PER_ADDRESS = env_int("KB_VOTERS_PER_ADDRESS", 3)

# --- Matcher --------------------------------------------------------------------------
# Compiled pattern databases are cached here, keyed by content, shared by all workers.
KB_MATCHER_CACHE_DIR = Path(env_str("KB_MATCHER_CACHE_DIR", str(BASE_DIR / ".cache" / "matcher")))
# How often (in seconds) a worker checks whether records changed since its matcher was built.
KB_MATCHER_REFRESH_SECONDS = float(env_str("KB_MATCHER_REFRESH_SECONDS", "0.5"))
# Where hosts share compiled matchers (kb/matching/store.py): "database" (default),
# "storage:<STORAGES alias>" (an object store through django-storages, say) or "none".
KB_MATCHER_STORE = env_str("KB_MATCHER_STORE", "database")
# Patterns a compiled shard aims at (kb/engine/shards.py); 0: grows with the number of
# patterns to the power 2/3 (shards.target_size), the trade-off between a paste's scans
# and a rebuild's compile.
KB_MATCHER_SHARD_SIZE = env_int("KB_MATCHER_SHARD_SIZE", 0)

# --- Tasks (long admin imports run in the background) ----------------------------------
# Uploaded JSONL files wait here for the import task; web and task workers must share it.
KB_IMPORT_DIR = Path(env_str("KB_IMPORT_DIR", str(BASE_DIR / ".cache" / "imports")))
# Tasks persist in the database (django-tasks-db) and run in ``manage.py db_worker``
# (started beside the web server by ``make run`` and ``make serve``): an import never runs
# inside a web request, and a queued job survives a restart of every process.
TASKS = {"default": {"BACKEND": env_str("KB_TASKS_BACKEND", "django_tasks_db.DatabaseBackend")}}
# Seconds the task worker's SQLite connection waits for the write lock: an import batch
# queues behind a curator's save rather than fail; a lock held longer fails the batch or
# the poll, and the worker retries with backoff (kb/ops/management/commands/db_worker.py).
SQLITE_WORKER_BUSY_TIMEOUT = env_int("SQLITE_WORKER_BUSY_TIMEOUT", 20)

# --- Sources (docs/learning-a-codebase.md) ---------------------------------------------
# Git remotes a source names are mirrored here (one bare repository each, fetched again on
# every learn); only the worker that learns needs it.
KB_SOURCES_CACHE_DIR = Path(env_str("KB_SOURCES_CACHE_DIR", str(BASE_DIR / ".cache" / "sources")))
# A source archive that unpacks to more bytes or holds more members is refused whole (a
# size or file-count bomb); a release download past the byte limit too.
KB_ARCHIVE_MAX_BYTES = env_int("KB_ARCHIVE_MAX_BYTES", 1024 * 1024 * 1024)
KB_ARCHIVE_MAX_FILES = env_int("KB_ARCHIVE_MAX_FILES", 100_000)
# The package index's JSON API that ``pypi:NAME==VERSION`` sources are downloaded from.
KB_PACKAGE_INDEX_URL = env_str("KB_PACKAGE_INDEX_URL", "https://pypi.org/simple")

# --- Metrics and logs (docs/deployment.md) ---------------------------------------------
# The bearer token a scraper sends to GET /metrics; unset, the endpoint answers 404.
KB_METRICS_TOKEN = env_str("KB_METRICS_TOKEN", "")
# "text" (default) or "json": one JSON object per line (kb.ops.logs), for log collectors.
LOG_FORMAT = env_str("LOG_FORMAT", "text").strip().lower()
if LOG_FORMAT not in {"text", "json"}:
    raise ImproperlyConfigured(f"LOG_FORMAT={LOG_FORMAT!r} is not 'text' or 'json'")

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "kb.ops.logs.JsonFormatter"}},
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            **({"formatter": "json"} if LOG_FORMAT == "json" else {}),
        }
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # Request bodies may hold secrets from pastes: never log them.
    "loggers": {"django.request": {"handlers": ["console"], "level": "ERROR", "propagate": False}},
}

ADMINS: list[tuple[str, str]] = []
SERVER_EMAIL = env_str("SERVER_EMAIL", "errorkb@localhost")
