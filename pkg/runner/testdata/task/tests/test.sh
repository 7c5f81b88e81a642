#!/usr/bin/env bash
# Verifier of the runner's fixture task. Knobs (verifier env, for tests):
# SLEEP_FOR delays it, NO_REWARD makes it write no reward file.
set -u
app=${GAUNTLET_APP_DIR:-/app}
out=${GAUNTLET_VERIFIER_LOGS_DIR:-/logs/verifier}
env | cut -d= -f1 | sort > "$out/env-names.txt"
if [ -n "${SLEEP_FOR:-}" ]; then sleep "$SLEEP_FOR"; fi
if [ -n "${NO_REWARD:-}" ]; then echo "no reward on purpose"; exit 3; fi
reward=0
if [ "$(cat "$app/answer.txt" 2>/dev/null)" = gauntlet ] && [ "$(cat "$app/seed.txt")" = seed ]; then
  reward=1
fi
echo "reward $reward"
echo "$reward" > "$out/reward.txt"
