"""The new fields of the match answer, through the API and `manage.py match --json`: a
suggestion's `reworded` word diff, and the groups' `order`, `reason` and `cause`."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from tests.factories import make_record

pytestmark = pytest.mark.django_db

SA_PASTE = "sqlalchemy.exc.ArgumentError: Could not parse SQLAlchemy URL from string 'postgres//x'"
CHAIN = "\n".join(
    [
        "org.springframework.transaction.CannotCreateTransactionException: "
        "Could not open JPA EntityManager for transaction",
        "\tat org.springframework.orm.jpa.JpaTransactionManager.doBegin(JpaTM.java:467)",
        "Caused by: org.hibernate.exception.JDBCConnectionException: "
        "Unable to acquire JDBC Connection",
        "\tat org.hibernate.engine.jdbc.Impl.acquire(Impl.java:108)",
    ]
)


@pytest.fixture
def records() -> dict[str, str]:
    return {
        "sa": make_record(
            errorMessage="Could not parse rfc1738 URL from string '%s'",
            messagePattern="Could not parse rfc1738 URL from string '(.+?)'",
        ).pk,
        "jpa": make_record(
            errorMessage="Could not open JPA EntityManager for transaction",
            messagePattern="Could not open JPA EntityManager for transaction",
        ).pk,
        "jdbc": make_record(
            errorMessage="Unable to acquire JDBC Connection",
            messagePattern="Unable to acquire JDBC Connection",
        ).pk,
    }


def api(client: Client, text: str) -> dict:
    resp = client.post("/api/match", {"text": text}, content_type="application/json")
    assert resp.status_code == 200
    return resp.json()


def test_a_suggestion_says_which_words_were_reworded(
    client: Client, records: dict[str, str]
) -> None:
    data = api(client, SA_PASTE)
    (s,) = [s for s in data["suggestions"] if s["record_id"] == records["sa"]]
    assert set(s) >= {"record_id", "similarity", "reason"}  # the contract's keys stay
    assert s["reworded"]["summary"] == "reworded: rfc1738 → SQLAlchemy"
    assert s["reworded"]["changes"] == [{"record": "rfc1738", "paste": "SQLAlchemy"}]
    assert {"op": "value", "text": "'postgres//x'"} in s["reworded"]["segments"]


def test_groups_carry_order_reason_and_cause(
    client: Client, records: dict[str, str], tmp_path: Path
) -> None:
    data = api(client, CHAIN)
    groups = data["groups"]
    assert [g["record_id"] for g in groups] == [records["jdbc"], records["jpa"]]
    assert [g["order"] for g in groups] == [1, 2]
    assert groups[0]["reason"] == "root cause: innermost Caused by"
    assert groups[0]["cause"] is None
    assert groups[1]["reason"] == 'consequence of the error on line 3, linked by a "Caused by" line'
    assert groups[1]["cause"] == records["jdbc"]
    # the command prints the same object
    log = tmp_path / "ci.log"
    log.write_text(CHAIN, encoding="utf-8")
    out = io.StringIO()
    call_command("match", str(log), "--json", stdout=out)
    printed = json.loads(out.getvalue())
    assert [(g["record_id"], g["reason"]) for g in printed["groups"]] == [
        (g["record_id"], g["reason"]) for g in groups
    ]


def test_the_openapi_schema_documents_the_new_fields(client: Client) -> None:
    schemas = client.get("/api/openapi.json").json()["components"]["schemas"]
    assert "reworded" in schemas["MatchSuggestion"]["properties"]
    assert set(schemas["Reworded"]["properties"]) == {"summary", "changes", "segments"}
    assert {"order", "reason", "cause"} <= set(schemas["MatchGroup"]["properties"])
    assert "groups" in schemas["MatchOut"]["properties"]
