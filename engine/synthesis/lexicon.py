"""Pronunciation lexicon: `word -> /IPA/` or `word -> respelling`, per user and per project,
applied to a line's text before any backend phonemizes it; and inline overrides in script
text, `[Worcester](/ˈwʊstər/)`.

A lexicon rewrites each listed word either into another spelling (`Nguyen -> win`) or into
the inline form `[word](/ipa/)`; the phoneme backends (Kokoro, Piper) voice an inline IPA
span as written, and espeak-ng gets it as phoneme mnemonics (`[[...]]`)."""

from __future__ import annotations

import os
import re
import threading
import tomllib
import unicodedata
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from engine.core.errors import CastError

USER_LEXICON_ENV = "TROUPE_LEXICON"
"""A TOML file of `word = "/ipa/"` or `word = "respelling"`; else ~/.config/troupe/lexicon.toml."""
INLINE = re.compile(r"\[([^\[\]]+)\]\(/([^/()]+)/\)")
"""`[shown text](/IPA/)`."""
_ESPEAK_SPAN = re.compile(r"\[\[[^\]]*\]\]")
_WORD_CHARS = r"[\w'’-]"
_IPA_CHARS = re.compile(r"^[^\s\d<>{}\[\]/\\]+(?: [^\s\d<>{}\[\]/\\]+)*$")

# English IPA -> espeak-ng phoneme mnemonics, longest first (espeak-ng's en phoneme names).
_TO_ESPEAK = {
    "ər": "3", "ɜːr": "3:", "tʃ": "tS", "dʒ": "dZ", "eɪ": "eI", "aɪ": "aI", "aʊ": "aU", "oʊ": "oU",
    "əʊ": "oU", "ɔɪ": "OI",
    "ɪə": "i@", "eə": "e@", "ʊə": "U@", "ɜː": "3:", "ɑː": "A:", "ɔː": "O:", "uː": "u:", "iː": "i:",
    "ˈ": "'", "ˌ": ",", "ə": "@", "ɚ": "3", "ɜ": "3", "æ": "a", "ɑ": "A", "ɒ": "0", "ɔ": "O",
    "ʊ": "U", "u": "u:", "ɪ": "I", "i": "i:", "ɛ": "E", "e": "E", "ʌ": "V", "θ": "T", "ð": "D",
    "ʃ": "S", "ʒ": "Z", "ŋ": "N", "ɹ": "r", "r": "r", "ɾ": "t", "ɡ": "g", "ʔ": "?", "ː": ":",
    "ɐ": "a#", "ᵻ": "I#", "ɫ": "l", "x": "x", "ç": "C",
}  # fmt: skip
_ESPEAK_KEYS = sorted(_TO_ESPEAK, key=len, reverse=True)


@dataclass(frozen=True)
class Entry:
    """How to say one word: exactly one of `ipa` or `respelling`."""

    ipa: str = ""
    respelling: str = ""


def parse_entry(word: str, value: object, where: str) -> Entry:
    """`/ipa/` or a respelling; anything else raises `CastError` naming `where` and the word."""
    if not isinstance(value, str) or not value.strip():
        raise CastError(f"{where}: lexicon entry {word!r} must be '/IPA/' or a respelling, got {value!r}")
    value = unicodedata.normalize("NFC", value.strip())
    if value.startswith("/"):
        ipa = value.strip("/").strip()
        if not value.endswith("/") or len(value) < 3 or not _IPA_CHARS.match(ipa):
            raise CastError(f"{where}: lexicon entry {word!r}: IPA goes between slashes, e.g. /ˈwʊstər/")
        return Entry(ipa=ipa)
    if any(c in value for c in "[]()/"):
        raise CastError(f"{where}: lexicon entry {word!r}: a respelling is plain words, got {value!r}")
    return Entry(respelling=value)


