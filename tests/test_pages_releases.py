"""A record's releases on its page and its JSON twin, and the lists filtered by release.

Records are imported from dataset lines carrying a hand-written history (the keys a learn
of a source's releases writes: ``kb.records.schema``), never from the learner itself.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from kb.browse.releases import ReleaseError, record_releases, release_scope
from kb.records.models import ErrorRecord
from tests.factories import import_lines, make_line, make_record

pytestmark = pytest.mark.django_db

REPO = "sqlalchemy/sqlalchemy"
SOURCE = (
    "https://github.com/sqlalchemy/sqlalchemy/blob/"
    + "c" * 40
    + "/lib/sqlalchemy/orm/query.py#L2889"
)
ADDED = {"sha": "a" * 40, "subject": "Add one() <raises>", "date": "2019-03-04T10:00:00+00:00"}
CHANGED = {
    "sha": "b" * 40,
    "subject": "Reword NoResultFound",
    "date": "2021-01-20T08:30:00Z",
    "url": "https://git.example.org/sqla/commit/bbbb",
}
OLD = {
    "message": "No row was found for one()",
    "pattern": r"No row was found for one\(\)",
    "firstRelease": "1.3.0",
    "lastRelease": "1.3.24",
    "introducedBy": ADDED,
}
NEW = {
    "message": "No row was found when one was required",
    "pattern": "No row was found when one was required",
    "firstRelease": "1.4.0",
    "lastRelease": "2.0.1",
    "introducedBy": CHANGED,
}


def history_line(**overrides: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "repo": REPO,
        "errorMessage": NEW["message"],
        "messagePattern": NEW["pattern"],
        "githubUrl": SOURCE,
        "firstRelease": "1.3.0",
        "lastRelease": "2.0.1",
        "releaseHistory": {
            "introducedBy": ADDED,
            "lastChangedBy": CHANGED,
            "wordings": [OLD, NEW],
            "locations": [
                {"path": "lib/sqlalchemy/orm/query.py", "line": 2889 + i,
                 "firstRelease": f"1.3.{i}", "lastRelease": f"1.3.{i}"}
                for i in range(7)
            ] + [{"path": "lib/sqlalchemy/orm/result.py", "line": 120, "firstRelease": "1.4.0",
                  "lastRelease": "2.0.1"}],
        },
    }  # fmt: skip
    return make_line(**{**fields, **overrides})


def page(client: Client, record: ErrorRecord) -> str:
    response = client.get(record.get_absolute_url())
    assert response.status_code == 200
    return response.content.decode()


def test_the_record_page_shows_the_range_the_wordings_and_the_commits(client: Client) -> None:
    record = make_record(**history_line()["record"])
    html = page(client, record)
    assert "In releases 1.3.0\u20132.0.1" in html
    section = re.search(r'<section aria-labelledby="h-rel".*?</section>', html, re.S)
    assert section is not None
    body = section.group(0)
    assert "Current wording, releases 1.4.0\u20132.0.1:" in body
    assert "How releases 1.3.0\u20131.3.24 word it:" in body
    assert "<code>No row was found for one()</code>" in body
    # the word diff of the older wording against the current one
    assert re.search(r"<del>.*?for.*?</del>.*?<ins>.*?when.*?</ins>", body, re.S), body
    assert re.search(r"<ins>.*?was required.*?</ins>", body, re.S), body
    # the commit that added it, linked on the source's host; the one that changed it, on its own url
    assert 'href="https://github.com/sqlalchemy/sqlalchemy/commit/' + "a" * 40 + '"' in body
    assert "Add one() &lt;raises&gt;" in body
    assert '<time datetime="2019-03-04T10:00:00+00:00">2019-03-04</time>' in body
    assert 'href="https://git.example.org/sqla/commit/bbbb"' in body
    assert "Reword NoResultFound" in body
    # locations: the newest shown, the earlier ones folded
    assert "<code>lib/sqlalchemy/orm/result.py:120</code>" in body
    folded = re.search(r"<details.*?</details>", body, re.S)
    assert folded is not None
    assert "3 earlier locations" in folded.group(0)
    assert "query.py:2889</code>" in folded.group(0)


def test_a_removed_site_says_so(client: Client) -> None:
    record = make_record(**history_line(lastRelease="1.4.52", removedIn="2.0.0")["record"])
    assert "In releases 1.3.0\u20131.4.52, removed in 2.0.0" in page(client, record)


def test_a_record_without_history_shows_nothing_of_it(client: Client) -> None:
    record = make_record()
    html = page(client, record)
    assert "Across releases" not in html
    assert "In releases" not in html
    assert record_releases(record) is None
    api = client.get(f"/api/records/{record.pk}").json()
    assert api["releases"] is None


def test_a_commit_link_is_made_only_from_a_safe_url_and_a_real_sha(client: Client) -> None:
    hostile = {"sha": "zz<script>", "subject": "<img src=x onerror=alert(1)>", "date": "junk"}
    unsafe = {**ADDED, "url": "javascript:alert(1)"}
    line = history_line(
        releaseHistory={"introducedBy": hostile, "lastChangedBy": unsafe, "wordings": [NEW]},
    )
    html = page(client, make_record(**line["record"]))
    assert "javascript:" not in html
    assert "<img src=x" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "zz&lt;script&gt;" in html
    assert 'href="https://github.com/sqlalchemy/sqlalchemy/commit/' + "a" * 40 in html  # fallback


def test_the_json_twin_carries_the_same_releases(client: Client) -> None:
    record = make_record(**history_line()["record"])
    data = client.get(f"/api/records/{record.pk}").json()
    releases = data["releases"]
    assert releases["span"] == "1.3.0\u20132.0.1"
    assert releases["introduced_by"]["url"].endswith("/commit/" + "a" * 40)
    old, new = releases["wordings"]
    assert (old["current"], new["current"]) == (False, True)
    assert old["diff"]["changes"] == [{"older": "for", "current": "when"},
                                      {"older": "", "current": "was required"}]  # fmt: skip
    assert [seg["op"] for seg in old["diff"]["segments"]] == ["same", "del", "ins", "same", "ins"]
    assert data["firstRelease"] == "1.3.0"


def test_the_record_page_costs_the_same_with_history(
    client: Client, django_assert_max_num_queries: Any
) -> None:
    record = make_record(**history_line()["record"])
    with django_assert_max_num_queries(8):  # the bound test_pages_record sets without
        page(client, record)


# --- the lists filtered by release ------------------------------------------------------


def ranged(name: str, first: str | None, last: str | None, repo: str = REPO) -> str:
    """A published record of ``repo`` whose code has it from ``first`` to ``last``."""
    message = f"{name} went wrong"
    line = make_line(
        repo=repo, errorMessage=message, messagePattern=message, slug=name,
        firstRelease=first, lastRelease=last,
    )  # fmt: skip
    report = import_lines(line)
    assert report.rejected == 0, report.errors
    return name


@pytest.fixture
def ranges() -> None:
    ranged("old-only", "1.3.0", "1.3.24")
    ranged("across", "1.3.5", "2.0.1")
    ranged("from-14", "1.4.0", "1.4.52")
    ranged("late-14", "1.4.30", "2.0.0b1")
    ranged("beta-only", "2.0.0b1", "2.0.0b1")
    ranged("new", "2.0.0", "2.0.1")
    ranged("no-history", None, None)
    ranged("other-repo", "1.4.0", "1.4.52", repo="other/project")


def listed(client: Client, **params: str) -> list[str]:
    data = client.get("/api/records", {**params, "page_size": "100"}).json()
    return sorted(item["slug"] for item in data["items"])


@pytest.mark.parametrize(
    ("release", "expected"),
    [
        ("1.4", ["across", "from-14", "late-14"]),
        ("1.4.x", ["across", "from-14", "late-14"]),
        ("1.4.0", ["across", "from-14"]),
        ("1.3.24", ["across", "old-only"]),
        ("2.0.0b1", ["across", "beta-only", "late-14"]),  # a pre-release, before 2.0.0
        ("2.0.0", ["across", "new"]),
        ("2.0", ["across", "beta-only", "late-14", "new"]),
    ],
)
def test_the_list_keeps_the_records_whose_range_reaches_the_release(
    client: Client, ranges: None, release: str, expected: list[str]
) -> None:
    assert listed(client, repo=REPO, release=release) == expected
    html = client.get("/records/", {"repo": REPO, "release": release}).content.decode()
    for slug in ("old-only", "across", "from-14", "late-14", "beta-only", "new", "no-history"):
        assert (f"{slug} went wrong" in html) == (slug in expected), slug


def test_the_release_filter_offers_the_repositorys_releases_and_series(
    client: Client, ranges: None
) -> None:
    html = client.get("/records/", {"repo": REPO, "release": "1.4"}).content.decode()
    select = re.search(r'<select id="f-release".*?</select>', html, re.S)
    assert select is not None
    options = re.findall(r'<option value="([^"]*)"( selected)?>', select.group(0))
    values = [value for value, _sel in options]
    assert values[:4] == ["", "2.0.x", "1.4.x", "1.3.x"]
    assert values[4:] == ["2.0.1", "2.0.0", "2.0.0b1", "1.4.52", "1.4.30", "1.4.0", "1.3.24",
                          "1.3.5", "1.3.0"]  # fmt: skip
    assert [v for v, sel in options if sel] == ["1.4.x"]
    assert "3 records that exist in sqlalchemy/sqlalchemy 1.4.x" in html
    # no release filter without a repository, nor for a repository without history
    assert 'id="f-release"' not in client.get("/records/").content.decode()


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"repo": REPO, "release": "9.9.9"}, "has no release 9.9.9 among its records"),
        ({"repo": REPO, "release": "<b>x</b>"}, "is not a release name"),
        ({"release": "1.4"}, "Choose a repository first"),
        ({"repo": "other/none", "release": "1.4"}, "says which releases have it"),
        ({"repo": REPO, "release": "1.4\x00"}, "is not a release name"),
    ],
)
def test_a_release_that_cannot_be_read_is_a_clear_message(
    client: Client, ranges: None, params: dict[str, str], message: str
) -> None:
    response = client.get("/records/", params)
    assert response.status_code == 200
    html = response.content.decode()
    assert message in html
    assert "<b>x</b>" not in html
    assert "0 records" in html
    api = client.get("/api/records", params)
    assert api.status_code == 200
    assert message in api.json()["release_error"]
    assert api.json()["count"] == 0


def test_records_without_a_range_are_never_in_a_release(client: Client, ranges: None) -> None:
    every = [listed(client, repo=REPO, release=r) for r in ("1.3", "1.4", "2.0")]
    assert all("no-history" not in slugs and "other-repo" not in slugs for slugs in every)


def test_facets_count_within_the_release(client: Client, ranges: None) -> None:
    data = client.get("/api/records", {"repo": REPO, "release": "1.4.0"}).json()
    assert data["count"] == 2
    assert data["release"] == ["1.4.0"]
    assert data["release_error"] is None
    repo_facet = next(f for f in data["facets"] if f["param"] == "repo")
    assert [(v["value"], v["count"]) for v in repo_facet["values"]] == [(REPO, 2)]
    assert data["releases"][0] == "1.3.0"
    assert data["releases"][-1] == "2.0.1"


def test_a_release_filtered_page_reads_a_bounded_number_of_queries(
    client: Client, ranges: None, django_assert_max_num_queries: Any
) -> None:
    with django_assert_max_num_queries(19):  # cold: names and facets computed and cached
        client.get("/api/records", {"repo": REPO, "release": "1.4"})
    with django_assert_max_num_queries(7):  # warm: the cached names and facets, the page
        client.get("/api/records", {"repo": REPO, "release": "1.4", "page": "1"})
    with django_assert_max_num_queries(8):  # + the revision keying the rendered fragment
        client.get("/records/", {"repo": REPO, "release": "1.4"})
    with django_assert_max_num_queries(1):  # the same page again: the rendered fragment
        client.get("/records/", {"repo": REPO, "release": "1.4"})


def test_release_scope_bounds_the_range_with_the_names_on_each_side() -> None:
    names = ["1.3.0", "1.3.5", "1.4.0", "1.4.52", "2.0.0b1", "2.0.0"]
    scope = release_scope(REPO, "1.4", names)
    assert scope.releases == ("1.4.0", "1.4.52")
    assert scope.starts == ("1.3.0", "1.3.5", "1.4.0", "1.4.52")
    assert scope.ended == ("1.3.0", "1.3.5")
    with pytest.raises(ReleaseError):
        release_scope(REPO, "1.5", names)


def test_a_search_narrows_to_a_release_too(client: Client, ranges: None) -> None:
    assert listed(client, repo=REPO, release="1.4", q="went wrong") == [
        "across",
        "from-14",
        "late-14",
    ]
    assert listed(client, repo=REPO, release="1.4", q="late") == ["late-14"]


def test_a_long_history_of_locations_is_listed_in_part(client: Client) -> None:
    locations = [
        {"path": f"lib/a{i}.py", "line": i + 1, "firstRelease": "1.0.0", "lastRelease": "1.0.0"}
        for i in range(1000)
    ]
    line = history_line(releaseHistory={"wordings": [NEW], "locations": locations})
    html = page(client, make_record(**line["record"]))
    assert "995 earlier locations" in html
    assert "The 200 newest of them" in html
    assert "lib/a794.py:795" not in html
    assert "lib/a795.py:796" in html
    assert html.count("<li><code>lib/a") == 205


def test_a_history_without_a_range_says_only_what_it_knows(client: Client) -> None:
    line = history_line(firstRelease=None, lastRelease=None, removedIn="2.0.0")
    html = page(client, make_record(**line["record"]))
    assert '<dd class="release-span">Removed in 2.0.0</dd>' in html
    assert "In releases" not in html
    line = history_line(firstRelease=None, lastRelease=None)
    html = page(client, make_record(**line["record"]))
    assert 'class="release-span"' not in html
    assert "Across releases" in html  # the wordings and commits still are
