"""Behavioural checks for /app/stats.py."""
import sys

sys.path.insert(0, "/app")
import stats  # noqa: E402

failures = []


def check(name, got, want):
    if got != want:
        failures.append(f"{name}: got {got!r}, want {want!r}")


check("odd sorted", stats.median([1, 2, 3]), 2)
check("odd unsorted", stats.median([120, 85, 97, 240, 101]), 101)
check("even unsorted", stats.median([300, 120, 180, 90]), 150.0)
check("even pair", stats.median([2, 1]), 1.5)
check("single", stats.median([12]), 12)
check("negatives", stats.median([-5, -1, -3, 10]), -2.0)
check("floats", stats.median([0.5, 0.25, 0.75]), 0.5)
check("tuple input", stats.median((4, 8, 6, 2)), 5.0)

data = [5, 3, 9, 1]
stats.median(data)
check("input untouched", data, [5, 3, 9, 1])

try:
    stats.median([])
    failures.append("empty: no ValueError raised")
except ValueError:
    pass
except Exception as err:  # noqa: BLE001
    failures.append(f"empty: raised {type(err).__name__}, want ValueError")

check("mean unchanged", stats.mean([1, 2, 3, 4]), 2.5)
check("range unchanged", stats.value_range([7, 3, 10]), 7)

for failure in failures:
    print("FAIL", failure)
if failures:
    sys.exit(1)
print("PASS")
