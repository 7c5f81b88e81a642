#!/usr/bin/env bash
# Verifier for csv-summary: compares /app/summary.csv with the known totals.
set -u
mkdir -p /logs/verifier
reward=0
trap 'echo "$reward" > /logs/verifier/reward.txt' EXIT

expected='region,orders,units,revenue
east,4,17,267.71
north,5,24,401.97
south,4,21,240.98
west,3,16,451.50'

if [ ! -f /app/summary.csv ]; then
  echo "FAIL: /app/summary.csv is missing"
  exit 0
fi
actual=$(cat /app/summary.csv)
if [ "$actual" == "$expected" ] && [ "$(tail -c 1 /app/summary.csv | od -An -c | tr -d ' ')" == '\n' ]; then
  echo "PASS"
  reward=1
else
  echo "FAIL: summary differs"
  diff <(printf '%s\n' "$expected") /app/summary.csv || true
fi
