"""`Utf8Text` reads a text held as UTF-8 as the `str` of it reads: every length, slice,
search and count by character offsets, whatever the characters and wherever its index's
blocks end; `utf8_chars` counts the characters of any stretch of it without decoding."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from kb.engine import normalise, textmap
from kb.engine.normalise import Normalised
from kb.engine.textmap import Utf8Text, utf8_chars

# ASCII, Latin-1, the BMP and past it: one to four bytes a character; newlines often
CHARS = st.sampled_from("ab \n\r:é”€字😀") | st.characters(codec="utf-8")
OFFSET = st.one_of(st.none(), st.integers(-40, 40))


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(CHARS, max_size=60),
    block=st.integers(1, 9),
    sub=st.text(CHARS, max_size=3),
    start=OFFSET,
    end=OFFSET,
)
def test_reads_as_the_str_it_holds(text, block, sub, start, end) -> None:
    old = textmap._BLOCK
    textmap._BLOCK = block  # blocks of a few bytes: offsets fall in every kind of block
    try:
        held = Utf8Text(text.encode("utf-8"))
    finally:
        textmap._BLOCK = old
    assert len(held) == len(text)
    assert str(held) == text
    assert held == text
    assert held[start:end] == text[start:end]
    assert held.find(sub, start, end) == text.find(sub, start, end)
    assert held.rfind(sub, start, end) == text.rfind(sub, start, end)
    assert held.count(sub, start, end) == text.count(sub, start, end)
    assert (sub in held) == (sub in text)
    a, b, _ = slice(start, end).indices(len(text))
    data = text.encode("utf-8")
    at = len(text[:a].encode("utf-8"))  # counted between character starts
    assert utf8_chars(data, at, at + len(text[a:b].encode("utf-8"))) == len(text[a:b])


@settings(max_examples=200, deadline=None)
@given(text=st.text(CHARS, max_size=60), chunk=st.integers(1, 7))
def test_a_text_held_as_utf8_numbers_its_lines_as_the_str(text, chunk) -> None:
    """`Normalised.line_of` of an original held as UTF-8 (a whole log's excerpt)."""
    old = normalise._LINE_CHUNK
    normalise._LINE_CHUNK = chunk  # many chunks: the counts carried across them
    try:
        text = text.replace("\r", "")  # a text with a CR is numbered by its line starts
        as_str = Normalised(text, text, [])
        as_utf8 = Normalised(Utf8Text(text.encode("utf-8")), text, [])
        got = [as_utf8.line_of(i) for i in range(len(text) + 1)]
        assert got == [as_str.line_of(i) for i in range(len(text) + 1)]
    finally:
        normalise._LINE_CHUNK = old
