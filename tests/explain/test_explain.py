"""``kb.explain`` on one real record per language, on fragments, and on hostile text.

No database: the explainer is pure. Expected functions, conditions and marked lines were
read off the snippets by hand (tests/explain/records.py).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from kb.browse.highlight import language_for
from kb.explain import MAX_SOURCE_CHARS, Condition, Explanation, explain
from tests.explain import records


def run(record: dict[str, Any], **changes: Any) -> Explanation | None:
    args = {
        "language": language_for(record["filePath"]),
        "first_line": record["sourceCodeStart"],
        "site_line": record["lineNumber"],
        "message": record["errorMessage"],
    }
    args.update(changes)
    source = args.pop("source", record["sourceCode"])
    return explain(source, **args)


def test_rust_risingwave_match_arm() -> None:
    found = run(records.RUST_RISINGWAVE)
    assert found is not None
    assert (found.function, found.owner) == ("get_progress", None)
    assert found.condition == Condition("arm", "self.inner.get(vnode)", "None")
    assert found.values == ("vnode",)
    assert found.raised_by == "bail!"
    # fn header, the match, the None arm, the message literal
    assert found.lines == (74, 78, 80, 81)
    assert found.sentence() == (
        "Raised in `get_progress` when `self.inner.get(vnode)` is `None` (the `None =>` arm);"
        " the message shows `vnode`."
    )


def test_java_kafka_if_inside_an_unclosed_try() -> None:
    # The snippet ends inside a ``try`` with no ``catch``: the method is recovered from
    # tree-sitter's ERROR node.
    found = run(records.JAVA_KAFKA)
    assert found is not None
    assert found.function == "poll"
    assert found.condition == Condition("if", "subscriptions.hasNoSubscriptionOrUserAssignment()")
    assert found.raised_by == "throw new IllegalStateException"
    assert found.values == ()
    assert found.lines == (552, 565, 566)


def test_go_etcd_err_check_names_the_call_that_failed() -> None:
    found = run(records.GO_ETCD)
    assert found is not None
    assert (found.function, found.owner) == ("Accept", "keepaliveListener")
    assert found.condition == Condition("err", "createKeepaliveConn(c)", via="err != nil")
    assert found.values == ("err",)
    assert found.raised_by == "fmt.Errorf"
    assert found.lines == (52, 58, 59, 60)
    assert found.sentence().startswith(
        "Raised in `keepaliveListener.Accept` when `createKeepaliveConn(c)` returns an error"
    )


def test_python_sqlalchemy_if_in_an_elif_chain() -> None:
    found = run(records.PY_SQLALCHEMY)
    assert found is not None
    assert found.function == "_distill_raw_params"
    assert found.condition == Condition(
        "if", "len(params) > 0 and not _is_mapping_or_tuple(params[0])"
    )
    assert found.raised_by == "raise exc.ArgumentError"
    assert found.lines == (98, 105, 106, 107)


def test_python_django_percent_operand_is_the_value() -> None:
    found = run(records.PY_DJANGO)
    assert found is not None
    assert found.function == "__init__"
    assert found.condition == Condition(
        "if", "parsed.scheme and parsed.scheme not in self.allowed_schemes"
    )
    assert found.values == ("parsed.scheme",)
    assert found.lines == (640, 657, 658, 659)


def test_snippet_starting_mid_function_gives_a_partial_explanation() -> None:
    record = records.RUST_RISINGWAVE
    lines = record["sourceCode"].split("\n")
    cut = 15  # after the fn header (row 12), before the match (row 16)
    found = run(record, source="\n".join(lines[cut:]), first_line=62 + cut)
    assert found is not None
    assert found.function is None
    assert found.condition == Condition("arm", "self.inner.get(vnode)", "None")
    assert "Raised when `self.inner.get(vnode)` is `None`" in found.sentence()


def test_snippet_starting_inside_a_match_finds_the_arm() -> None:
    # No ``match`` in the snippet: recovery leaves ``} _ => {`` as loose tokens.
    source = (
        "                Ok(parse(value)?)\n"
        "            }\n"
        '            "weight" => {\n'
        '                return Err(anyhow!("weight is managed by the system"));\n'
        "            }\n"
        "            _ => {\n"
        '                return Err(anyhow!("unknown config parameter: {}", name));\n'
        "            }\n"
    )
    found = explain(
        source, language=".rs", first_line=10, site_line=16, message="unknown config parameter: {}"
    )
    assert found is not None
    assert found.condition == Condition("arm", "", "_")
    assert found.values == ("name",)
    assert found.lines == (15, 16)
    assert found.sentence() == "Raised in the catch-all `_` case; the message shows `name`."


def test_broken_code_does_not_raise() -> None:
    source = 'fn f( {{{ match x { None => bail!("boom {}", y)\n )))) ]]] "unterminated'
    found = explain(source, language=".rs", first_line=1, site_line=1, message="boom {}")
    assert found is None or isinstance(found.sentence(), str)


@pytest.mark.parametrize("source", ["", "\n\n", "   "])
def test_empty_snippet_is_none(source: str) -> None:
    assert explain(source, language=".rs", first_line=1, site_line=1, message="x") is None


def test_site_outside_the_snippet_or_unknown_language_is_none() -> None:
    record = records.RUST_RISINGWAVE
    assert run(record, site_line=10) is None
    assert run(record, site_line=62 + 500) is None
    assert run(record, language=".cobol") is None


def test_oversized_snippet_is_not_parsed() -> None:
    source = "x" * (MAX_SOURCE_CHARS + 1)
    assert explain(source, language=".py", first_line=1, site_line=1, message="x") is None


def _big_rust(functions: int) -> tuple[str, int]:
    body = (
        "fn filler_{i}(a: u8) -> Result<()> {{\n"
        "    if a > {i} {{\n        return Ok(());\n    }}\n}}\n"
    )
    head = "".join(body.format(i=i) for i in range(functions))
    site = head.count("\n") + 3
    tail = (
        "fn target(x: Option<u8>) -> Result<u8> {\n    match x {\n"
        '        None => bail!("missing {}", x),\n        Some(v) => Ok(v),\n    }\n}\n'
    )
    return head + tail, site


def _best_time(source: str, site: int) -> float:
    best = float("inf")
    for _ in range(7):
        started = time.process_time()
        found = explain(source, language=".rs", first_line=1, site_line=site, message="missing {}")
        best = min(best, time.process_time() - started)
        assert found is not None
        assert found.function == "target"
    return best


def test_time_grows_linearly_with_snippet_size() -> None:
    # A ratio between sizes, never an absolute time: a snippet four times larger costs
    # four times as much when the work is linear and sixteen when it is quadratic; the
    # bound sits between, with slack for a shared, busy machine.
    small, small_site = _big_rust(280)
    large, large_site = _big_rust(1120)  # near the size of a hostile snippet
    assert 20_000 < len(small) < len(large) < MAX_SOURCE_CHARS
    ratio = _best_time(large, large_site) / _best_time(small, small_site)
    assert ratio < 10.0, ratio


def test_hostile_names_come_back_as_plain_text() -> None:
    source = (
        "fn <script>alert(1)</script>() {}\n"
        "fn handler(x: u8) -> Result<()> {\n"
        '    if x == "</code><img src=x onerror=alert(1)>" {\n'
        '        bail!("bad value {}", "<b>&amp;`tick`</b>");\n'
        "    }\n"
        "}\n"
    )
    found = explain(source, language=".rs", first_line=1, site_line=4, message="bad value {}")
    assert found is not None
    assert found.function == "handler"
    assert found.condition is not None
    assert "<img src=x onerror=alert(1)>" in found.condition.text  # as written: not escaped
    assert found.values == ('"<b>&amp;`tick`</b>"',)
    # a backtick inside a value does not shift which pieces are code
    assert ('"<b>&amp;`tick`</b>"', True) in found.parts()
