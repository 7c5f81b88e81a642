#!/usr/bin/env bash
# Verifier for fix-median: runs behavioural checks against /app/stats.py.
set -u
mkdir -p /logs/verifier
reward=0
trap 'echo "$reward" > /logs/verifier/reward.txt' EXIT

if python3 -B /tests/test_stats.py; then
  reward=1
fi
