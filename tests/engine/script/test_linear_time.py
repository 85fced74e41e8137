"""Every importer runs in time linear in the file: inputs that made the old regexes (or
pysubs2's) backtrack for minutes finish at 1 MB. The bound is generous on purpose: at
1 MB a linear pass takes well under a second, a quadratic one hours."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pytest

from engine.core.errors import ScriptError
from engine.script import load_script

MB = 1_000_000
BOUND_S = 30.0
_EVENTS = "[Events]\nFormat: Layer, Start, End, Style, Name, MarginL, MarginR, MarginV, Effect, Text\n"
_CUE = "1\n00:00:01,000 --> 00:00:02,000\n"


def _rep(unit: str) -> str:
    return (unit * (MB // len(unit) + 1))[:MB]


CASES = {
    "star.fountain": "BOB\n" + _rep("*a ") + "\n",  # unmatched emphasis in a speech
    "underline.fountain": "BOB\n" + _rep("_a ") + "\n",
    "parens.fountain": "BOB " + _rep("(") + "\nHi.\n",  # '(' repeated in a character line
    "notes.fountain": "BOB\nHi.\n\n" + _rep("[[") + "\n",  # unclosed notes
    "boneyard.fountain": "BOB\nHi.\n\n" + _rep("/*") + "\n",  # unclosed boneyard
    "blank_lines.txt": "\n" * MB + "A: hi\n",  # blank lines before the first line (sniff)
    "label_spaces.txt": "A" + " " * MB + ": hi\nB: there\n",
    "star.srt": _CUE + _rep("*a ") + "\n",
    "blank_run.srt": _CUE + "A\n" + _rep(" \n") + "B\n",  # pysubs2's cue-number pattern
    "braces.srt": _CUE + _rep("{\\") + "\n",
    "wrapped.srt": _CUE + _rep("word\n") + "\n",  # one turn of 200,000 lines
    "descriptions.srt": _CUE + _rep("[a]") + " hi\n",  # 333,333 sound descriptions
    "voices.vtt": "WEBVTT\n\n00:01.000 --> 00:02.000\n" + _rep("<v ") + "\n",
    "header.vtt": "WEBVTT\n" + _rep("Kind: x\n") + "\n00:01.000 --> 00:02.000\nhi\n",
    "section.ass": "[Script Info]\n\n" + _EVENTS + "[" + _rep("a") + "\n"
    "Dialogue: 0,0:00:01.00,0:00:02.00,Default,,0,0,0,,hi\n",  # pysubs2's section pattern
    "style_codes.sub": "{1}{1}25\n{1}{2}" + _rep("{Y:") + "\n",  # pysubs2's MicroDVD styles
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_pathological_input_finishes(tmp_path: Path, name: str) -> None:
    f = tmp_path / name
    f.write_text(CASES[name], encoding="utf-8")
    t0 = time.perf_counter()
    with contextlib.suppress(ScriptError):  # refusing is fine; hanging is not
        load_script(f)
    assert time.perf_counter() - t0 < BOUND_S
