"""SSML and the pronunciation lexicon through the speech server (a real uvicorn)."""

from __future__ import annotations

import io
from pathlib import Path

import httpx
import pytest
import soundfile as sf
from live_server import LiveServer

from engine.core.errors import ScriptError
from engine.server import SpeechService, SpeechSettings
from engine.synthesis import lexicon


def _cast(server: LiveServer, role: str) -> None:
    assert httpx.put(f"{server.url}/v1/roles/{role}", json={}, timeout=10).status_code == 200


def _seconds(server: LiveServer, text: str) -> float:
    r = httpx.get(f"{server.url}/tts", params={"role": "ssml", "text": text}, timeout=60)
    assert r.status_code == 200, r.text
    audio, rate = sf.read(io.BytesIO(r.content))
    return len(audio) / rate


def test_ssml_breaks_are_silence_and_prosody_changes_the_rate(live_server: LiveServer) -> None:
    _cast(live_server, "ssml")
    plain = _seconds(live_server, "<speak>Hold the line.</speak>")
    with_break = _seconds(live_server, '<speak>Hold the line.<break time="1500ms"/></speak>')
    assert 1.4 < with_break - plain < 1.6  # the break is 1.5 s of silence, not spoken
    slow = _seconds(live_server, '<speak><prosody rate="50%">Hold the line.</prosody></speak>')
    assert slow > 1.3 * plain


def test_bad_ssml_is_a_400_naming_the_element(live_server: LiveServer) -> None:
    _cast(live_server, "ssml")
    r = httpx.get(
        f"{live_server.url}/tts", params={"role": "ssml", "text": "<speak><bogus>x</bogus></speak>"}
    )
    assert r.status_code == 400 and "bogus" in r.json()["error"]["message"]


def test_the_lexicon_is_read_and_replaced_over_http(live_server: LiveServer) -> None:
    try:
        r = httpx.put(f"{live_server.url}/v1/lexicon", json={"lexicon": {"Worcester": "/ˈwʊstər/"}})
        assert r.status_code == 200 and r.json()["lexicon"]["worcester"] == "/ˈwʊstər/"
        assert lexicon.prepare("To Worcester.") == "To [Worcester](/ˈwʊstər/)."
        got = httpx.get(f"{live_server.url}/v1/lexicon").json()["lexicon"]
        assert got.get("worcester") == "/ˈwʊstər/"
        bad = httpx.put(f"{live_server.url}/v1/lexicon", json={"lexicon": {"two words!": "x"}})
        assert bad.status_code == 400 and "not a word" in bad.json()["error"]["message"]
        assert httpx.put(f"{live_server.url}/v1/lexicon", json={"lexicon": 3}).status_code == 400
    finally:
        lexicon.use_project_lexicon(lexicon.Lexicon())


def test_a_symlink_loop_in_the_scripts_folder_is_a_script_error(tmp_path: Path) -> None:
    (tmp_path / "loop.fountain").symlink_to(tmp_path / "loop.fountain")
    service = SpeechService(SpeechSettings(scripts_dir=tmp_path, neural=False))
    try:
        with pytest.raises(ScriptError, match="not a usable file path"):  # a 400, never a 500
            service.load_script("loop.fountain")
    finally:
        service.close()
