"""Editing safety: every line edit, cast change and ad-lib keep/delete is an undoable
command on one QUndoStack, and the stack's clean state is what 'unsaved changes' means."""

from __future__ import annotations

from typing import Any

from PySide6.QtGui import QUndoCommand

from engine.control.casting import Casting
from engine.control.lines import Lines
from engine.core.types import Voice

RECAST_ID = 1601
"""Undo id of a cast change: consecutive changes of one role's same fields merge (a slider
drag is one step)."""


class EditLine(QUndoCommand):
    """A cue's text changed (the line is voiced again). The window applies the first edit
    itself (so a bad line reaches the banner, not the stack); `applied` skips that redo."""

    def __init__(self, lines: Lines, index: int, old: str, new: str, applied: bool = True) -> None:
        super().__init__(f"edit cue {index + 1}")
        self.lines, self.index, self.old, self.new = lines, index, old, new
        self.applied = applied

    def redo(self) -> None:
        if self.applied:
            self.applied = False
            return
        self.lines.edit_line(self.index, self.new)

    def undo(self) -> None:
        self.lines.edit_line(self.index, self.old)


def voice_fields(voice: Voice, changes: dict[str, Any]) -> dict[str, Any]:
    """The values `changes` replaces in `voice` (a voice change also restores its backend)."""
    keys = set(changes) | ({"backend", "voice_id"} if {"backend", "voice_id"} & set(changes) else set())
    return {k: getattr(voice, k) for k in sorted(keys) if hasattr(voice, k)}


class Recast(QUndoCommand):
    """A role's voice or mix settings changed in the cast panel."""

    def __init__(self, casting: Casting, role: str, old: dict[str, Any], new: dict[str, Any]) -> None:
        super().__init__(f"{role}: {', '.join(sorted(new))}")
        self.casting, self.role, self.old, self.new = casting, role, old, new

    def id(self) -> int:
        return RECAST_ID

    def mergeWith(self, other: QUndoCommand) -> bool:
        if not isinstance(other, Recast) or other.role != self.role or set(other.new) != set(self.new):
            return False
        self.new = other.new  # keep the first command's `old`: one undo step for the drag
        return True

    def redo(self) -> None:
        self.casting.set_voice(self.role, **self.new)

    def undo(self) -> None:
        self.casting.set_voice(self.role, **self.old)


class KeepAdlib(QUndoCommand):
    def __init__(self, lines: Lines, index: int) -> None:
        super().__init__(f"keep ad-lib {index + 1}")
        self.lines, self.index = lines, index

    def redo(self) -> None:
        self.lines.keep_adlib(self.index)

    def undo(self) -> None:
        self.lines.keep_adlib(self.index, keep=False)


class DeleteAdlib(QUndoCommand):
    def __init__(self, lines: Lines, index: int) -> None:
        super().__init__(f"delete ad-lib {index + 1}")
        self.lines, self.index = lines, index

    def redo(self) -> None:
        self.lines.delete_adlib(self.index)

    def undo(self) -> None:
        self.lines.delete_adlib(self.index, delete=False)
