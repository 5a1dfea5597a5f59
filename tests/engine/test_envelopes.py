"""Collector envelopes and CI runners' markers, on samples written out from each tool's
documented format: the envelope goes (and is named in the steps), a message the envelope
wrapped across two physical lines is joined back, the mapping stays exact, and a small
matcher finds the record. Exports, layouts and chat: test_envelopes_layouts.py."""

from __future__ import annotations

import pytest

from kb.engine import Matcher
from kb.engine.normalise import normalise, prefix_info
from tests.engine.envelopes import HEAD, JOINED, PREFIXES, TAIL, build_matcher, two_lines, wrap


@pytest.fixture(scope="module")
def matcher(tmp_path_factory: pytest.TempPathFactory) -> Matcher:
    return build_matcher(tmp_path_factory.mktemp("envelopes"))


# (name in the steps or None, sample); every sample wraps the message over two lines
PREFIXED = [
    (
        "kubectl --prefix",
        two_lines("[pod/api-7d9f8b6c5-xk2lp/api] ", "[pod/api-7d9f8b6c5-xk2lp/api] "),
    ),
    ("stern", two_lines("api-7d9f8b6c5-xk2lp api ", "api-7d9f8b6c5-xk2lp api ")),
    ("docker compose logs", two_lines("api-1  | ", "api-1  | ")),
    (
        "docker logs --timestamps",
        two_lines("2024-01-10T12:00:00.123456789Z ", "2024-01-10T12:00:00.12345Z "),
    ),
    (
        "journalctl/syslog short",
        two_lines("Jan 10 12:00:00 node-1 api[1234]: ", "Jan 10 12:00:00 node-1 api[1234]: "),
    ),
    (
        "journalctl short-iso",
        two_lines(
            "2024-01-10T12:00:00+0000 node-1 api[1234]: ",
            "2024-01-10T12:00:00+0000 node-1 api[1234]: ",
        ),
    ),
    (
        "journalctl short-precise",
        two_lines(
            "Jan 10 12:00:00.123456 node-1 api[1234]: ", "Jan 10 12:00:00.123789 node-1 api[1234]: "
        ),
    ),
    (
        "syslog (RFC 3164)",
        two_lines(
            "<28>Jan 10 12:00:00 node-1 api[1234]: ", "<28>Jan 10 12:00:00 node-1 api[1234]: "
        ),
    ),
    (
        "syslog (RFC 5424)",
        two_lines(
            '<28>1 2024-01-10T12:00:00.123Z node-1 api 1234 ID47 [origin ip="10.0.0.1"] ',
            "<28>1 2024-01-10T12:00:00.124Z node-1 api 1234 ID47 - ",
        ),
    ),
    (
        "GitHub Actions timestamp",
        two_lines("2024-01-10T12:00:00.1234567Z ", "2024-01-10T12:00:00.1234568Z "),
    ),
    (
        "Jenkins timestamper",
        two_lines("[2024-01-10T12:00:00.123Z] ", "[2024-01-10T12:00:00.124Z] "),
    ),
    # journalctl -o cat prints the message alone: nothing to remove
    (None, two_lines("", "")),
]


@pytest.mark.parametrize(
    ("name", "text"), PREFIXED, ids=[n or "journalctl cat" for n, _ in PREFIXED]
)
def test_envelope_on_both_lines_is_removed_and_the_message_joined(
    name: str | None, text: str, matcher: Matcher
) -> None:
    n = normalise(text)
    lines = n.text.split("\n")
    assert lines[0] == HEAD
    assert lines[1] == TAIL
    assert any(JOINED in line for line in lines[2:])
    if name is not None:
        assert f"removed {name} envelope from 2 lines" in n.steps
    else:
        assert not any("envelope" in st for st in n.steps)
    rep = matcher.match(text)
    assert [m.key for m in rep.matches] == ["k-meta"]
    m = rep.matches[0]
    assert m.line == 1
    assert m.captures == ["127.0.0.1:5690"]
    # the span maps back exactly: from the message's first word to its last
    assert text[m.span[0] :].startswith("Failed to connect")
    assert text[: m.span[1]].endswith("trying again")


