"""Records learned from releases, as dataset lines with a hand-written ``releaseHistory``
(the learner's output shape, ``kb.records.schema``), and the pastes that meet them.

SQLAlchemy's ``No row was found for one()`` (1.3.x) became ``No row was found when one
was required`` (1.4.0 on); Kafka's ``... Broker may not be available.`` became ``... Node
may not be available.`` in 2.8.0, and another site now prints the old wording. The
ranges, lines and commits are made up but shaped as the learner writes them.
"""

from __future__ import annotations

from typing import Any

from tests.factories import make_line

QUERY = "lib/sqlalchemy/orm/query.py"
NETWORK = "clients/src/main/java/org/apache/kafka/clients/NetworkClient.java"
STATES = "clients/src/main/java/org/apache/kafka/clients/ClusterConnectionStates.java"

NO_ROW_OLD = "No row was found for one()"
NO_ROW_NEW = "No row was found when one was required"
BROKER_OLD = "Connection to node {} could not be established. Broker may not be available."
BROKER_OLD_PATTERN = (
    r"Connection to node (.+?) could not be established\. Broker may not be available\."
)
NODE_NEW = "Connection to node {} ({}) could not be established. Node may not be available."
NODE_NEW_PATTERN = (
    r"Connection to node (.+?) \((.+?)\) could not be established\. Node may not be available\."
)


def _commit(sha: str, subject: str) -> dict[str, str]:
    return {"sha": sha * 8, "subject": subject, "date": "2021-03-15T10:00:00+00:00"}


def no_row_line(**extra: Any) -> dict[str, Any]:
    """SQLAlchemy's ``one()`` with no row: reworded in 1.4.0."""
    return make_line(
        repo="sqlalchemy/sqlalchemy",
        slug="no-row-was-found-when-one-was-required",
        errorClass="NoResultFound",
        errorMessage=NO_ROW_NEW,
        messagePattern=NO_ROW_NEW,
        filePath="lib/sqlalchemy/engine/result.py",
        lineNumber=1234,
        firstRelease="1.3.0",
        lastRelease="2.0.30",
        releaseHistory={
            "introducedBy": _commit("a1b2c3d4", "Query.one() raises NoResultFound"),
            "lastChangedBy": _commit("e5f6a7b8", "Reword NoResultFound for 1.4"),
            "wordings": [
                {"message": NO_ROW_OLD, "pattern": r"No row was found for one\(\)",
                 "firstRelease": "1.3.0", "lastRelease": "1.3.24"},
                {"message": NO_ROW_NEW, "pattern": NO_ROW_NEW,
                 "firstRelease": "1.4.0", "lastRelease": "2.0.30"},
            ],
            "locations": [
                {"path": QUERY, "line": 3282, "firstRelease": "1.3.0", "lastRelease": "1.3.17"},
                {"path": QUERY, "line": 3293, "firstRelease": "1.3.18", "lastRelease": "1.3.24"},
                {"path": "lib/sqlalchemy/engine/result.py", "line": 1234,
                 "firstRelease": "1.4.0", "lastRelease": "2.0.30"},
            ],
        },
        **extra,
    )  # fmt: skip


def kafka_lines() -> tuple[dict[str, Any], dict[str, Any]]:
    """Two Kafka sites: ``node`` prints today what ``broker`` printed before 2.8.0."""
    node = make_line(
        repo="apache/kafka",
        slug="connection-to-node-could-not-be-established-broker",
        errorClass="",
        errorMessage=BROKER_OLD,
        messagePattern=BROKER_OLD_PATTERN,
        filePath=STATES,
        lineNumber=88,
        firstRelease="2.0.0",
        lastRelease="3.7.0",
        releaseHistory={
            "wordings": [{"message": BROKER_OLD, "pattern": BROKER_OLD_PATTERN,
                          "firstRelease": "2.0.0", "lastRelease": "3.7.0"}],
            "locations": [{"path": STATES, "line": 88, "firstRelease": "2.0.0",
                           "lastRelease": "3.7.0"}],
        },
    )  # fmt: skip
    broker = make_line(
        repo="apache/kafka",
        slug="connection-to-node-could-not-be-established-node",
        errorClass="",
        errorMessage=NODE_NEW,
        messagePattern=NODE_NEW_PATTERN,
        filePath=NETWORK,
        lineNumber=790,
        firstRelease="2.0.0",
        lastRelease="3.7.0",
        releaseHistory={
            "wordings": [
                {"message": BROKER_OLD, "pattern": BROKER_OLD_PATTERN,
                 "firstRelease": "2.0.0", "lastRelease": "2.7.2"},
                {"message": NODE_NEW, "pattern": NODE_NEW_PATTERN,
                 "firstRelease": "2.8.0", "lastRelease": "3.7.0"},
            ],
            "locations": [
                {"path": NETWORK, "line": 762, "firstRelease": "2.0.0", "lastRelease": "2.3.1"},
                {"path": NETWORK, "line": 781, "firstRelease": "2.4.0", "lastRelease": "2.7.2"},
                {"path": NETWORK, "line": 790, "firstRelease": "2.8.0", "lastRelease": "3.7.0"},
            ],
        },
    )  # fmt: skip
    return node, broker


def py_trace(line: int) -> str:
    """A 1.3.x traceback of ``one()``, its frame in query.py at ``line``."""
    return (
        "Traceback (most recent call last):\n"
        '  File "/srv/app/views.py", line 41, in detail\n'
        "    user = session.query(User).filter_by(id=uid).one()\n"
        f'  File "/usr/lib/python3.8/site-packages/sqlalchemy/orm/query.py", line {line}, in one\n'
        f'    raise orm_exc.NoResultFound("{NO_ROW_OLD}")\n'
        f"sqlalchemy.orm.exc.NoResultFound: {NO_ROW_OLD}\n"
    )


def java_trace(line: int) -> str:
    """A Kafka client warning with the old wording and a stack trace through NetworkClient."""
    return (
        "[2020-03-02 10:00:01,123] WARN [Producer clientId=p1] Connection to node 1 could "
        "not be established. Broker may not be available. "
        "(org.apache.kafka.clients.NetworkClient)\n"
        "java.net.ConnectException: Connection refused\n"
        "\tat org.apache.kafka.clients.NetworkClient.processDisconnection"
        f"(NetworkClient.java:{line})\n"
        "\tat org.apache.kafka.clients.NetworkClient.poll(NetworkClient.java:540)\n"
    )
