"""M4B/M4A finishing: chapters (through ffmpeg, without re-encoding) and iTunes tags with
the cover (through mutagen); engine/export/tags.py calls these for an MP4 file."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path

from mutagen.mp4 import MP4, MP4Cover, MP4StreamInfoError

from engine.export.formats import ExportError, ffmpeg_path
from engine.export.tags import BookInfo, Chapter


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
        "year": "\xa9day", "copyright": "cprt"}  # fmt: skip


def write_mp4_tags(path: Path, info: BookInfo, where: str) -> None:
    """Title, author and the rest, and the cover, into the MP4 file, marked as an audiobook."""
    try:
        mp4 = MP4(path)  # type: ignore[no-untyped-call]
    except (MP4StreamInfoError, OSError) as exc:
        raise ExportError(f"{where}: cannot tag the audiobook ({exc})") from exc
    if mp4.tags is None:
        mp4.add_tags()  # type: ignore[no-untyped-call]
    assert mp4.tags is not None
    for key, atom in TAGS.items():
        value = getattr(info, key)
        if value:
            mp4.tags[atom] = [value]
    if info.cover_bytes:
        kind = MP4Cover.FORMAT_PNG if info.cover_type == "image/png" else MP4Cover.FORMAT_JPEG
        mp4.tags["covr"] = [MP4Cover(info.cover_bytes, imageformat=kind)]
    mp4.tags["stik"] = [2]  # iTunes media kind: audiobook
    try:
        mp4.save()
    except OSError as exc:
        raise ExportError(f"{where}: cannot tag the audiobook ({exc.strerror or exc})") from exc
