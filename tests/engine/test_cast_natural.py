"""Casting onto a natural voice library: every role natural, the most-spoken roles never
sharing a voice while there are voices to go round, gender read from the script's own words
with its evidence, and the report `troupe cast --json` prints."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cast import DISTINCT_ROLES, Cast, speaking_order
from engine.cast_report import cast_report
from engine.core.types import Cue, Role, Script
from engine.gender import guess_all_with_evidence
from engine.synthesis.base import VoiceInfo

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = [VoiceInfo("kokoro", f"f{k}", f"F{k}", "en-us", "female") for k in range(12)] + [
    VoiceInfo("kokoro", f"m{k}", f"M{k}", "en-us", "male") for k in range(12)
]


def _script(tmp_path: Path, body: str) -> Script:
    from engine.script import load_script

    path = tmp_path / "play.fountain"
    path.write_text(body, encoding="utf-8")
    return load_script(path)


def _many_roles(n: int, lines_each: int = 1) -> Script:
    cues, roles = [], {}
    for k in range(n):
        name = f"ROLE {k:02d}"
        roles[name] = Role(name, name)
        for j in range(lines_each + (n - k)):  # ROLE 00 speaks most
            cues.append(Cue(index=len(cues), role=name, text=f"Line {j} of {name}.", scene=0, line=1))
    return Script(title="made", path="<made>", format="text", scenes=(), cues=tuple(cues), roles=roles)


def test_every_role_gets_a_library_voice_and_the_leads_never_share() -> None:
    script = _many_roles(40)
    cast = Cast.auto(script, natural=LIBRARY)
    assert {v.backend for v in cast.voices.values()} == {"kokoro"}  # no espeak-ng role
    order = speaking_order(script)
    top = [cast[n].voice_id for n in order[:DISTINCT_ROLES]]
    assert len(set(top)) == len(top)
    first24 = [cast[n].voice_id for n in order[:24]]
    assert len(set(first24)) == 24  # every voice used once before any is shared
    shared = [(v.voice_id, v.pitch) for v in cast.voices.values()]
    assert len(set(shared)) == len(shared)  # a shared voice at another pitch: another character
    assert Cast.auto(script, natural=LIBRARY).voices == cast.voices  # stable
    for v in cast.voices.values():  # sharing: another size of speaker (resampled), not only a pitch
        assert v.pitch_range == v.pitch, v


def test_a_shared_library_voice_is_another_size_and_stand_ins_keep_the_gender() -> None:
    """Roles sharing a library voice of their gender move pitch and timbre together (a
    resampling: another speaker, no pitch shifter heard); on a Piper voice, whose stand-in
    reads the gender from the timbre, in pitch alone, so a stand-in for any of them, hinted
    lines too, speaks in the role's gender."""
    from engine.cast import natural_voice
    from engine.synthesis.delivery import delivered_voice
    from engine.synthesis.espeak import stand_in

    roles = [Role(f"ROLE {k}", f"ROLE {k}") for k in range(8)]
    one_man = [VoiceInfo("kokoro", "ellis", "Ellis", "en-us", "male")]
    taken: set[str] = set()
    sizes = [(v.pitch, v.pitch_range) for v in (natural_voice(r, "m", one_man, taken) for r in roles)]
    assert len(set(sizes)) == 7 and all(p == t for p, t in sizes)  # 7 sizes, then shared as is
    joe = [VoiceInfo("piper", "en_US-joe-medium", "joe", "en-us", "male")]
    for gender, espeak in (("m", "en-us+m3"), ("f", "en-us+f3")):
        taken = set()
        voices = [natural_voice(r, gender, joe, taken) for r in roles]
        assert len({v.pitch for v in voices}) >= 5 and len({v.pitch_range for v in voices}) == 1
        for v in voices:
            for hints in ((), ("shouting",), ("sadly",), ("softly", "excited")):
                assert stand_in(delivered_voice(v, hints)).voice_id == espeak, (v, hints)

    from engine.cast import MAX_SHARED_RESAMPLE_ST, shared_offsets
    from engine.synthesis.piper.library import shipped_designs

    # a voice designed on joe (resampled) has its own gender, like a library voice: sized
    design = next(iter(shipped_designs().values()))
    on_design = [VoiceInfo("piper", design.id, design.name, "en-us", design.gender, design.resample_st)]
    taken = set()
    voices = [natural_voice(r, "m", on_design, taken) for r in roles]
    sizes = {(v.pitch, v.pitch_range) for v in voices}
    assert len(sizes) == len(shared_offsets(design.resample_st)) >= 5
    assert all(v.pitch == v.pitch_range for v in voices)
    assert {stand_in(v).voice_id for v in voices} == {"en-us+m3"}
    from engine.synthesis.effects import semitones_for

    for d in shipped_designs().values():  # no female voice offered: moved, its own size counted
        voice = [VoiceInfo("piper", d.id, d.name, "en-us", d.gender, d.resample_st)]
        woman = natural_voice(Role("NORA", "NORA"), "f", voice, set())
        assert woman.pitch == 80 and stand_in(woman).voice_id == "en-us+f3"
        assert abs(d.resample_st + semitones_for(woman.pitch_range)) <= MAX_SHARED_RESAMPLE_ST
        assert woman.pitch_range == min(64, int(50 + (MAX_SHARED_RESAMPLE_ST - d.resample_st) / 0.12 + 1e-9))

    small = shared_offsets(5.04)  # hugo's sharers: none resampled past the limit in all
    assert small[0] == 50 and len(small) == 5
    assert all(abs(5.04 + semitones_for(o)) <= MAX_SHARED_RESAMPLE_ST for o in small)


