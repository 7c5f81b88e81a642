#!/usr/bin/env bash
# Oracle for disk-usage-report: sum apparent sizes of regular files per subdirectory.
set -euo pipefail
cd /app/data
for dir in */ .*/; do
  dir=${dir%/}
  case $dir in . | .. | '.*' | '*') continue ;; esac
  [ -d "$dir" ] && [ ! -L "$dir" ] || continue
  bytes=$(find "$dir" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
  printf '%s\t%s\n' "$dir" "$bytes"
done | sort -t "$(printf '\t')" -k2,2nr -k1,1 > /app/usage.tsv
