#!/usr/bin/env bash
# Verifier for log-error-summary: grades each key of /app/error_report.json
# separately and writes partial credit to /logs/verifier/reward.json.
set -u
mkdir -p /logs/verifier
rm -f /logs/verifier/reward.json
trap '[ -s /logs/verifier/reward.json ] || echo "{\"reward\": 0}" > /logs/verifier/reward.json' EXIT

python3 -B /tests/grade_report.py /app/error_report.json /logs/verifier/reward.json