def test_stacked_envelopes_are_each_named() -> None:
    ts = "2024-01-10T12:00:00.123456789Z "
    text = two_lines(f"[pod/api-0/api] {ts}", f"[pod/api-0/api] {ts}")
    n = normalise(text)
    assert n.text.split("\n")[:2] == [HEAD, TAIL]
    assert n.steps[:2] == [
        "removed kubectl --prefix envelope from 2 lines",
        "removed docker logs --timestamps envelope from 2 lines",
    ]


def test_removed_envelope_text_maps_to_nothing_and_kept_text_to_itself() -> None:
    prefix = "[pod/api-0/api] "
    text = two_lines(prefix, prefix)
    n = normalise(text)
    second = n.text.index(TAIL)
    start, end = n.to_original(second, second + len(TAIL))
    assert text[start:end] == TAIL
    head_start, head_end = n.to_original(0, len(HEAD))
    assert text[head_start:head_end] == HEAD
    assert n.line_info(second).line == 2


def test_a_one_off_bracket_or_label_is_not_an_envelope() -> None:
    text = (
        "[pod/api-0/api] restarted after an error\n"
        "and this line goes on without any prefix at all\n"
        "api-1  | once\n"
    )
    n = normalise(text)
    assert "[pod/api-0/api] restarted" in n.text
    assert "api-1  | once" in n.text
    assert not any("envelope" in st for st in n.steps)


def test_an_applications_own_padded_timestamp_is_not_a_docker_envelope() -> None:
    # tracing pads the level: "<ts>  INFO" is the application's own layout
    text = (
        "2024-01-26T05:40:23.291957186Z  INFO risingwave_ctl: hello\n"
        "2024-01-26T05:40:23.292539856Z  WARN risingwave_rpc_client::meta_client: "
        "Failed to connect to meta server 127.0.0.1:5690, trying again\n"
    )
    assert normalise(text).text is text


def test_stern_labels_must_repeat() -> None:
    text = "api-7d9f api first line of some text.\nweb-81cc web another line of some text.\n"
    n = normalise(text)
    assert n.text.split("\n")[:2] == text.split("\n")[:2]
    assert not any("envelope" in st for st in n.steps)


# -- CI runners -------------------------------------------------------------------------


def test_github_actions_group_markers_go_and_error_command_gives_the_level(
    matcher: Matcher,
) -> None:
    text = (
        "2024-01-10T12:00:00.1000000Z ##[group]Run ./run-tests.sh\n"
        "2024-01-10T12:00:00.2000000Z ##[endgroup]\n"
        f"2024-01-10T12:00:00.3000000Z {HEAD}\n"
        f"2024-01-10T12:00:00.4000000Z {TAIL}\n"
        "2024-01-10T12:00:00.5000000Z ##[error]Process completed with exit code 1.\n"
    )
    n = normalise(text)
    assert n.text.split("\n")[:2] == ["Run ./run-tests.sh", ""]
    assert "removed GitHub Actions timestamp envelope from 5 lines" in n.steps
    assert "removed GitHub Actions workflow command envelope from 2 lines" in n.steps
    err = n.line_info(n.text.index("##[error]"))
    assert err.level == "ERROR"
    assert n.text[err.body_start : err.end] == "Process completed with exit code 1."
    assert [m.key for m in matcher.match(text).matches] == ["k-meta"]


def test_github_actions_error_annotation_is_read_as_a_level() -> None:
    line = "::error file=app/meta.py,line=42,title=Meta::Failed to connect to meta server x"
    n, level = prefix_info(line)
    assert level == "ERROR"
    assert line[n:].startswith("Failed to connect")
    assert prefix_info("::warning::disk almost full")[1] == "WARN"


