"""``manage.py warm_matcher`` builds the matcher (and its on-disk cache) before serving."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from tests.factories import make_record

pytestmark = pytest.mark.django_db


def test_warm_matcher_builds_the_matcher_for_the_active_records() -> None:
    make_record()
    make_record()
    out = StringIO()
    call_command("warm_matcher", stdout=out)
    assert "Matcher ready: 2 patterns" in out.getvalue()

    from kb.matching.holder import holder

    assert holder._matcher is not None  # the process now serves without compiling
