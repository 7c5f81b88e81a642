#!/usr/bin/env bash
# Verifier for config-migrate: /app/config.json must match, types included.
set -u
mkdir -p /logs/verifier
reward=0
trap 'echo "$reward" > /logs/verifier/reward.txt' EXIT

if python3 -B /tests/check_config.py; then
  reward=1
fi
