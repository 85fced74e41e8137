"""The SSML subset: what each element becomes, and clear errors for the rest."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.core.types import Voice
from engine.synthesis.ssml import Pause, Prosody, Speech, SsmlError, looks_like_ssml, parse, voice_for


def test_elements() -> None:
    doc = (
        '<speak version="1.0" xmlns="http://www.w3.org/2001/10/synthesis">Hello <break time="500ms"/>'
        '<prosody rate="slow" pitch="+2st" volume="-6dB">the <say-as interpret-as="characters">BBC</say-as>'
        '</prosody> in <phoneme alphabet="ipa" ph="ˈwʊstər">Worcester</phoneme>, '
        '<sub alias="World Wide Web Consortium">W3C</sub> &amp; co.<break strength="strong"/></speak>'
    )
    slow = Prosody(rate=0.75, pitch_st=2.0, volume_db=-6.0)
    assert parse(doc) == [
        Speech("Hello"), Pause(0.5), Speech("the B B C", slow),
        Speech("in [Worcester](/ˈwʊstər/), World Wide Web Consortium & co."), Pause(0.75),
    ]  # fmt: skip


def test_nested_prosody_and_voice() -> None:
    (part,) = parse(
        '<speak><prosody rate="50%"><prosody rate="fast" pitch="x-high">Hi</prosody></prosody></speak>'
    )
    assert isinstance(part, Speech) and part.prosody == Prosody(rate=0.625, pitch_st=12.0)
    voice = voice_for(Voice(rate_wpm=160, pitch=50), part.prosody)
    assert voice.rate_wpm == 100 and voice.pitch == 100


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ("<speak><audio src='x'/></speak>", "<audio>: not supported"),
        ("<voice>Hi</voice>", "<voice>: not supported"),
        ("<p>Hi</p>", "<p>: SSML starts with <speak>"),
        ('<speak><break time="forever"/></speak>', "<break>: time 'forever'"),
        ('<speak><break time="60s"/></speak>', "at most 10s"),
        ('<speak><prosody rate="warp">x</prosody></speak>', "<prosody>: rate 'warp'"),
        ('<speak><prosody volume="+40dB">x</prosody></speak>', "<prosody>: volume"),
        ('<speak><say-as interpret-as="date">x</say-as></speak>', "<say-as>: interpret-as 'date'"),
        ('<speak><phoneme alphabet="x-sampa" ph="a">a</phoneme></speak>', "<phoneme>: needs"),
        ("<speak><sub>W3C</sub></speak>", "<sub>: needs an alias"),
        ('<speak><break bogus="1"/></speak>', "<break>: unknown attribute"),
        ("<speak>unclosed", "not well-formed"),
        ('<!DOCTYPE s [<!ENTITY x "boom">]><speak>&x;</speak>', "<!DOCTYPE>: not allowed"),
    ],
)
def test_bad_ssml_names_the_element(doc: str, message: str) -> None:
    with pytest.raises(SsmlError, match=message.replace("(", r"\(").replace("+", r"\+")):
        parse(doc)


@pytest.mark.slow
@given(st.text(max_size=80))
def test_any_text_parses_or_is_refused(text: str) -> None:
    try:
        parts = parse(f"<speak>{text}</speak>")
    except SsmlError:
        return
    assert all(isinstance(p, Speech | Pause) for p in parts)


@pytest.mark.parametrize(
    "doc",
    [
        '<?xml version="1.0" encoding="UTF-8"?>\n<speak version="1.1" '
        'xmlns="http://www.w3.org/2001/10/synthesis" xml:lang="en-US">'
        'Hello <break time="300ms"/> there.</speak>',
        '<!-- from the editor -->\n<speak>Hello <break time="300ms"/> there.</speak>',
        '  <speak>Hello <break time="300ms"/> there.</speak>',
    ],
)
def test_a_declaration_or_a_comment_before_speak_is_still_ssml(doc: str) -> None:
    assert looks_like_ssml(doc)
    assert parse(doc) == [Speech("Hello"), Pause(0.3), Speech("there.")]


@pytest.mark.parametrize("text", ["<speaker> is a word here", "say <speak> aloud", "Hello there."])
def test_text_that_mentions_speak_is_not_ssml(text: str) -> None:
    assert not looks_like_ssml(text)
