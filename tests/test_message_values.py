"""``kb.matching.values``: the paste's values lined up with a record's message template."""

from __future__ import annotations

from kb.matching.values import Piece, Value, fill_message, placeholder_name


def test_named_placeholders_are_filled_and_labelled() -> None:
    filled = fill_message("Invalid column: {column_name}", ["cache_size"])
    assert filled.pieces == (Piece("Invalid column: "), Piece("cache_size", value=True))
    assert filled.values == (Value("column_name", "cache_size"),)


def test_every_placeholder_style_of_the_dataset_gives_its_name() -> None:
    assert placeholder_name("{column_name}") == "column_name"
    assert placeholder_name("{name:?}") == "name"
    assert placeholder_name("{self.table!r}") == "self.table"
    assert placeholder_name("%(cls)s") == "cls"
    assert placeholder_name("{}") is None
    assert placeholder_name("{:#?}") is None
    assert placeholder_name("{0}") is None
    assert placeholder_name("%s") is None
    assert placeholder_name("{len(items) + 1}") is None


def test_positional_placeholders_take_the_codes_argument_names_only_when_they_line_up() -> None:
    message = "{} snapshot index {index} is out of bounds for {} columns"
    named = fill_message(message, ["pg", "7", "3"], code_values=("connector", "n_cols"))
    assert [v.name for v in named.values] == ["connector", "index", "n_cols"]
    # one argument too many (or not a plain name): unnamed, never guessed
    extra = fill_message(message, ["pg", "7", "3"], code_values=("connector", "n_cols", "e"))
    assert [v.name for v in extra.values] == ["", "index", ""]
    call = fill_message(message, ["pg", "7", "3"], code_values=("connector", "cols.len()"))
    assert [v.name for v in call.values] == ["", "index", ""]


def test_escaped_braces_and_percent_n_are_text_not_values() -> None:
    filled = fill_message("MAP{{}} of {}%nat {pos}", ["int", "3"])
    assert "".join(p.text for p in filled.pieces) == "MAP{} of int\nat 3"
    assert [p.text for p in filled.pieces if p.value] == ["int", "3"]


def test_captures_that_do_not_line_up_leave_the_template_as_the_title() -> None:
    # the matcher merges adjacent placeholders into one group: no value under a wrong name
    filled = fill_message("not available in {bind.engine!r}{s}: ({missing})", ["xy", "t"])
    assert not filled.filled
    assert filled.values == (Value("", "xy"), Value("", "t"))
    assert not fill_message("Connection refused", []).filled
