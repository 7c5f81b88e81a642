#!/usr/bin/env bash
# Verifier for image-facts: the image is Debian bookworm with python 3.11
# (python:3.11-slim-bookworm, or the local base standing in for it), so the
# answer is fixed; a sandbox on any other root filesystem fails.
set -u
mkdir -p /logs/verifier
reward=0
trap 'echo "$reward" > /logs/verifier/reward.txt' EXIT

want=$'bookworm\n3.11'
if [[ -f /app/facts.txt && "$(cat /app/facts.txt)" == "$want" ]]; then
  reward=1
else
  echo "want:"; echo "$want"; echo "got:"; cat /app/facts.txt 2>&1 || true
fi
