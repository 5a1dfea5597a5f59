"""Behaviour of the log normaliser on the kinds of mess people paste."""

from __future__ import annotations

import json
import re

import pytest

from kb.engine.normalise import (
    CAUSED_BY,
    EXCEPTION,
    FRAME,
    LOG,
    normalise,
    prefix_info,
    strip_prefix,
)
from tests.datasets import EVAL_PUBLIC, dataset_path, requires_dataset


def lines_of(n) -> list[str]:
    return n.text.split("\n")


def orig_of(n, needle: str) -> str:
    """The original text a needle found in the normalised text maps back to."""
    i = n.text.index(needle)
    s, e = n.to_original(i, i + len(needle))
    return n.original[s:e]


# -- fast path / identity -----------------------------------------------------------------


def test_plain_log_is_returned_unchanged_with_no_steps():
    text = (
        "2024-01-26T05:40:23.291957186Z  INFO risingwave_ctl: hello\n"
        "2024-01-26T05:40:23.292539856Z  WARN risingwave_rpc_client::meta_client: "
        "Failed to connect to meta server 127.0.0.1:5690, trying again\n"
    )
    n = normalise(text)
    assert n.text is text
    assert n.identity
    assert n.steps == []
    assert n.to_original(10, 20) == (10, 20)


def test_empty_text_normalises_to_empty():
    n = normalise("")
    assert n.text == ""
    assert n.to_original(0, 0) == (0, 0)
    assert n.line_of(0) == 1


# -- character cleaning -------------------------------------------------------------------


def test_ansi_colour_codes_are_stripped_and_offsets_map_back():
    text = "\x1b[31mERROR\x1b[0m \x1b[1mdisk full\x1b[0m on /dev/sda1\n"
    n = normalise(text)
    assert n.text == "ERROR disk full on /dev/sda1\n"
    assert orig_of(n, "disk full") == "disk full"
    assert any("ANSI" in s for s in n.steps)


def test_osc_hyperlink_sequences_are_stripped():
    text = "see \x1b]8;;http://x.io\x07link\x1b]8;;\x07 now"
    assert normalise(text).text == "see link now"


def test_crlf_and_lone_cr_become_line_feeds():
    n = normalise("a\r\nb\rc\n")
    assert n.text == "a\nb\nc\n"
    assert n.line_of(n.to_original(4, 5)[0]) == 3


def test_nul_and_control_characters_are_removed():
    n = normalise("ab\x00c\x07d\tz")
    assert n.text == "abcd\tz"
    assert orig_of(n, "cd") == "c\x07d"


def test_non_breaking_spaces_become_spaces_without_moving_offsets():
    n = normalise("value\u00a0too\u202flarge")
    assert n.text == "value too large"
    assert n.to_original(6, 9) == (6, 9)


def test_typographic_quotes_get_an_ascii_copy_and_keep_the_original_line():
    text = "expression \u2018Role.id\u2019 failed (\u201cname \u2018Role\u2019\u201d)"
    n = normalise(text)
    assert text in lines_of(n)
    assert "expression 'Role.id' failed (\"name 'Role'\")" in lines_of(n)
    assert orig_of(n, "'Role.id'") == "\u2018Role.id\u2019"


# -- markup around the paste ------------------------------------------------------------


def test_code_fences_are_removed_including_glued_ones():
    n = normalise("```python\nValueError: bad\n```")
    assert "```" not in n.text
    assert "ValueError: bad" in lines_of(n)
    glued = normalise("```ImproperlyConfigured: Requested setting X.```")
    assert glued.text == "ImproperlyConfigured: Requested setting X."


def test_markdown_quote_markers_are_removed():
    n = normalise("> first line\n> second line\n>\n> third")
    assert lines_of(n)[:2] == ["first line", "second line"]
    assert orig_of(n, "second line") == "second line"


def test_html_entities_and_pre_tags_are_decoded():
    n = normalise("<pre>KeyError: &quot;x&quot; &lt;None&gt; it&#39;s</pre>")
    assert n.text == 'KeyError: "x" <None> it\'s'
    assert orig_of(n, '"x"') == "&quot;x&quot;"


