#!/usr/bin/env bash
# Oracle for word-frequency: split on non-letters, count, rank.
set -euo pipefail
tr -cs 'A-Za-z' '\n' < /app/input.txt \
  | tr 'A-Z' 'a-z' \
  | grep -v '^$' \
  | sort | uniq -c \
  | sort -k1,1nr -k2,2 \
  | head -n 10 \
  | awk '{print $2, $1}' > /app/top_words.txt
