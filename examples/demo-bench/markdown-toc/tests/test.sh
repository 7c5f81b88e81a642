#!/usr/bin/env bash
# Verifier for markdown-toc: /app/README.md must equal the expected document
# byte for byte (the table of contents inserted, nothing else changed).
set -u
mkdir -p /logs/verifier
reward=0
trap 'echo "$reward" > /logs/verifier/reward.txt' EXIT

if [ ! -f /app/README.md ]; then
  echo "FAIL: /app/README.md is missing"
  exit 0
fi
if cmp -s /tests/expected_README.md /app/README.md; then
  echo "PASS"
  reward=1
else
  echo "FAIL: README differs (< expected, > got):"
  diff /tests/expected_README.md /app/README.md || true
fi
