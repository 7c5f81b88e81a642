#!/usr/bin/env bash
# heuristic-agent.sh — a deterministic stand-in for an LLM agent, for demos of
# the `command` harness on demo-bench. It recognises a task from keywords in
# its instruction and applies a canned strategy in /app. Some strategies are
# right, some are plausible but wrong (partial credit), some tasks it does not
# recognise at all, and two strategies succeed only sometimes ($RANDOM), so
# pass@k > pass@1 shows up on the leaderboard.
#
# Contract (gauntlet `command` harness):
#   $GAUNTLET_INSTRUCTION   the task instruction (also /logs/agent/instruction.md)
#   $GAUNTLET_MODEL         the configured model name (only echoed)
#   working directory       /app
#   /logs/agent/usage.json  token usage and cost it reports
# Optional: HEURISTIC_SEED seeds $RANDOM so a run can be reproduced.
#
# It never reads /solution or /tests (an agent cannot see them anyway).
set -uo pipefail

if [ -n "${HEURISTIC_SEED:-}" ]; then
  RANDOM=$HEURISTIC_SEED
fi

LOG_DIR=/logs/agent
mkdir -p "$LOG_DIR"
instruction=${GAUNTLET_INSTRUCTION:-}
if [ -z "$instruction" ] && [ -f "$LOG_DIR/instruction.md" ]; then
  instruction=$(cat "$LOG_DIR/instruction.md")
fi
cd /app || exit 1

say() { printf '[heuristic-agent] %s\n' "$*"; }

# Usage accounting: every "turn" re-reads the instruction plus a fixed system
# prompt; the "output" is the code the strategy wrote.
turns=1
output_chars=200

has() { grep -qiF -- "$1" <<<"$instruction"; }

# coin P: succeeds with probability P percent.
coin() { [ $((RANDOM % 100)) -lt "$1" ]; }

strategy_word_frequency() {
  say "counting words of input.txt with a Counter"
  python3 - <<'PY'
import collections, re
words = re.findall(r"[a-z]+", open("/app/input.txt", encoding="utf-8").read().lower())
top = sorted(collections.Counter(words).items(), key=lambda kv: (-kv[1], kv[0]))[:10]
open("/app/top_words.txt", "w").write("".join(f"{w} {n}\n" for w, n in top))
PY
  turns=3 output_chars=420
}

strategy_csv_summary() {
  say "aggregating sales.csv per region with the csv module"
  python3 - <<'PY'
import csv
agg = {}
for row in csv.DictReader(open("/app/sales.csv", newline="")):
    a = agg.setdefault(row["region"], [0, 0, 0])
    a[0] += 1
    a[1] += int(row["units"])
    a[2] += round(int(row["units"]) * float(row["unit_price"]) * 100)
with open("/app/summary.csv", "w") as f:
    f.write("region,orders,units,revenue\n")
    for region in sorted(agg):
        orders, units, cents = agg[region]
        f.write(f"{region},{orders},{units},{cents // 100}.{cents % 100:02d}\n")
PY
  turns=4 output_chars=610
}

strategy_log_errors() {
  if coin 50; then
    say "parsing log entries properly (level field only, skipping continuations)"
    python3 - <<'PY'
import json, re
hits = [m.groups() for m in map(re.compile(r"^(\S+) ERROR \[(\w+)\]").match, open("/app/logs/app.log")) if m]
by = {}
for _, comp in hits:
    by[comp] = by.get(comp, 0) + 1
stamps = sorted(t for t, _ in hits)
json.dump({"total_errors": len(hits), "by_component": by, "first_error": stamps[0], "last_error": stamps[-1]},
          open("/app/error_report.json", "w"))
PY
  else
    say "counting ERROR with grep -c (quick and dirty)"
    total=$(grep -c 'ERROR' logs/app.log)
    python3 - "$total" <<'PY'
import json, re, sys
entries = [m.groups() for m in map(re.compile(r"^(\S+) ERROR \[(\w+)\]").match, open("/app/logs/app.log")) if m]
by = {}
for _, comp in entries:
    by[comp] = by.get(comp, 0) + 1
json.dump({"total_errors": int(sys.argv[1]), "by_component": by,
           "first_error": min(t for t, _ in entries), "last_error": max(t for t, _ in entries)},
          open("/app/error_report.json", "w"))
PY
  fi
  turns=5 output_chars=700
}

strategy_extract_ips() {
  say "grepping dotted quads"
  grep -oE '([0-9]{1,3}\.){3}[0-9]{1,3}' access.log | sort -u -t . -k1,1n -k2,2n -k3,3n -k4,4n > ips.txt
  turns=2 output_chars=160
}

strategy_json_teams() {
  say "building the team index from users.json"
  python3 - <<'PY'
import json
teams = {}
for u in json.load(open("/app/users.json"))["users"]:
    if u.get("active"):
        for t in set(u.get("teams") or []):
            teams.setdefault(t, set()).add(u["email"].strip().lower())
json.dump({t: sorted(e) for t, e in teams.items()}, open("/app/teams.json", "w"), indent=1)
PY
  turns=3 output_chars=480
}