@dataclass
class Lexicon:
    """Word (matched whole, any case) -> `Entry`."""

    entries: dict[str, Entry] = field(default_factory=dict)

    @classmethod
    def from_mapping(cls, data: object, where: str = "lexicon") -> Lexicon:
        if not isinstance(data, Mapping):
            raise CastError(f"{where}: expected a table of word = pronunciation")
        entries: dict[str, Entry] = {}
        for word, value in data.items():
            key = str(word).strip()
            if not key or not re.fullmatch(rf"{_WORD_CHARS}+(?: {_WORD_CHARS}+)*", key):
                raise CastError(f"{where}: {word!r} is not a word (letters, digits, ' and -)")
            entries[key.lower()] = parse_entry(key, value, where)
        return cls(entries)

    @classmethod
    def from_file(cls, path: Path) -> Lexicon:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            raise CastError(f"{path}: cannot read the lexicon ({exc})") from exc
        except tomllib.TOMLDecodeError as exc:
            raise CastError(f"{path}: invalid TOML ({exc})") from exc
        return cls.from_mapping(data.get("lexicon", data), str(path))

    def to_dict(self) -> dict[str, str]:
        return {w: f"/{e.ipa}/" if e.ipa else e.respelling for w, e in sorted(self.entries.items())}

    def merged(self, other: Lexicon) -> Lexicon:
        """This lexicon with `other`'s entries winning (user, then project)."""
        return Lexicon({**self.entries, **other.entries})

    def apply(self, text: str) -> str:
        """`text` with each listed word respelled or marked `[word](/ipa/)`; spans already
        marked (inline IPA, espeak-ng `[[...]]`) are left as they are."""
        return self.apply_mapped(text)[0]

    def apply_mapped(self, text: str) -> tuple[str, list[int]]:
        """`apply(text)`, and for each of its characters the index in `text` it came from (a
        replacement's characters all come from the start of the word it replaces)."""
        if not self.entries:
            return text, list(range(len(text)))
        pattern = self._pattern()
        out: list[str] = []
        origin: list[int] = []
        at = 0
        for chunk, protected in _spans(text):
            k = 0
            for m in [] if protected else pattern.finditer(chunk):
                out.append(chunk[k : m.start()] + self._replace(m))
                origin += range(at + k, at + m.start())
                origin += [at + m.start()] * (len(out[-1]) - (m.start() - k))
                k = m.end()
            out.append(chunk[k:])
            origin += range(at + k, at + len(chunk))
            at += len(chunk)
        return "".join(out), origin

    def _pattern(self) -> re.Pattern[str]:
        words = sorted(self.entries, key=len, reverse=True)
        alternatives = "|".join(re.escape(w) for w in words)
        return re.compile(rf"(?<!{_WORD_CHARS})(?:{alternatives})(?!{_WORD_CHARS})", re.IGNORECASE)

    def _replace(self, m: re.Match[str]) -> str:
        entry = self.entries[m.group(0).lower()]
        return f"[{m.group(0)}](/{entry.ipa}/)" if entry.ipa else entry.respelling


def _spans(text: str) -> Iterator[tuple[str, bool]]:
    """(piece, is_marked) over `text`: inline IPA and `[[...]]` spans are marked."""
    k = 0
    for m in re.finditer(f"{INLINE.pattern}|{_ESPEAK_SPAN.pattern}", text):
        if m.start() > k:
            yield text[k : m.start()], False
        yield m.group(0), True
        k = m.end()
    if k < len(text):
        yield text[k:], False


def segments(text: str) -> list[tuple[str, bool]]:
    """(text, False) and (ipa, True) pieces: what a phoneme backend voices, in order."""
    return [(piece, is_ipa) for piece, is_ipa, _at, _shown in segment_spans(text)]


def segment_spans(text: str) -> list[tuple[str, bool, int, str]]:
    """`segments(text)`, each with the text it shows and where that starts in `text` (a
    plain piece shows itself; an inline IPA span shows its `[words]`)."""
    out: list[tuple[str, bool, int, str]] = []
    k = 0
    for m in INLINE.finditer(text):
        if m.start() > k:
            out.append((text[k : m.start()], False, k, text[k : m.start()]))
        out.append((unicodedata.normalize("NFC", m.group(2).strip()), True, m.start(1), m.group(1)))
        k = m.end()
    if k < len(text):
        out.append((text[k:], False, k, text[k:]))
    return out


