#!/usr/bin/env bash
# Verifier for disk-usage-report: /app/usage.tsv must equal the known report.
set -u
mkdir -p /logs/verifier
reward=0
trap 'echo "$reward" > /logs/verifier/reward.txt' EXIT

if [ ! -f /app/usage.tsv ]; then
  echo "FAIL: /app/usage.tsv is missing"
  exit 0
fi
if diff /tests/expected_usage.tsv <(sed -e '$a\' /app/usage.tsv); then
  echo "PASS"
  reward=1
else
  echo "FAIL: report differs (diff above: < expected, > got)"
fi
