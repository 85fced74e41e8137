"""Text as it is heard: lower case, no punctuation, numbers spelled out, so a script line and
what a recogniser wrote down can be compared word for word."""

from __future__ import annotations

import re
import unicodedata

_ONES = [
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
    "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
]  # fmt: skip
_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_SCALES = ((10**12, "trillion"), (10**9, "billion"), (10**6, "million"), (1000, "thousand"))
_ORDINAL = {"one": "first", "two": "second", "three": "third", "five": "fifth", "eight": "eighth",
            "nine": "ninth", "twelve": "twelfth"}  # fmt: skip
_SYMBOLS = {"%": " percent ", "&": " and ", "+": " plus ", "@": " at "}
_TOKEN = re.compile(r"\d+(?:[.,]\d+)*(?:st|nd|rd|th)?|[^\W\d_]+(?:'[^\W\d_]+)*", re.UNICODE)
_ORD_SUFFIX = re.compile(r"^(\d+)(st|nd|rd|th)$")


def _under_thousand(n: int) -> list[str]:
    words: list[str] = []
    if n >= 100:
        words += [_ONES[n // 100], "hundred"]
        n %= 100
    if n >= 20:
        words.append(_TENS[n // 10])
        n %= 10
        if n:
            words.append(_ONES[n])
    elif n or not words:
        words.append(_ONES[n])
    return words


def number_words(n: int) -> list[str]:
    """12 -> ['twelve']; 2024 -> ['two', 'thousand', 'twenty', 'four'] (no 'and')."""
    if n < 1000:
        return _under_thousand(n)
    words: list[str] = []
    for scale, name in _SCALES:
        if n >= scale:
            words += [*number_words(n // scale), name]
            n %= scale
    if n:
        words += _under_thousand(n)
    return words


def ordinal_words(n: int) -> list[str]:
    """12 -> ['twelfth']; 21 -> ['twenty', 'first']."""
    words = number_words(n)
    last = words[-1]
    if last in _ORDINAL:
        words[-1] = _ORDINAL[last]
    elif last.endswith("y"):
        words[-1] = last[:-1] + "ieth"
    else:
        words[-1] = last + "th"
    return words


def _digits(token: str) -> list[str]:
    m = _ORD_SUFFIX.match(token)
    if m:
        return ordinal_words(int(m.group(1)))
    if "." in token and token.count(".") == 1:  # a decimal: 3.5 -> three point five
        whole, frac = token.split(".")
        return [*_digits(whole), "point", *(_ONES[int(d)] for d in frac)]
    digits = token.replace(",", "").replace(".", "")
    if len(digits) > 15:  # an identifier, not an amount: digit by digit
        return [_ONES[int(d)] for d in digits]
    return number_words(int(digits))


def normalise(text: str) -> list[str]:
    """The words of `text` as spoken: 'Room 12, at 3.5%!' -> room twelve at three point five percent."""
    text = unicodedata.normalize("NFKC", text).lower().replace("’", "'").replace("‘", "'")
    for symbol, spoken in _SYMBOLS.items():
        text = text.replace(symbol, spoken)
    words: list[str] = []
    for token in _TOKEN.findall(text):
        if token[0].isdigit():
            words += _digits(token)
        else:
            words.append(token)
    return words
