"""What the code says on the record page and the result card: shown where a snippet
explains the error, absent where there is none, and always escaped."""

from __future__ import annotations

import pytest
from django.core.cache import caches
from django.test import Client

from kb.browse import explanations as explaining
from kb.records.models import ErrorRecord
from tests.factories import SEED, import_lines, make_record

pytestmark = pytest.mark.django_db

SENTENCE_HTML = (
    "Raised in <code>get_progress</code> when <code>self.inner.get(vnode)</code> is "
    "<code>None</code>"
)


@pytest.fixture(autouse=True)
def fresh() -> None:
    explaining.clear_memo()
    caches["explanations"].clear()


@pytest.fixture
def seed() -> ErrorRecord:
    assert import_lines(SEED).rejected == 0
    return ErrorRecord.objects.get(pk="c36bebe8cdedec02")


def test_record_page_shows_the_explanation_and_marks_its_lines(
    client: Client, seed: ErrorRecord
) -> None:
    html = client.get(f"/records/{seed.pk}/").content.decode()
    assert "What the code says" in html
    assert "Derived automatically from the source code" in html
    assert SENTENCE_HTML in html
    for line in (74, 78, 81):  # the error line (80) keeps its own mark
        assert f'<span class="line explained" id="L{line}">' in html
    assert '<mark class="line error-line" id="L80">' in html
    # below the human write-up
    assert html.index("What it means") < html.index("What the code says")


def test_record_without_snippet_has_no_explanation(client: Client) -> None:
    record = make_record(sourceCode="")
    html = client.get(f"/records/{record.pk}/").content.decode()
    assert "What the code says" not in html


def test_hostile_snippet_is_escaped(client: Client) -> None:
    source = (
        "fn handler(x: u8) -> Result<()> {\n"
        '    if x == "<script>alert(1)</script>" {\n'
        '        bail!("Hostile {} failed", "<img src=x onerror=alert(2)>");\n'
        "    }\n"
        "}\n"
    )
    record = make_record(
        sourceCode=source,
        sourceCodeStart=1,
        sourceCodeEnd=5,
        lineNumber=3,
        errorMessage="Hostile {} failed",
        messagePattern="Hostile (.+?) failed",
    )
    html = client.get(f"/records/{record.pk}/").content.decode()
    assert "What the code says" in html
    assert "<script>alert(1)" not in html
    assert "<img src=x" not in html
    assert "&lt;img src=x onerror=alert(2)&gt;" in html


def test_result_card_shows_the_sentence(client: Client, seed: ErrorRecord) -> None:
    line = "ERROR Backfill progress for vnode 7 not found, backfill_state not initialized properly"
    html = client.post("/match/", {"text": line}, headers={"HX-Request": "true"}).content
    text = html.decode()
    assert "What the code says" in text
    assert SENTENCE_HTML in text


def test_cache_failure_still_explains(seed: ErrorRecord, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = caches["explanations"]

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("cache down")

    monkeypatch.setattr(cache, "get", broken)
    monkeypatch.setattr(cache, "set", broken)
    found = explaining.explanation_for(seed)
    assert found is not None
    assert found.function == "get_progress"


def test_explainer_error_is_logged_not_raised(
    seed: ErrorRecord, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(*args: object, **kwargs: object) -> None:
        raise ValueError("parser bug")

    monkeypatch.setattr(explaining, "explain", boom)
    assert explaining.explanation_for(seed) is None


def test_explanation_is_cached_by_record_and_source(
    seed: ErrorRecord, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real = explaining.compute
    monkeypatch.setattr(explaining, "compute", lambda r: calls.append(r.pk) or real(r))
    first = explaining.explanation_for(seed)
    second = explaining.explanation_for(seed)
    assert first == second
    assert calls == [seed.pk]
    explaining.clear_memo()
    assert explaining.explanation_for(seed) == first  # from the Django cache
    assert calls == [seed.pk]
    explaining.clear_memo()
    seed.source_code = seed.source_code.replace("vnode,", "vnode, other,")
    explaining.explanation_for(seed)
    assert calls == [seed.pk, seed.pk]  # a changed snippet is a new key


def test_a_new_record_revision_is_explained_afresh(
    seed: ErrorRecord, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real = explaining.compute
    monkeypatch.setattr(explaining, "compute", lambda r: calls.append(r.pk) or real(r))
    explaining.explanation_for(seed)
    seed.revision += 1
    seed.source_code = seed.source_code.replace("vnode,", "vnode, other,")
    explaining.explanation_for(seed)
    assert calls == [seed.pk, seed.pk]


def test_a_card_explained_before_costs_no_query(
    seed: ErrorRecord, django_assert_num_queries
) -> None:
    explaining.explanation_for(seed)
    shown = ErrorRecord.objects.defer("source_code").get(pk=seed.pk)  # as the matcher loads it
    with django_assert_num_queries(0):
        assert explaining.explanation_for(shown) is not None
