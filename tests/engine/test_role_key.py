"""A role's key (`RoleKey`): made only by `normalise_role`, the cast's one key per role."""

from __future__ import annotations

import pytest

from engine.cast import Cast
from engine.core.types import Voice
from engine.script.common import normalise_role

NAMES = ["Iris (V.O.)", " hero ", "BRICK (CONT'D)", "@Brick^", "[BRICK]", "Brick:", ">> BRICK:", "Mary Jane"]


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


def test_a_key_the_cast_holds_stays_its_own() -> None:
    # '>> @Bob^ (V.O.):' keys as BOB^, which normalise_role would turn into BOB again
    key = normalise_role(">> @Bob^ (V.O.):")
    cast = Cast({key: Voice(pitch=12)})
    assert cast[key].pitch == 12 and list(cast.voices) == [key]