def test_roles_sharing_a_resampled_library_voice_are_sized_back_toward_its_voicing() -> None:
    """A library voice already resampled deep (or small) is shared at sizes back toward its
    voicing first, so the first sharers stay within 3 semitones of resampling in all; the
    voice's own list reports how far it is resampled."""
    from engine.cast import natural_voice
    from engine.synthesis.effects import semitones_for
    from engine.synthesis.kokoro.onnx_model import kokoro_voices
    from engine.synthesis.kokoro.voices import VoiceBank

    deep = next(v for v in kokoro_voices(VoiceBank()) if v.voice_id == "desmond")
    assert deep.resampled_st < -1.5
    roles = [Role(f"ROLE {k}", f"ROLE {k}") for k in range(7)]
    for voice, side in ((deep, 1), (VoiceInfo("kokoro", "big", "Big", "en-us", "male", 2.0), -1)):
        taken: set[str] = set()
        sizes = [natural_voice(r, "m", [voice], taken).pitch_range for r in roles]
        assert sizes[0] == 50 and len(set(sizes)) == 7
        assert all((t - 50) * side > 0 for t in sizes[1:4]), sizes  # toward its voicing first
        assert all(abs(voice.resampled_st + semitones_for(t)) < 3 for t in sizes[:4])
    taken = set()
    level = [natural_voice(r, "m", [VoiceInfo("kokoro", "m0", "M0", "en-us", "male", 0.4)], taken).pitch_range
             for r in roles[:3]]  # fmt: skip
    assert level == [50, 42, 58]  # a voice resampled less than a step: down, then up


def test_more_leads_of_one_gender_than_voices_share_only_then() -> None:
    script = _many_roles(14)
    two_women = LIBRARY[:2] + LIBRARY[12:]
    cast = Cast.auto(script, natural=two_women)
    ids = [cast[n].voice_id for n in speaking_order(script)[:DISTINCT_ROLES]]
    assert len(set(ids)) == DISTINCT_ROLES  # unknown genders: any voice, all distinct


SCREENPLAY = """INT. KITCHEN - NIGHT

DANNY (17) slams the door. His mother SANDRA stands at the sink; he gets a glass of water.

SANDRA
Where were you?

DANNY
Out.

YOUNG SANDRA
I never stayed out this late.

DR. OKAFOR checks the chart. The doctor looks up.

DR. OKAFOR
He will be fine.

KELLY (30s) drops her keys on the table.

KELLY
Morning.

MRS. PRICE
Tea?
"""


def test_gender_evidence_from_the_script_itself(tmp_path: Path) -> None:
    script = _script(tmp_path, SCREENPLAY)
    guesses = guess_all_with_evidence(script)
    assert guesses["SANDRA"].gender == "f"  # "his mother SANDRA" outweighs "he gets"
    assert any("mother" in e for e in guesses["SANDRA"].evidence)
    assert guesses["DANNY"].gender == "m"
    assert guesses["YOUNG SANDRA"].gender == "f" and guesses["YOUNG SANDRA"].evidence[0] == "follows SANDRA"
    assert guesses["DR. OKAFOR"].gender is None  # a title that says nothing, a name not on the list
    assert guesses["KELLY"].gender == "f"
    assert guesses["MRS. PRICE"].gender == "f"
    cast = Cast.auto(script, natural=LIBRARY)
    assert cast["SANDRA"].voice_id.startswith("f") and cast["DANNY"].voice_id.startswith("m")


@pytest.mark.slow
def test_cast_command_prints_each_role_its_voice_and_why(tmp_path: Path) -> None:
    path = tmp_path / "play.fountain"
    path.write_text(SCREENPLAY, encoding="utf-8")
    out = subprocess.run([sys.executable, str(ROOT / "main.py"), "cast", str(path), "--json"],
                         capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    rows = {r["role"]: r for r in json.loads(out.stdout)}
    assert set(rows) == {"SANDRA", "DANNY", "YOUNG SANDRA", "DR. OKAFOR", "KELLY", "MRS. PRICE"}
    assert rows["SANDRA"]["gender"] == "female" and rows["SANDRA"]["evidence"]
    draft = subprocess.run([sys.executable, str(ROOT / "main.py"), "cast", str(path), "--voices", "espeak",
                            "--json"], capture_output=True, text=True, timeout=120, check=True)  # fmt: skip
    assert {r["voice"].split(":")[0] for r in json.loads(draft.stdout)} == {"espeak"}


def test_report_lists_the_most_spoken_first(tmp_path: Path) -> None:
    script = _script(tmp_path, SCREENPLAY)
    rows = cast_report(script, Cast.auto(script, natural=LIBRARY), LIBRARY)
    assert [r["role"] for r in rows] == speaking_order(script)
    assert all(r["voice_gender"] in ("female", "male") for r in rows)


def test_roles_past_the_voices_are_spread_evenly_over_them() -> None:
    """Roles past the voices: no voice carries more than one role over any other of its
    gender (by the name's hash alone, a 47-role script left one voice with 7 roles and another
    with 1)."""
    from collections import Counter

    from engine.cast import natural_voice

    men = LIBRARY[12:20]
    for n_roles in (9, 30, 47):
        taken: set[str] = set()
        voices = [natural_voice(Role(f"ROLE {k}", f"ROLE {k}"), "m", men, taken) for k in range(n_roles)]
        load = Counter(v.voice_id for v in voices)
        assert set(load) == {v.voice_id for v in men} and max(load.values()) - min(load.values()) <= 1, load
        assert len({(v.voice_id, v.pitch) for v in voices}) == n_roles  # each its own size
