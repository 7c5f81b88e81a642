#!/usr/bin/env bash
# Verifier for extract-ips: /app/ips.txt must equal the known address list.
set -u
mkdir -p /logs/verifier
reward=0
trap 'echo "$reward" > /logs/verifier/reward.txt' EXIT

if [ ! -f /app/ips.txt ]; then
  echo "FAIL: /app/ips.txt is missing"
  exit 0
fi
# Compare ignoring only a missing final newline.
if diff <(cat /tests/expected_ips.txt) <(sed -e '$a\' /app/ips.txt); then
  echo "PASS"
  reward=1
else
  echo "FAIL: address list differs (diff above: < expected, > got)"
fi
