"""Conversion between integers and Roman numerals."""


def to_roman(number):
    """Returns the Roman numeral for an integer in 1..3999."""
    raise NotImplementedError("to_roman")


def from_roman(numeral):
    """Returns the integer value of a canonical Roman numeral."""
    raise NotImplementedError("from_roman")
