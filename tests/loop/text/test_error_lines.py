"""The error lines of a paste: errors kept as their message, noise and envelopes dropped."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kb.loop.text.error_lines import (
    FALLBACK_LINES,
    MAX_LINE_CHARS,
    MAX_LINES,
    error_lines,
    find_error_lines,
)

PY_CHAINED = (
    "Traceback (most recent call last):\n"
    '  File "/srv/app/app.py", line 3, in <module>\n'
    '    d["Posts"]\n'
    "KeyError: 'Posts'\n"
    "\n"
    "The above exception was the direct cause of the following exception:\n"
    "\n"
    "Traceback (most recent call last):\n"
    '  File "/srv/app/app.py", line 5, in <module>\n'
    '    raise RuntimeError("lookup failed for Posts") from e\n'
    "RuntimeError: lookup failed for Posts"
)
JAVA = (
    'Exception in thread "main" java.lang.IllegalStateException: producer closed\n'
    "\tat org.apache.kafka.clients.producer.KafkaProducer.send(KafkaProducer.java:870)\n"
    "\tat com.acme.App.main(App.java:12)\n"
    "Caused by: java.io.IOException: No space left on device\n"
    "\t... 3 more"
)
RUST = (
    "thread 'main' panicked at src/main.rs:10:5:\n"
    "called `Option::unwrap()` on a `None` value\n"
    "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"
)
GO = (
    "panic: runtime error: index out of range [5] with length 3\n"
    "\n"
    "goroutine 1 [running]:\n"
    "main.main()\n"
    "\t/tmp/x.go:8 +0x1d\n"
    "exit status 2"
)
CARGO = (
    "   Compiling foo v0.1.0 (/srv/foo)\n"
    "error[E0425]: cannot find value `x` in this scope\n"
    " --> src/main.rs:2:13\n"
    'error: could not compile `foo` (bin "foo") due to 1 previous error'
)
LOG = (
    "2024-01-26T05:40:23.291957186Z  INFO risingwave_ctl::common::meta_service: using meta addr\n"
    "2024-01-26T05:40:23.292539856Z  WARN risingwave_rpc_client::meta_client: Failed to connect"
    " to meta server 127.0.0.1:5690, trying again\n"
    "2024-01-26T05:40:23.332969831Z  WARN risingwave_rpc_client::meta_client: Failed to connect"
    " to meta server 127.0.0.1:5690, trying again\n"
    "2024-01-26T05:40:24.000000000Z DEBUG risingwave_rpc_client: retry error budget left 3"
)
JSON_LOG = (
    '{"timestamp": "2026-11-30 02:36:02,954", "level": "ERROR", "logger": "app", "message":'
    ' "serialization error: Parent instance <User at 0x7f0c42b64f50> is not bound to a Session"}\n'
    '{"timestamp": "2026-11-30 02:36:03,001", "level": "INFO", "logger": "app", "message":'
    ' "request finished with error count 0"}'
)
PROMPTS = (
    "alice@box:~/proj$ python manage.py migrate --fail-on-error\n"
    "$ echo error here\n"
    ">>> raise ValueError('bad value here')\n"
    "dev=> select * from missing_error_table;\n"
    "django.db.utils.OperationalError: no such table: shop_item"
)


def test_a_chained_traceback_keeps_both_exceptions_and_no_frames() -> None:
    lines = find_error_lines(PY_CHAINED)
    assert [e.text for e in lines] == ["KeyError: 'Posts'", "RuntimeError: lookup failed for Posts"]
    assert [e.kind for e in lines] == ["caused_by", "exception"]
    assert lines[-1].exc_type == "RuntimeError"
    assert lines[-1].line == 11


def test_java_exception_and_its_cause() -> None:
    assert error_lines(JAVA) == [
        'Exception in thread "main" java.lang.IllegalStateException: producer closed',
        "Caused by: java.io.IOException: No space left on device",
    ]


def test_rust_panic_message_line() -> None:
    assert error_lines(RUST) == ["called `Option::unwrap()` on a `None` value"]


def test_go_panic() -> None:
    assert error_lines(GO) == ["panic: runtime error: index out of range [5] with length 3"]


def test_compiler_error_lines() -> None:
    assert error_lines(CARGO) == [
        "error[E0425]: cannot find value `x` in this scope",
        'error: could not compile `foo` (bin "foo") due to 1 previous error',
    ]


def test_log_prefix_removed_info_and_debug_dropped_duplicates_once() -> None:
    lines = find_error_lines(LOG)
    assert [e.text for e in lines] == [
        "Failed to connect to meta server 127.0.0.1:5690, trying again"
    ]
    assert lines[0].level == "WARN"


def test_json_log_line_keeps_the_message_not_the_envelope() -> None:
    assert error_lines(JSON_LOG) == [
        "serialization error: Parent instance <User at 0x7f0c42b64f50> is not bound to a Session"
    ]


def test_shell_and_repl_prompts_are_dropped() -> None:
    assert error_lines(PROMPTS) == ["django.db.utils.OperationalError: no such table: shop_item"]


def test_a_bare_message_is_kept_by_the_fallback() -> None:
    text = "Requested setting USE_I18N, but settings are not configured.\n\nsecond line here"
    assert error_lines(text) == [
        "Requested setting USE_I18N, but settings are not configured.",
        "second line here",
    ]


def test_only_noise_gives_nothing() -> None:
    assert error_lines("") == []
    assert error_lines("2024-01-01T00:00:00Z INFO app: started\n$ ls -la\n\n") == []


def test_count_and_length_are_capped() -> None:
    many = "\n".join(f"ERROR app: failure number {i} happened" for i in range(MAX_LINES * 3))
    assert len(error_lines(many)) == MAX_LINES
    long_line = "ValueError: " + "x " * MAX_LINE_CHARS
    (only,) = error_lines(long_line)
    assert len(only) == MAX_LINE_CHARS
    assert only.endswith("…")
    prose = "\n".join(f"plain words line {i}" for i in range(10))
    assert len(error_lines(prose)) == FALLBACK_LINES


@settings(suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=400))
def test_prop_error_lines_are_bounded_lines_of_the_paste(text: str) -> None:
    lines = error_lines(text)
    assert len(lines) <= MAX_LINES
    assert len(set(lines)) == len(lines)
    for line in lines:
        assert "\n" not in line
        assert 0 < len(line) <= MAX_LINE_CHARS
