#!/usr/bin/env bash
# Verifier for ready-server: /app/page.txt must hold what the environment's
# server serves.
set -u
mkdir -p /logs/verifier
reward=0
trap 'echo "$reward" > /logs/verifier/reward.txt' EXIT

if [[ -f /app/page.txt && "$(cat /app/page.txt)" == "served-by-the-environment" ]]; then
  reward=1
else
  echo "want: served-by-the-environment"; echo "got:"; cat /app/page.txt 2>&1 || true
fi
