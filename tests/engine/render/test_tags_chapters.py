"""Tags and chapters in every format a render writes, read back with mutagen and ffprobe:
chapters from Fountain sections, else scenes grouped to a minimum length with readable
titles, else the lines grouped; a bad cover is refused before anything is voiced."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from engine.cast import Cast
from engine.core.types import Scene, Section
from engine.export import ExportError, available_formats
from engine.export.tags import book_info
from engine.render import render_script
from engine.render.chapters import chapters, readable_heading
from engine.render.result import LineTiming
from engine.script import load_script
from engine.synthesis.espeak import EspeakSynthesizer

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "assets" / "demo" / "the_last_broadcast.fountain"


def _png(path: Path, side: int = 8) -> Path:
    raw = b"".join(b"\x00" + b"\x20\x60\xa0" * side for _ in range(side))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    head = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", head) + chunk(b"IDAT", zlib.compress(raw))
                     + chunk(b"IEND", b""))  # fmt: skip
    return path


@pytest.mark.parametrize(("heading", "title"), [
    ("INT. LIGHTHOUSE - LAMP ROOM - NIGHT", "Lighthouse, Lamp Room (night)"),
    ("EXT. RADIO STATION KXRT - NIGHT", "Radio Station Kxrt (night)"),
    ("INT. CONTROL ROOM - CONTINUOUS", "Control Room"),
    ("INT./EXT. CAR - DAY", "Car (day)"),
    ("int. the house of the seven gables - day", "The House of the Seven Gables (day)"),
    ("Kitchen", "Kitchen"),
])  # fmt: skip
def test_scene_headings_become_readable_titles(heading: str, title: str) -> None:
    assert readable_heading(heading) == title


def _lines(starts: list[float], scenes: list[int], length: float = 5.0) -> list[LineTiming]:
    return [
        LineTiming(k, "A", "x", s, length, scene=sc)
        for k, (s, sc) in enumerate(zip(starts, scenes, strict=True))
    ]


def test_short_scenes_are_grouped_into_chapters_of_at_least_the_minimum(tmp_path: Path) -> None:
    script = load_script(DEMO)
    heads = [f"INT. ROOM {k} - DAY" for k in range(10)]
    script = script.__class__(
        **{**script.__dict__, "scenes": tuple(Scene(k, h, k) for k, h in enumerate(heads))}
    )
    starts = [k * 50.0 for k in range(10)]  # ten scenes of 50 s
    marks = chapters(script, _lines(starts, list(range(10))), min_s=180)
    assert [m.start_s for m in marks] == [0.0, 200.0]  # 0-200 s, then 200-500 s (the short tail joins)
    assert marks[0].title == "Room 0 (day); Room 1 (day); Room 2 (day) and 1 more"
    assert all(m.title for m in marks)
    per_scene = chapters(script, _lines(starts, list(range(10))), min_s=0)
    assert len(per_scene) == 10 and per_scene[3].start_s == 150.0 and per_scene[3].title == "Room 3 (day)"


def test_top_level_sections_name_the_chapters() -> None:
    text = ("Title: Book\n\n# Act One\n\n## The Farm\n\nINT. KITCHEN - NIGHT\n\nANNA\nHello.\n\n"
            "BEN\nHi.\n\n# Act Two\n\n# Act Three\n\nANNA\nBye.\n")  # fmt: skip
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "book.fountain"
        path.write_text(text, encoding="utf-8")
        script = load_script(path)
    assert script.sections == (Section("Act One", 1, 3), Section("The Farm", 2, 5), Section("Act Two", 1, 15),
                               Section("Act Three", 1, 17))  # fmt: skip
    marks = chapters(script, _lines([0.5, 4.0, 9.0], [0, 0, 0], 3.0))
    # Act Two has no line of its own: Act Three's start names it
    assert [(m.start_s, m.title) for m in marks] == [(0.0, "Act One"), (9.0, "Act Three")]


def test_a_subtitle_script_gets_chapters_by_length() -> None:
    script = load_script(ROOT / "tests" / "data" / "samples" / "dub_episode.srt")
    starts = [k * 40.0 for k in range(20)]
    marks = chapters(script, _lines(starts, [0] * 20), min_s=180) if not any(
        s.heading for s in script.scenes) else []  # fmt: skip
    assert [m.title for m in marks] == ["Chapter 1", "Chapter 2", "Chapter 3", "Chapter 4"]
    assert [m.start_s for m in marks] == [0.0, 200.0, 400.0, 600.0]


def test_a_cover_that_is_not_an_image_is_refused_with_its_name(tmp_path: Path) -> None:
    bad = tmp_path / "cover.jpg"
    bad.write_text("not an image")
    with pytest.raises(ExportError, match=r"cover\.jpg: a cover must be a JPEG or PNG image"):
        book_info({}, "Show", cover=bad)
    with pytest.raises(ExportError, match=r"missing\.png: cannot read the cover"):
        book_info({}, "Show", cover=tmp_path / "missing.png")
    info = book_info(
        {"author": "Page Author", "draft date": "May 3, 2019"}, "Show", {"author": " Given  Name "}
    )
    assert (info.title, info.author, info.album, info.year) == ("Show", "Given Name", "Show", "2019")


def _probe(path: Path) -> dict:  # type: ignore[type-arg]
    out = subprocess.run(["ffprobe", "-v", "error", "-show_chapters", "-show_format", "-show_streams", "-of",
                          "json", str(path)], capture_output=True, text=True, check=True).stdout  # fmt: skip
    return json.loads(out)  # type: ignore[no-any-return]


FORMATS = ["mp3", "flac", "opus", "wav", "m4b"]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("ffprobe") is None, reason="needs ffprobe (ffmpeg)")
@pytest.mark.parametrize("suffix", FORMATS)
def test_every_format_carries_its_tags_cover_and_chapters(tmp_path: Path, suffix: str) -> None:
    import mutagen

    if suffix == "m4b" and "m4a" not in available_formats():
        pytest.skip("needs ffmpeg with AAC")
    script = load_script(DEMO)
    cover = _png(tmp_path / "cover.png")
    book = book_info(script.metadata, script.title, {"author": "A. Writer"}, cover)
    out = tmp_path / f"show.{suffix}"
    result = render_script(script, Cast.auto(script), out, EspeakSynthesizer(), book=book,
                           chapter_min_s=0)  # fmt: skip
    want = [readable_heading(s.heading) for s in script.scenes]
    assert [c.title for c in result.chapters] == want == ["Radio Station Kxrt (night)", "Control Room"]
    probe = _probe(out)
    got = sorted((float(c["start_time"]), c["tags"]["title"]) for c in probe["chapters"])
    second = min(ln.start_s for ln in result.lines if ln.scene == 1)
    assert [t for _, t in got] == want
    assert got[0][0] == 0.0 and got[1][0] == pytest.approx(second, abs=0.002)
    tags = {k.lower(): v for k, v in probe["format"].get("tags", {}).items()}
    audio = [s for s in probe["streams"] if s["codec_type"] == "audio"]
    tags |= {k.lower(): v for s in audio for k, v in s.get("tags", {}).items()}
    assert tags.get("title") == "The Last Broadcast" and tags.get("artist") == "A. Writer"
    assert tags.get("album") == "The Last Broadcast"
    f = mutagen.File(out)
    assert f is not None and f.tags is not None
    if suffix in ("mp3", "wav"):
        assert f.tags.getall("APIC")[0].data == cover.read_bytes()
        assert f.tags.getall("CTOC")[0].child_element_ids == ["ch0", "ch1"]
    elif suffix == "flac":
        assert f.pictures[0].data == cover.read_bytes() and f.pictures[0].mime == "image/png"
    elif suffix == "opus":
        assert f.tags["CHAPTER002NAME"] == ["Control Room"] and f.tags["METADATA_BLOCK_PICTURE"]
    else:
        assert bytes(f.tags["covr"][0]) == cover.read_bytes() and f.tags["stik"] == [2]


@pytest.mark.slow
def test_the_render_command_tags_and_chapters_the_mix(tmp_path: Path) -> None:
    import mutagen

    out = tmp_path / "show.mp3"
    cover = _png(tmp_path / "cover.png")
    main = [sys.executable, str(ROOT / "main.py"), "render", str(DEMO), "--voices", "espeak"]
    given = ["--title", "Night Shift", "--author", "K. Writer", "--cover", str(cover)]
    proc = subprocess.run(
        [*main, "-o", str(out), *given], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert "1 chapter(s): 'Radio Station Kxrt (night); Control Room'" in proc.stdout
    f = mutagen.File(out)
    assert str(f.tags["TIT2"]) == "Night Shift" and str(f.tags["TPE1"]) == "K. Writer"
    bad = subprocess.run([*main, "-o", str(tmp_path / "x.mp3"), "--cover", str(tmp_path / "none.jpg")],
                         capture_output=True, text=True, cwd=ROOT, check=False)  # fmt: skip
    assert bad.returncode == 1 and "none.jpg: cannot read the cover" in bad.stderr
    assert "Traceback" not in bad.stderr and not (tmp_path / "x.mp3").exists()


def test_a_wav_past_4_gb_is_kept_untagged(tmp_path: Path) -> None:
    """A 10-hour WAV is RF64, where mutagen has no tag chunk to write: the file is kept as
    it is (the render must not fail on its tags)."""
    import numpy as np
    import soundfile as sf

    from engine.export import FORMATS
    from engine.export.tags import Chapter, tag_file

    path = tmp_path / "long.wav"
    sf.write(path, np.zeros((4800, 2), np.float32), 48_000)
    data = bytearray(path.read_bytes())
    data[:4] = b"RF64"  # what a WAV past 4 GB starts with
    path.write_bytes(bytes(data))
    assert (
        tag_file(path, FORMATS["wav"], book_info({}, "Show"), [Chapter(0.0, "One")], 0.1, "long.wav") is False
    )
    assert path.read_bytes() == bytes(data)
