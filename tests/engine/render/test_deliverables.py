"""Deliverables: the OTIO timeline read back against the cue sheet, an M4B audiobook with
chapters and tags read back with mutagen, a loudness-normalised mix, MP3 and Opus mixes."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from engine.cast import Cast
from engine.export import ExportError, available_formats
from engine.export.loudness import PRESETS
from engine.render import StemOptions, render_script
from engine.render.chapters import readable_heading
from engine.script import load_script
from engine.synthesis.espeak import EspeakSynthesizer

otio = pytest.importorskip("opentimelineio")
ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "assets" / "demo" / "the_last_broadcast.fountain"


@pytest.fixture(scope="module")
def demo():  # type: ignore[no-untyped-def]
    script = load_script(DEMO)
    return script, Cast.auto(script)


def _cue_sheet(path: Path) -> list[tuple[str, float, float]]:
    """(role, start, end) of every SRT entry."""
    out = []
    for block in path.read_text().strip().split("\n\n"):
        _, times, text = block.split("\n", 2)
        a, b = (sum(float(x) * m for x, m in zip(re.split(r"[:,]", t)[:3], (3600, 60, 1), strict=True))
                + int(t[-3:]) / 1000 for t in times.split(" --> "))  # fmt: skip
        out.append((text[1 : text.index("]")], a, b))
    return out


@pytest.mark.parametrize("mode", ["roles", "clips"])
def test_otio_timeline_reads_back_with_the_cue_sheet_times(tmp_path: Path, demo, mode: str) -> None:  # type: ignore[no-untyped-def]
    script, cast = demo
    result = render_script(script, cast, tmp_path / "mix.wav", EspeakSynthesizer(), tmp_path / "daw",
                           stems=StemOptions(mode=mode))  # fmt: skip
    assert result.timeline == tmp_path / "daw" / "timeline.otio"
    timeline = otio.adapters.read_from_file(str(result.timeline))
    tracks = {t.name: t for t in timeline.tracks}
    assert set(tracks) == {*script.roles, "MIX"}
    placed = []
    for role in script.roles:
        for clip in tracks[role].find_clips():
            where = tracks[role].range_of_child(clip)
            media = tmp_path / "daw" / clip.media_reference.target_url
            assert media.is_file(), media
            if mode == "clips":  # the clip's own file holds exactly the line
                assert sf.info(str(media)).duration == pytest.approx(where.duration.to_seconds(), abs=1e-4)
            start = where.start_time.to_seconds()
            placed.append((role, start, start + where.duration.to_seconds()))
    sheet = _cue_sheet(result.cue_sheet)  # type: ignore[arg-type]
    assert len(placed) == len(sheet) == len(script.cues)
    lines = sorted(result.lines, key=lambda ln: ln.start_s)
    for got, ln in zip(sorted(placed, key=lambda r: r[1]), lines, strict=True):  # the clips as placed
        assert got == (
            ln.role,
            pytest.approx(ln.start_s, abs=1e-4),
            pytest.approx(ln.start_s + ln.duration_s, abs=1e-4),
        )
    for want, ln in zip(sheet, lines, strict=True):  # the cue sheet: from the speech's onset (SRT keeps ms)
        assert want[0] == ln.role and ln.start_s <= ln.onset_s < ln.start_s + ln.duration_s
        assert want[1:] == pytest.approx((ln.onset_s, ln.start_s + ln.duration_s), abs=0.0011)
    markers = [m.name for m in timeline.tracks.markers]
    assert markers == [s.heading for s in script.scenes]
    assert (tmp_path / "daw" / "timeline.rpp").read_text().count("<ITEM") == len(script.cues) + 1


@pytest.mark.slow
@pytest.mark.skipif("m4a" not in available_formats(), reason="needs ffmpeg with AAC")
def test_m4b_audiobook_has_scene_chapters_and_title_page_tags(tmp_path: Path, demo) -> None:  # type: ignore[no-untyped-def]
    from mutagen.mp4 import MP4

    script, cast = demo
    out = tmp_path / "book.m4b"
    result = render_script(script, cast, out, EspeakSynthesizer(), loudness=PRESETS["acx"], chapter_min_s=0)
    book = MP4(out)
    assert book.info.length == pytest.approx(result.duration_s, abs=0.1)
    chapters = [(c.start, c.title) for c in book.chapters]
    assert [t for _, t in chapters] == [readable_heading(s.heading) for s in script.scenes]
    second = min(ln.start_s for ln in result.lines if ln.scene == 1)
    assert chapters[0][0] == 0.0 and chapters[1][0] == pytest.approx(second, abs=0.002)
    assert book.tags["\xa9nam"] == ["The Last Broadcast"] and book.tags["\xa9ART"] == ["Troupe demo"]
    assert book.tags["stik"] == [2]  # an audiobook
    # no premaster left; the compliance report beside the book
    assert sorted(p.name for p in tmp_path.iterdir()) == ["book.loudness.json", "book.m4b", "book.srt"]


def test_audiobook_without_ffmpeg_says_what_it_needs(tmp_path: Path, demo, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import engine.export.formats as formats

    monkeypatch.setattr(formats, "ffmpeg_path", lambda: None)
    script, cast = demo
    with pytest.raises(ExportError, match=r"book\.m4b: m4a needs ffmpeg with its AAC encoder"):
        render_script(script, cast, tmp_path / "book.m4b", EspeakSynthesizer())
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
@pytest.mark.parametrize("preset", ["ebu", "podcast", "acx"])
def test_normalised_mix_is_within_half_a_lu(tmp_path: Path, demo, preset: str) -> None:  # type: ignore[no-untyped-def]
    """EBU and podcast aim at an integrated loudness; ACX at a plain RMS inside -23..-18 dB."""
    import pyloudnorm
    import scipy.signal

    script, cast = demo
    target = PRESETS[preset]
    result = render_script(script, cast, tmp_path / "mix.flac", EspeakSynthesizer(), loudness=target)
    mix, rate = sf.read(result.path, dtype="float64")
    if target.rms_db is None:
        assert pyloudnorm.Meter(rate).integrated_loudness(mix) == pytest.approx(target.lufs, abs=0.5)
        assert result.loudness_gain_db == pytest.approx(target.lufs - (result.loudness_measured_lufs or 0))
    else:
        rms = 10 * np.log10(np.mean(mix**2))
        assert target.rms_db[0] <= rms <= target.rms_db[1]
    true_peak = np.abs(scipy.signal.resample_poly(mix, 4, 1, axis=0)).max()
    assert 20 * np.log10(true_peak) <= target.true_peak_db + 0.05


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".mp3", ".opus"])
def test_lossy_mix_decodes_to_the_show(tmp_path: Path, demo, suffix: str) -> None:  # type: ignore[no-untyped-def]
    script, cast = demo
    result = render_script(script, cast, tmp_path / f"mix{suffix}", EspeakSynthesizer())
    mix, rate = sf.read(result.path, dtype="float32")
    assert rate == 48_000 and mix.shape[1] == 2
    assert len(mix) / rate == pytest.approx(result.duration_s, abs=0.1)
    assert np.sqrt(np.mean(mix**2)) > 0.01
