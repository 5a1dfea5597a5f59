"""Older wordings through the API and ``manage.py match --json``: ``"wording"`` is null
for the current wording and says the releases and the current message for an older one;
``"fits_releases"`` says which releases the paste's own frames point at; a retired
wording is no longer matched. Records are imported from dataset lines carrying a
``releaseHistory`` (``tests/release_records.py``)."""

from __future__ import annotations

import io
import json
import logging
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from kb.matching.holder import holder
from kb.records.models import ErrorRecord
from tests import release_records as R
from tests.factories import import_lines

pytestmark = pytest.mark.django_db


@pytest.fixture
def no_row() -> str:
    line = R.no_row_line()
    assert import_lines(line).rejected == 0
    holder.reset()
    return str(line["record"]["id"])


def api(client: Client, text: str) -> dict:
    resp = client.post("/api/match", {"text": text}, content_type="application/json")
    assert resp.status_code == 200
    return resp.json()


def test_an_old_wording_answers_with_the_record_and_says_its_releases(
    client: Client, no_row: str
) -> None:
    data = api(client, f"sqlalchemy.orm.exc.NoResultFound: {R.NO_ROW_OLD}")
    (m,) = data["matches"]
    assert m["record_id"] == no_row
    assert [a["record_id"] for a in data["answers"]] == [no_row]
    assert m["wording"] == {
        "first_release": "1.3.0",
        "last_release": "1.3.24",
        "current_message": R.NO_ROW_NEW,
        "message": R.NO_ROW_OLD,
        "since": "1.4.0",
    }
    assert m["fits_releases"] is None  # the paste shows no frame and no version


def test_the_current_wording_has_a_null_wording(client: Client, no_row: str) -> None:
    data = api(client, f"sqlalchemy.exc.NoResultFound: {R.NO_ROW_NEW}")
    (m,) = data["matches"]
    assert m["record_id"] == no_row
    assert "wording" in m
    assert m["wording"] is None


def test_the_command_prints_the_same_wording(no_row: str, tmp_path: Path) -> None:
    log = tmp_path / "old.log"
    log.write_text(R.NO_ROW_OLD, encoding="utf-8")
    out = io.StringIO()
    call_command("match", str(log), "--json", stdout=out)
    (m,) = json.loads(out.getvalue())["matches"]
    assert m["record_id"] == no_row
    assert m["wording"]["first_release"] == "1.3.0"
    assert m["wording"]["current_message"] == R.NO_ROW_NEW


def test_a_tracebacks_line_numbers_fit_releases(client: Client, no_row: str) -> None:
    (m,) = api(client, R.py_trace(3293))["matches"]
    assert m["fits_releases"] == ["1.3.18", "1.3.24"]
    assert m["fits"]["by"] == "line numbers"
    assert 'query.py", line 3293' in m["fits"]["shown"]
    (m,) = api(client, R.py_trace(3000))["matches"]
    assert m["fits_releases"] is None  # a line the site never had: no claim


def test_a_java_trace_ranks_the_record_whose_wording_its_release_printed(
    client: Client,
) -> None:
    node, broker = R.kafka_lines()
    assert import_lines(node, broker).rejected == 0
    holder.reset()
    bare = "WARN Connection to node 1 could not be established. Broker may not be available."
    first = api(client, bare)["answers"][0]["record_id"]
    assert first == node["record"]["id"]  # nothing says the release: the current wording
    data = api(client, R.java_trace(781))
    assert data["answers"][0]["record_id"] == broker["record"]["id"]
    m = data["matches"][0]
    assert m["wording"]["last_release"] == "2.7.2"
    assert m["fits_releases"] == ["2.4.0", "2.7.2"]
    # a line of a release that words it the new way: the record that prints it today
    data = api(client, R.java_trace(790))
    assert data["answers"][0]["record_id"] == node["record"]["id"]


def test_a_retired_wording_is_no_longer_matched(client: Client) -> None:
    kept = R.no_row_line()
    retired = R.no_row_line(retiredWordings=[r"No row was found for one\(\)"])
    assert import_lines(kept, retired).rejected == 0
    holder.reset()
    data = api(client, f"NoResultFound: {R.NO_ROW_OLD}")
    assert [(m["record_id"], m["same_message"]) for m in data["matches"]] == [
        (kept["record"]["id"], [])
    ]
    data = api(client, f"NoResultFound: {R.NO_ROW_NEW}")  # its own wording still matches
    assert {data["matches"][0]["record_id"], *data["matches"][0]["same_message"]} == {
        kept["record"]["id"],
        retired["record"]["id"],
    }


