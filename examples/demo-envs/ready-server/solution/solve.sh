#!/usr/bin/env bash
# Oracle for ready-server: the server answers as soon as the agent starts
# (the healthcheck passed), so one request is enough: no retry loop.
set -euo pipefail
mkdir -p /app
python3 -c 'import urllib.request, sys; sys.stdout.write(urllib.request.urlopen("http://127.0.0.1:8080/", timeout=5).read().decode())' > /app/page.txt
