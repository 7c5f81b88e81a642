#!/usr/bin/env bash
# Verifier for build-inventory: item i has stock i*7 mod 5, so items 5 and
# 10 are out of stock.
set -u
mkdir -p /logs/verifier
reward=0
trap 'echo "$reward" > /logs/verifier/reward.txt' EXIT

want=$'item-05\nitem-10'
if [[ -f /app/out-of-stock.txt && "$(cat /app/out-of-stock.txt)" == "$want" ]]; then
  reward=1
else
  echo "want:"; echo "$want"; echo "got:"; cat /app/out-of-stock.txt 2>&1 || true
fi