# -- prefixes ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "message", "level"),
    [
        (
            "2024-01-26T05:40:23.291957186Z  WARN risingwave_rpc_client::meta_client: Failed x",
            "Failed x",
            "WARN",
        ),
        (
            "2024-04-16T06:09:59.806194047Z  WARN rw-main risingwave_rpc_client::meta_client: "
            "refresh failed",
            "refresh failed",
            "WARN",
        ),
        (
            "[2024-01-01 12:00:00,123] ERROR [Consumer clientId=c-1, groupId=g] Offset commit",
            "Offset commit",
            "ERROR",
        ),
        ("E1120 12:00:00.123456    1495 file.go:12] boom happened", "boom happened", "ERROR"),
        (
            "kubelet[1495]: W1204 11:17:02.533588    1495 status_manager.go:446] Failed to upd",
            "Failed to upd",
            "WARN",
        ),
        (
            "Jan 10 07:55:33 MULTI-SINGLE-VM k3s[820]: waiting for ReadIndex",
            "waiting for ReadIndex",
            None,
        ),
        ("ERROR:django.request:Internal Server Error: /x", "Internal Server Error: /x", "ERROR"),
        ("2017-03-15 13:00:43.015534 W | etcdserver: apply entries", "apply entries", "WARN"),
        ("ERROR 2026-11-30 01:53:06,185 log Request body exceeded", "log Request body", "ERROR"),
        ("[error] 2015-04-06 19:47:38,537 ERROR [ckan.model] One or more", "One or more", "ERROR"),
        ('time="2017-07-24T12:03:15Z" level=fatal msg="Unable to', "Unable to", "FATAL"),
        ("2016/12/01 14:07:25 Failed to start Sarama", "Failed to start Sarama", None),
        ("connector-node   | Caused by: org.x.Y: z", "Caused by: org.x.Y: z", None),
        ('[30/Nov/2026 01:39:57] "GET /shop/ HTTP/1.1" 200 2', '"GET /shop/', None),
        ("ERROR:  QueryError: Catalog error", "QueryError: Catalog error", "ERROR"),
    ],
)
def test_strip_prefix_finds_where_the_message_starts(line, message, level):
    n = strip_prefix(line)
    assert line[n:].startswith(message), line[n:]
    assert prefix_info(line)[1] == level


@pytest.mark.parametrize(
    "line",
    [
        "Failed to connect to meta server",
        "django.core.exceptions.ImproperlyConfigured: Requested setting",
        "Traceback (most recent call last):",
        "   at org.x.Y.z(Y.java:1)",
        "",
    ],
)
def test_strip_prefix_leaves_unprefixed_lines_alone(line):
    assert strip_prefix(line) == 0


def test_prefixes_stay_in_the_scanned_text_and_line_info_reports_level_and_body():
    text = "2024-01-26T05:40:23.2Z  WARN a::b: Failed to send_heartbeat: timeout"
    n = normalise(text)
    assert n.text == text
    info = n.line_info(40)
    assert info.kind == LOG
    assert info.level == "WARN"
    assert n.text[info.body_start : info.end] == "Failed to send_heartbeat: timeout"


# -- JSON log lines ---------------------------------------------------------------------


def test_zap_json_line_gets_msg_and_error_as_plain_lines():
    text = (
        '{"level":"warn","ts":"2024-11-27T13:48:13.28801Z","caller":"x.go:68",'
        '"msg":"prober detected unhealthy status","rtt":"0s",'
        '"error":"dial tcp 10.27.50.152:2380: connect: connection refused"}'
    )
    n = normalise(text)
    ls = lines_of(n)
    assert ls[0] == text
    assert "prober detected unhealthy status" in ls
    assert "dial tcp 10.27.50.152:2380: connect: connection refused" in ls
    i = n.text.index("\nprober") + 1
    info = n.line_info(i)
    assert info.derived == "json"
    assert info.level == "WARN"
    assert info.line == 1
    assert any("JSON" in s for s in n.steps)


