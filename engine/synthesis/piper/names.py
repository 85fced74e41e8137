"""What a Piper voice's name tells: the speaker's gender, for casting."""

from __future__ import annotations

KNOWN_GENDERS = {
    "joe": "male", "ryan": "male", "john": "male", "norman": "male", "bryce": "male", "danny": "male",
    "kusal": "male", "hfc_male": "male", "alan": "male", "lessac": "female", "amy": "female",
    "kristin": "female", "kathleen": "female", "ljspeech": "female", "hfc_female": "female",
    "jenny_dioco": "female", "southern_english_female": "female", "alba": "female", "cori": "female",
}  # fmt: skip
"""Dataset name (the middle of `en_US-joe-medium`) -> the speaker's gender, for casting."""


def voice_gender(voice_id: str) -> str:
    """'male', 'female' or '' for a Piper voice name such as `en_US-joe-medium`."""
    parts = voice_id.split("#")[0].split("-")
    return KNOWN_GENDERS.get(parts[1] if len(parts) >= 3 else parts[0], "")
