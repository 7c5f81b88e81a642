#!/usr/bin/env bash
# Verifier for json-transform: /app/teams.json must parse to the expected index.
set -u
mkdir -p /logs/verifier
reward=0
trap 'echo "$reward" > /logs/verifier/reward.txt' EXIT

if python3 -B - <<'PY'
import json
import sys

with open("/tests/expected_teams.json", encoding="utf-8") as f:
    want = json.load(f)
try:
    with open("/app/teams.json", encoding="utf-8") as f:
        got = json.load(f)
except (OSError, ValueError) as err:
    print(f"FAIL: cannot read /app/teams.json: {err}")
    sys.exit(1)
if got != want:
    print(f"FAIL: got {json.dumps(got, sort_keys=True)}")
    print(f"     want {json.dumps(want, sort_keys=True)}")
    sys.exit(1)
print("PASS")
PY
then
  reward=1
fi
