#!/usr/bin/env bash
# Verifier for separate-grader, run in its own environment: the declared
# artifact at its original path, /logs/artifacts handed over, the expected
# answer from this image only, and nothing else of the agent's environment.
set -u
mkdir -p /logs/verifier
reward=1
fail() { echo "FAIL: $1"; reward=0; }
want=$(cat /grader/expected.txt)

if [[ "$(cat /tmp/report/summary.txt 2>/dev/null)" == "$want" ]]; then
  echo "seen: declared artifact /tmp/report/summary.txt"
else
  fail "declared artifact /tmp/report/summary.txt missing or wrong"
fi
if [[ "$(cat /logs/artifacts/answer.txt 2>/dev/null)" == "$want" ]]; then
  echo "seen: /logs/artifacts/answer.txt"
else
  fail "/logs/artifacts/answer.txt missing or wrong"
fi
for leak in /tmp/report/agent-only.txt /app/agent-only.txt /logs/agent/agent-note.txt; do
  if [[ -e "$leak" ]]; then
    fail "$leak leaked from the agent's environment"
  else
    echo "absent: $leak"
  fi
done
echo "$reward" > /logs/verifier/reward.txt
