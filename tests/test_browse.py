"""Browse pages: tag index, tag pages, the filtered record list, as pages and as fragments."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

import pytest
from django.test import Client

from kb.browse.selectors import _TagRecordIds, tag_records
from kb.records.links import record_url, tag_links, tag_url
from kb.records.models import ErrorRecord, Status, Tag
from kb.records.services import set_status
from tests.factories import import_lines, make_line
from tests.hostile import assert_inert, hostile_overrides

pytestmark = pytest.mark.django_db

HX = {"HTTP_HX_REQUEST": "true"}


def add(n: int, **overrides: Any) -> list[str]:
    """Import ``n`` records sharing ``overrides``; message i is "<prefix> i"."""
    prefix = overrides.pop("prefix", "Widget")
    lines = []
    for i in range(n):
        message = f"{prefix} number {i:03d} exploded"
        slug = f"{prefix.lower()}-{i:03d}"  # list order is repo, slug, id
        lines.append(
            make_line(errorMessage=message, messagePattern=message, slug=slug, **overrides)
        )
    report = import_lines(*lines)
    assert report.rejected == 0, report.errors
    return [line["record"]["id"] for line in lines]


class Links(HTMLParser):
    """Collects (tag, attrs) of every element with an href or hx-get."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        data = dict(attrs)
        if "hx-get" in data or tag == "a":
            self.found.append({"tag": tag, **data})


def links(html: str) -> list[dict[str, str | None]]:
    parser = Links()
    parser.feed(html)
    return parser.found


def test_tag_index_counts_only_published_records(client: Client) -> None:
    add(3, tags=["alpha", "beta"])
    drafts = add(2, tags=["alpha"], prefix="Draft")
    set_status(ErrorRecord.objects.filter(pk__in=drafts), Status.DRAFT)
    html = client.get("/tags/").content.decode()
    assert re.search(r'href="/tags/alpha/">alpha <span[^>]*>3</span>', html)
    assert re.search(r'href="/tags/beta/">beta <span[^>]*>3</span>', html)


def test_tag_counts_follow_status_changes(client: Client) -> None:
    ids = add(2, tags=["gamma"])
    assert ">gamma <span" in client.get("/tags/").content.decode()
    set_status(ErrorRecord.objects.filter(pk__in=ids), Status.RETIRED)
    assert "gamma" not in client.get("/tags/").content.decode()


def test_tag_index_filters_and_sorts(client: Client) -> None:
    add(2, tags=["zeta-many"])
    add(1, tags=["alpha-one"], prefix="Other")
    by_count = client.get("/tags/").content.decode()
    assert by_count.index("zeta-many") < by_count.index("alpha-one")
    by_name = client.get("/tags/?sort=name").content.decode()
    assert by_name.index("alpha-one") < by_name.index("zeta-many")
    found = client.get("/tags/?q=ZETA").content.decode()
    assert "zeta-many" in found
    assert "alpha-one" not in found


def test_tags_with_equal_counts_are_listed_by_name(client: Client) -> None:
    for name in ("tie-c", "tie-b", "tie-a"):  # tags are created (numbered) in this order
        add(2, tags=[name], prefix=name.title())
    add(1, tags=["tie-single"], prefix="Other")
    html = client.get("/tags/").content.decode()
    order = [html.index(f'href="/tags/{name}/"') for name in ("tie-a", "tie-b", "tie-c")]
    assert order == sorted(order)
    assert order[-1] < html.index('href="/tags/tie-single/"')


