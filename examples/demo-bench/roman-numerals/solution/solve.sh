#!/usr/bin/env bash
# Oracle for roman-numerals: greedy conversion; parsing validated by round trip.
set -euo pipefail
cat > /app/roman.py <<'PY'
"""Conversion between integers and Roman numerals."""

_SYMBOLS = [
    (1000, "M"), (900, "CM"), (500, "D"), (400, "CD"),
    (100, "C"), (90, "XC"), (50, "L"), (40, "XL"),
    (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"),
]
_VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def to_roman(number):
    """Returns the Roman numeral for an integer in 1..3999."""
    if not isinstance(number, int) or not 1 <= number <= 3999:
        raise ValueError(f"{number!r} is outside 1..3999")
    parts = []
    for value, symbol in _SYMBOLS:
        count, number = divmod(number, value)
        parts.append(symbol * count)
    return "".join(parts)


def from_roman(numeral):
    """Returns the integer value of a canonical Roman numeral."""
    if not isinstance(numeral, str) or not numeral or any(c not in _VALUES for c in numeral):
        raise ValueError(f"{numeral!r} is not a Roman numeral")
    total = 0
    for current, following in zip(numeral, numeral[1:] + " "):
        value = _VALUES[current]
        total += -value if following != " " and value < _VALUES[following] else value
    if not 1 <= total <= 3999 or to_roman(total) != numeral:
        raise ValueError(f"{numeral!r} is not a canonical Roman numeral")
    return total
PY
