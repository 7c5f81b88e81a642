#!/usr/bin/env bash
# Verifier for dedupe-records: partial credit per correct output row,
# written to /logs/verifier/reward.json.
set -u
mkdir -p /logs/verifier
rm -f /logs/verifier/reward.json
trap '[ -s /logs/verifier/reward.json ] || echo "{\"reward\": 0}" > /logs/verifier/reward.json' EXIT

python3 -B /tests/grade_customers.py /app/customers_clean.csv /logs/verifier/reward.json
