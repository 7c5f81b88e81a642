#!/usr/bin/env bash
# Oracle for csv-summary: aggregate with Python's csv module (handles quoted commas).
set -euo pipefail
python3 - <<'PY'
import csv
from decimal import Decimal

totals = {}
with open("/app/sales.csv", newline="") as f:
    for row in csv.DictReader(f):
        t = totals.setdefault(row["region"], [0, 0, Decimal("0")])
        units = int(row["units"])
        t[0] += 1
        t[1] += units
        t[2] += units * Decimal(row["unit_price"])

with open("/app/summary.csv", "w", newline="") as f:
    f.write("region,orders,units,revenue\n")
    for region in sorted(totals):
        orders, units, revenue = totals[region]
        f.write(f"{region},{orders},{units},{revenue.quantize(Decimal('0.01'))}\n")
PY
