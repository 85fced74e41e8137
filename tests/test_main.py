"""`main.py`'s settings: every numeric option takes bad input with one clear line."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("troupe_main", ROOT / "main.py")
assert _spec is not None and _spec.loader is not None
main = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(main)


@pytest.mark.parametrize(("argv", "message"), [
    (["render", "-o", "x.wav", "--processes", "0"], "--processes: expected 1 to 64 processes, got 0"),
    (["serve", "--processes", "1.5"], "--processes: expected a whole number of processes, got '1.5'"),
    (["render", "-o", "x.wav", "--gap", "-1"], "--gap: expected 0 to 10 seconds, got -1"),
    (["play", "--block", "-5"], "--block: expected 16 to 8192 frames, got -5"),
    (["play", "--block", "x"], "--block: expected a whole number of frames, got 'x'"),
    (["play", "--seconds", "-1"], "--seconds: expected 0 to 86400 seconds, got -1"),
    (["serve", "--port", "99999"], "--port: expected 1 to 65535, got 99999"),
    (["serve", "--metrics-port", "-1"], "--metrics-port: expected 0 to 65535, got -1"),
    (["probe", "--duration", "nan-ish"], "--duration: expected a number of seconds, got 'nan-ish'"),
    (["build-engine", "--weights", ".", "--max-batch", "300"], "--max-batch: expected 1 to 256 lines"),
])  # fmt: skip
def test_bad_setting_is_one_clear_line(argv: list[str], message: str,
                                       capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    with pytest.raises(SystemExit) as exit_:
        main.build_parser().parse_args(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_good_settings_parse() -> None:
    args = main.build_parser().parse_args(["play", "--block", "512", "--seconds", "2.5", "--processes", "4"])
    assert (args.block, args.seconds, args.processes) == (512, 2.5, 4)


def test_bad_setting_from_the_command_line() -> None:
    proc = subprocess.run([sys.executable, str(ROOT / "main.py"), "play", "--block", "0"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "--block: expected 16 to 8192 frames, got 0" in proc.stderr


def test_the_demo_is_cast_to_natural_voices_and_the_draft_to_espeak(
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = main.build_parser().parse_args(["render", "-o", "x.wav"])
    _script, cast, _edits = main._load(args)
    backends = {v.backend for v in cast.voices.values()}
    assert "espeak" not in backends and backends <= {"kokoro", "piper"}
    assert main._with_natural(main._synth(1), cast).synths.keys() == {"espeak"} | backends  # it stands in
    draft = main._load(main.build_parser().parse_args(["render", "-o", "x.wav", "--voices", "espeak"]))[1]
    assert {v.backend for v in draft.voices.values()} == {"espeak"}
    main.cmd_voices(main.build_parser().parse_args(["voices"]))
    assert capsys.readouterr().out.startswith("piper:en_US-joe-medium")
