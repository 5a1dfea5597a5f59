"""The record page: what it shows, who may see it, and that record text stays inert."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from kb.records.links import record_url
from kb.records.models import ErrorRecord
from tests.factories import SEED, import_lines
from tests.hostile import assert_inert, hostile_overrides

pytestmark = pytest.mark.django_db


@pytest.fixture
def seed() -> ErrorRecord:
    report = import_lines(SEED)
    assert report.rejected == 0, report.errors
    return ErrorRecord.objects.get(pk="c36bebe8cdedec02")


def test_seed_record_page_shows_the_whole_write_up(client: Client, seed: ErrorRecord) -> None:
    response = client.get("/records/c36bebe8cdedec02/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "Backfill progress for vnode {:#?} not found" in html
    assert "StreamExecutorError" in html
    assert 'class="sev sev-error"' in html
    assert "risingwavelabs/risingwave" in html
    for tag in ("backfill", "state", "vnode", "not-found"):
        assert f'href="/tags/{tag}/"' in html
    assert "What it means" in html
    assert "What triggers it" in html
    assert "Common situations" in html
    solutions = re.search(r'<section aria-labelledby="h-sol".*?</section>', html, re.S)
    assert solutions is not None
    assert solutions.group(0).count("<li>") == 3
    assert "<ol>" in solutions.group(0)
    assert "Preventing it" in html
    # code examples: three present (exampleFix is null), highlighted, each with a copy button
    for key in ("validation_code", "type_guard", "try_catch_pattern"):
        assert f'id="ex-{key}"' in html
        assert f'data-copy-target="ex-{key}"' in html
    assert 'id="ex-example_fix"' not in html
    assert html.count('class="language-rs"') >= 4
    # snippet: real line numbers 62..98, line 80 marked
    assert 'id="L62"' in html
    assert 'id="L98"' in html
    assert 'id="L61"' not in html
    assert '<mark class="line error-line" id="L80">' in html
    assert 'href="https://github.com/risingwavelabs/risingwave/blob/6469eb7' in html
    assert "6469eb736d69" in html  # provenance: analysed commit
    assert "src/stream/src/executor/backfill/utils.rs:80" in html


def test_record_page_is_cheap(
    client: Client, seed: ErrorRecord, django_assert_max_num_queries
) -> None:
    with django_assert_max_num_queries(8):
        assert client.get(seed.get_absolute_url()).status_code == 200


def test_unknown_record_is_a_friendly_404(client: Client) -> None:
    response = client.get("/records/does-not-exist/")
    assert response.status_code == 404
    html = response.content.decode()
    assert "Page not found" in html
    assert "Traceback" not in html
    assert 'href="/"' in html


@pytest.mark.parametrize("bad_id", ["a%00b", "x" * 65])
def test_impossible_record_ids_are_a_404_on_every_database(client: Client, bad_id: str) -> None:
    assert client.get(f"/records/{bad_id}/").status_code == 404


def test_draft_is_hidden_from_the_public_but_shown_to_curators(
    client: Client, admin_client: Client, seed: ErrorRecord
) -> None:
    ErrorRecord.objects.filter(pk=seed.pk).update(status="draft")
    assert client.get(seed.get_absolute_url()).status_code == 404
    response = admin_client.get(seed.get_absolute_url())
    assert response.status_code == 200
    assert "Only curators can see this record" in response.content.decode()


def test_retired_record_shows_with_a_banner(client: Client, seed: ErrorRecord) -> None:
    ErrorRecord.objects.filter(pk=seed.pk).update(status="retired")
    response = client.get(seed.get_absolute_url())
    assert response.status_code == 200
    assert "Retired record." in response.content.decode()


def test_record_without_analysis_still_reads_well(client: Client, seed: ErrorRecord) -> None:
    from tests.factories import make_record

    bare = make_record(
        errorMessage="Vnode bitmap for actor {} is empty",
        messagePattern="Vnode bitmap for actor (.+?) is empty",
        documentation=None,
        triggerScenarios=None,
        commonSituations=None,
        solutions=[],
        preventionTips=[],
        exampleFix=None,
        validationCode=None,
        typeGuard=None,
        tryCatchPattern=None,
        handlingStrategy=None,
    )
    html = client.get(bare.get_absolute_url()).content.decode()
    assert "Nobody has written up this error yet" in html
    assert "How to fix it" not in html
    assert "Code examples" not in html
    assert '<mark class="line error-line" id="L80">' in html  # where it is raised
    # neighbours: the seed is raised in the same file, with the same class and tags
    assert "Raised in the same file" in html
    assert 'href="/records/c36bebe8cdedec02/"' in html


def test_hostile_record_renders_inert(client: Client) -> None:
    from tests.factories import make_line

    line = make_line(**hostile_overrides())
    report = import_lines(line)
    assert report.rejected == 0, report.errors
    response = client.get(f"/records/{line['record']['id']}/")
    assert response.status_code == 200
    html = response.content.decode()
    assert_inert(html)
    assert "View on GitHub" not in html  # a javascript: githubUrl is never a link
    assert "{{ request.META }}" in html  # template syntax is not evaluated
    assert "alert(&quot;xss&quot;)" in html


def test_record_page_carries_a_fresh_csp_nonce_on_every_script(
    client: Client, seed: ErrorRecord
) -> None:
    nonces = []
    for _ in range(2):
        response = client.get(seed.get_absolute_url())
        csp = response["Content-Security-Policy"]
        nonce = re.search(r"'nonce-([^']+)'", csp).group(1)
        html = response.content.decode()
        scripts = re.findall(r"<script\b[^>]*>", html)
        assert scripts
        assert all(f'nonce="{nonce}"' in s for s in scripts)
        assert " style=" not in html
        nonces.append(nonce)
    assert nonces[0] != nonces[1]


def test_record_page_rejects_writes(client: Client, seed: ErrorRecord) -> None:
    assert client.post(seed.get_absolute_url()).status_code in {403, 405}


def test_record_with_a_refused_pattern_says_it_is_not_matched(
    client: Client, seed: ErrorRecord
) -> None:
    ErrorRecord.objects.filter(pk=seed.pk).update(disabled_reason="pattern <too> generic")
    html = client.get(seed.get_absolute_url()).content.decode()
    assert "Not matched automatically." in html
    assert "pattern &lt;too&gt; generic" in html


def test_the_page_is_rendered_once_per_revision_and_follows_every_change(
    client: Client, seed: ErrorRecord
) -> None:
    """The page body is cached per record and data revision: a second view skips the
    neighbour queries, and a change anywhere (here: retiring the neighbour) shows at once."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from kb.records.services import set_status
    from tests.factories import make_record

    other = make_record(
        errorMessage="Vnode bitmap for actor {} is empty",
        messagePattern="Vnode bitmap for actor (.+?) is empty",
    )
    url = other.get_absolute_url()
    counts = []
    for _ in range(2):
        with CaptureQueriesContext(connection) as queries:
            html = client.get(url).content.decode()
        counts.append(len(queries.captured_queries))
        assert 'href="/records/c36bebe8cdedec02/"' in html  # the seed: same file
    assert counts[1] < counts[0], counts
    set_status([ErrorRecord.objects.get(pk=seed.pk)], "retired")
    html = client.get(url).content.decode()
    assert "Raised in the same file" not in html
    assert 'href="/records/c36bebe8cdedec02/"' not in html


