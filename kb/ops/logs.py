"""``LOG_FORMAT=json``: one JSON object per log line, for Django's loggers and gunicorn's.

Structured logs are only as private as their fields. Two loggers carry more than their
message: ``django.request`` (and runserver's ``django.server``) pass the request object,
which python-json-logger would write out whole; gunicorn's access logger passes every
request atom, the client address and query string among them. ``JsonFormatter`` keeps
from those only what the text logs show (method, path without its query string, status,
size, time) and never a body, a query string or a client address
(docs/reliability.md#r27-paste-privacy).

This module imports nothing of the app's, so gunicorn's arbiter can load it before any
worker (or the metrics machinery) exists.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from gunicorn.glogging import Logger
from pythonjsonlogger.json import JsonFormatter as _Base

# Extra attributes that must not reach a log line as they are.
_DROPPED = ("request", "server_time")
# gunicorn access atoms kept, under readable names: no h (client address), r (request
# line, with the query string), q (query string), a (user agent) or headers.
ACCESS_ATOMS = {"m": "method", "U": "path", "s": "status", "B": "bytes", "M": "duration_ms"}


class JsonFormatter(_Base):
    """python-json-logger's formatter with the app's field names and privacy rules."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("fmt", "%(levelname)s %(name)s %(process)d %(message)s")
        kwargs.setdefault("rename_fields", {"levelname": "level", "name": "logger"})
        kwargs.setdefault("timestamp", "time")
        super().__init__(*args, **kwargs)

    def add_fields(
        self, log_data: dict[str, Any], record: logging.LogRecord, message_dict: dict[str, Any]
    ) -> None:
        super().add_fields(log_data, record, message_dict)
        request = log_data.get("request")
        for key in _DROPPED:
            log_data.pop(key, None)
        if request is not None and hasattr(request, "path"):
            log_data["method"] = getattr(request, "method", None)
            log_data["path"] = request.path
        if record.name == "gunicorn.access" and isinstance(record.args, Mapping):
            atoms = record.args
            for atom, name in ACCESS_ATOMS.items():
                log_data[name] = _number(atoms.get(atom))
            # The configured access format may hold any atom: say the same as the fields.
            log_data["message"] = f"{atoms.get('m')} {atoms.get('U')} {atoms.get('s')}"


def _number(value: Any) -> Any:
    if isinstance(value, str) and value.isdigit():
        return int(value)
    return value


class GunicornJsonLogger(Logger):
    """gunicorn's logger with every handler it set up (console, files, syslog) writing
    through ``JsonFormatter``: ``--access-logfile`` and ``--error-logfile`` keep working,
    which a ``logconfig_dict`` (it replaces the handlers) would not."""

    def setup(self, cfg: Any) -> None:
        super().setup(cfg)
        formatter = JsonFormatter()
        for log in (self.error_log, self.access_log):
            for handler in log.handlers:
                handler.setFormatter(formatter)