def plain_text(text: str) -> str:
    """`text` with inline IPA replaced by its shown words (for captions and word counts)."""
    return INLINE.sub(lambda m: m.group(1), text)


def ipa_to_espeak(ipa: str) -> str:
    """English IPA as espeak-ng phoneme mnemonics (unknown symbols are dropped)."""
    ipa = unicodedata.normalize("NFC", ipa)
    out: list[str] = []
    k = 0
    while k < len(ipa):
        if ipa[k] == " ":
            out.append(" ")
            k += 1
            continue
        for key in _ESPEAK_KEYS:
            if ipa.startswith(key, k):
                out.append(_TO_ESPEAK[key])
                k += len(key)
                break
        else:
            if ipa[k].isascii() and ipa[k].isalpha():
                out.append(ipa[k])
            k += 1
    return "".join(out)


def for_espeak(text: str) -> str:
    """Inline IPA spans turned into espeak-ng's `[[mnemonics]]` phoneme input."""
    return INLINE.sub(lambda m: f"[[{ipa_to_espeak(m.group(2))}]]", text)


_lock = threading.Lock()
_user: Lexicon | None = None
_project = Lexicon()


def user_lexicon_path() -> Path:
    env = os.environ.get(USER_LEXICON_ENV)
    return Path(env) if env else Path.home() / ".config" / "troupe" / "lexicon.toml"


def user_lexicon() -> Lexicon:
    """The user's lexicon file, read once (empty when there is none)."""
    global _user
    with _lock:
        if _user is None:
            path = user_lexicon_path()
            _user = Lexicon.from_file(path) if path.is_file() else Lexicon()
        return _user


def use_project_lexicon(lexicon: Lexicon) -> None:
    """Make `lexicon` the open project's (replacing the last one); the server's
    `PUT /v1/lexicon` and opening a project call this."""
    global _project
    with _lock:
        _project = lexicon


def current() -> Lexicon:
    """The user's lexicon with the open project's entries winning."""
    user = user_lexicon()
    with _lock:
        return user.merged(_project)


_print: tuple[Lexicon, Lexicon, str] | None = None


def fingerprint() -> str:
    """A hash of the lexicon in force (what a cached take's pronunciation depends on),
    recomputed only when the user's or the project's lexicon is replaced."""
    global _print
    user = user_lexicon()
    with _lock:
        project, memo = _project, _print
    if memo is not None and memo[0] is user and memo[1] is project:
        return memo[2]
    import hashlib

    entries = user.merged(project).entries
    rows = repr((NORMALISATION, sorted((k, repr(v)) for k, v in entries.items())))
    digest = hashlib.sha256(rows.encode()).hexdigest()[:16]
    with _lock:
        _print = (user, project, digest)
    return digest


_DETACHED = re.compile(r"(?<=\w)\s+(?=(?:['’](?:ll|ve|d|re|s|m)|n['’]t)\b)", re.IGNORECASE)
"""The space a tokenised text puts before a contraction ("coffee 'll", "do n't"): read
apart, every backend spelt the clitic out ("coffee L.O.")."""
NORMALISATION = 1
"""Bumped when what `prepare` does to a text changes (cached takes of the old text go)."""


def join_contractions(text: str) -> tuple[str, list[int]]:
    """`text` with each contraction joined to its word, and where each character came from."""
    cut = {i for m in _DETACHED.finditer(text) for i in range(m.start(), m.end())}
    if not cut:
        return text, list(range(len(text)))
    origin = [i for i in range(len(text)) if i not in cut]
    return "".join(text[i] for i in origin), origin


def prepare(text: str) -> str:
    """A line's text as every backend takes it: contractions joined, the current lexicon applied."""
    return current().apply(join_contractions(text)[0])


def prepare_mapped(text: str) -> tuple[str, list[int]]:
    """`prepare(text)`, and where in `text` each of its characters came from."""
    joined, origin = join_contractions(text)
    out, within = current().apply_mapped(joined)
    return out, [origin[i] if i < len(origin) else len(text) for i in within]
