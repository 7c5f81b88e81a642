#!/usr/bin/env bash
# Oracle for log-error-summary: parse entry lines only, skip continuations.
set -euo pipefail
python3 - <<'PY'
import collections
import json
import re

entry = re.compile(r"^(\S+) (DEBUG|INFO|WARN|ERROR) \[([^\]]+)\] ")
by_component = collections.Counter()
stamps = []
with open("/app/logs/app.log", encoding="utf-8") as f:
    for line in f:
        m = entry.match(line)
        if m and m.group(2) == "ERROR":
            by_component[m.group(3)] += 1
            stamps.append(m.group(1))

report = {
    "total_errors": len(stamps),
    "by_component": dict(by_component),
    "first_error": min(stamps),
    "last_error": max(stamps),
}
with open("/app/error_report.json", "w", encoding="utf-8") as f:
    json.dump(report, f, indent=2)
PY
