"""Log-service exports, application layouts, e-mail quoting and chat mangling, on samples
written out from each format: an export's object goes (named in the steps), a layout is
read as a prefix (its level and where the message starts), and a small matcher finds the
record."""

from __future__ import annotations

import pytest

from kb.engine import Matcher
from kb.engine.normalise import normalise
from tests.engine.envelopes import HEAD, TAIL, build_matcher, two_lines


@pytest.fixture(scope="module")
def matcher(tmp_path_factory: pytest.TempPathFactory) -> Matcher:
    return build_matcher(tmp_path_factory.mktemp("envelopes"))


# -- log-service exports (message nested in JSON, escaped) -------------------------------

EXPORTS = [
    (
        "CloudWatch export",
        '{"timestamp":1704888000000,"message":"2024-01-10 12:00:00 WARN meta_client: Failed to '
        'connect to meta server 127.0.0.1:5690,\\ntrying again error=\\"transport\\"",'
        '"ingestionTime":1704888000500}\n',
    ),
    (
        "Cloud Logging export",
        '{"insertId":"k1","resource":{"type":"k8s_container"},"severity":"WARNING",'
        '"textPayload":"WARN meta_client: Failed to connect to meta server 127.0.0.1:5690,\\n'
        'trying again error=\\"transport\\"","timestamp":"2024-01-10T12:00:00.123Z"}\n',
    ),
    (
        "Cloud Logging export",
        '{"jsonPayload":{"message":"Failed to connect to meta server 127.0.0.1:5690,\\ntrying '
        'again error=\\"transport\\"","logger":"meta"},"severity":"WARNING"}\n',
    ),
]


@pytest.mark.parametrize(("name", "text"), EXPORTS)
def test_export_object_is_replaced_by_its_decoded_message(
    name: str, text: str, matcher: Matcher
) -> None:
    n = normalise(text)
    assert f"removed {name} envelope from 1 line" in n.steps
    assert 'trying again error="transport"' in n.text.split("\n")
    assert not n.text.startswith("{")
    rep = matcher.match(text)
    assert [m.key for m in rep.matches] == ["k-meta"]
    m = rep.matches[0]
    assert text[m.span[0] : m.span[1]].startswith("Failed to connect")
    assert text[: m.span[1]].endswith("trying again")


def test_an_applications_json_line_is_not_an_export() -> None:
    text = '{"level":"error","message":"Failed to connect to meta server x, trying again"}\n'
    n = normalise(text)
    assert n.text.startswith(text.rstrip("\n"))
    assert not any("envelope" in st for st in n.steps)


# -- layouts: the application writes the prefix once per record -----------------------

LAYOUTS = [
    (
        "logfmt",
        'ts=2024-01-10T12:00:00.123Z level=warn caller=meta.go:42 msg="Failed to connect to '
        'meta server \\"127.0.0.1:5690\\", trying again" err="transport"',
        "WARN",
    ),
    (
        "logback with MDC",
        "2024-01-10 12:00:00.123 [grpc-exec-1] [traceId=4bf92f35 user=bob] WARN "
        f"c.e.meta.MetaClient - {HEAD[len('WARN meta_client: ') :]}\n{TAIL}",
        "WARN",
    ),
    (
        "log4j",
        f"2024-01-10 12:00:00,123 WARN [main] c.e.meta.MetaClient: {HEAD[18:]}\n{TAIL}",
        "WARN",
    ),
    ("Python logging default", f"WARNING:meta.client:{HEAD[18:]}\n{TAIL}", "WARN"),
    (
        "Python logging asctime",
        f"2024-01-10 12:00:00,123 - meta.client - WARNING - {HEAD[18:]}\n{TAIL}",
        "WARN",
    ),
    (
        "Rust tracing span",
        "2024-01-10T12:00:00.123456Z  WARN connect{addr=127.0.0.1:5690 attempt=3}: "
        f"risingwave_rpc_client::meta_client: {HEAD[18:]}\n{TAIL}",
        "WARN",
    ),
    (
        "zap JSON",
        '{"level":"warn","ts":1704888000.123,"caller":"meta/client.go:42",'
        '"msg":"Failed to connect to meta server 127.0.0.1:5690, trying again","attempt":3}',
        "WARN",
    ),
    (
        "zap console",
        "2024-01-10T12:00:00.123Z\tWARN\tmeta/client.go:42\tFailed to connect to meta server "
        '127.0.0.1:5690, trying again\t{"attempt": 3}\n'
        "2024-01-10T12:00:01.123Z\tINFO\tmeta/client.go:50\tretrying\t"
        '{"attempt": 4, "backoff": "1s"}',
        "WARN",
    ),
    (
        "zerolog",
        '{"level":"warn","time":"2024-01-10T12:00:00Z","message":"Failed to connect to meta '
        'server 127.0.0.1:5690, trying again"}',
        "WARN",
    ),
    (
        "klog header",
        "W0110 12:00:00.123456    1234 client.go:42] Failed to connect to meta server "
        "127.0.0.1:5690, trying again",
        "WARN",
    ),
]


@pytest.mark.parametrize(("name", "text", "level"), LAYOUTS, ids=[n for n, _, _ in LAYOUTS])
def test_layout_is_read_as_a_prefix_and_the_record_matches(
    name: str, text: str, level: str, matcher: Matcher
) -> None:
    rep = matcher.match(text)
    assert [m.key for m in rep.matches] == ["k-meta"], name
    assert "127.0.0.1:5690" in rep.matches[0].captures[0]
    n = rep.normalised
    info = n.line_info(n.text.rindex("Failed to connect"))
    assert info.level == level
    assert n.text[info.body_start :].startswith(("Failed to connect", '"Failed'))


def test_zap_console_fields_are_removed_and_the_prefix_kept() -> None:
    text = {n: t for n, t, _ in LAYOUTS}["zap console"]
    n = normalise(text)
    assert n.text.split("\n")[0].endswith("127.0.0.1:5690, trying again")
    assert "removed zap console fields envelope from 2 lines" in n.steps


# -- e-mail and chat --------------------------------------------------------------------


def test_email_quoting_is_removed_on_every_line(matcher: Matcher) -> None:
    text = two_lines("> > ", "> > ")
    n = normalise(text)
    assert n.text.split("\n")[:2] == [HEAD, TAIL]
    assert "removed 2 Markdown quote marker(s)" in n.steps
    assert [m.key for m in matcher.match(text).matches] == ["k-meta"]


def test_chat_zero_width_characters_smart_quotes_and_ellipsis(matcher: Matcher) -> None:
    spec_text = (
        "Failed to connect to meta server \u201c127.0.0.1:5690\u201d, trying\u200b again\u2026"
    )
    n = normalise(spec_text)
    assert 'Failed to connect to meta server "127.0.0.1:5690", trying again...' in n.text.split(
        "\n"
    )
    assert "removed 1 zero-width character" in n.steps
    rep = matcher.match("\ufeff" + spec_text)
    assert [m.key for m in rep.matches] == ["k-meta"]
    assert rep.matches[0].captures[0].strip('\u201c\u201d"') == "127.0.0.1:5690"
