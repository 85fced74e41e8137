"""The action the gender guess reads: every line that is not a speech, found from the cues'
own line numbers (each line looked at once: a 20 MB, 9,990-speech script no longer scans
the dialogue once per line), in the encoding the import read the file with."""

from __future__ import annotations

from pathlib import Path

from engine import gender
from engine.script import load_script

FOUNTAIN = "\n".join(
    [
        "INT. HARBOUR - NIGHT",
        "",
        "MARA walks to the pier. She waits.",
        "",
        "MARA",
        "(quietly)",
        "The ferry is late,",
        "later than she said.",
        "  ",
        "It always is.",
        "",
        "TOM",
        "He is never late.",
        "",
        "TOM lights a lamp. He looks at MARA.",
        "",
    ]
)  # fmt: skip  ("  ": Fountain's blank line inside a speech)


def test_speeches_are_not_action_and_action_is(tmp_path: Path) -> None:
    f = tmp_path / "x.fountain"
    f.write_text(FOUNTAIN, encoding="utf-8")
    lines = gender.action_lines(load_script(f))
    assert lines == ["INT. HARBOUR - NIGHT", "MARA walks to the pier. She waits.",
                     "TOM lights a lamp. He looks at MARA."]  # fmt: skip
    guesses = gender.guess_all(load_script(f))
    assert guesses == {"MARA": "f", "TOM": "m"}  # from the action, not from "later than she said"


def test_action_is_read_in_the_files_own_encoding(tmp_path: Path) -> None:
    f = tmp_path / "x.fountain"
    f.write_bytes(FOUNTAIN.replace("pier", "quai élevé").encode("cp1252"))
    script = load_script(f)
    assert script.facts.how == "guessed"
    assert "MARA walks to the quai élevé. She waits." in gender.action_lines(script)
