#!/usr/bin/env bash
set -u
source /tests/helpers.sh
: "${EXPECTED_NAME:?the step's verifier env sets EXPECTED_NAME}"
: "${EXPECTED_GREETING:?the step's verifier env sets EXPECTED_GREETING}"
[ -x /app/greet.sh ] || fail "/app/greet.sh is missing"
[ -e /app/setup.sh ] && fail "setup.sh should have removed itself"
[ "$(cat /app/config.txt)" = "$EXPECTED_NAME" ] || fail "config.txt was not normalised"
[ "$(/app/greet.sh 2>/dev/null)" = "$EXPECTED_GREETING" ] || fail "wrong greeting for $EXPECTED_NAME"
echo World > /app/config.txt
[ "$(/app/greet.sh 2>/dev/null)" = "Hello, World!" ] || fail "the name is hard-coded"
echo "$EXPECTED_NAME" > /app/config.txt
pass