def test_tag_page_lists_published_records_with_the_tag(client: Client) -> None:
    add(2, tags=["delta"])
    add(1, tags=["other"], prefix="Unrelated")
    drafts = add(1, tags=["delta"], prefix="Hidden")
    set_status(ErrorRecord.objects.filter(pk__in=drafts), Status.DRAFT)
    response = client.get("/tags/delta/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "Widget number 000 exploded" in html
    assert "Widget number 001 exploded" in html
    assert "Unrelated" not in html
    assert "Hidden" not in html
    assert "2 published records" in html


def test_tag_page_ids_are_the_same_along_the_list_or_from_the_tag(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Both plans of ``_TagRecordIds`` list the same ids for every slice, and the cost
    rule picks the list order only for the first pages of a common tag."""
    add(12, tags=["dense"], prefix="Zed")  # slugs sort after the untagged ones
    add(6, tags=["dense"], prefix="Alpha")
    add(4, tags=["other"], prefix="Mid")
    hidden = add(3, tags=["dense"], prefix="Beta")
    set_status(ErrorRecord.objects.filter(pk__in=hidden), Status.RETIRED)
    tag = Tag.objects.get(name="dense")
    expected = list(tag_records(tag).order_by("repo", "slug", "id").values_list("id", flat=True))
    assert len(expected) == 18
    ids = _TagRecordIds(tag, len(expected), published=22)
    assert ids.along_list(14)  # 14 * 22 < 18 * 18
    assert not ids.along_list(15)  # 15 * 22 >= 18 * 18
    slices = [(0, 5), (5, 10), (0, 18), (10, 25), (17, 18), (18, 30)]
    for along in (True, False):
        monkeypatch.setattr(ids, "along_list", lambda stop, along=along: along)
        for start, stop in slices:
            assert ids[start:stop] == expected[start:stop], (along, start, stop)


def test_unknown_tag_is_404(client: Client) -> None:
    assert client.get("/tags/no-such-tag/").status_code == 404
    assert client.get("/tags/nul%00byte/").status_code == 404  # PostgreSQL refuses NUL


@pytest.mark.parametrize(
    "url",
    ["/records/?q=%00abc", "/records/?q=ab%00cdef", "/records/?repo=%00", "/tags/?q=%00"],
)
def test_nul_bytes_in_parameters_are_not_errors(client: Client, url: str) -> None:
    add(1)
    assert client.get(url).status_code == 200


def test_tag_page_paginates_with_real_links(client: Client) -> None:
    add(30, tags=["paged"])
    first = client.get("/tags/paged/").content.decode()
    assert "Widget number 000 exploded" in first
    assert "Widget number 025 exploded" not in first
    assert 'href="/tags/paged/?page=2"' in first
    second = client.get("/tags/paged/?page=2").content.decode()
    assert "Widget number 025 exploded" in second
    assert "Widget number 000 exploded" not in second
    # junk or out-of-range page numbers give a page, not an error
    assert client.get("/tags/paged/?page=abc").status_code == 200
    assert "Widget number 029" in client.get("/tags/paged/?page=99").content.decode()


@pytest.mark.parametrize(
    ("url", "fragment_id"),
    [
        ("/tags/", "tag-results"),
        ("/tags/paged/", "tag-records"),
        ("/tags/paged/?page=2", "tag-records"),
        ("/records/", "browse"),
        ("/records/?q=Widget&severity=error", "browse"),
    ],
)
def test_each_view_serves_page_and_fragment(client: Client, url: str, fragment_id: str) -> None:
    add(30, tags=["paged"])
    page = client.get(url)
    fragment = client.get(url, **HX)
    for response in (page, fragment):
        assert response.status_code == 200
        assert "HX-Request" in response["Vary"]
    page_html, fragment_html = page.content.decode(), fragment.content.decode()
    assert page_html.lstrip().startswith("<!doctype html>")
    assert f'id="{fragment_id}"' in page_html
    assert "<html" not in fragment_html
    assert "site-header" not in fragment_html
    assert fragment_html.lstrip().startswith(
        f'<div id="{fragment_id}"'
    ) or fragment_html.lstrip().startswith(f'<section id="{fragment_id}"')
    # htmx's history restore (back button after a cache miss) needs the whole page
    restore = client.get(url, HTTP_HX_HISTORY_RESTORE_REQUEST="true", **HX)
    assert restore.content.decode().lstrip().startswith("<!doctype html>")


@pytest.mark.parametrize("url", ["/tags/", "/tags/paged/", "/records/", "/records/?q=Widget"])
def test_every_hx_get_link_also_has_the_same_href(client: Client, url: str) -> None:
    add(30, tags=["paged"])
    found = [a for a in links(client.get(url).content.decode()) if "hx-get" in a]
    assert found, "expected htmx links"
    for element in found:
        if element["tag"] == "form":
            assert element.get("action") == element["hx-get"]
            assert (element.get("method") or "").lower() == "get"
        else:
            assert element["tag"] == "a"
            assert element.get("href") == element["hx-get"]
            assert element.get("hx-push-url") == "true"


def test_record_list_filters_by_facets_and_shows_disjunctive_counts(client: Client) -> None:
    add(3, severity="error", repo="acme/one")
    add(2, severity="warning", repo="acme/one", prefix="Gadget")
    add(1, severity="fatal", repo="acme/two", prefix="Doohickey")
    html = client.get("/records/?severity=warning").content.decode()
    assert "Gadget number 000" in html
    assert "Widget number 000" not in html
    assert "2 records" in html
    # severity's own counts ignore the severity filter; the repo counts honour it
    assert '<option value="error">error (3)</option>' in html
    assert '<option value="warning" selected>warning (2)</option>' in html
    assert '<option value="acme/one">acme/one (2)</option>' in html
    assert "acme/two (" not in html
    both = client.get("/records/?repo=acme/two&severity=fatal").content.decode()
    assert "Doohickey number 000" in both
    assert "1 record." in both


def test_unknown_facet_value_lists_nothing(client: Client) -> None:
    add(2)
    html = client.get("/records/?severity=bogus").content.decode()
    assert "0 records" in html
    assert '<option value="bogus" selected>bogus (0)</option>' in html


def test_record_list_filters_by_tag_and_class(client: Client) -> None:
    add(2, tags=["net"], errorClass="TimeoutError")
    add(2, tags=["disk"], errorClass="IOError", prefix="Disk")
    html = client.get("/records/?tag=net").content.decode()
    assert "Widget number 000" in html
    assert "Disk number" not in html
    assert 'name="tag" value="net"' in html  # the tag filter survives the form
    html = client.get("/records/?error_class=IOError").content.decode()
    assert "Disk number 000" in html
    assert "Widget number" not in html


def test_record_list_hides_drafts_and_retired(client: Client) -> None:
    add(1)
    drafts = add(1, prefix="Drafted")
    set_status(ErrorRecord.objects.filter(pk__in=drafts), Status.DRAFT)
    html = client.get("/records/").content.decode()
    assert "Widget number 000" in html
    assert "Drafted" not in html


def test_filters_are_a_plain_get_form(client: Client) -> None:
    html = client.get("/records/").content.decode()
    form = re.search(r'<form id="record-filters"[^>]*>', html)
    assert form is not None
    assert 'method="get"' in form.group(0)
    assert 'action="/records/"' in form.group(0)
    assert re.search(r'<input id="records-q" type="search" name="q"', html)
    assert '<button type="submit"' in html


def test_browse_pages_read_a_bounded_number_of_queries(
    client: Client, django_assert_max_num_queries: Any
) -> None:
    add(60, tags=["busy", "more", "tags", "here"])
    search = "/records/?q=Widget+number&tag=busy"
    with django_assert_max_num_queries(14):  # cold: facets computed and cached once
        assert client.get(search).status_code == 200
    client.get("/tags/")  # warm the per-revision caches
    client.get("/tags/busy/")
    client.get("/records/")
    with django_assert_max_num_queries(3):
        assert client.get("/tags/").status_code == 200
    # tag, revision, cached count, ids, rows, + the revision keying the rendered fragment
    with django_assert_max_num_queries(6):
        assert client.get("/tags/busy/?page=2").status_code == 200
    with django_assert_max_num_queries(6):  # + the revision keying the rendered fragment
        assert client.get("/records/?severity=error&page=2").status_code == 200
    with django_assert_max_num_queries(6):
        assert client.get(search + "&page=2").status_code == 200


def test_hostile_record_renders_inert_in_lists_search_and_tags(client: Client) -> None:
    report = import_lines(make_line(**hostile_overrides()))
    assert report.rejected == 0, report.errors
    for url in (
        "/records/",
        "/records/?q=Hostile",
        "/records/?q=script",
        "/records/?q=%3Cscript%3E",
        "/tags/hostile/",
        "/tags/",
    ):
        response = client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        assert "<b onmouseover" not in html
        assert "<svg" not in html.lower()
        if url != "/tags/":
            assert_inert(html)
            assert "Hostile thing &lt;script&gt;alert(3)&lt;/script&gt;" in html
        fragment = client.get(url, **HX).content.decode()
        assert "<script>alert" not in fragment
    # a tag that cannot be a URL is shown as text, not linked
    html = client.get("/tags/").content.decode()
    assert "&lt;b onmouseover=&quot;alert(5)&quot;&gt;tag&lt;/b&gt;" in html


def test_hostile_search_query_is_echoed_as_text(client: Client) -> None:
    add(1)
    query = '"><script>alert(1)</script>{{ 7|add:1 }}'
    html = client.get("/records/", {"q": query}).content.decode()
    assert "<script>alert(1)" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;{{ 7|add:1 }}" in html


def test_rendered_lists_are_reused_until_a_change_takes_a_new_revision(client: Client) -> None:
    """List fragments are cached per data revision and query: a repeat view renders
    nothing new, and retiring a record (a new revision) shows at once on both lists."""
    from django.core.cache import caches
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    ids = add(3, tags=["gadgets"])
    store = caches["fragments"]._cache
    hx = {"HX-Request": "true"}
    first = client.get("/records/", headers=hx).content  # the fragment alone: no nonce
    assert "Widget number 000" in first.decode()
    assert "gadgets <span" in client.get("/tags/").content.decode()
    tagged = client.get("/tags/gadgets/", headers=hx).content
    assert "Widget number 000" in tagged.decode()
    assert len(store) == 3
    with CaptureQueriesContext(connection) as queries:
        assert client.get("/records/", headers=hx).content == first
        client.get("/tags/")
        assert client.get("/tags/gadgets/", headers=hx).content == tagged
    assert len(store) == 3  # the same three fragments served again
    # each list: its revision, nothing else; the tag page: the tag and the revision
    assert len(queries.captured_queries) == 4, [q["sql"] for q in queries.captured_queries]
    set_status(list(ErrorRecord.objects.filter(pk__in=ids)), "retired")
    assert "Widget number 000" not in client.get("/records/").content.decode()
    assert "gadgets <span" not in client.get("/tags/").content.decode()
    assert "Widget number 000" not in client.get("/tags/gadgets/").content.decode()


def test_a_junk_page_number_cannot_put_another_page_under_the_first_pages_key(
    client: Client,
) -> None:
    """``?page=0`` is page 1 for the cache key, so it must render page 1 too (Django's
    ``get_page`` would give the last page for it): never the last page under page 1's key."""
    add(60)  # three pages of 25; list order is slug, so page 1 starts at widget-000
    hx = {"HX-Request": "true"}
    for junk in ("0", "-3", "abc", "99999999"):
        assert (
            "Widget number 000" in client.get(f"/records/?page={junk}", headers=hx).content.decode()
        )
        assert "Widget number 000" in client.get("/records/", headers=hx).content.decode()


def test_links_to_tags_and_records_come_from_one_helper() -> None:
    assert tag_url("log") == "/tags/log/"
    assert tag_url("a b") == "/tags/a%20b/"  # quoted, not dropped
    assert tag_url("a/b") == ""  # no URL can carry it: the page shows text instead
    assert record_url("c36bebe8cdedec02") == "/records/c36bebe8cdedec02/"
    assert tag_links(["log", "a/b"]) == [("log", "/tags/log/"), ("a/b", "")]
    assert tag_links(None) == []
    assert Tag(name="log").get_absolute_url() == tag_url("log")


def test_one_tag_filter_serves_the_list_and_the_queryset() -> None:
    """``with_tag`` is the tag filter of the record list, the admin and ``tag_records``."""
    net = add(2, tags=["net", "disk"])
    disk = add(1, tags=["disk"], prefix="Disk")
    assert set(ErrorRecord.objects.with_tag("net").values_list("pk", flat=True)) == set(net)
    assert ErrorRecord.objects.with_tag(" disk ").count() == 3
    assert not ErrorRecord.objects.with_tag("nope").exists()
    set_status(ErrorRecord.objects.filter(pk__in=disk), Status.RETIRED)
    assert set(tag_records(Tag.objects.get(name="disk")).values_list("pk", flat=True)) == set(net)


def test_lists_show_published_records_and_a_record_by_id_follows_visible_to() -> None:
    published, retired, draft = add(1), add(1, prefix="Old"), add(1, prefix="Wip")
    set_status(ErrorRecord.objects.filter(pk__in=retired), Status.RETIRED)
    set_status(ErrorRecord.objects.filter(pk__in=draft), Status.DRAFT)

    class Curator:
        is_active = is_staff = True

        def has_perm(self, permission: str) -> bool:
            return permission == "kb.change_errorrecord"

    def ids(qs: Any) -> set[str]:
        return set(qs.values_list("pk", flat=True))

    assert ids(ErrorRecord.objects.published()) == set(published)
    assert ids(ErrorRecord.objects.visible_to(None)) == {*published, *retired}
    assert ids(ErrorRecord.objects.visible_to(Curator())) == {*published, *retired, *draft}
