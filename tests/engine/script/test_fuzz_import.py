"""Never anything but ScriptError: for every format, random bytes, mutated real files,
re-encodings, huge numbers and lines, and NUL bytes either import or raise a ScriptError
that names the file.

CI runs CI_EXAMPLES per format: the module took 53 s on this project's 2-core machine
(about 2 ms an example, file write and import included; 131 s with the machine shared five
ways). `--hypothesis-profile=deep` (registered in tests/conftest.py) runs 10,000 per
format: 613 s.
"""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.core.errors import ScriptError
from engine.core.types import Script
from engine.script import load_script

pytestmark = pytest.mark.slow  # seconds of work each (a model, a search, a fuzz run)

CI_EXAMPLES = 2000
DATA = Path(__file__).resolve().parents[2] / "data"
SAMPLES = Path(__file__).resolve().parents[2] / "data" / "samples"
INLINE_SEEDS = {
    ".vtt": b"WEBVTT\nKind: captions\n\n00:01.000 --> 00:02.000\n<v Ada>Hello, <i>you</i>.\n\n"
    b"00:02.000 --> 00:03.500\n- [laughs] Bob: Hi.\n- Ada: Bye.\n",
    ".sbv": b"0:00:01.000,0:00:03.500\n>> ANN: Welcome back.\n\n0:00:04.000,0:00:05.000\nThanks.\n",
    ".sub": b"{1}{1}25\n{25}{50}KAI: Run!|Now!\n{75}{100}{Y:i}- Why?|- Because.\n",
    ".tsv": b"role\ttext\nHero\tHello there.\nvillain\tGoodbye.\n",
}
SEED_FILES = {
    ".fountain": [
        SAMPLES / "brick_and_steel.fountain",
        SAMPLES / "lighthouse.fountain",
        DATA / "fountain" / "long_speech.fountain",
    ],
    ".txt": [SAMPLES / "radio_play.txt"],
    ".srt": [
        SAMPLES / "dub_episode.srt",
        DATA / "subtitles" / "pysrt_windows-1252.srt",
        DATA / "subtitles" / "subby_sdh_example_1.srt",
        DATA / "subtitles" / "sdh_es.srt",
    ],
    ".sbv": [DATA / "subtitles" / "subsrt_sample.sbv"],
    ".csv": [SAMPLES / "lines.csv"],
    ".fdx": [DATA / "fdx" / "rsdoiel_sample-01.fdx"],
    ".ass": [
        DATA / "subtitles" / "pysubs2_ttml_example.ass",
        DATA / "subtitles" / "pyonfx_dangos_ed_karaoke.ass",
    ],
    ".ssa": [DATA / "subtitles" / "pysubs2_ttml_example.ass"],
}
SUFFIXES = [*SEED_FILES, *INLINE_SEEDS, ""]
ENCODINGS = ["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "latin-1", "cp1252"]


def _seeds(suffix: str) -> list[bytes]:
    files = SEED_FILES.get(suffix, [SAMPLES / "lighthouse.fountain", SAMPLES / "dub_episode.srt"])
    seeds = [f.read_bytes() for f in files]
    return seeds + ([INLINE_SEEDS[suffix]] if suffix in INLINE_SEEDS else [])


@st.composite
def _mutated(draw: st.DrawFn, seed: bytes) -> bytes:
    data = bytearray(seed)
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["insert", "delete", "replace", "number", "line", "nul", "dup"]))
        if kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=16))
        elif kind == "delete":
            del data[at : at + draw(st.integers(1, 64))]
        elif kind == "replace":
            data[at : at + 1] = draw(st.binary(min_size=1, max_size=4))
        elif kind == "number":  # huge hours, frame numbers, start_s
            data[at:at] = b"9" * draw(st.sampled_from([3, 20, 305, 4301, 20000]))
        elif kind == "line":
            data[at:at] = draw(st.sampled_from([b"(", b"*a ", b"[[", b"/*", b"{Y:", b"\n", b" "])) * 3000
        elif kind == "nul":
            data[at:at] = b"\x00"
        else:
            data[at:at] = data[at : at + draw(st.integers(1, 200))]
    return bytes(data)


@st.composite
def _reencoded(draw: st.DrawFn, seed: bytes) -> bytes:
    text = seed.decode("utf-8", errors="replace")
    codec = draw(st.sampled_from(ENCODINGS))
    data = text.encode(codec, errors="replace")
    if draw(st.booleans()):
        data = data[: draw(st.integers(0, len(data)))]  # odd-length UTF-16, cut UTF-32
    if draw(st.booleans()):
        data = draw(st.sampled_from([codecs.BOM_UTF16_LE, codecs.BOM_UTF32_LE, codecs.BOM_UTF8])) + data
    return data


def _inputs(suffix: str) -> st.SearchStrategy[bytes]:
    seeds = _seeds(suffix)
    return st.one_of(
        st.binary(max_size=2048),
        st.sampled_from(seeds).flatmap(_mutated),
        st.sampled_from(seeds).flatmap(_reencoded),
    )


def _budget() -> int:
    return max(CI_EXAMPLES, settings.default.max_examples)  # the deep profile raises it


@pytest.mark.parametrize("suffix", SUFFIXES, ids=lambda s: s or "no-suffix")
def test_only_script_errors(tmp_path: Path, suffix: str) -> None:
    target = tmp_path / f"fuzzed{suffix}"

    @settings(
        max_examples=_budget(), deadline=None, database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                               HealthCheck.function_scoped_fixture],
    )  # fmt: skip
    @given(data=_inputs(suffix))
    def check(data: bytes) -> None:
        target.write_bytes(data)
        try:
            assert isinstance(load_script(target), Script)
        except ScriptError as err:
            assert str(target) in str(err)

    check()


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"\xff\xfeA", "marked UTF-16"),  # odd byte count
        (b"\xff\xfe\x00\xd8", "marked UTF-16"),  # a lone surrogate
        (codecs.BOM_UTF32_LE + b"A\x00\x00", "marked UTF-32"),  # cut short
    ],
)
def test_bad_unicode_is_named(tmp_path: Path, data: bytes, expected: str) -> None:
    f = tmp_path / "x.txt"
    f.write_bytes(data)
    with pytest.raises(ScriptError, match=expected):
        load_script(f)


@pytest.mark.parametrize("codec", ["utf-32", "utf-32-be", "utf-16", "utf-16-be"])
def test_utf16_and_utf32_are_read(tmp_path: Path, codec: str) -> None:
    f = tmp_path / "x.txt"
    bom = {"utf-32-be": codecs.BOM_UTF32_BE, "utf-16-be": codecs.BOM_UTF16_BE}.get(codec, b"")
    f.write_bytes(bom + "HERO: Привет.\nVILLAIN: Adieu.\n".encode(codec))
    assert [(c.role, c.text) for c in load_script(f).cues] == [("HERO", "Привет."), ("VILLAIN", "Adieu.")]
