"""A role's key (`RoleKey`): made only by `normalise_role`, the cast's one key per role."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.cast import Cast
from engine.script.common import normalise_role

NAMES = [
    "Iris (V.O.)",
    " hero ",
    "BRICK (CONT'D)",
    "@Brick^",
    "[BRICK]",
    "Brick:",
    ">> BRICK:",
    "Mary Jane",
    ">> @Bob^ (V.O.):",
    ">> >> BOB",
    "[[BOB]]",
    "straße",
]


@pytest.mark.parametrize("name", NAMES)
def test_normalise_role_is_idempotent(name: str) -> None:
    key = normalise_role(name)
    assert key and normalise_role(key) == key


def test_cast_looks_up_every_spelling_of_a_role_as_one() -> None:
    cast = Cast()
    voice = cast["Iris (V.O.)"]
    assert cast["iris"] is voice and cast["IRIS"] is voice
    assert list(cast.voices) == [normalise_role("IRIS")]
    cast.set("iris", pitch=61)
    assert cast["Iris (V.O.)"].pitch == 61 and len(cast.voices) == 1


@given(st.text(max_size=40))
def test_any_name_normalises_to_a_key_that_normalises_to_itself(name: str) -> None:
    key = normalise_role(name)
    assert normalise_role(key) == key


def test_nested_markers_come_off_to_the_one_key() -> None:
    # '>> @Bob^ (V.O.):' was keyed BOB^ (the caret before the extension stayed), which
    # normalised again to BOB: two keys for one role
    assert {normalise_role(n) for n in (">> @Bob^ (V.O.):", ">> >> BOB", "[[BOB]]", "Bob")} == {"BOB"}
