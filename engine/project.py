"""Project files read like any untrusted input: every key's type and range checked, voices
that exist, edits as text, the script resolved against the project's own folder and only in
a format Troupe imports. Every problem is a `CastError` that names the file and the key."""

from __future__ import annotations

import json
import math
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from engine.cast import Cast, voice_from_dict
from engine.core.errors import CastError
from engine.core.types import Script, Voice
from engine.script import SUFFIXES
from engine.script.limits import MAX_LINE_CHARS
from engine.script.options import ImportOptions
from engine.synthesis import delivery, lexicon
from engine.synthesis.delivery import Delivery
from engine.synthesis.espeak import espeak_variants, espeak_voices
from engine.synthesis.lexicon import Lexicon

MAX_PROJECT_BYTES = 4 * 1024 * 1024
"""A project holds a cast and edits: even a 1,000-role cast with every line edited is smaller."""
KEYS = ("troupe_project", "script", "cast", "edits", "lexicon", "delivery", "import")
_SCRIPT_SUFFIXES = {*SUFFIXES, ".text", ".md"}
_BOOL_FIELDS = {"mute", "solo"}
_TEXT_FIELDS = {"backend", "voice_id"}


@dataclass(frozen=True)
class Project:
    script: Path
    """Resolved against the project file's folder."""
    cast: Cast
    edits: dict[int, str]
    lexicon: Lexicon = field(default_factory=Lexicon)
    """The project's pronunciations (`[lexicon]`), winning over the user's."""
    delivery: dict[str, Delivery] = field(default_factory=dict)
    """The project's own delivery hints (`[delivery]`), over the default table."""
    extras: dict[str, Any] = field(default_factory=dict)
    """The `lexicon` and `delivery` tables as read, written back when the project is saved."""
    import_options: ImportOptions = field(default_factory=ImportOptions)
    """How the script is read (`[import]`: encoding, dialogue styles), as the director chose."""
    anchors: dict[int, EditAnchor] = field(default_factory=dict)
    """Each edit's line as imported (`place_edits` puts it back there)."""

    def edits_on(self, script: Script) -> tuple[dict[int, str], list[str]]:
        """The edits placed on `script`'s cues, and those whose line is gone."""
        return place_edits(script, self.edits, self.anchors)


def use_voicing(project: Project | None) -> None:
    """Make `project`'s lexicon and delivery hints the ones every backend uses (None: the
    defaults and the user's lexicon only), so no script inherits another's."""
    lexicon.use_project_lexicon(project.lexicon if project is not None else Lexicon())
    delivery.use_table(project.delivery if project is not None else {})


def read_project(path: str | Path) -> Project:
    """Read and check a project file (JSON, or TOML by its suffix)."""
    path = Path(path)
    data = _parse(path, _read(path))
    if not isinstance(data, dict):
        raise CastError(f"{path}: not a Troupe project (expected a table with 'script' and 'cast')")
    if "cast" not in data:
        raise CastError(f"{path}: not a Troupe project (no 'cast' table)")
    unknown = ", ".join(map(repr, sorted(set(data) - set(KEYS))))
    if unknown:
        raise CastError(f"{path}: unknown key(s) {unknown}; a project has {', '.join(KEYS)}")
    version = data.get("troupe_project", 1)
    if version != 1 or isinstance(version, bool):
        raise CastError(f"{path}: 'troupe_project' is {version!r}; this Troupe reads version 1")
    cast_data = data["cast"]
    if not isinstance(cast_data, Mapping):
        raise CastError(f"{path}: 'cast' must be a table of roles, not {type(cast_data).__name__}")
    for role, entry in cast_data.items():
        _check_voice(path, str(role), entry)
    cast = Cast.from_dict(cast_data, where=f"{path}: 'cast'")
    extras = {key: data[key] for key in ("lexicon", "delivery") if key in data}
    edits, anchors = _edits(path, data.get("edits", {}))
    return Project(
        _script(path, data.get("script")), cast, edits,
        Lexicon.from_mapping(extras["lexicon"], f"{path}: 'lexicon'") if "lexicon" in extras else Lexicon(),
        delivery.parse_table(extras["delivery"], f"{path}: 'delivery'") if "delivery" in extras else {},
        extras,
        ImportOptions.from_dict(data["import"], f"{path}: 'import'") if "import" in data else ImportOptions(),
        anchors,
    )  # fmt: skip


def _read(path: Path) -> str:
    try:
        st = path.stat()
        if not stat.S_ISREG(st.st_mode):
            raise CastError(f"{path}: not a regular file; expected a project file (.json or .toml)")
        if st.st_size > MAX_PROJECT_BYTES:
            raise CastError(f"{path}: {st.st_size / 1e6:.1f} MB; a project file is at most "
                            f"{MAX_PROJECT_BYTES // 2**20} MB")  # fmt: skip
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CastError(f"{path}: cannot read the project file ({exc})") from exc
    except RuntimeError as exc:  # a symbolic-link loop on some Python versions
        raise CastError(f"{path}: cannot read the project file ({exc})") from exc


def _parse(path: Path, raw: str) -> Any:
    try:
        return tomllib.loads(raw) if path.suffix.lower() == ".toml" else json.loads(raw)
    except json.JSONDecodeError as exc:
        raise CastError(f"{path}, line {exc.lineno}: invalid JSON ({exc.msg})") from exc
    except tomllib.TOMLDecodeError as exc:
        raise CastError(f"{path}: invalid TOML ({exc})") from exc
    except RecursionError as exc:
        raise CastError(f"{path}: nested too deeply to be a Troupe project") from exc