def test_a_curators_edit_shows_on_the_next_view_of_the_cached_page(
    client: Client, seed: ErrorRecord
) -> None:
    from kb.records.services import save_curated

    url = seed.get_absolute_url()
    assert "Verify the progress table" in client.get(url).content.decode()
    assert "Verify the progress table" in client.get(url).content.decode()  # cached
    seed.solutions = ["Rebuild the backfill state from the checkpoint"]
    save_curated(seed, changed_attrs=["solutions"])
    html = client.get(url).content.decode()
    assert "Rebuild the backfill state from the checkpoint" in html
    assert "Verify the progress table" not in html


def test_the_api_opens_a_record_by_the_same_rule_as_the_page(
    client: Client, admin_client: Client, seed: ErrorRecord
) -> None:
    """``visible_to``: a draft is a 404 for the public on the page and in the API alike,
    and curators read it through both."""
    ErrorRecord.objects.filter(pk=seed.pk).update(status="draft")
    api_url = f"/api/records/{seed.pk}"
    assert client.get(api_url).status_code == 404
    assert admin_client.get(api_url).status_code == 200
    ErrorRecord.objects.filter(pk=seed.pk).update(status="retired")
    assert client.get(api_url).json()["status"] == "retired"
    assert client.get(seed.get_absolute_url()).status_code == 200


def test_neighbours_link_through_the_one_link_helper(client: Client, seed: ErrorRecord) -> None:
    other = ErrorRecord.objects.get(pk=seed.pk)
    other.pk = "0123456789abcdef"
    other.slug = f"{seed.slug}-twin"
    other.save()
    html = client.get(seed.get_absolute_url()).content.decode()
    assert f'href="{record_url(other.pk)}"' in html
    assert record_url(other.pk) == "/records/0123456789abcdef/"
