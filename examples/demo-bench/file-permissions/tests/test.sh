#!/usr/bin/env bash
# Verifier for file-permissions: every mode must match the policy exactly.
set -u
mkdir -p /logs/verifier
reward=0
trap 'echo "$reward" > /logs/verifier/reward.txt' EXIT

if python3 -B /tests/check_modes.py; then
  reward=1
fi
