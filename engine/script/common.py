"""Helpers shared by the importers: decoding, role-name normalisation, markup, script assembly.

Everything here runs in time linear in its input: no regex with nested or unbounded
overlapping quantifiers is applied to text of unbounded length.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from pathlib import Path

from engine.core.errors import ScriptError
from engine.core.types import (
    Annotation,
    Cue,
    ImportFacts,
    ImportNote,
    Role,
    RoleKey,
    Scene,
    Script,
    Section,
    StyleUse,
)
from engine.script.ensemble import expand_ensembles

MAX_LINES = 10_000
"""Spoken lines in one script (a feature film has ~1,500; a long audiobook chapter ~3,000)."""
SPLIT_LONG_SCRIPT = "split it into episodes or acts"
"""What to do with a script past a limit of its size."""
_LINE_LIMIT: ContextVar[int | None] = ContextVar("troupe_line_limit", default=None)
"""The most lines the import in progress may make (None: any; see `line_limit`)."""


@contextmanager
def line_limit(limit: int | None = MAX_LINES) -> Iterator[None]:
    """Imports inside refuse a script at its line past `limit`, not after parsing it whole: a
    line is never dropped once made (splitting and ensembles only add), so the refusal is the
    one the full count would give, reached without reading the rest."""
    token = _LINE_LIMIT.set(limit)
    try:
        yield
    finally:
        _LINE_LIMIT.reset(token)


MAX_SCRIPT_BYTES = 20 * 1024 * 1024
"""Real scripts are well under 1 MB; anything above this is junk, not a script."""

_GENDER_WORDS = {
    "f": {"MOM", "MOTHER", "MUM", "MA", "GRANDMA", "AUNT", "AUNTY", "QUEEN", "LADY", "GIRL",
          "WOMAN", "MRS", "MS", "MISS", "SISTER", "DAUGHTER", "WIFE", "PRINCESS", "NUN"},
    "m": {"DAD", "FATHER", "PAPA", "PA", "GRANDPA", "UNCLE", "KING", "LORD", "BOY", "MAN",
          "MR", "SIR", "BROTHER", "SON", "HUSBAND", "PRINCE", "MONK", "GUARD"},
}  # fmt: skip
_CONTINUATION = {"CONTD", "CONT", "CONTINUED", "CONTINUING", "MORE"}
_BOMS = (
    (b"\x00\x00\xfe\xff", "utf-32-be"), (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\xfe\xff", "utf-16-be"), (b"\xff\xfe", "utf-16-le"),
)  # fmt: skip
TAG = re.compile(
    r"</?(?:b|i|u|s|c|v|font|lang|ruby|rt|span|br|em|strong|sub|sup|p)(?:[.\s][^<>]{0,60})?\s*/?>"
    r"|<\d{1,4}(?::\d{2}){1,2}[.,]\d{1,3}>",
    re.IGNORECASE,
)
"""Markup a subtitle or script may carry (HTML/WebVTT tags, WebVTT word timings); a '<' of
the words themselves ('2<3,5>1', 'a <b>') is left alone."""
_ASS_BLOCK = re.compile(r"\{\\[^{}]{0,200}\}")
_UNSPOKEN = str.maketrans({"*": None, "_": None, "~": None, "\\": None, "♪": None, "♫": None})


@dataclass(frozen=True)
class Decoded:
    text: str
    encoding: str
    confidence: float
    how: str


_PREFERRED = ("cp1252",)
"""Where several code pages decode a file equally well (charset-normalizer ranks cp1250
first for French 'à' and 'où', turning them into 'ŕ' and 'oů'), the one Western subtitle
and script tools write."""


def read_text(path: Path, encoding: str | None = None) -> Decoded:
    """Read a script file as text, with newlines normalised to '\\n'.

    The encoding: the one given; else a BOM (UTF-8/16/32); else UTF-8 if every byte is
    valid; else charset-normalizer's best guess (its confidence goes in the import report,
    with the first decoded line, so a wrong guess is seen before anything is voiced).
    """
    try:
        size = path.stat().st_size
        if size > MAX_SCRIPT_BYTES:
            raise ScriptError(
                path,
                f"file is {size / 1e6:.1f} MB; a script must be under {MAX_SCRIPT_BYTES // 2**20} MB "
                f"({SPLIT_LONG_SCRIPT})",
            )
        raw = path.read_bytes()
    except OSError as exc:
        raise ScriptError(path, f"cannot open the file ({exc.strerror or exc})") from exc
    if not raw.strip():
        raise ScriptError(path, "file is empty; expected a script with at least one line")
    decoded = _decode(path, raw, encoding)
    text = decoded.text
    if "\x00" in text:
        line = text.count("\n", 0, text.index("\x00")) + 1
        raise ScriptError(path, "file contains NUL bytes; expected a text script", line)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return replace(decoded, text=text)


def _decode(path: Path, raw: bytes, encoding: str | None) -> Decoded:
    if encoding:
        try:
            return Decoded(raw.decode(encoding).removeprefix("\ufeff"), encoding, 1.0, "chosen")
        except UnicodeDecodeError as exc:
            line = raw.count(b"\n", 0, exc.start) + 1
            bad = raw[exc.start : exc.end].hex(" ")
            raise ScriptError(
                path, f"bytes {bad} are not valid {encoding}; choose another encoding", line
            ) from exc
        except (LookupError, UnicodeError):  # not a text codec, or one that refuses these bytes
            why = f"the file cannot be read as {encoding!r}; choose another encoding"
            raise ScriptError(path, why) from None
    for bom, codec in _BOMS:
        if raw.startswith(bom):
            try:
                return Decoded(raw[len(bom) :].decode(codec), codec, 1.0, "bom")
            except UnicodeDecodeError as exc:
                what = codec.upper().replace("-BE", "").replace("-LE", "")
                raise ScriptError(
                    path,
                    f"the file is marked {what} but bytes {exc.start + len(bom)}-"
                    f"{exc.end + len(bom)} are not valid {what}; save the script as UTF-8",
                ) from exc
    marked = raw.startswith(b"\xef\xbb\xbf")
    body = raw[3:] if marked else raw
    try:
        return Decoded(body.decode("utf-8"), "utf-8", 1.0, "bom" if marked else "utf-8")
    except UnicodeDecodeError as exc:
        line = body.count(b"\n", 0, exc.start) + 1
        bad = body[exc.start : exc.end].hex(" ")
        if marked:  # a UTF-8 mark on bytes that are not: as for UTF-16/32, say so
            why = f"the file is marked UTF-8 but bytes {bad} are not valid UTF-8"
            todo = "save it as UTF-8 or choose its encoding (--encoding)"
            raise ScriptError(path, f"{why}; {todo}", line) from exc
        guess = _guess(raw)
        if guess is None:
            raise ScriptError(
                path,
                f"bytes {bad} are not valid UTF-8 and no other encoding reads the file; save the "
                "script as UTF-8 or choose its encoding (--encoding)",
                line,
            ) from exc
        return guess


def _guess(raw: bytes) -> Decoded | None:
    from charset_normalizer import from_bytes  # ~50 ms to import: only for a file not in UTF-8

    matches = list(from_bytes(raw))
    if not matches:
        return None
    best = matches[0]
    tier = [
        m for m in matches
        if m.percent_chaos <= best.percent_chaos + 0.5 and m.percent_coherence >= best.percent_coherence - 1
    ]  # fmt: skip
    text, name = str(best), best.encoding
    for preferred in _PREFERRED:
        try:
            alike = raw.decode(preferred)
        except UnicodeDecodeError:
            continue
        if alike == text or any(m.encoding == preferred for m in tier):
            text, name = alike, preferred
            break
    # confidence: how little the detector found amiss, times the share of equally good
    # code pages that read the same words (four that disagree on 'à': a quarter each)
    agree = sum(1 for m in tier if str(m) == text) or 1
    confidence = max(0.0, 1.0 - best.percent_chaos / 100.0) * agree / max(len(tier), agree)
    return Decoded(text, name, round(confidence, 3), "guessed")


def split_extension(name: str) -> tuple[str, tuple[str, ...]]:
    """'HALE (V.O.)' -> ('HALE', ('V.O.',)); repeated extensions are all kept.

    Scans from the end, so a name of thousands of '(' costs one pass, not a regex blow-up.
    """
    hints: list[str] = []
    name = name.strip()
    while name.endswith(")"):
        start = name.rfind("(", 0, len(name) - 1)
        if start <= 0 or ")" in name[start + 1 : -1]:
            break
        hints.insert(0, name[start + 1 : -1].strip())
        name = name[:start].rstrip()
    return name, tuple(h for h in hints if h)


def is_continuation(hint: str) -> bool:
    """True for (CONT'D), (CONT.), (MORE) and kin: page-break marks, not delivery hints."""
    return "".join(ch for ch in hint.upper() if ch.isalpha()) in _CONTINUATION


def clean_label(label: str) -> str:
    """A speaker label as written, less its markers: '>> @Bob^ (V.O.):' -> 'Bob'."""
    name = label.strip()
    if name.startswith(">>"):
        name = name[2:]
    name = name.strip().lstrip("@-–—").strip()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    name = name.rstrip(":").strip().rstrip("^").strip()
    base, _ = split_extension(name)
    return base.rstrip(":").strip()


def normalise_role(name: str) -> RoleKey:
    """The one key that makes 'Brick', 'BRICK', 'BRICK (CONT'D)', '@Brick^', '[BRICK]',
    'Brick:' and '>> BRICK:' one role: upper case, markers and extensions dropped.
    The only maker of a `RoleKey`; idempotent (a key normalises to itself): markers are
    taken off until none is left ('>> >> BOB', '[[BOB]]' and '@Bob^ (V.O.)' are BOB)."""
    key = name
    for _ in range(8):  # NB: each pass only takes off; upper() may lengthen once ('ß' -> 'SS')
        again = " ".join(clean_label(key).split()).upper()
        if again == key:
            break
        key = again
    return RoleKey(key)


def gender_hint(name: str) -> str | None:
    words = set(re.findall(r"[A-Z]+", name.upper()))
    for gender, vocab in _GENDER_WORDS.items():
        if words & vocab:
            return gender
    return None


def strip_markup(text: str) -> str:
    """Remove everything that must not be spoken: inline HTML/WebVTT tags, ASS override
    blocks and line breaks (`{\\an8}`, `\\N`, `\\h`), emphasis and escape characters
    (`*`, `_`, `\\`), lyric marks `~` and music notes. Linear in the text's length."""
    text = TAG.sub("", text)
    text = _ASS_BLOCK.sub("", text)
    text = text.replace("\\N", " ").replace("\\n", " ").replace("\\h", " ")
    return " ".join(text.translate(_UNSPOKEN).split())


@dataclass
class ScriptBuilder:
    """Accumulates scenes and cues in order, then freezes them into a `Script`."""

    path: Path
    format: str
    scenes: list[Scene] = field(default_factory=list)
    cues: list[Cue] = field(default_factory=list)
    roles: dict[RoleKey, Role] = field(default_factory=dict)
    annotations: list[Annotation] = field(default_factory=list)
    notes: list[ImportNote] = field(default_factory=list)
    styles: list[StyleUse] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)

    def note(self, kind: str, line: int, message: str, reason: str = "") -> None:
        """Tell the import report: kind 'warning', 'skipped' (with `reason`), 'guess'."""
        self.notes.append(ImportNote(line=line, kind=kind, message=message, reason=reason))

    def scene(self, heading: str, line: int) -> None:
        self.scenes.append(Scene(index=len(self.scenes), heading=heading, line=line))

    def section(self, title: str, depth: int, line: int) -> None:
        title = " ".join(title.split())
        if title:
            self.sections.append(Section(title, depth, line))

    def cue(
        self,
        role_name: str,
        text: str,
        line: int,
        hints: tuple[str, ...] = (),
        overlaps_previous: bool = False,
        start_s: float | None = None,
        end_s: float | None = None,
    ) -> None:
        key = normalise_role(role_name)
        if not key:
            raise ScriptError(self.path, "a line has no speaker name", line)
        text = strip_markup(text)
        if not text:
            raise ScriptError(self.path, f"{key} has an empty line; expected dialogue", line)
        if key not in self.roles:
            display = " ".join(clean_label(role_name).split())
            self.roles[key] = Role(name=key, display_name=display, gender_hint=gender_hint(key))
        if not self.scenes:
            self.scene("", line)
        limit = _LINE_LIMIT.get()
        if limit is not None and len(self.cues) >= limit:
            why = f"more than {limit:,} lines; a script may have at most {limit:,} ({SPLIT_LONG_SCRIPT})"
            raise ScriptError(self.path, why, line)  # the line past the limit: nothing after it is read
        self.cues.append(
            Cue(
                index=len(self.cues),
                role=key,
                text=text,
                scene=len(self.scenes) - 1,
                line=line,
                hints=tuple(h for h in hints if not is_continuation(h)),
                overlaps_previous=overlaps_previous and bool(self.cues),
                start_s=start_s,
                end_s=end_s,
            )
        )

    def annotate(
        self, text: str, line: int, start_s: float | None = None, end_s: float | None = None
    ) -> None:
        """Keep a non-spoken description (a sound, music) for the timeline."""
        text = " ".join(text.split())
        if text:
            self.annotations.append(Annotation(text=text, line=line, start_s=start_s, end_s=end_s))

    def build(self, title: str = "", metadata: dict[str, str] | None = None) -> Script:
        if not self.cues:
            raise ScriptError(self.path, f"no dialogue found in this {self.format} script")
        cues = expand_ensembles(self.cues, set(self.roles))
        used = {c.role for c in cues}
        roles = {k: r for k, r in self.roles.items() if k in used}
        return Script(
            title=title or self.path.stem.replace("_", " ").title(),
            path=str(self.path),
            format=self.format,
            scenes=tuple(self.scenes),
            cues=tuple(replace(c, index=k) for k, c in enumerate(cues)),
            roles=roles,
            metadata=dict(metadata or {}),
            annotations=tuple(self.annotations),
            facts=ImportFacts(notes=tuple(self.notes), styles=tuple(self.styles)),
            sections=tuple(self.sections),
        )
