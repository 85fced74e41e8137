"""Final Draft (.fdx) importer: the screenplay exchange format, XML read with expat.

Read: Scene Heading, Character (extensions as hints), Parenthetical (delivery hints),
Dialogue (several paragraphs and styled runs make one speech), DualDialogue (the second
speech overlaps the first) and the title page (its first line is the title). Action,
transitions, shots and the rest are not spoken. The parser refuses any DTD or entity
declaration, so no entity is ever expanded (no 'billion laughs', no external files).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from xml.parsers import expat

from engine.core.errors import ScriptError
from engine.core.types import Script
from engine.script.common import ScriptBuilder, split_extension


class _Refused(Exception):
    """A DTD or entity declaration: Final Draft files have none."""


@dataclass
class _Speech:
    name: str
    line: int
    dual: bool
    hints: list[str] = field(default_factory=list)
    words: list[str] = field(default_factory=list)


@dataclass
class _State:
    builder: ScriptBuilder
    stack: list[str] = field(default_factory=list)
    para_type: str | None = None
    para_line: int = 0
    text: list[str] = field(default_factory=list)
    speech: _Speech | None = None
    dual_depth: int = 0
    dual_count: int = 0
    title_lines: list[str] = field(default_factory=list)

    def flush(self) -> None:
        sp, self.speech = self.speech, None
        if sp and sp.words:
            name, ext = split_extension(sp.name)
            self.builder.cue(name, " ".join(sp.words), sp.line, (*ext, *sp.hints), sp.dual)

    def paragraph(self, kind: str, text: str, line: int) -> None:
        if "HeaderAndFooter" in self.stack:
            return
        if "TitlePage" in self.stack:
            if text:
                self.title_lines.append(text)
            return
        if kind == "Character":
            self.flush()
            self.dual_count += 1 if self.dual_depth else 0
            self.speech = _Speech(text, line, dual=self.dual_depth > 0 and self.dual_count > 1)
        elif kind == "Parenthetical" and self.speech:
            self.speech.hints.append(text.strip().removeprefix("(").removesuffix(")").strip())
        elif kind == "Dialogue" and self.speech:
            self.speech.words.append(text)
        else:
            self.flush()
            if kind == "Scene Heading" and text:
                self.builder.scene(text, line)


def _handlers(parser: expat.XMLParserType, st: _State) -> None:
    def start(tag: str, attrs: dict[str, str]) -> None:
        st.stack.append(tag)
        if tag == "Paragraph" and "Type" in attrs:
            st.para_type, st.para_line, st.text = attrs["Type"], parser.CurrentLineNumber, []
        elif tag == "Paragraph" and "TitlePage" in st.stack:
            st.para_type, st.para_line, st.text = "Title", parser.CurrentLineNumber, []
        elif tag == "DualDialogue":
            st.flush()
            st.dual_depth, st.dual_count = st.dual_depth + 1, 0

    def end(tag: str) -> None:
        st.stack.pop()
        if tag == "Paragraph" and st.para_type is not None:
            text = " ".join("".join(st.text).split())
            st.paragraph(st.para_type, text, st.para_line)
            st.para_type = None
        elif tag == "DualDialogue":
            st.flush()
            st.dual_depth -= 1

    def chars(data: str) -> None:
        if st.para_type is not None and st.stack and st.stack[-1] == "Text":
            st.text.append(data)

    def refuse(*_: object) -> None:
        raise _Refused

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = chars
    parser.StartDoctypeDeclHandler = refuse
    parser.EntityDeclHandler = refuse
    parser.ExternalEntityRefHandler = refuse  # type: ignore[assignment]


def parse_fdx(path: Path, text: str) -> Script:
    if "<FinalDraft" not in text[:4000]:
        raise ScriptError(path, "not a Final Draft file: expected a <FinalDraft> document", 1)
    st = _State(ScriptBuilder(path=path, format="fdx"))
    parser = expat.ParserCreate()
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    _handlers(parser, st)
    try:
        parser.Parse(text, True)
    except _Refused:
        raise ScriptError(
            path, "the XML declares a DTD or entities; Final Draft files have none", parser.CurrentLineNumber
        ) from None
    except expat.ExpatError as exc:
        raise ScriptError(
            path, f"not valid Final Draft XML ({expat.ErrorString(exc.code)})", exc.lineno
        ) from None
    st.flush()
    title = st.title_lines[0] if st.title_lines else ""
    meta = {"title page": "\n".join(st.title_lines)} if st.title_lines else {}
    return st.builder.build(title=title, metadata=meta)
