"""``kb.matching.formats``: workflow commands that parse back to what was meant, and Markdown
that no record text or paste can turn into links, HTML or mentions
(docs/reliability.md#r6-stored-xss holds for every output, not only the pages)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from kb.matching.formats import known_count, render
from kb.matching.formats.github import command
from kb.matching.formats.markdown import code_span, escape_text

URL = "https://kb.example.org/records/r1/"
HOSTILE_TITLE = (
    "Boom [click](javascript:alert(1)) <img src=x onerror=alert(2)> @octocat #123 "
    "**bold** `tick` ![x](https://evil.example/t.png)\n# heading\n::warning::pwned, a: b 50%0A"
)
HOSTILE_STEP = "Run <script>alert(3)</script> then [docs](https://evil.example) | a | b |\n- x"
HOSTILE_LINE = "ERROR ``` `` ` </code><script>alert(4)</script> [x](y) @admin end`"


def result(**overrides: Any) -> dict[str, Any]:
    """A result in the contract's shape plus ``records``, as ``report_data`` makes it."""
    data: dict[str, Any] = {
        "matches": [
            {
                "record_id": "r1",
                "slug": "boom-slug",
                "repo": "org/repo",
                "line": 3,
                "span": [6, 20],
                "text": "matched, text: 100%\r\nsecond",
                "captures": [],
                "score": 10.0,
                "reason": "matched",
                "same_message": [],
            },
            {
                "record_id": "r1",
                "slug": "boom-slug",
                "repo": "org/repo",
                "line": 9,
                "span": [60, 70],
                "text": "again",
                "captures": [],
                "score": 9.0,
                "reason": "matched",
                "same_message": [],
            },
            {
                "record_id": "r2",
                "slug": "other",
                "repo": "org/other",
                "line": 5,
                "span": [30, 40],
                "text": "other error",
                "captures": [],
                "score": 8.0,
                "reason": "matched",
                "same_message": [],
            },
        ],
        "suggestions": [
            {"record_id": "r3", "slug": "near", "similarity": 0.834, "reason": "similar message"}
        ],
        "groups": [
            # r2 first: the summary's order, not the matches', decides
            {"record_id": "r2", "count": 1, "first_line": 5, "last_line": 5, "reason": "root"},
            {"record_id": "r1", "count": 2, "first_line": 3, "last_line": 9},
            {"record_id": "unconfirmed", "count": 4, "first_line": 1, "last_line": 2},
        ],
        "normalisation": [],
        "elapsed_ms": 1.5,
        "records": {
            "r1": {
                "title": HOSTILE_TITLE,
                "url": URL,
                "first_step": HOSTILE_STEP,
                "line_text": HOSTILE_LINE,
            },
            "r2": {"title": "Other error", "url": URL.replace("r1", "r2"), "first_step": ""},
            "r3": {"title": "Near (miss)", "url": URL.replace("r1", "r(3)"), "first_step": ""},
        },
    }
    data.update(overrides)
    return data


# --- GitHub workflow commands ---------------------------------------------------------------

COMMAND = re.compile(r"^::(?P<name>[a-z-]+)(?: (?P<props>[^:]*))?::(?P<data>.*)$")


def unescape_data(text: str) -> str:
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def unescape_property(text: str) -> str:
    return unescape_data(text.replace("%3A", ":").replace("%2C", ","))


def parse_commands(output: str) -> list[tuple[str, dict[str, str], str]]:
    """The runner's reading of stdout: every line must be one well-formed command (the
    name, ``key=value`` pairs split on ``,``, the data after the second ``::``)."""
    parsed = []
    for line in output.splitlines():
        found = COMMAND.match(line)
        assert found, f"not a workflow command: {line!r}"
        props: dict[str, str] = {}
        for pair in filter(None, (found["props"] or "").split(",")):
            key, sep, value = pair.partition("=")
            assert sep, pair
            assert key in {"file", "line", "col", "endLine", "endColumn", "title"}, pair
            props[key] = unescape_property(value)
        parsed.append((found["name"], props, unescape_data(found["data"])))
    return parsed


def test_command_escapes_data_and_properties_the_way_the_runner_reads_them() -> None:
    line = command("error", "50%\r\nnext: a, b", file="dir/a,b:c.log", line=3, title="x%0A")
    assert line == "::error file=dir/a%2Cb%3Ac.log,line=3,title=x%250A::50%25%0D%0Anext: a, b"
    assert parse_commands(line) == [
        ("error", {"file": "dir/a,b:c.log", "line": "3", "title": "x%0A"}, "50%\r\nnext: a, b")
    ]


def test_github_annotates_each_known_error_once_at_its_first_line() -> None:
    out = render("github", result(), file="logs/ci, run.log")
    commands = parse_commands(out)
    names = [c[0] for c in commands]
    assert names == ["error", "error", "warning", "notice"]
    (_, root, root_msg), (_, boom, boom_msg) = commands[0], commands[1]
    assert root == {"file": "logs/ci, run.log", "line": "5", "title": "Other error"}
    assert "Why here: root" in root_msg
    assert (boom["line"], boom["file"]) == ("3", "logs/ci, run.log")
    # the hostile title survives whole (one line, shortened) and injects no command
    assert boom["title"].startswith("Boom [click](javascript:alert(1))")
    assert "\n" not in boom["title"]
    assert boom_msg.startswith("matched, text: 100%\r\nsecond\n")
    assert "seen 2 times, lines 3-9." in boom_msg
    assert f"Record: {URL}" in boom_msg
    assert commands[-1][2] == "2 known errors found (3 occurrences); 1 possible (warnings)."


def test_github_without_a_file_names_no_file_or_line() -> None:
    commands = parse_commands(render("github", result()))
    assert all("file" not in props and "line" not in props for _, props, _ in commands)


