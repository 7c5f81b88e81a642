#!/usr/bin/env bash
# Runs in the working directory before this step's agent: trims
# config.txt, checks the previous step's script is there, and removes itself
# so the agent's directory stays clean.
set -euo pipefail
[ -x greet.sh ]
cleaned=$(tr -d '[:space:]' < config.txt)
printf '%s\n' "$cleaned" > config.txt
rm -- "$0"
