"""Stems in one pass, clips mode, the disk-space refusal, cancel and disk-full cleanup."""

from __future__ import annotations

import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from engine.cast import Cast
from engine.core.types import SAMPLE_RATE_HZ
from engine.export import ExportError
from engine.mixer import Clip, MixControls, Mixer
from engine.render import RenderCancelled, StemOptions, render_script
from engine.script import load_script
from engine.synthesis.espeak import EspeakSynthesizer

ROOT = Path(__file__).resolve().parents[3]
DEMO = ROOT / "assets" / "demo" / "the_last_broadcast.fountain"


class _Memo(EspeakSynthesizer):
    """espeak-ng, but a line voiced twice gets the same samples (its first call can differ
    by a few frames), so two renders can be compared sample by sample."""

    def __init__(self) -> None:
        self.memo: dict[tuple[str, str], np.ndarray] = {}

    def synthesize(self, batch):  # type: ignore[no-untyped-def]
        out = []
        for r in batch:
            key = (r.text, r.voice.voice_id)
            if key not in self.memo:
                self.memo[key] = EspeakSynthesizer.synthesize(self, [r])[0]
            out.append(self.memo[key])
        return out


@pytest.fixture(scope="module")
def demo():  # type: ignore[no-untyped-def]
    script = load_script(DEMO)
    return script, Cast.auto(script)


@pytest.mark.slow
def test_one_pass_stems_equal_the_per_role_mix(tmp_path: Path, demo) -> None:  # type: ignore[no-untyped-def]
    """Each role's stem from the one-pass render equals that role rendered alone by the
    live mixer from the same line audio (written by a clips-mode render)."""
    script, cast = demo
    synth = _Memo()
    roles = render_script(script, cast, tmp_path / "a.wav", synth, tmp_path / "roles")
    clips = render_script(script, cast, tmp_path / "b.wav", synth, tmp_path / "clips",
                          stems=StemOptions(mode="clips"))  # fmt: skip
    assert [ln.start_s for ln in roles.lines] == [ln.start_s for ln in clips.lines]
    mixer = Mixer(MixControls.from_voices({r: cast[r] for r in script.roles}))
    for ln in clips.lines:
        audio, _ = sf.read(tmp_path / "clips" / f"{ln.cue_index + 1:05d}_{ln.role}.flac", dtype="float32")
        mixer.add(Clip(round(ln.start_s * SAMPLE_RATE_HZ), ln.role, audio, ln.cue_index))
    n = round(roles.duration_s * SAMPLE_RATE_HZ)
    for role in script.roles:
        expected = np.zeros((n, 2), np.float32)
        mixer.render(0, expected, {role})
        stem, _ = sf.read(roles.stems[role], dtype="float32", always_2d=True)
        got = np.repeat(stem, 2, axis=1) if stem.shape[1] == 1 else stem
        # equal (two 24-bit roundings apart) except where a clip file clipped at full scale
        fine = np.abs(expected).max(axis=1) < 0.75
        assert fine.mean() > 0.999
        np.testing.assert_allclose(got[fine], expected[fine], atol=3e-4, err_msg=role)
    assert sorted(p.suffix for p in (tmp_path / "clips").iterdir()) == [".flac"] * len(script.cues) + [
        ".otio", ".rpp"]  # fmt: skip


def test_refuses_a_render_the_disk_cannot_hold(tmp_path: Path, demo) -> None:  # type: ignore[no-untyped-def]
    script, cast = demo
    with pytest.raises(ExportError, match=r"not enough disk space.*needs about .* MB \(mix .*4 stems") as err:
        render_script(script, cast, tmp_path / "m.wav", EspeakSynthesizer(), tmp_path / "stems",
                      stems=StemOptions(format="wav"), free=lambda _p: 20_000_000)  # fmt: skip
    assert "20.0 MB is free" in str(err.value)
    assert list(tmp_path.iterdir()) == []  # refused before writing anything
    # FLAC stems of the same show fit in the same space
    render_script(script, cast, tmp_path / "m.wav", EspeakSynthesizer(), tmp_path / "stems",
                  free=lambda _p: 80_000_000)  # fmt: skip


