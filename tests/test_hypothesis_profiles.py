"""The suite's hypothesis profile keeps CI deterministic: a property draws the same examples
on every run, so a red build reruns red and a green one cannot turn red by chance."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.hypothesis_profiles import selected


@pytest.mark.skipif(selected() != "ci", reason="a promise of the ci profile only")
def test_a_property_draws_the_same_examples_on_every_run() -> None:
    seen: list[str] = []

    @given(st.text())
    def prop(text: str) -> None:
        seen.append(text)

    prop()
    first = list(seen)
    seen.clear()
    prop()
    assert len(set(first)) > 1
    assert seen == first


def test_fuzz_profile_draws_new_examples() -> None:
    """``make fuzz`` exists to explore: its profile must not be derandomised."""
    from hypothesis import settings

    fuzz = settings.get_profile("fuzz")
    assert not fuzz.derandomize
    assert settings.get_profile("ci").database is None