def test_json_escapes_are_decoded_and_map_to_their_escape_sequences():
    text = '{"level": "ERROR", "message": "bad \\"users\\" at \\u201cx\\u201d\\nsecond line"}'
    n = normalise(text)
    ls = lines_of(n)
    assert 'bad "users" at \u201cx\u201d' in ls
    assert "second line" in ls
    assert orig_of(n, '"users"') == '\\"users\\"'
    assert orig_of(n, "\u201cx") == "\\u201cx"
    # the folded copy of the decoded line is offered too
    assert 'bad "users" at "x"' in ls


def test_json_line_behind_a_syslog_prefix_is_decoded():
    text = 'Jan 10 07:55:33 host k3s[820]: {"level":"warn","msg":"took too long, retrying"}'
    n = normalise(text)
    assert "took too long, retrying" in lines_of(n)


def test_json_exc_info_traceback_lines_become_separate_lines():
    text = json.dumps(
        {
            "levelname": "ERROR",
            "message": "Internal Server Error: /x",
            "exc_info": 'Traceback (most recent call last):\n  File "a.py", line 1, in f\n'
            "    g()\ndjango.urls.exceptions.NoReverseMatch: Reverse for 'x' not found.",
        }
    )
    n = normalise(text)
    line = "django.urls.exceptions.NoReverseMatch: Reverse for 'x' not found."
    assert line in lines_of(n)
    info = n.line_info(n.text.index("\n" + line) + 1)
    assert info.kind == EXCEPTION
    assert info.exc_type == "django.urls.exceptions.NoReverseMatch"
    assert info.level == "ERROR"
    source = n.line_info(n.text.index("\n    g()") + 1)
    assert source.kind == FRAME


def test_ansi_escape_encoded_inside_json_is_dropped_from_the_decoded_line():
    text = '{"level":"error","msg":"\\u001b[31mdisk full\\u001b[0m on sda"}'
    assert "disk full on sda" in lines_of(normalise(text))


# -- wraps and multi-line values --------------------------------------------------------


def test_hand_wrapped_message_gets_a_joined_copy_with_a_space():
    text = (
        "sqlalchemy.exc.NoForeignKeysError: Could not determine join condition between "
        "parent/child tables. Ensure that referencing columns are associated with a\n"
        "ForeignKey or ForeignKeyConstraint, or specify a 'primaryjoin' expression."
    )
    n = normalise(text)
    assert "associated with a ForeignKey or ForeignKeyConstraint" in n.text
    i = n.text.index("associated with a ForeignKey")
    s, e = n.to_original(i, i + len("associated with a ForeignKey"))
    assert n.original[s:e] == "associated with a\nForeignKey"
    assert any("joined" in s for s in n.steps)


def test_terminal_hard_wrap_at_fixed_width_is_joined_without_a_space():
    msg = "2024-01-01T00:00:00Z  WARN a::b: " + "Failed to connect to meta server, trying " * 5
    wrapped = "\n".join(msg[i : i + 80] for i in range(0, len(msg), 80))
    n = normalise(wrapped)
    assert msg[strip_prefix(msg) :] in lines_of(n)


def test_a_long_terminal_wrap_gets_the_hard_join_only_and_every_run_fits_the_budget():
    """Three or more lines cut at one column: no soft copy with a space at each cut (text
    the log never had), so a paste of many wrapped messages gets every one joined."""
    msg = "2024-01-01T00:00:00Z  WARN a::b: " + "Failed to connect to meta server, trying " * 5
    wrapped = "\n".join(msg[i : i + 80] for i in range(0, len(msg), 80))
    n = normalise(wrapped)
    joined = [n.text[li.start : li.end] for li in n.lines if li.derived == "joined"]
    assert joined == [msg[strip_prefix(msg) :]]
    many = "\n".join([wrapped] * 400)  # many wrapped messages
    n = normalise(many)
    assert sum(li.derived == "joined" for li in n.lines) == 400
    assert not any("budget" in s for s in n.steps)


def test_rust_pretty_debug_value_is_collapsed_onto_one_line():
    text = 'Error: Foo {\n    source: Bar {\n        message: "x",\n    },\n}'
    n = normalise(text)
    assert 'Error: Foo { source: Bar { message: "x" } }' in lines_of(n)


