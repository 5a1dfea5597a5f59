"""One rule for URLs from record data that may become links (``kb.records.links``),
applied the same way by the record page and the admin."""

from __future__ import annotations

import pytest
from django.test import Client

from kb.records.links import safe_external_url
from tests.factories import make_record

GITHUB = "https://github.com/risingwavelabs/risingwave/blob/6469eb7/src/meta/x.rs#L10"


@pytest.mark.parametrize(
    "url",
    [GITHUB, "http://example.org/a", "HTTPS://GitHub.com/x", f"  {GITHUB}\n"],
)
def test_absolute_http_urls_with_a_host_are_links(url: str) -> None:
    assert safe_external_url(url) == url.strip()


@pytest.mark.parametrize(
    "url",
    [
        None,
        "",
        "javascript:alert(1)",
        "JavaScript:alert(1)//https://github.com/x",
        "java\tscript:alert(1)",
        "data:text/html,<script>alert(1)</script>",
        "//evil.example/x",
        "/records/abc/",
        "https:///no-host",
        "https://github.com/a b",
        "https://github.com/a\x00b",
        "https://github.com/a\x7fb",
        "http://[::1",
        "ftp://example.org/file",
    ],
)
def test_anything_else_is_not_a_link(url: str | None) -> None:
    assert safe_external_url(url) == ""


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url", "linked"),
    [(GITHUB, True), ("http://example.org/a", True), ("javascript:alert(1)", False)],
)
def test_record_page_and_admin_agree_on_what_is_a_link(
    admin_client: Client, url: str, linked: bool
) -> None:
    record = make_record()
    type(record).objects.filter(pk=record.pk).update(github_url=url)
    page = Client().get(f"/records/{record.pk}/").content.decode()
    admin = admin_client.get(f"/admin/kb/errorrecord/{record.pk}/change/").content.decode()
    escaped = url.replace("&", "&amp;")
    assert (f'href="{escaped}"' in page) is linked
    assert (f'href="{escaped}"' in admin) is linked


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url", "named"),
    [
        (GITHUB, "View on GitHub"),
        (
            "https://inspector.pypi.io/project/sqlalchemy/2.0.36/packages/50/65/abc/"
            "sqlalchemy-2.0.36.tar.gz/sqlalchemy-2.0.36/lib/sqlalchemy/orm/query.py#line.787",
            "View on the package index",
        ),
        ("https://git.example.org/team/app/src/x.py#L3", "View on the source"),
    ],
)
def test_the_record_page_names_where_its_link_goes(url: str, named: str) -> None:
    """A learned release links to PyPI's inspector, a repository elsewhere to its own host:
    the link says where it goes, never "GitHub" for a page that is not."""
    record = make_record()
    type(record).objects.filter(pk=record.pk).update(github_url=url)
    page = Client().get(f"/records/{record.pk}/").content.decode()
    assert named in page
    assert ("View on GitHub" in page) is (named == "View on GitHub")
