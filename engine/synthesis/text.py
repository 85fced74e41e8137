"""Split a line into sentence and clause chunks so the first chunk can play early."""

from __future__ import annotations

import re

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
        if len(sentence) <= max_chars:
            chunks.append(sentence)
            continue
        current = ""
        for clause in _CLAUSE.split(sentence):
            if current and len(current) + 1 + len(clause) > max_chars:
                chunks.append(current)
                current = clause
            else:
                current = f"{current} {clause}".strip()
        if current:
            chunks.append(current)
    return chunks