def test_python_pprint_list_is_collapsed():
    text = "Installed Applications:\n['account',\n 'django.contrib.admin',\n 'x']"
    assert "['account', 'django.contrib.admin', 'x']" in lines_of(normalise(text))


def test_short_independent_lines_are_not_joined():
    n = normalise("Starting server\nListening on :8080\nReady")
    assert n.text == "Starting server\nListening on :8080\nReady"


# -- tracebacks -------------------------------------------------------------------------

PY_CHAINED = """Traceback (most recent call last):
  File "/x/options.py", line 691, in get_field
    return self.fields_map[field_name]
           ~~~~~~~~~~~~~~~^^^^^^^^^^^^
KeyError: 'colour'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/x/repro.py", line 9, in <module>
    print(Item._meta.get_field("colour"))
django.core.exceptions.FieldDoesNotExist: Item has no field named 'colour'"""


def test_python_chained_traceback_marks_last_exception_primary_and_earlier_as_cause():
    n = normalise(PY_CHAINED)
    by_text = {n.text[li.start : li.end]: li for li in n.lines}
    last = by_text["django.core.exceptions.FieldDoesNotExist: Item has no field named 'colour'"]
    assert last.kind == EXCEPTION
    assert last.exc_type == "django.core.exceptions.FieldDoesNotExist"
    assert n.text[last.body_start : last.end] == "Item has no field named 'colour'"
    assert by_text["KeyError: 'colour'"].kind == CAUSED_BY
    assert by_text['    print(Item._meta.get_field("colour"))'].kind == FRAME
    assert by_text["Traceback (most recent call last):"].kind == FRAME


def test_python_multi_line_exception_message_is_also_offered_joined():
    text = (
        'Traceback (most recent call last):\n  File "a.py", line 1, in <module>\n'
        "sqlalchemy.exc.IntegrityError: (sqlite3.IntegrityError) UNIQUE constraint failed\n"
        "[SQL: INSERT INTO users (id) VALUES (?)]"
    )
    n = normalise(text)
    joined = [li for li in n.lines if li.derived == "joined"]
    assert joined
    assert all(li.kind == EXCEPTION for li in joined)
    assert any(
        n.text[li.start : li.end].endswith(
            "UNIQUE constraint failed [SQL: INSERT INTO users (id) VALUES (?)]"
        )
        for li in joined
    )


def test_java_exception_caused_by_and_frames_are_classified():
    text = (
        'Exception in thread "main" java.lang.IllegalStateException: outer failure\n'
        "\tat com.x.Main.run(Main.java:10)\n"
        "Caused by: org.apache.kafka.common.KafkaException: Failed to construct kafka consumer\n"
        "\t... 12 more"
    )
    n = normalise(text)
    kinds = [(li.kind, li.exc_type) for li in n.lines]
    assert kinds == [
        (EXCEPTION, "java.lang.IllegalStateException"),
        (FRAME, None),
        (CAUSED_BY, "org.apache.kafka.common.KafkaException"),
        (FRAME, None),
    ]
    cb = n.lines[2]
    assert n.text[cb.body_start : cb.end] == "Failed to construct kafka consumer"


def test_rust_panic_message_on_the_next_line_is_the_exception():
    text = (
        "thread 'main' panicked at src/meta/x.rs:12:5:\n"
        "failed to migrate legacy table fragments\n"
        "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"
    )
    n = normalise(text)
    assert n.lines[0].kind == FRAME
    assert n.lines[1].kind == EXCEPTION
    assert n.lines[2].kind == FRAME


def test_go_panic_and_goroutine_trace_are_classified():
    text = (
        "panic: runtime error: invalid memory address\n\n"
        "goroutine 1 [running]:\nmain.main()\n\t/app/main.go:12 +0x1d\n"
    )
    n = normalise(text)
    assert n.lines[0].kind == EXCEPTION
    assert n.text[n.lines[0].body_start : n.lines[0].end].startswith("runtime error")
    assert [li.kind for li in n.lines[2:5]] == [FRAME, FRAME, FRAME]