def _check_voice(path: Path, role: str, entry: Any) -> None:
    """Types first (so that nothing downstream sees a string for a number), then voices."""
    where = f"{path}: 'cast', role {role!r}"
    if not isinstance(entry, Mapping):
        raise CastError(f"{where}: expected a table of voice settings, not {type(entry).__name__}")
    kinds = {f.name: f.type for f in fields(Voice)}
    for key, value in entry.items():
        if key not in kinds:
            continue  # named by `voice_from_dict` as an unknown setting
        if key in _BOOL_FIELDS and not isinstance(value, bool):
            raise CastError(f"{where}: '{key}' is {value!r}; expected true or false")
        if key in _TEXT_FIELDS and not isinstance(value, str):
            raise CastError(f"{where}: '{key}' is {value!r}; expected text")
        numeric = key not in _BOOL_FIELDS | _TEXT_FIELDS
        if numeric and (
            isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)
        ):
            raise CastError(f"{where}: '{key}' is {value!r}; expected a number")
    voice = voice_from_dict(entry, where)
    if voice.backend == "espeak" and not _espeak_knows(voice.voice_id):
        raise CastError(f"{where}: 'voice_id' {voice.voice_id!r} is not an espeak-ng voice "
                        "(`python main.py voices` lists them)")  # fmt: skip


def _espeak_knows(voice_id: str) -> bool:
    language, _, variant = voice_id.lower().partition("+")
    if language not in {n.lower() for v in espeak_voices() for n in (v.voice_id, v.language)}:
        return False
    return not variant or variant in {v.voice_id.lower() for v in espeak_variants()}


def _script(path: Path, value: Any) -> Path:
    if not isinstance(value, str) or not value.strip():
        raise CastError(
            f"{path}: 'script' must name the script file (a path, relative to the project's folder)"
        )
    script = Path(value).expanduser()
    if not script.is_absolute():
        script = path.resolve().parent / script
    if script.suffix.lower() not in _SCRIPT_SUFFIXES:
        raise CastError(
            f"{path}: 'script' is {value!r}; Troupe imports only {', '.join(sorted(SUFFIXES))} files"
        )
    return script


@dataclass(frozen=True)
class EditAnchor:
    """Which line an edit was made to: its text as imported and its source line, so a
    script that imports to other cue numbers (a new Troupe's rules, the file changed) puts
    the edit back on that line, or says it cannot."""

    was: str
    line: int


def edit_anchors(script: Script, edits: Mapping[int, str]) -> dict[int, EditAnchor]:
    """The anchors of `edits` (cue index -> new text) in `script` as imported."""
    return {
        k: EditAnchor(script.cues[k].text, script.cues[k].line) for k in edits if 0 <= k < len(script.cues)
    }


def place_edits(
    script: Script, edits: Mapping[int, str], anchors: Mapping[int, EditAnchor]
) -> tuple[dict[int, str], list[str]]:
    """`edits` on the cues of `script`: an anchored edit goes where its original text is
    (its own cue number first, then the same text on the same source line, then the same
    text anywhere unclaimed); one whose line is gone is reported with its text, never
    silently put on another line. An edit without an anchor (an older project) keeps its
    cue number."""
    placed: dict[int, str] = {}
    lost: list[str] = []
    by_text: dict[str, list[int]] = {}
    for cue in script.cues:
        by_text.setdefault(cue.text, []).append(cue.index)
    for k, text in sorted(edits.items()):
        anchor = anchors.get(k)
        if anchor is None:
            if k < len(script.cues):
                placed[k] = text
            else:
                lost.append(f"cue {k + 1} (the script has {len(script.cues)}): {text[:60]!r}")
            continue
        if k < len(script.cues) and script.cues[k].text == anchor.was and k not in placed:
            placed[k] = text
            continue
        same = [i for i in by_text.get(anchor.was, []) if i not in placed]
        near = [i for i in same if script.cues[i].line == anchor.line]
        target = (near or same or [-1])[0]
        if target < 0:
            lost.append(f"line {anchor.line}, {anchor.was[:40]!r} is no longer in the script: {text[:60]!r}")
        else:
            placed[target] = text
    return placed, lost


def _edits(path: Path, value: Any) -> tuple[dict[int, str], dict[int, EditAnchor]]:
    if not isinstance(value, Mapping):
        raise CastError(f"{path}: 'edits' must map cue numbers to text, not {type(value).__name__}")
    edits: dict[int, str] = {}
    anchors: dict[int, EditAnchor] = {}
    for key, entry in value.items():
        if not str(key).isdigit():
            raise CastError(f"{path}: 'edits' key {key!r} is not a cue number")
        text = entry
        if isinstance(entry, Mapping):  # {"text", "was", "line"}: the edit and its anchor
            text, was, line = entry.get("text"), entry.get("was"), entry.get("line")
            if not isinstance(was, str) or isinstance(line, bool) or not isinstance(line, int):
                raise CastError(f"{path}: 'edits' for cue {key} needs 'text', 'was' (the line as "
                                "imported) and 'line' (its line number in the script)")  # fmt: skip
            anchors[int(key)] = EditAnchor(was, line)
        if not isinstance(text, str) or not text.strip():
            raise CastError(f"{path}: 'edits' for cue {key} is {text!r}; expected the line's new text")
        if len(text) > MAX_LINE_CHARS:
            raise CastError(f"{path}: 'edits' for cue {key} has {len(text):,} characters; "
                            f"a line may have at most {MAX_LINE_CHARS:,}")  # fmt: skip
        edits[int(key)] = text.strip()
    return edits, anchors
