#!/usr/bin/env bash
# Oracle for image-facts: read the facts from the image itself.
set -euo pipefail
mkdir -p /app
. /etc/os-release
printf '%s\n%s\n' "$ID" "$VERSION_CODENAME" > /app/facts.txt
echo 'print("hello")' > /app/hello.py