def test_anyhow_cause_list_lines_are_causes_with_the_number_stripped():
    text = "Error: Failed to run the query\n\nCaused by:\n    0: Item not found: x\n"
    n = normalise(text)
    li = n.line_info(n.text.index("0: Item"))
    assert li.kind == CAUSED_BY
    assert n.text[li.body_start : li.end] == "Item not found: x"
    assert n.lines[0].kind == EXCEPTION


# -- offsets API ------------------------------------------------------------------------


def test_line_bounds_returns_the_logical_line_around_a_span():
    n = normalise("one\ntwo three\nfour")
    assert n.line_bounds(6, 8) == (4, 13)
    assert n.line_bounds(0, 0) == (0, 3)


def test_line_of_counts_original_lines_with_any_line_end():
    n = normalise("a\r\nb\rc\nd")
    assert [n.line_of(i) for i in (0, 3, 5, 7)] == [1, 2, 3, 4]


def test_variant_lines_map_to_the_line_they_came_from():
    text = "INFO ok\n" + '{"level":"error","msg":"boom \\"x\\""}\nINFO after'
    n = normalise(text)
    info = n.line_info(n.text.index('boom "x"'))
    assert info.line == 2
    assert n.original[info.orig_start : info.orig_end] == 'boom \\"x\\"'


def test_steps_describe_what_was_done():
    n = normalise('\x1b[31mred\x1b[0m\r\n{"level":"error","msg":"a \\"b\\""}\r\n')
    joined = " | ".join(n.steps)
    assert "stripped 2 ANSI escape codes" in joined
    assert "CRLF" in joined
    assert "decoded 1 JSON log line" in joined


# -- the public eval set ----------------------------------------------------------------


def _eval_cases() -> list[dict]:
    with dataset_path(EVAL_PUBLIC).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


@requires_dataset(EVAL_PUBLIC)
def test_every_public_eval_paste_normalises_with_sound_offsets():
    for case in _eval_cases():
        n = normalise(case["text"])
        assert not any("normalisation failed" in s for s in n.steps), case["id"]
        for li in n.lines:
            assert 0 <= li.orig_start <= li.orig_end <= len(case["text"])
            assert 1 <= li.line <= case["text"].count("\n") + 1
        assert len(n.text) <= 3 * len(case["text"]) + 1000, case["id"]


def _template_regex(template: str) -> re.Pattern[str]:
    """A loose regex for a source template: placeholders match anything on a line."""
    parts = re.split(r"%\(\w+\)[sdr]|%[sdrvqf]|\{[^{}]*\}", template)
    return re.compile(".+?".join(re.escape(p) for p in parts))


@requires_dataset(EVAL_PUBLIC)
def test_typographic_quote_paste_matches_its_ascii_template_after_normalising():
    case = next(c for c in _eval_cases() if c["id"] == "sa-104")
    n = normalise(case["text"])
    rx = re.compile(r"expression 'Role\.id' failed to locate a name \(\"name 'Role' is not")
    assert rx.search(n.text)
    assert not rx.search(case["text"])


def test_multi_megabyte_coloured_log_maps_every_sampled_character_back():
    import random

    line = "\x1b[2m2024-01-26T05:40:23Z\x1b[0m \x1b[32m INFO\x1b[0m a::b: step {i} done\r\n"
    text = "".join(line.format(i=i) for i in range(60_000))  # a whole log: several chunks
    n = normalise(text)
    assert "\x1b" not in n.text
    assert "\r" not in n.text
    rng = random.Random(5)
    for i in rng.sample(range(len(n.text)), 2000):
        s, e = n.to_original(i, i + 1)
        assert text[s:e] == n.text[i]
    last = n.text.rindex("step 59999 done")
    s, _ = n.to_original(last, last + 4)
    assert n.line_of(s) == 60_000


def test_earlier_exception_with_a_copied_variant_is_still_relabelled_a_cause():
    text = (
        "Traceback (most recent call last):\n"
        '  File "a.py", line 1, in f\n'
        "ValueError: bad \u201cx\u201d value\n"
        "second line of the first message\n"
        "\n"
        "The above exception was the direct cause of the following exception:\n"
        "\n"
        "Traceback (most recent call last):\n"
        '  File "b.py", line 2, in g\n'
        "RuntimeError: outer failure"
    )
    n = normalise(text)
    kinds = {n.text[li.start : li.end]: li.kind for li in n.lines}
    assert kinds["ValueError: bad \u201cx\u201d value"] == CAUSED_BY
    assert kinds['ValueError: bad "x" value'] == CAUSED_BY
    joined = "ValueError: bad \u201cx\u201d value second line of the first message"
    assert kinds[joined] == CAUSED_BY
    assert kinds["RuntimeError: outer failure"] == EXCEPTION


