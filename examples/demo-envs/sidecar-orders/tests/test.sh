#!/usr/bin/env bash
# Verifier for sidecar-orders: asks the api service itself (it runs until
# the trial ends, beside the verifier, as in Harbor's shared mode) how many
# distinct orders it received.
set -u
mkdir -p /logs/verifier
reward=0
trap 'echo "$reward" > /logs/verifier/reward.txt' EXIT

stats=$(python3 -c 'import urllib.request; print(urllib.request.urlopen("http://api:8000/stats", timeout=5).read().decode())' 2>&1)
echo "api stats: $stats"
if python3 -c '
import json, sys
s = json.loads(sys.argv[1])
sys.exit(0 if s["orders_received"] == 3 and len(set(s["items"])) == 3 else 1)' "$stats" 2>/dev/null; then
  reward=1
fi