def test_github_with_nothing_known_prints_only_the_summary() -> None:
    empty = result(matches=[], suggestions=[], groups=[], records={})
    assert parse_commands(render("github", empty)) == [
        ("notice", {"title": "Known errors"}, "No known error found.")
    ]
    assert known_count(empty) == 0
    assert known_count(result()) == 2  # the unconfirmed group is not a known error


# --- Markdown ----------------------------------------------------------------------------------


def markdown_tokens(text: str) -> list[Any]:
    markdown_it = pytest.importorskip("markdown_it")
    md = markdown_it.MarkdownIt("commonmark", {"html": True})
    md.enable("table")
    flat = []
    for token in md.parse(text):
        flat.append(token)
        flat.extend(token.children or [])
    return flat


def test_markdown_lists_known_errors_in_the_summary_order_with_their_facts() -> None:
    out = render("markdown", result())
    assert out.startswith("### 2 known errors in this log (3 occurrences)\n")
    first, second = out.index("Other error"), out.index("Boom")
    assert first < second
    assert "Why here: root" in out
    assert "Seen 2 times, lines 3-9" in out
    assert "Seen once, line 5\n" in out
    assert "Close, but not certain" not in out
    assert "Possibly also:" in out


def test_markdown_turns_no_record_or_paste_text_into_links_html_or_mentions() -> None:
    out = render("markdown", result())
    tokens = markdown_tokens(out)
    assert not [t for t in tokens if t.type.startswith("html")], out
    assert not [t for t in tokens if t.type == "image"]
    assert not [t for t in tokens if t.type == "heading_open" and t.tag != "h3"]
    hrefs = [t.attrs["href"] for t in tokens if t.type == "link_open"]
    assert hrefs == [URL.replace("r1", "r2"), URL, "https://kb.example.org/records/r%283%29/"]
    codes = [t.content for t in tokens if t.type == "code_inline"]
    assert HOSTILE_LINE in codes  # the paste, whole, in a span it cannot close
    texts = "".join(t.content for t in tokens if t.type == "text")
    # the record text reads as written (zero-width spaces break mentions and references)
    assert "@\u200boctocat #\u200b123" in texts
    assert "Boom [click](javascript:alert(1)) <img src=x onerror=alert(2)>" in texts
    assert "Run <script>alert(3)</script> then [docs](https://evil.example) | a | b | - x" in texts


@pytest.mark.parametrize(
    "text",
    ["plain", "a`b", "``x``", "`", "` lead", "trail `", " spaced ", "many ```` fences `` here"],
)
def test_code_span_holds_any_backticks(text: str) -> None:
    tokens = [t for t in markdown_tokens(f"x {code_span(text)} y") if t.type == "code_inline"]
    assert [t.content for t in tokens] == [text]


def test_escape_text_is_read_back_as_the_same_text() -> None:
    hostile = r"a\b *c* _d_ [e](f) <g> `h` ~i~ &amp; $j$ |k| 1. #l !m +n -o {p} ^q"
    tokens = markdown_tokens(escape_text(hostile))
    assert [t.type for t in tokens if t.type not in ("text", "inline")] == [
        "paragraph_open",
        "paragraph_close",
    ]
    read = "".join(t.content for t in tokens if t.type == "text")
    assert read.replace("#\u200b", "#") == hostile


def test_text_and_json_formats() -> None:
    text = render("text", result())
    # the order to read them, as every format and the page give it (the JSON's matches
    # stay best first)
    assert text.splitlines()[0] == "line 5: other (r2, org/other)"
    shape = json.loads(render("json", result()))
    assert "records" not in shape
    assert shape["matches"][0]["record_id"] == "r1"


def test_one_error_seen_once_reads_in_the_singular() -> None:
    one = result(matches=result()["matches"][2:], groups=result()["groups"][:1])
    assert render("markdown", one).startswith("### 1 known error in this log (1 occurrence)\n")
    notice = parse_commands(render("github", one))[-1][2]
    assert notice == "1 known error found (1 occurrence); 1 possible (warnings)."


def with_alternative() -> dict[str, Any]:
    """r4 read the same text as r2 and lost to it: one error, not two."""
    data = result()
    r2 = data["matches"][2]
    r2["also_matches"] = [
        {"record_id": "r4", "slug": "shorter", "repo": "org/x", "why": "reads fewer words"}
    ]
    r2["evidence"] = ["the exception class printed beside the message, Boom, is the record's"]
    alt = {**r2, "record_id": "r4", "slug": "shorter", "alternative_of": "r2", "score": 4.0}
    alt.pop("also_matches")
    data["matches"].append(alt)
    data["answers"] = [
        {"record_id": "r2", "count": 1, "first_line": 5, "last_line": 5, "reason": "root"},
        {"record_id": "r1", "count": 2, "first_line": 3, "last_line": 9},
    ]
    return data


def test_an_alternative_reading_is_listed_under_its_error_never_as_one() -> None:
    data = with_alternative()
    assert known_count(data) == 2
    md = render("markdown", data)
    assert md.startswith("### 2 known errors in this log (3 occurrences)")
    assert "Also matches: org/x shorter, not chosen: reads fewer words" in md
    assert "Evidence: the exception class printed beside the message, Boom" in md
    errors = [c for c in parse_commands(render("github", data)) if c[0] == "error"]
    assert len(errors) == 2
    assert "Also matches shorter (org/x), not chosen: reads fewer words" in errors[0][2]
    text = render("text", data)
    assert "also matches r4 (org/x): reads fewer words" in text
    assert "line 5: other (r2, org/other)" in text.splitlines()[0]
    assert not any(line.startswith("line 5: shorter") for line in text.splitlines())
