#!/usr/bin/env bash
# Verifier for word-frequency: recomputes the top ten words from a pristine
# copy of the input and compares /app/top_words.txt line by line.
set -u
mkdir -p /logs/verifier
reward=0
trap 'echo "$reward" > /logs/verifier/reward.txt' EXIT

if python3 -B /tests/check_top_words.py /tests/input.txt /app/top_words.txt; then
  reward=1
fi