def test_pretty_printed_json_log_record_is_collapsed_and_its_message_decoded():
    text = '{\n  "level": "error",\n  "msg": "lost \\"peer\\" connection",\n  "id": 7\n}'
    n = normalise(text)
    assert 'lost "peer" connection' in lines_of(n)
    info = n.line_info(n.text.index('\nlost "peer"') + 1)
    assert info.derived == "json"
    assert info.level == "ERROR"
    assert any(line.startswith('{ "level": "error", "msg"') for line in lines_of(n))


def test_prefix_strip_keeps_the_indentation_of_the_logged_line():
    line = '2026-11-30T01:00:01.001Z ERROR app.module:   File "x.py", line 1, in f'
    assert line[strip_prefix(line) :] == '  File "x.py", line 1, in f'
    assert strip_prefix("ERROR   at a.B.c(B.java:1)") == len("ERROR ")


def test_traceback_with_a_log_prefix_on_every_line_is_still_understood():
    plain = PY_CHAINED.split("\n")
    text = "\n".join(
        f"2026-11-30T01:00:{i:02d}.{i:03d}Z ERROR app.module: {line}"
        for i, line in enumerate(plain)
    )
    n = normalise(text)
    kinds = {n.text[li.body_start : li.end]: li.kind for li in n.lines}
    assert kinds["Item has no field named 'colour'"] == EXCEPTION
    assert kinds["'colour'"] == CAUSED_BY
    assert kinds['  File "/x/repro.py", line 9, in <module>'] == FRAME


def test_terminal_wrap_inside_words_is_glued_back_even_under_a_quote_marker():
    msg = (
        "sqlalchemy.exc.AmbiguousForeignKeysError: Could not determine join condition "
        "between parent/child tables on relationship floatingips.ports - there are multiple "
        "foreign key paths linking the tables."
    )
    quoted = "> " + msg
    wrapped = "\n".join(quoted[i : i + 80] for i in range(0, len(quoted), 80))
    n = normalise(wrapped)
    assert msg in lines_of(n)


def test_wrapped_python_traceback_keeps_frames_as_frames():
    frame = (
        '  File "/tmp/djvenv6/lib/python3.12/site-packages/django/core/handlers/exception.py", '
        "line 56, in inner"
    )
    text = "\n".join(
        [
            "Traceback (most recent call last):",
            frame[:80],
            frame[80:],
            "    response = x()",
            "ValueError: the actual failure",
        ]
    )
    n = normalise(text)
    by_text = {n.text[li.start : li.end]: li.kind for li in n.lines if li.derived is None}
    assert by_text[frame[80:]] == FRAME
    assert by_text["ValueError: the actual failure"] == EXCEPTION


def test_whole_logs_skip_prose_joins_but_still_read_tracebacks(monkeypatch):
    from kb.engine.normalise import _structure

    monkeypatch.setattr(_structure, "BIG_TEXT", 0)
    prose = "x" * 70 + " first half of a long line that a person wrapped by hand\nand its end"
    text = "2026-01-01 12:00:00 INFO start\n" + prose + "\n" + PY_CHAINED + "\nprocessed more"
    n = normalise(text)
    assert not any(
        li.derived == "joined" and "its end" in n.text[li.start : li.end] for li in n.lines
    )
    last = n.line_info(n.text.index("django.core.exceptions.FieldDoesNotExist"))
    assert last.kind == EXCEPTION


def test_sentence_broken_by_hand_after_a_comma_is_joined():
    text = "relationship 'P.d' will copy column p.id to column d.project_id, \nwhich conflicts"
    n = normalise(text)
    assert "relationship 'P.d' will copy column p.id to column d.project_id, which conflicts" in (
        lines_of(n)
    )
