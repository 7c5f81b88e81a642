#!/usr/bin/env bash
# Verifier for build-order: runs /app/build_order.py on every case in
# /tests/cases. A case with a .expected file must print exactly that and exit 0;
# a case without one is cyclic and must print nothing and exit 2.
set -u
mkdir -p /logs/verifier
reward=0
trap 'echo "$reward" > /logs/verifier/reward.txt' EXIT

if [ ! -f /app/build_order.py ]; then
  echo "FAIL: /app/build_order.py is missing"
  exit 0
fi
failed=0
for deps in /tests/cases/*.deps; do
  name=$(basename "$deps" .deps)
  expected=/tests/cases/$name.expected
  out=$(cd /tmp && timeout 10 python3 -B /app/build_order.py "$deps" 2>/dev/null)
  status=$?
  if [ -f "$expected" ]; then
    if [ "$status" -eq 0 ] && [ "$out" == "$(cat "$expected")" ]; then
      echo "PASS $name"
    else
      echo "FAIL $name: exit $status, output: $(echo "$out" | tr '\n' ' ')"
      failed=1
    fi
  else
    if [ "$status" -eq 2 ] && [ -z "$out" ]; then
      echo "PASS $name (cycle reported)"
    else
      echo "FAIL $name: want exit 2 and no output for a cycle, got exit $status, output: $(echo "$out" | tr '\n' ' ')"
      failed=1
    fi
  fi
done
if [ "$failed" -eq 0 ]; then
  reward=1
fi
