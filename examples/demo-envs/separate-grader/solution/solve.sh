#!/usr/bin/env bash
# Oracle for separate-grader: the two graded files, plus files the
# separate verifier must NOT see (they stay in the agent's environment).
set -euo pipefail
n=$(echo "the quick brown fox jumps over the lazy dog" | wc -w)
mkdir -p /tmp/report /logs/artifacts /app
echo "words=$n" > /tmp/report/summary.txt
echo "words=$n" > /logs/artifacts/answer.txt
echo "left in the agent's environment" > /tmp/report/agent-only.txt
echo "left in the agent's environment" > /app/agent-only.txt
echo "the agent's own log" > /logs/agent/agent-note.txt
