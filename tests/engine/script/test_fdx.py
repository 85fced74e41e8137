"""Final Draft (.fdx): real sample files, dual dialogue, title page, and bad or hostile XML."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.core.errors import ScriptError
from engine.script import load_script, sniff

DATA = Path(__file__).resolve().parents[2] / "data" / "fdx"

DUAL = """<?xml version="1.0" encoding="UTF-8" standalone="no" ?>
<FinalDraft DocumentType="Script" Template="No" Version="5">
  <Content>
    <Paragraph Type="Scene Heading"><Text>INT. KITCHEN - DAY</Text></Paragraph>
    <Paragraph Type="Character"><Text>JOHN (V.O.)</Text></Paragraph>
    <Paragraph Type="Parenthetical"><Text>(dripping)</Text></Paragraph>
    <Paragraph Type="Dialogue"><Text>It's </Text><Text Style="Italic">raining</Text><Text>.</Text></Paragraph>
    <Paragraph Type="Dialogue"><Text>Again.</Text></Paragraph>
    <Paragraph>
      <DualDialogue>
        <Paragraph Type="Character"><Text>MARY</Text></Paragraph>
        <Paragraph Type="Dialogue"><Text>Told you &amp; told you.</Text></Paragraph>
        <Paragraph Type="Character"><Text>JOHN</Text></Paragraph>
        <Paragraph Type="Dialogue"><Text>You did.</Text></Paragraph>
      </DualDialogue>
    </Paragraph>
    <Paragraph Type="Transition"><Text>CUT TO:</Text></Paragraph>
  </Content>
</FinalDraft>
"""


def _write(tmp_path: Path, text: str, name: str = "x.fdx") -> Path:
    f = tmp_path / name
    f.write_text(text, encoding="utf-8")
    return f


def test_real_samples() -> None:
    s = load_script(DATA / "rsdoiel_sample-01.fdx")
    assert s.format == "fdx"
    got = [(c.role, c.text, c.hints, c.line) for c in s.cues]
    assert got == [("PROGRAMMER", "Eureka!", ("excited",), 13)]
    assert [sc.heading for sc in s.scenes] == ["EXT. LIBRARY - DAY"]
    s = load_script(DATA / "rsdoiel_sample-03.fdx")
    assert [(c.role, c.text, c.hints) for c in s.cues] == [("AUTHOR", "Writer's Block Again", ("angished",))]
    assert s.title == "Sample 03"
    assert "Jane Doe" in s.metadata["title page"]


def test_dual_dialogue_styles_and_entities(tmp_path: Path) -> None:
    s = load_script(_write(tmp_path, DUAL))
    assert [(c.role, c.text, c.hints, c.overlaps_previous) for c in s.cues] == [
        ("JOHN", "It's raining. Again.", ("V.O.", "dripping"), False),
        ("MARY", "Told you & told you.", (), False),
        ("JOHN", "You did.", (), True),
    ]
    assert sniff(DUAL) == "fdx"
    assert load_script(_write(tmp_path, DUAL, "no_suffix")).format == "fdx"


def test_bad_xml_names_the_line(tmp_path: Path) -> None:
    bad = DUAL.replace("<Text>Again.</Text>", "<Text>Again.</Txet>")
    with pytest.raises(ScriptError, match=r"line 8: not valid Final Draft XML \(mismatched tag\)"):
        load_script(_write(tmp_path, bad))
    with pytest.raises(ScriptError, match="expected a <FinalDraft> document"):
        load_script(_write(tmp_path, "<html><body>hi</body></html>"))


def test_entities_are_never_expanded(tmp_path: Path) -> None:
    laughs = (
        '<?xml version="1.0"?>\n<!DOCTYPE FinalDraft [\n<!ENTITY a "lol">\n'
        '<!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;">\n]>\n'
        '<FinalDraft><Content><Paragraph Type="Character"><Text>A</Text></Paragraph>'
        '<Paragraph Type="Dialogue"><Text>&b;</Text></Paragraph></Content></FinalDraft>\n'
    )
    with pytest.raises(ScriptError, match="declares a DTD or entities"):
        load_script(_write(tmp_path, laughs))
    external = laughs.replace('<!ENTITY a "lol">', '<!ENTITY a SYSTEM "file:///etc/passwd">')
    with pytest.raises(ScriptError, match="declares a DTD or entities"):
        load_script(_write(tmp_path, external))
