"""Split a line into sentence and clause chunks so the first chunk can play early."""

from __future__ import annotations

import re
from collections.abc import Iterable

_SENTENCE = re.compile(r"(?<=[.!?…])[\"')\]]*\s+(?=\S)")
_CLAUSE = re.compile(r"(?<=[,;:—–])\s+(?=\S)")
MAX_CHUNK_CHARS = 120
"""A sentence longer than this is split again at clause boundaries."""


def split_chunks(text: str, max_chars: int = MAX_CHUNK_CHARS) -> list[str]:
    """Sentences, with long ones broken at clauses; joining the chunks gives the words back."""
    chunks: list[str] = []
    for sentence in _SENTENCE.split(text.strip()):
        sentence = sentence.strip()
        if not sentence:
            continue
        chunks.extend([sentence] if len(sentence) <= max_chars else pack(_CLAUSE.split(sentence), max_chars))
    return chunks


def pack(pieces: Iterable[str], limit: int, first_limit: int | None = None) -> list[str]:
    """Join consecutive pieces with spaces into as few groups as fit `limit` characters each
    (the first group `first_limit`); a piece longer than the limit stands alone."""
    groups: list[str] = []
    current = ""
    for piece in pieces:
        cap = limit if groups or first_limit is None else first_limit
        if current and len(current) + 1 + len(piece) > cap:
            groups.append(current)
            current = piece
        else:
            current = f"{current} {piece}".strip()
    if current:
        groups.append(current)
    return groups