def test_cancel_mid_render_removes_partial_files_and_says_so(tmp_path: Path, demo) -> None:  # type: ignore[no-untyped-def]
    script, cast = demo
    cancel = threading.Event()
    seen: list[str] = []

    def progress(fraction: float, message: str) -> None:
        seen.append(message)
        if fraction > 0.5:
            cancel.set()

    (tmp_path / "mix.wav").write_bytes(b"an earlier render")
    with pytest.raises(
        RenderCancelled, match=r"render cancelled; removed 5 partial file\(s\): mix\.wav\.partial"
    ):
        render_script(script, cast, tmp_path / "mix.wav", EspeakSynthesizer(), tmp_path / "stems",
                      progress=progress, cancel=cancel)  # fmt: skip
    assert not list(tmp_path.rglob("*.partial")) and not list((tmp_path / "stems").iterdir())
    assert (tmp_path / "mix.wav").read_bytes() == b"an earlier render"  # untouched by the failed render
    assert any("lines voiced" in m for m in seen)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 3 MB tmpfs (needs root and mount rights; skipped where they are missing)."""
    mnt = tmp_path / f"disk-{uuid.uuid4().hex[:6]}"
    mnt.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mnt)],
                          capture_output=True, text=True, check=False)  # fmt: skip
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {proc.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_disk_full_names_the_file_and_cleans_up(small_disk: Path, demo) -> None:  # type: ignore[no-untyped-def]
    script, cast = demo
    out = small_disk / "mix.wav"
    with pytest.raises(ExportError) as err:  # 51 s of 24-bit stereo is 15 MB; the disk has 3
        render_script(script, cast, out, EspeakSynthesizer(), free=lambda _p: 1 << 40)
    message = str(err.value)
    assert message.startswith(f"{out}: disk full") and "removed 1 partial file(s): mix.wav.partial" in message
    assert list(small_disk.iterdir()) == []


def test_ctrl_c_is_a_cancel_that_cleans_up(tmp_path: Path, demo) -> None:  # type: ignore[no-untyped-def]
    script, cast = demo

    def interrupt(fraction: float, _message: str) -> None:
        if fraction > 0.3:
            raise KeyboardInterrupt

    with pytest.raises(
        RenderCancelled, match=r"render interrupted; removed 1 partial file\(s\): m\.flac\.partial"
    ):
        render_script(script, cast, tmp_path / "m.flac", EspeakSynthesizer(), progress=interrupt)
    assert list(tmp_path.iterdir()) == []


def test_a_partial_file_left_by_a_killed_render_goes_at_the_next_run(tmp_path: Path, demo) -> None:  # type: ignore[no-untyped-def]
    script, cast = demo
    out = tmp_path / "m.flac"
    left = tmp_path / "m.flac.partial"
    left.write_bytes(b"\0" * 4096)  # what a SIGKILLed render leaves
    result = render_script(script, cast, out, EspeakSynthesizer())
    assert result.stale_removed == [left]
    assert out.exists() and not left.exists()


@pytest.mark.slow
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGHUP"])
def test_sigterm_and_sighup_end_a_render_like_ctrl_c(tmp_path: Path, sig: str) -> None:
    import os
    import signal
    import sys
    import time

    root = Path(__file__).resolve().parents[3]
    long = tmp_path / "long.txt"
    line = "NARRATOR: The tide comes in across the flats at a walking pace, and the lamp is lit at dusk.\n"
    long.write_text(line * 400, encoding="utf-8")
    out = tmp_path / "out" / "show.flac"
    cmd = [sys.executable, "main.py", "render", str(long), "-o", str(out), "--voices", "espeak"]
    proc = subprocess.Popen(cmd, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (tmp_path / "out" / "show.flac.partial").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()
    os.kill(proc.pid, getattr(signal, sig))
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1 and "render interrupted" in err and "Traceback" not in err, err
    assert not list((tmp_path / "out").glob("*.partial"))
