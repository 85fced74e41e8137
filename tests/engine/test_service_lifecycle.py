"""The troupe's start and exit: neural models load only for a role cast to them, and a
load in progress never outlives `Engine.close` or the interpreter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from engine.synthesis.kokoro import onnx_available

ROOT = Path(__file__).resolve().parents[2]

_PROGRAM = """
import json, os, sys, threading
from engine.control import Troupe, EngineSettings

def loading():
    return [t for t in threading.enumerate() if t.name == "troupe-kokoro-warmup"]

project = sys.argv[1]  # the demo with every role saved on espeak-ng (the draft cast)
roles = ("IRIS", "OWEN", "CALLER", "NARRATOR")
json.dump({"troupe_project": 1, "script": os.path.abspath("assets/demo/the_last_broadcast.fountain"),
           "cast": {r: {"voice_id": "en-us+m3"} for r in roles}}, open(project, "w"))
e = Troupe(EngineSettings())
assert "kokoro" in e.engine.scheduler.backends
e.projects.open(project).result(60)
assert not loading(), "a model loaded for an espeak-ng cast"
e.casting.set_voice("IRIS", voice_id="kokoro:jf_alpha")
e.engine.call(lambda: None)
threads = loading()
assert threads, "casting a role to kokoro did not start its model loading"
e.close()  # at once, while the model is still loading
assert not threads[0].is_alive()
print("clean")
"""


@pytest.mark.slow
@pytest.mark.skipif(not onnx_available(), reason="the neural extra is not installed")
def test_model_loads_when_cast_and_close_waits_for_it(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", _PROGRAM, str(tmp_path / "draft.troupe.json")],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("clean")
