#!/usr/bin/env bash
# Oracle for sidecar-orders: three orders to the api service, by its name.
set -euo pipefail
python3 - <<'PY'
import json, urllib.request
for item in ("apple", "banana", "cherry"):
    req = urllib.request.Request("http://api:8000/orders", data=json.dumps({"item": item}).encode(),
                                 headers={"Content-Type": "application/json"}, method="POST")
    print(urllib.request.urlopen(req, timeout=5).read().decode())
PY
