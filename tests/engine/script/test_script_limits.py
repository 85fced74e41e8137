"""The playable limits at the import: a script past 10,000 lines is refused at its line
10,001, before the rest of the file is parsed; one at the limit loads; benchmarks can still
import past the limits (`import_unchecked`); the role limit is said with what to do."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.core.errors import ScriptError
from engine.script import import_unchecked, load_script
from engine.script.limits import MAX_LINES, MAX_ROLES


def _write(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_script_at_the_line_limit_loads(tmp_path: Path) -> None:
    script = load_script(_write(tmp_path / "full.txt", [f"ROLE{k % 7}: Line {k}." for k in range(MAX_LINES)]))
    assert len(script.cues) == MAX_LINES


def test_a_script_past_the_limit_is_refused_where_it_passes_it(tmp_path: Path) -> None:
    # after line 10,001 the file is broken: a parse of the whole file would report that instead
    lines = [f"ROLE{k % 7}: Line {k}." for k in range(MAX_LINES + 1)] + ["NOBODY:", "garbage: " * 3] * 50
    path = _write(tmp_path / "long.txt", lines)
    with pytest.raises(ScriptError) as err:
        load_script(path)
    assert err.value.line == MAX_LINES + 1
    assert f"more than {MAX_LINES:,} lines" in str(err.value) and "split it into episodes" in str(err.value)
    assert "long.txt, line 10001" in str(err.value)


def test_a_subtitle_file_past_the_limit_is_refused_at_its_cue(tmp_path: Path) -> None:
    def clock(s: int) -> str:
        return f"{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}"

    cues = [
        f"{k + 1}\n{clock(2 * k)},000 --> {clock(2 * k + 1)},500\nLine {k}.\n" for k in range(MAX_LINES + 5)
    ]
    path = tmp_path / "long.srt"
    path.write_text("\n".join(cues), encoding="utf-8")
    with pytest.raises(ScriptError) as err:
        load_script(path)
    assert f"more than {MAX_LINES:,} lines" in str(err.value) and err.value.line is not None


def test_benchmarks_can_still_import_past_the_limit(tmp_path: Path) -> None:
    path = _write(tmp_path / "long.txt", [f"A: Line {k}." for k in range(MAX_LINES + 3)])
    assert len(import_unchecked(path).cues) == MAX_LINES + 3


def test_too_many_roles_are_refused_with_what_to_do(tmp_path: Path) -> None:
    path = _write(tmp_path / "crowd.txt", [f"EXTRA{k}: Hello." for k in range(MAX_ROLES + 1)])
    with pytest.raises(ScriptError) as err:
        load_script(path)
    assert f"{MAX_ROLES + 1:,} roles" in str(err.value) and "one shared name" in str(err.value)
