#!/usr/bin/env bash
# Oracle for fix-median: replace the median function with a correct one.
set -euo pipefail
python3 - <<'PY'
import re

path = "/app/stats.py"
source = open(path, encoding="utf-8").read()
fixed = '''def median(values):
    """Returns the median of a non-empty sequence of numbers."""
    if not values:
        raise ValueError("median of empty data")
    ordered = sorted(values)
    n = len(ordered)
    middle = n // 2
    if n % 2:
        return ordered[middle]
    return (ordered[middle - 1] + ordered[middle]) / 2
'''
source, count = re.subn(r"def median\(values\):\n(?:    .*\n|\n(?=    ))*", fixed, source)
if count != 1:
    raise SystemExit("median function not found")
open(path, "w", encoding="utf-8").write(source)
PY
