#!/usr/bin/env bash
# Oracle for image-facts: read both facts from the image itself.
set -euo pipefail
mkdir -p /app
. /etc/os-release
{
  echo "$VERSION_CODENAME"
  python3 -c 'import sys; print(f"{sys.version_info.major}.{sys.version_info.minor}")'
} > /app/facts.txt
