"""Real-shaped pastes, one per language, and the records that compete for them.

Each record below is copied from the dataset (``records-all.jsonl``: id, repository, file,
line, exception class, message, pattern), so the tests that use them need no dataset; the
pastes are what the software prints (tracebacks, log4j lines with a Java stack trace, a Go
panic, a RisingWave tracing line).
"""

from __future__ import annotations

from collections.abc import Iterable

from kb.engine import PatternSpec
from kb.engine.evidence import RecordFacts

# (id, repo, file, line, errorClass, errorMessage, messagePattern)
RECORDS = [
    ("9a327bbdc99bb228", "django/django", "django/conf/__init__.py", 143, "ImproperlyConfigured",
     "The SECRET_KEY setting must not be empty.", r"The SECRET_KEY setting must not be empty\."),
    ("3c77940b7f2c7ac8", "django/django", "django/db/models/options.py", 276,
     "ImproperlyConfigured", "{source} must not be empty.", r"(.+?) must not be empty\."),
    ("cd34bb07e5e3dfaf", "risingwavelabs/risingwave",
     "src/stream/src/common/log_store_impl/kv_log_store/serde.rs", 673, "",
     "must not be empty", "must not be empty"),
    ("548dd4f336d6880e", "django/django", "django/template/base.py", 699, "TemplateSyntaxError",
     "Invalid filter: '%s'", "Invalid filter: '(.+?)'"),
    ("3358a242ac30556c", "apache/kafka",
     "storage/src/main/java/org/apache/kafka/storage/internals/log/LogValidator.java", 653,
     "InvalidTimestampException",
     "One or more records have been rejected due to invalid timestamp",
     "One or more records have been rejected due to invalid timestamp"),
    ("f97cc441615a2a72", "risingwavelabs/risingwave",
     "src/frontend/src/optimizer/plan_node/utils.rs", 567, "", "invalid timestamp",
     "invalid timestamp"),
    ("3d48507c0fdbb943", "etcd-io/etcd", "server/auth/store.go", 50, "ErrUserNotFound",
     "auth: user not found", "auth: user not found"),
    ("bccbb8187427ae32", "risingwavelabs/risingwave",
     "src/frontend/src/catalog/system_catalog/rw_catalog/rw_columns.rs", 52, "",
     "user not found", "user not found"),
    ("5f6ba2e49f0c0f8a", "risingwavelabs/risingwave", "src/frontend/src/binder/expr/mod.rs",
     1044, "", "Collate collation other than `C` or `POSIX` is not implemented",
     "Collate collation other than `C` or `POSIX` is not implemented"),
    ("c8c53a131e4a6fe8", "apache/kafka",
     "clients/src/main/java/org/apache/kafka/clients/admin/KafkaAdminClient.java", 4140,
     "UnsupportedOperationException", "not implemented", "not implemented"),
    ("06afaf5115e90cca", "apache/kafka",
     "clients/src/main/java/org/apache/kafka/clients/NetworkClient.java", 849, "",
     "Connection to node {} ({}) could not be established. Node may not be available.",
     r"Connection to node (.+?) \((.+?)\) could not be established\. Node may not be "
     r"available\."),
]  # fmt: skip

SPECS = [PatternSpec(r[0], r[6], r[5]) for r in RECORDS]
FACTS = {r[0]: RecordFacts(r[1], r[2], r[4], r[3]) for r in RECORDS}
REPOS = {r[1] for r in RECORDS} | {"sqlalchemy/sqlalchemy"}


def facts(keys: Iterable[str]) -> dict[str, RecordFacts]:
    return {k: FACTS[k] for k in keys if k in FACTS}


# Python: `manage.py check` with an empty SECRET_KEY (Django 6.1, Python 3.12).
PY_SECRET_KEY = """\
Traceback (most recent call last):
  File "/srv/app/manage.py", line 22, in <module>
    main()
  File "/srv/app/manage.py", line 18, in main
    execute_from_command_line(sys.argv)
  File "/srv/app/.venv/lib/python3.12/site-packages/django/core/management/__init__.py", line 442, in execute_from_command_line
    utility.execute()
  File "/srv/app/.venv/lib/python3.12/site-packages/django/core/management/__init__.py", line 382, in execute
    settings.INSTALLED_APPS
  File "/srv/app/.venv/lib/python3.12/site-packages/django/conf/__init__.py", line 81, in __getattr__
    self._setup(name)
  File "/srv/app/.venv/lib/python3.12/site-packages/django/conf/__init__.py", line 68, in _setup
    self._wrapped = Settings(settings_module)
                    ^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/srv/app/.venv/lib/python3.12/site-packages/django/conf/__init__.py", line 204, in __init__
    raise ImproperlyConfigured("The SECRET_KEY setting must not be empty.")
django.core.exceptions.ImproperlyConfigured: The SECRET_KEY setting must not be empty.
"""  # noqa: E501

