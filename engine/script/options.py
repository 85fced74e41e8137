"""What a director may choose about an import: the file's encoding and which ASS/SSA
styles are dialogue. Chosen in the window's import report, with `--encoding` and
`--styles` on the command line, and kept in the project so a reopen reads the file alike."""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from typing import Any

from engine.core.errors import CastError
from engine.core.types import ImportFacts


@dataclass(frozen=True)
class ImportOptions:
    encoding: str | None = None
    """A Python codec name ('cp1252', 'latin-1', 'shift_jis'); None: BOM, UTF-8, then a guess."""
    styles: frozenset[str] | None = None
    """ASS/SSA style names spoken as dialogue (case-insensitive); None: classified by use."""

    def __post_init__(self) -> None:
        if self.encoding is not None:
            check_encoding(self.encoding)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.encoding:
            out["encoding"] = self.encoding
        if self.styles is not None:
            out["styles"] = sorted(self.styles)
        return out

    @classmethod
    def from_dict(cls, data: Any, where: str = "import") -> ImportOptions:
        if not isinstance(data, dict):
            raise CastError(f"{where}: expected a table with 'encoding' and/or 'styles'")
        unknown = sorted(set(data) - {"encoding", "styles"})
        if unknown:
            keys = ", ".join(map(repr, unknown))
            raise CastError(f"{where}: unknown key(s) {keys}; expected encoding, styles")
        encoding = data.get("encoding")
        styles = data.get("styles")
        if encoding is not None and not isinstance(encoding, str):
            raise CastError(f"{where}.encoding: expected a codec name such as 'cp1252'")
        if styles is not None and not (isinstance(styles, list) and all(isinstance(s, str) for s in styles)):
            raise CastError(f"{where}.styles: expected a list of style names")
        return cls(encoding or None, frozenset(styles) if styles is not None else None)


def check_encoding(name: str) -> str:
    """The codec's canonical name, or a `CastError` naming a few that exist."""
    try:
        info = codecs.lookup(name)
        if not getattr(info, "_is_text_encoding", True) or info.name in ("idna", "punycode"):
            raise LookupError(name)  # bytes-to-bytes codecs (base64, zlib) and host-name codecs
        return info.name
    except LookupError:
        raise CastError(
            f"unknown encoding {name!r}; expected a codec name such as utf-8, cp1252, latin-1, "
            "cp1251, shift_jis or gb18030"
        ) from None


def parse_styles(text: str) -> frozenset[str]:
    """'Default, Main,Italics' -> the style names (the CLI's `--styles`)."""
    return frozenset(s.strip() for s in text.split(",") if s.strip())


def chosen_options(facts: ImportFacts) -> ImportOptions:
    """The choices a script was read with (what a project keeps): the encoding if the
    director chose it, the dialogue styles if they were chosen."""
    styles = None
    if any(u.reason == "chosen" for u in facts.styles):
        styles = frozenset(u.name for u in facts.styles if u.dialogue)
    return ImportOptions(facts.encoding if facts.how == "chosen" else None, styles)
