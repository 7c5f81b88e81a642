#!/usr/bin/env bash
# Oracle for dedupe-records: group by normalised e-mail, order by parsed time.
set -euo pipefail
python3 - <<'PY'
import csv
from datetime import datetime, timezone


def parse_time(text):
    for layout in ("%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%d %H:%M"):
        try:
            return datetime.strptime(text.strip(), layout).replace(tzinfo=timezone.utc)
        except ValueError:
            pass
    raise ValueError(f"unknown timestamp {text!r}")


groups = {}
with open("/app/customers.csv", newline="", encoding="utf-8") as f:
    for row in csv.DictReader(f):
        row["email"] = row["email"].strip().lower()
        row["when"] = parse_time(row["updated_at"])
        groups.setdefault(row["email"], []).append(row)

merged = []
for email, rows in groups.items():
    rows.sort(key=lambda r: r["when"], reverse=True)
    newest = rows[0]
    phone = next((r["phone"] for r in rows if r["phone"].strip()), "")
    merged.append({
        "id": min(int(r["id"]) for r in rows),
        "name": newest["name"],
        "email": email,
        "phone": phone,
        "updated_at": newest["when"].strftime("%Y-%m-%dT%H:%M:%SZ"),
    })

with open("/app/customers_clean.csv", "w", newline="", encoding="utf-8") as f:
    writer = csv.DictWriter(f, fieldnames=["id", "name", "email", "phone", "updated_at"], lineterminator="\n")
    writer.writeheader()
    writer.writerows(sorted(merged, key=lambda r: r["id"]))
PY