def test_gitlab_section_markers_are_removed(matcher: Matcher) -> None:
    text = (
        "section_start:1704888000:step_script\r\x1b[0K"
        '\x1b[32;1mExecuting "step_script" stage of the job script\x1b[0;m\n'
        f"{HEAD}\n{TAIL}\n"
        "section_end:1704888009:step_script\r\x1b[0K\n"
        "\x1b[31;1mERROR: Job failed: exit code 1\x1b[0;m\n"
    )
    n = normalise(text)
    assert n.text.startswith('Executing "step_script" stage of the job script\n')
    assert "section_" not in n.text
    assert "removed GitLab CI section marker envelope from 2 lines" in n.steps
    assert [m.key for m in matcher.match(text).matches] == ["k-meta"]


def test_jenkins_pipeline_markers_and_elapsed_timestamper(matcher: Matcher) -> None:
    text = (
        "[Pipeline] stage\n"
        "[Pipeline] { (Test)\n"
        "00:00:00.512 [Pipeline] sh\n"
        "00:00:00.530 + ./run-tests.sh\n"
        f"00:00:01.234 {HEAD}\n"
        f"00:00:01.235 {TAIL}\n"
        "[Pipeline] }\n"
        "[Pipeline] // stage\n"
    )
    n = normalise(text)
    assert n.text.split("\n")[:3] == ["+ ./run-tests.sh", HEAD, TAIL]
    assert "removed Jenkins timestamper (elapsed) envelope from 4 lines" in n.steps
    assert "removed Jenkins [Pipeline] marker envelope from 5 lines" in n.steps
    assert [m.key for m in matcher.match(text).matches] == ["k-meta"]


def test_an_applications_elapsed_timestamps_without_jenkins_stay() -> None:
    text = "12:00:00.123 [main] ERROR c.e.Foo - one\n12:00:00.124 [main] ERROR c.e.Foo - two\n"
    assert normalise(text).text is text


def test_envelope_detection_is_linear_in_the_paste() -> None:
    """Doubling an enveloped paste doubles the work: counted as regex matches tried, not
    time (the operation count of the pass is its number of envelope hits)."""
    from kb.engine.normalise import _envelopes

    line = "[pod/api-0/api] 2024-01-10T12:00:00.123456789Z " + "x" * 200 + "\n"
    small = _envelopes._hits(line * 500)
    big = _envelopes._hits(line * 1000)
    assert len(big) == 2 * len(small)
    n = normalise(line * 1000)
    assert n.text.split("\n").count("x" * 200) == 1000
    assert "[pod/" not in n.text


# -- mapping and whole logs -------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(PREFIXES))
def test_every_kept_character_maps_back_to_itself(name: str) -> None:
    """The envelope is deleted, never rewritten: each pasted line of the result is the
    original's text at the offsets it maps to."""
    body = (
        "Traceback (most recent call last):\n"
        '  File "/srv/app/meta.py", line 42, in connect\n'
        "    raise ConnectionError(addr)\n"
        f"ConnectionError: {HEAD[18:]} {TAIL} " + "and a long tail " * 8
    )
    text = wrap(body, name)
    n = normalise(text)
    assert any("envelope" in st or "quote marker" in st for st in n.steps)
    for li in n.lines:
        if li.derived is None:
            assert n.text[li.start : li.end] == text[li.orig_start : li.orig_end]


def test_a_whole_log_in_an_envelope_is_stripped_too(monkeypatch: pytest.MonkeyPatch) -> None:
    from kb.engine.normalise import _structure

    monkeypatch.setattr(_structure, "BIG_TEXT", 2_000)
    filler = "".join(f"[pod/api-0/api] INFO tick {i} ok\n" for i in range(200))
    text = filler + two_lines("[pod/api-0/api] ", "[pod/api-0/api] ")
    n = normalise(text)
    assert "[pod/" not in n.text
    assert "removed kubectl --prefix envelope from 202 lines" in n.steps
    # prose wraps are joined in pastes only (a whole log visits structural lines)
    assert n.text.split("\n")[200:202] == [HEAD, TAIL]


def test_a_whole_log_without_envelopes_keeps_the_regional_fast_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from kb.engine.normalise import _structure

    monkeypatch.setattr(_structure, "BIG_TEXT", 2_000)
    text = "2026-11-30T01:00:00.000Z  INFO app::module: heartbeat ok id=1\n" * 100
    assert normalise(text).text is text
