"""Tags and chapters in every format a render writes (mutagen): ID3v2.4 with CHAP/CTOC
chapters in MP3 and WAV, Vorbis comments with CHAPTERnnn chapters in FLAC and Opus (and a
picture block), iTunes atoms and MP4 chapters (through ffmpeg) in M4B/M4A. Raw PCM and ADTS AAC have no
place for either."""

from __future__ import annotations

import base64
import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from engine.core.timecode import format_vtt_time
from engine.export.formats import AudioFormat, ExportError, ffmpeg_path

COVER_TYPES = {b"\xff\xd8\xff": "image/jpeg", b"\x89PNG\r\n\x1a\n": "image/png"}
MAX_COVER_BYTES = 20 * 1024 * 1024
"""A cover larger than this is refused (ACX asks for 2400x2400 JPEG: a few MB)."""


@dataclass(frozen=True)
class Chapter:
    start_s: float
    title: str


@dataclass(frozen=True)
class BookInfo:
    """What the files say about the show: from the script's title page, or given."""

    title: str = ""
    author: str = ""
    album: str = ""
    year: str = ""
    genre: str = ""
    comment: str = "Rendered by Troupe"
    copyright: str = ""
    cover: Path | None = None
    cover_bytes: bytes = field(default=b"", repr=False)
    cover_type: str = ""

    def with_cover(self, path: Path | None) -> BookInfo:
        """This info with the image at `path` as its cover (checked: JPEG or PNG)."""
        if path is None:
            return self
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise ExportError(f"{path}: cannot read the cover ({exc.strerror or exc})") from exc
        kind = next((t for magic, t in COVER_TYPES.items() if data.startswith(magic)), "")
        if not kind:
            raise ExportError(f"{path}: a cover must be a JPEG or PNG image")
        if len(data) > MAX_COVER_BYTES:
            raise ExportError(f"{path}: the cover is {len(data) / 1e6:.0f} MB; at most 20 MB")
        return replace(self, cover=path, cover_bytes=data, cover_type=kind)


def book_info(metadata: Mapping[str, str], title: str, overrides: Mapping[str, str] | None = None,
              cover: Path | None = None) -> BookInfo:  # fmt: skip
    """Tags from a Fountain title page (`Title`, `Author`/`Authors`/`Credit`, `Copyright`,
    `Draft date`), each replaced by `overrides` (`title`, `author`, `album`, `year`,
    `genre`, `comment`) where given."""
    author = metadata.get("author") or metadata.get("authors") or metadata.get("credit", "")
    info = {"title": title, "author": author, "album": title, "year": _year(metadata.get("draft date", "")),
            "genre": metadata.get("genre", ""), "copyright": metadata.get("copyright", "")}  # fmt: skip
    known = {"title", "author", "album", "year", "genre", "comment", "copyright"}
    given = {k: " ".join(v.split()) for k, v in (overrides or {}).items() if k in known and v and v.strip()}
    if "title" in given and "album" not in given:
        given["album"] = given["title"]
    merged = info | given
    return BookInfo(title=merged["title"], author=merged["author"], album=merged["album"],
                    year=merged["year"], genre=merged["genre"], copyright=merged["copyright"],
                    comment=merged.get("comment", BookInfo.comment)).with_cover(cover)  # fmt: skip


def _year(date: str) -> str:
    found = re.search(r"\b(1[89]|2\d)\d\d\b", date)
    return found.group(0) if found else ""


def tag_file(path: Path, fmt: AudioFormat, info: BookInfo, chapters: Sequence[Chapter], end_s: float,
             where: str) -> bool:  # fmt: skip
    """Write `info` and `chapters` into the finished file at `path` (of format `fmt`);
    False for a file that has no place for them (raw PCM, ADTS AAC, a WAV past 4 GB)."""
    try:
        if fmt.name == "mp3":
            _id3(path, info, chapters, end_s, wave=False)
        elif fmt.name == "wav":
            with path.open("rb") as f:
                if f.read(4) != b"RIFF":  # RF64 (past 4 GB): no tag chunk mutagen can write
                    return False
            _id3(path, info, chapters, end_s, wave=True)
        elif fmt.name in ("flac", "opus"):
            _vorbis(path, fmt.name, info, chapters)
        elif fmt.name == "m4a":
            if chapters:
                add_chapters(path, chapters, end_s, where)
            write_mp4_tags(path, info, where)
        else:
            return False
    except ExportError:
        raise
    except Exception as exc:  # mutagen raises its own error types for files it cannot read
        raise ExportError(f"{where}: cannot write its tags ({exc})") from exc
    return True


