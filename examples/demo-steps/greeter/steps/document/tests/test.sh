#!/usr/bin/env bash
set -u
source /tests/helpers.sh
readme=/app/README.md
[ -f "$readme" ] || fail "README.md is missing"
grep -q 'greet.sh' "$readme" || fail "README.md does not mention greet.sh"
grep -q 'config.txt' "$readme" || fail "README.md does not mention config.txt"
grep -q 'Hello,' "$readme" || fail "README.md shows no example output"
pass
