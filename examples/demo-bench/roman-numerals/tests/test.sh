#!/usr/bin/env bash
# Verifier for roman-numerals: four graded groups, partial credit in
# /logs/verifier/reward.json.
set -u
mkdir -p /logs/verifier
rm -f /logs/verifier/reward.json
trap '[ -s /logs/verifier/reward.json ] || echo "{\"reward\": 0}" > /logs/verifier/reward.json' EXIT

timeout 20 python3 -B /tests/grade_roman.py /logs/verifier/reward.json