def test_retiring_a_wording_reaches_the_running_matcher(client: Client, no_row: str) -> None:
    assert api(client, R.NO_ROW_OLD)["matches"]
    ErrorRecord.objects.get(pk=no_row)
    line = R.no_row_line(retiredWordings=[r"No row was found for one\(\)"])
    line["record"]["id"] = no_row
    line["record"]["slug"] = ErrorRecord.objects.get(pk=no_row).slug
    assert import_lines(line).rejected == 0
    holder.expire()
    assert api(client, R.NO_ROW_OLD)["matches"] == []
    assert api(client, R.NO_ROW_NEW)["matches"]


def test_a_bad_older_wording_is_left_out_and_logged(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    line = R.no_row_line()
    line["record"]["releaseHistory"]["wordings"].insert(
        0,
        {"message": "x", "pattern": "No row (?P<a>x) (?P=a) found", "firstRelease": "0.9.0",
         "lastRelease": "0.9.9"},
    )  # fmt: skip
    assert import_lines(line).rejected == 0
    holder.reset()
    with caplog.at_level(logging.WARNING, logger="kb.matching.holder"):
        data = api(client, R.NO_ROW_OLD)
    assert [m["record_id"] for m in data["matches"]] == [line["record"]["id"]]
    assert any("older wording(s) not compiled" in r.getMessage() for r in caplog.records)


def test_the_report_formats_say_the_older_wording_and_the_fit(no_row: str, tmp_path: Path) -> None:
    log = tmp_path / "trace.log"
    log.write_text(R.py_trace(3293), encoding="utf-8")
    said = {}
    for fmt in ("text", "markdown", "github"):
        out = io.StringIO()
        call_command("match", str(log), "--format", fmt, stdout=out)
        said[fmt] = out.getvalue()
    assert "How releases 1.3.0\u20131.3.24 word this error; since 1.4.0 it reads: " in said["text"]
    assert "line numbers fit releases 1.3.18\u20131.3.24" in said["text"]
    assert "How releases 1\\.3\\.0\u20131\\.3\\.24 word this error" in said["markdown"]
    assert "fit releases 1\\.3\\.18\u20131\\.3\\.24" in said["markdown"]
    assert "How releases 1.3.0\u20131.3.24 word this error" in said["github"]


def test_the_card_escapes_an_older_wording_and_the_pasted_frame(client: Client) -> None:
    hostile = "No <img src=x onerror=alert(1)> row for one()"
    line = R.no_row_line()
    wordings = line["record"]["releaseHistory"]["wordings"]
    wordings[0] = {
        **wordings[0],
        "message": hostile,
        "pattern": r"No <img src=x onerror=alert\(1\)> row for one\(\)",
    }
    line["record"]["errorMessage"] = "No row <script>alert(2)</script> when one was required"
    assert import_lines(line).rejected == 0
    holder.reset()
    paste = (
        '  File "/x<img onerror=alert(3)>/sqlalchemy/orm/query.py", line 3293, in one\n'
        "NoResultFound: No <img src=x onerror=alert(1)> row for one()\n"
    )
    html = client.post("/match/", {"text": paste}, headers={"HX-Request": "true"}).content.decode()
    assert "data-wording" in html
    assert "data-fit" in html
    assert "<img src=x" not in html
    assert "<script>alert(2)" not in html
    assert "<img onerror" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "&lt;img onerror=alert(3)&gt;" in html


def test_a_bad_older_wording_that_arrives_in_a_change_is_logged(
    client: Client, no_row: str, caplog: pytest.LogCaptureFixture
) -> None:
    assert api(client, R.NO_ROW_NEW)["matches"]  # the matcher is built
    line = R.no_row_line()
    line["record"]["id"] = no_row
    line["record"]["slug"] = ErrorRecord.objects.get(pk=no_row).slug
    line["record"]["releaseHistory"]["wordings"].insert(
        0,
        {"message": "x", "pattern": "No row (?P<a>x) (?P=a) found", "firstRelease": "0.9.0",
         "lastRelease": "0.9.9"},
    )  # fmt: skip
    assert import_lines(line).rejected == 0
    holder.expire()
    with caplog.at_level(logging.WARNING, logger="kb.matching.holder"):
        assert api(client, R.NO_ROW_OLD)["matches"][0]["record_id"] == no_row
    assert any(no_row in r.getMessage() for r in caplog.records)
