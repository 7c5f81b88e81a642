"""Small descriptive statistics used by the nightly reporting job."""


def mean(values):
    """Returns the arithmetic mean of a non-empty sequence of numbers."""
    if not values:
        raise ValueError("mean of empty data")
    return sum(values) / len(values)


def median(values):
    """Returns the median of a non-empty sequence of numbers."""
    n = len(values)
    return values[n // 2]


def value_range(values):
    """Returns max - min of a non-empty sequence of numbers."""
    if not values:
        raise ValueError("range of empty data")
    return max(values) - min(values)
