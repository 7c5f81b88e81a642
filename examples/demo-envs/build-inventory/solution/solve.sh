#!/usr/bin/env bash
# Oracle for build-inventory: the inventory exists only in the built image.
set -euo pipefail
grep ' 0$' "$INVENTORY" | cut -d' ' -f1 | sort > /app/out-of-stock.txt
