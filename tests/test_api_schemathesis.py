"""Hostile input for the JSON API, generated from its own OpenAPI schema (schemathesis).

Every operation in ``/api/openapi.json`` gets generated requests — valid and invalid —
through the WSGI app in-process; none may answer 5xx, and responses must match the schema
(status codes, content types, bodies). 30 examples per operation in the suite, 1000 under
``make fuzz`` (``HYPOTHESIS_PROFILE=fuzz``); ``SCHEMATHESIS_MAX_EXAMPLES`` overrides both.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from kb.wsgi import application
from tests.factories import make_record
from tests.hypothesis_profiles import selected

_DEFAULT = "1000" if selected() == "fuzz" else "30"
MAX_EXAMPLES = int(os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", _DEFAULT))

schema = schemathesis.openapi.from_wsgi("/api/openapi.json", application)


@pytest.fixture(autouse=True)
def _wsgi_in_test_transaction(settings: object) -> Iterator[None]:
    """Like Django's test client: the app must not close the test's connection."""
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections

    settings.KB_RATE_LIMIT_PER_MINUTE = 0
    make_record()
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.mark.django_db
@schema.parametrize()
@settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_api_fuzz_never_fails_and_matches_its_schema(case: schemathesis.Case) -> None:
    case.call_and_validate()
