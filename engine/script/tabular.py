"""CSV/TSV importer: `role,text[,emotion][,start_s]`, with or without a header row."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

from engine.core.errors import ScriptError
from engine.core.types import Script
from engine.script.common import ScriptBuilder

COLUMNS = ("role", "text", "emotion", "start_s")


def _header(row: list[str]) -> dict[str, int] | None:
    names = [c.strip().lower() for c in row]
    if "role" in names and "text" in names:
        return {name: names.index(name) for name in COLUMNS if name in names}
    return None


def parse_tabular(path: Path, text: str, delimiter: str) -> Script:
    fmt = "tsv" if delimiter == "\t" else "csv"
    builder = ScriptBuilder(path=path, format=fmt)
    reader = csv.reader(io.StringIO(text), delimiter=delimiter)
    columns: dict[str, int] | None = None
    try:
        for row in reader:
            line_no = reader.line_num
            if not any(c.strip() for c in row) or row[0].lstrip().startswith("#"):
                continue
            if columns is None:
                columns = _header(row)
                if columns is not None:
                    continue
                columns = {name: k for k, name in enumerate(COLUMNS)}
            _row(builder, path, row, columns, line_no)
    except csv.Error as exc:
        raise ScriptError(path, f"malformed {fmt.upper()} ({exc})", reader.line_num) from exc
    return builder.build()


def _row(builder: ScriptBuilder, path: Path, row: list[str], columns: dict[str, int], line_no: int) -> None:
    def cell(name: str) -> str:
        k = columns.get(name)
        return row[k].strip() if k is not None and k < len(row) else ""

    role, text = cell("role"), cell("text")
    if not role or not text:
        raise ScriptError(path, "expected 'role,text[,emotion][,start_s]' with a role and a text", line_no)
    start_s: float | None = None
    if raw := cell("start_s"):
        try:
            start_s = float(raw)
        except ValueError:
            raise ScriptError(path, f"start_s {raw!r} is not a number of seconds", line_no) from None
        if start_s < 0 or not math.isfinite(start_s):
            raise ScriptError(path, f"start_s {raw!r} must be a finite time >= 0", line_no)
    hints = (cell("emotion"),) if cell("emotion") else ()
    builder.cue(role, text, line_no, hints, start_s=start_s)
