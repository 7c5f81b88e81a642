#!/usr/bin/env bash
# Oracle for json-transform: normalise e-mails, keep active users, index by team.
set -euo pipefail
python3 - <<'PY'
import json

with open("/app/users.json", encoding="utf-8") as f:
    users = json.load(f)["users"]
teams = {}
for user in users:
    if not user.get("active"):
        continue
    email = user["email"].strip().lower()
    for team in user.get("teams", []):
        teams.setdefault(team, set()).add(email)
with open("/app/teams.json", "w", encoding="utf-8") as f:
    json.dump({team: sorted(emails) for team, emails in sorted(teams.items())}, f, indent=2)
PY