# Python: a template using a filter that is not loaded; the quoted `raise` line carries `%s`.
PY_INVALID_FILTER = """\
Internal Server Error: /reports/
Traceback (most recent call last):
  File "/srv/app/.venv/lib/python3.12/site-packages/django/template/base.py", line 594, in find_filter
    return self.filters[filter_name]
           ~~~~~~~~~~~~^^^^^^^^^^^^^
KeyError: 'upper_first'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/srv/app/.venv/lib/python3.12/site-packages/django/template/base.py", line 519, in parse
    filter_expression = self.compile_filter(token.contents)
                        ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/srv/app/.venv/lib/python3.12/site-packages/django/template/base.py", line 699, in find_filter
    raise TemplateSyntaxError("Invalid filter: '%s'" % filter_name)
django.template.exceptions.TemplateSyntaxError: Invalid filter: 'upper_first'
"""  # noqa: E501

# Java: a Kafka broker's log4j lines with the exception and its stack trace.
JAVA_KAFKA = """\
[2024-06-11 09:41:07,550] ERROR [ReplicaManager broker=1] Error processing append operation on partition events-0 (kafka.server.ReplicaManager)
org.apache.kafka.common.errors.InvalidTimestampException: One or more records have been rejected due to invalid timestamp
\tat org.apache.kafka.storage.internals.log.LogValidator.validateTimestamp(LogValidator.java:579)
\tat org.apache.kafka.storage.internals.log.LogValidator.validateMessagesAndAssignOffsetsCompressed(LogValidator.java:381)
\tat org.apache.kafka.storage.internals.log.UnifiedLog.append(UnifiedLog.java:1021)
\tat kafka.server.ReplicaManager.appendToLocalLog(ReplicaManager.scala:1245)
"""  # noqa: E501

# Java, the same broker, a message no record has, holding a phrase RisingWave prints.
JAVA_KAFKA_UNKNOWN = """\
[2024-06-11 09:41:07,550] ERROR [ReplicaManager broker=1] Error processing append operation on partition events-0 (kafka.server.ReplicaManager)
org.apache.kafka.common.errors.CorruptRecordException: Record batch for partition events-0 has invalid timestamp type
\tat org.apache.kafka.storage.internals.log.LogValidator.validateRecord(LogValidator.java:612)
\tat org.apache.kafka.storage.internals.log.UnifiedLog.append(UnifiedLog.java:1021)
\tat kafka.server.ReplicaManager.appendToLocalLog(ReplicaManager.scala:1245)
"""  # noqa: E501

# Go: a tool using etcd's auth store panics on the error it returns.
GO_ETCD = """\
panic: auth: user not found

goroutine 1 [running]:
go.etcd.io/etcd/server/v3/auth.(*authStore).UserGet(0xc0001a2000, 0xc0000b6000)
\t/go/pkg/mod/go.etcd.io/etcd/server/v3@v3.5.12/auth/store.go:612 +0x2a5
main.main()
\t/src/tools/adduser/main.go:31 +0x1d4
exit status 2
"""

# Rust: a RisingWave frontend's tracing line (the error chain on one line).
RUST_RISINGWAVE = (
    "2024-05-10T08:12:01.532109Z ERROR risingwave_frontend::binder::expr: failed to bind "
    "expression error=Collate collation other than `C` or `POSIX` is not implemented\n"
)

# Java: a Kafka client of an older release, whose wording the record has since changed.
JAVA_KAFKA_BROKER = (
    "[2024-05-02 10:15:32,118] WARN [Producer clientId=producer-1] Connection to node -1 "
    "(localhost/127.0.0.1:9092) could not be established. Broker may not be available. "
    "(org.apache.kafka.clients.NetworkClient)\n"
)

# Go: etcd's JSON log lines, the same error three times.
GO_ETCD_JSON = (
    '{"level":"error","ts":"2024-03-01T10:00:00.123Z","caller":"auth/store.go:612",'
    '"msg":"auth: user not found","user":"ci"}\n'
) * 3
