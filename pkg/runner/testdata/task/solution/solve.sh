#!/usr/bin/env bash
# Oracle: writes the expected answer.
set -euo pipefail
echo gauntlet > "${GAUNTLET_APP_DIR:-/app}/answer.txt"
