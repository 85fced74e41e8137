"""Word error rate: how far what was heard is from what was written, in words."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

Op = tuple[int | None, int | None]
"""One step of an alignment: (reference index, hypothesis index); None on the side without a word."""


@dataclass(frozen=True)
class WordErrors:
    """Edits that turn the reference words into the hypothesis words."""

    substitutions: int
    deletions: int
    """Reference words not heard (a dropped word)."""
    insertions: int
    n_reference: int

    @property
    def wer(self) -> float:
        """(S + D + I) / N; 0 for two empty texts, 1 per inserted word when the reference is empty."""
        errors = self.substitutions + self.deletions + self.insertions
        return errors / self.n_reference if self.n_reference else float(errors)


def align(ref: Sequence[str], hyp: Sequence[str]) -> list[Op]:
    """A minimum-edit alignment of two word lists (Levenshtein, ties prefer a match/substitution)."""
    n, m = len(ref), len(hyp)
    cost = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n + 1):
        cost[i][0] = i
    for j in range(m + 1):
        cost[0][j] = j
    for i in range(1, n + 1):
        row, prev = cost[i], cost[i - 1]
        for j in range(1, m + 1):
            row[j] = min(prev[j - 1] + (ref[i - 1] != hyp[j - 1]), prev[j] + 1, row[j - 1] + 1)
    ops: list[Op] = []
    i, j = n, m
    while i or j:
        if i and j and cost[i][j] == cost[i - 1][j - 1] + (ref[i - 1] != hyp[j - 1]):
            i, j = i - 1, j - 1
            ops.append((i, j))
        elif i and cost[i][j] == cost[i - 1][j] + 1:
            i -= 1
            ops.append((i, None))
        else:
            j -= 1
            ops.append((None, j))
    ops.reverse()
    return ops


def word_errors(ref: Sequence[str], hyp: Sequence[str]) -> WordErrors:
    s = d = ins = 0
    for i, j in align(ref, hyp):
        if i is None:
            ins += 1
        elif j is None:
            d += 1
        elif ref[i] != hyp[j]:
            s += 1
    return WordErrors(s, d, ins, len(ref))


def wer(ref: Sequence[str], hyp: Sequence[str]) -> float:
    return word_errors(ref, hyp).wer