strategy_dedupe() {
  say "deduplicating customers by e-mail, newest updated_at wins"
  python3 - <<'PY'
import csv
best = {}
for row in csv.DictReader(open("/app/customers.csv", newline="")):
    email = row["email"].strip().lower()
    row["email"] = email
    row["updated_at"] = row["updated_at"].replace(" ", "T") + (":00Z" if " " in row["updated_at"] else "")
    keep = best.get(email)
    if keep is None or row["updated_at"] > keep["updated_at"]:
        row["id"] = str(min(int(row["id"]), int(keep["id"]))) if keep else row["id"]
        best[email] = row
    else:
        keep["id"] = str(min(int(row["id"]), int(keep["id"])))
with open("/app/customers_clean.csv", "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=["id", "name", "email", "phone", "updated_at"], lineterminator="\n")
    w.writeheader()
    w.writerows(sorted(best.values(), key=lambda r: int(r["id"])))
PY
  turns=6 output_chars=900
}

strategy_fix_median() {
  say "rewriting median() in stats.py"
  python3 - <<'PY'
src = open("/app/stats.py").read()
start = src.index("def median(")
end = src.index("\ndef ", start + 1)
new = '''def median(values):
    """Returns the median of a non-empty sequence of numbers."""
    if len(values) == 0:
        raise ValueError("median of empty data")
    s = sorted(values)
    mid = len(s) // 2
    return s[mid] if len(s) % 2 == 1 else (s[mid - 1] + s[mid]) / 2

'''
open("/app/stats.py", "w").write(src[:start] + new + src[end:])
PY
  turns=3 output_chars=380
}

strategy_roman() {
  say "implementing roman.py (greedy to_roman, additive from_roman)"
  cat > roman.py <<'PY'
"""Conversion between integers and Roman numerals."""

PAIRS = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
         (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]
VALUE = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}


def to_roman(number):
    if not 0 < number < 4000:
        raise ValueError(number)
    out = ""
    for value, sym in PAIRS:
        while number >= value:
            out += sym
            number -= value
    return out


def from_roman(numeral):
    total = 0
    for i, ch in enumerate(numeral):
        v = VALUE[ch]
        if i + 1 < len(numeral) and VALUE[numeral[i + 1]] > v:
            total -= v
        else:
            total += v
    return total
PY
  turns=4 output_chars=760
}

strategy_lru() {
  if coin 50; then
    say "writing LRUCache on OrderedDict (move_to_end on get and put)"
    refresh='self.data.move_to_end(key)'
  else
    say "writing LRUCache on OrderedDict"
    refresh='pass'
  fi
  cat > lru.py <<PY
"""A least-recently-used cache."""
from collections import OrderedDict


class LRUCache:
    def __init__(self, capacity):
        if capacity < 0:
            raise ValueError("negative capacity")
        self.capacity = capacity
        self.data = OrderedDict()

    def get(self, key, default=None):
        if key not in self.data:
            return default
        $refresh
        return self.data[key]

    def put(self, key, value):
        if self.capacity == 0:
            return
        if key in self.data:
            self.data.move_to_end(key)
        elif len(self.data) >= self.capacity:
            self.data.popitem(last=False)
        self.data[key] = value

    def __len__(self):
        return len(self.data)

    def __contains__(self, key):
        return key in self.data
PY
  turns=4 output_chars=820
}

strategy_permissions() {
  say "applying the permission table from the instruction"
  # Table rows look like: | `secrets/api.key` | `600` |
  local rows=0 path mode
  while IFS='|' read -r _ path mode _; do
    path=$(tr -d '` ' <<<"$path")
    mode=$(grep -oE '[0-7]{3,4}' <<<"$mode" | head -n 1)
    [ -n "$mode" ] || continue
    case $path in
      /app/deploy*) path=/app/deploy ;;
      *) path=/app/deploy/${path%/} ;;
    esac
    chmod "$mode" "$path" && rows=$((rows + 1))
  done < <(grep -E '^\|.*`[0-7]{3,4}`' <<<"$instruction")
  say "applied $rows modes"
  turns=3 output_chars=300
}

strategy_disk_usage() {
  say "summing sizes with du"
  (cd data && du -sb -- */ | sed 's#/$##' | awk -F'\t' '{print $2 "\t" $1}' | sort -t "$(printf '\t')" -k2,2nr -k1,1) > usage.tsv
  turns=2 output_chars=150
}

say "model: ${GAUNTLET_MODEL:-unset}"
strategy=""
if has "ten most frequent words"; then strategy=word_frequency
elif has "summary.csv"; then strategy=csv_summary
elif has "error_report.json"; then strategy=log_errors
elif has "IPv4"; then strategy=extract_ips
elif has "teams.json"; then strategy=json_teams
elif has "customers_clean.csv"; then strategy=dedupe
elif has "stats.py" && has "median"; then strategy=fix_median
elif has "roman.py"; then strategy=roman
elif has "LRUCache"; then strategy=lru
elif has "/app/deploy" && has "mode"; then strategy=permissions
elif has "usage.tsv"; then strategy=disk_usage
fi

status=0
if [ -n "$strategy" ]; then
  say "recognised task, strategy: $strategy"
  "strategy_$strategy" || status=$?
else
  say "no strategy for this task; giving up"
fi

chars=${#instruction}
input_tokens=$(((chars / 4 + 1200) * turns))
cache_tokens=$(((turns - 1) * (chars / 4 + 1200) * 9 / 10))
output_tokens=$((output_chars / 3 + 60 * turns))
cost_usd=$(awk -v i="$input_tokens" -v c="$cache_tokens" -v o="$output_tokens" \
  'BEGIN { printf "%.6f", ((i - c) * 1.25 + c * 0.125 + o * 10) / 1e6 }')
printf '{"input_tokens": %d, "cache_tokens": %d, "output_tokens": %d, "cost_usd": %s}\n' \
  "$input_tokens" "$cache_tokens" "$output_tokens" "$cost_usd" > "$LOG_DIR/usage.json"
say "usage: $(cat "$LOG_DIR/usage.json")"
exit "$status"
