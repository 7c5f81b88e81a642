#!/usr/bin/env bash
# agent-runtime-pin.sh — print, for each package agents/runtime.json pins,
# the mirror's current bookworm version, pool path and sha256 (apt-get
# download --print-uris), to re-pin the file when Debian supersedes one (a
# point release removes the old version from the pool).
set -euo pipefail
pkgs=$(python3 -c 'import json,sys; print(" ".join(p["name"] for p in json.load(open(sys.argv[1]))["packages"]))' "$(dirname "$0")/../agents/runtime.json")
apt-get update -qq >/dev/null 2>&1 || true
# shellcheck disable=SC2086
apt-get download --print-uris $pkgs | while read -r url file _size sum; do
	path=${url#*/debian/}
	path=${path%\'}
	printf '%s\t%s\t%s\n' "${file%%_*}" "$(printf '%s' "$path" | python3 -c 'import sys,urllib.parse; print(urllib.parse.unquote(sys.stdin.read()))')" "${sum#SHA256:}"
done
