#!/usr/bin/env bash
# Starts the service with the deployed configuration.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
exec python3 -m http.server --directory "$here/public" 8000
