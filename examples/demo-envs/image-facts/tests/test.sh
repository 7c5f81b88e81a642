#!/usr/bin/env bash
# Verifier for image-facts: the image is Debian bookworm with a python3
# (python:3.13-slim-bookworm, or the local base standing in for it), so the
# answer is fixed; a sandbox on another root filesystem, or one without
# python3, fails.
set -u
mkdir -p /logs/verifier
reward=0
trap 'echo "$reward" > /logs/verifier/reward.txt' EXIT

want=$'debian\nbookworm'
if [[ -f /app/facts.txt && "$(cat /app/facts.txt)" == "$want" && "$(python3 /app/hello.py 2>&1)" == hello ]]; then
  reward=1
else
  echo "want:"; echo "$want"; echo "got:"; cat /app/facts.txt 2>&1 || true
fi