def _ms(seconds: float) -> int:
    return max(0, round(seconds * 1000))


def _id3(path: Path, info: BookInfo, chapters: Sequence[Chapter], end_s: float, wave: bool) -> None:
    import mutagen.id3

    id3: Any = mutagen.id3  # NB: its frame classes are untyped

    tags: Any
    if wave:
        from mutagen.wave import WAVE

        audio: Any = WAVE(path)  # type: ignore[no-untyped-call]
        if audio.tags is None:
            audio.add_tags()
        tags = audio.tags
    else:
        try:
            tags = id3.ID3(path)
        except id3.ID3NoHeaderError:
            tags = id3.ID3()
    frames = {"TIT2": info.title, "TPE1": info.author, "TALB": info.album, "TDRC": info.year,
              "TCON": info.genre, "TCOP": info.copyright}  # fmt: skip
    for key, value in frames.items():
        if value:
            tags.add(getattr(id3, key)(encoding=3, text=[value]))
    if info.comment:
        tags.add(id3.COMM(encoding=3, lang="eng", desc="", text=[info.comment]))
    if info.cover_bytes:
        tags.add(id3.APIC(encoding=3, mime=info.cover_type, type=3, desc="Cover", data=info.cover_bytes))
    ids = [f"ch{k}" for k in range(len(chapters))]
    for k, ch in enumerate(chapters):
        stop = chapters[k + 1].start_s if k + 1 < len(chapters) else end_s
        tags.add(id3.CHAP(element_id=ids[k], start_time=_ms(ch.start_s), end_time=_ms(stop),
                          sub_frames=[id3.TIT2(encoding=3, text=[ch.title])]))  # fmt: skip
    if chapters:
        tags.add(id3.CTOC(element_id="toc", flags=id3.CTOCFlags.TOP_LEVEL | id3.CTOCFlags.ORDERED,
                          child_element_ids=ids,
                          sub_frames=[id3.TIT2(encoding=3, text=[info.title or "Chapters"])]))  # fmt: skip
    if wave:
        tags.save(path)
    else:
        tags.save(path, v2_version=4)


def _vorbis(path: Path, kind: str, info: BookInfo, chapters: Sequence[Chapter]) -> None:
    import mutagen.flac
    import mutagen.oggopus

    flac: Any = mutagen.flac  # NB: untyped
    audio: Any = flac.FLAC(path) if kind == "flac" else mutagen.oggopus.OggOpus(path)  # type: ignore[no-untyped-call]
    if audio.tags is None:
        audio.add_tags()
    tags = audio.tags
    fields = {"TITLE": info.title, "ARTIST": info.author, "ALBUM": info.album, "DATE": info.year,
              "GENRE": info.genre, "COPYRIGHT": info.copyright, "COMMENT": info.comment}  # fmt: skip
    for key, value in fields.items():
        if value:
            tags[key] = [value]
    for k, ch in enumerate(chapters, 1):  # the Ogg/Vorbis chapter convention players read
        tags[f"CHAPTER{k:03d}"] = [format_vtt_time(max(0.0, ch.start_s))]
        tags[f"CHAPTER{k:03d}NAME"] = [ch.title]
    if info.cover_bytes:
        pic: Any = flac.Picture()
        pic.type, pic.mime, pic.desc, pic.data = 3, info.cover_type, "Cover", info.cover_bytes
        if kind == "flac":
            audio.clear_pictures()
            audio.add_picture(pic)
        else:
            tags["METADATA_BLOCK_PICTURE"] = [base64.b64encode(pic.write()).decode("ascii")]
    audio.save()


# MP4 (M4B/M4A): chapters through ffmpeg, without re-encoding; iTunes atoms through mutagen


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
    from mutagen.mp4 import MP4, MP4Cover, MP4StreamInfoError

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
