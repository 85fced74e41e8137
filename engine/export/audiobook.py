"""Audiobook finishing for an M4B/M4A mix: chapters (through ffmpeg, without re-encoding)
and tags from the script's title page (through mutagen)."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from mutagen.mp4 import MP4, MP4StreamInfoError

from engine.export.formats import ExportError, ffmpeg_path


@dataclass(frozen=True)
class Chapter:
    start_s: float
    title: str


def _escape(text: str) -> str:
    """A value for ffmpeg's metadata file: its special characters backslash-escaped."""
    for ch in "\\=;#\n":
        text = text.replace(ch, "\\" + ch)
    return text


def ffmetadata(chapters: Sequence[Chapter], end_s: float) -> str:
    rows = [";FFMETADATA1"]
    for k, ch in enumerate(chapters):
        stop = chapters[k + 1].start_s if k + 1 < len(chapters) else end_s
        rows += ["[CHAPTER]", "TIMEBASE=1/1000", f"START={round(ch.start_s * 1000)}",
                 f"END={round(stop * 1000)}", f"title={_escape(ch.title)}"]  # fmt: skip
    return "\n".join(rows) + "\n"


def add_chapters(path: Path, chapters: Sequence[Chapter], end_s: float, where: str) -> None:
    """Rewrite `path` (an MP4 file) with `chapters`, copying the audio as it is."""
    exe = ffmpeg_path()
    if exe is None:
        raise ExportError(f"{where}: chapters need ffmpeg (e.g. apt-get install ffmpeg)")
    meta = path.with_name(path.name + ".chapters.txt")
    tmp = path.with_name(path.name + ".chaptered")
    meta.write_text(ffmetadata(chapters, end_s), encoding="utf-8")
    try:
        proc = subprocess.run([exe, "-hide_banner", "-loglevel", "error", "-nostdin", "-y", "-i", str(path),
                               "-i", str(meta), "-map", "0:a", "-map_metadata", "1", "-map_chapters", "1",
                               "-c", "copy", "-f", "ipod", str(tmp)],
                              capture_output=True, text=True, timeout=3600, check=False)  # fmt: skip
        if proc.returncode != 0:
            text = proc.stderr.strip()
            full = "No space left" in text
            raise ExportError(f"{where}: disk full" if full else f"{where}: ffmpeg could not add chapters "
                              f"({text.splitlines()[-1] if text else 'no message'})")  # fmt: skip
        os.replace(tmp, path)
    finally:
        meta.unlink(missing_ok=True)
        tmp.unlink(missing_ok=True)


TAGS = {"title": "\xa9nam", "author": "\xa9ART", "album": "\xa9alb", "genre": "\xa9gen", "comment": "\xa9cmt",
        "year": "\xa9day", "narrator": "\xa9wrt", "copyright": "cprt"}  # fmt: skip


def write_tags(path: Path, tags: Mapping[str, str], where: str) -> None:
    """Title, author and the rest (keys of `TAGS`) into the MP4 file, marked as an audiobook."""
    try:
        mp4 = MP4(path)  # type: ignore[no-untyped-call]
    except (MP4StreamInfoError, OSError) as exc:
        raise ExportError(f"{where}: cannot tag the audiobook ({exc})") from exc
    if mp4.tags is None:
        mp4.add_tags()  # type: ignore[no-untyped-call]
    assert mp4.tags is not None
    for key, value in tags.items():
        if key in TAGS and value:
            mp4.tags[TAGS[key]] = [value]
    mp4.tags["stik"] = [2]  # iTunes media kind: audiobook
    try:
        mp4.save()
    except OSError as exc:
        raise ExportError(f"{where}: cannot tag the audiobook ({exc.strerror or exc})") from exc


def book_tags(metadata: Mapping[str, str], title: str) -> dict[str, str]:
    """Tags from a Fountain title page (`Title`, `Author`/`Authors`, `Copyright`, `Draft date`)."""
    author = metadata.get("author") or metadata.get("authors") or metadata.get("credit", "")
    return {"title": title, "album": title, "author": author, "genre": "Audiobook",
            "copyright": metadata.get("copyright", ""), "year": _year(metadata.get("draft date", "")),
            "comment": "Rendered by Troupe"}  # fmt: skip


def _year(date: str) -> str:
    found = re.search(r"\b(1[89]|2\d)\d\d\b", date)
    return found.group(0) if found else ""
