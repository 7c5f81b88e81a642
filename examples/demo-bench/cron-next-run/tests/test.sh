#!/usr/bin/env bash
# Verifier for cron-next-run: /app/next_runs.tsv must equal the known schedule.
set -u
mkdir -p /logs/verifier
reward=0
trap 'echo "$reward" > /logs/verifier/reward.txt' EXIT

if [ ! -f /app/next_runs.tsv ]; then
  echo "FAIL: /app/next_runs.tsv is missing"
  exit 0
fi
if diff /tests/expected_next_runs.tsv <(sed -e '$a\' /app/next_runs.tsv); then
  echo "PASS"
  reward=1
else
  echo "FAIL: schedule differs (diff above: < expected, > got)"
fi
