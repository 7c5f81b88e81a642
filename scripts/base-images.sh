#!/usr/bin/env bash
# base-images.sh — build the Debian rootfs tarballs that stand in for the
# upstream base images (python:3.13-slim-bookworm, debian:bookworm-slim, …)
# in tests and in `make run`'s demo: no public container registry is
# reachable from these machines, Debian's package mirror is.
#
#   debian-bookworm-minbase.tar   mmdebstrap minbase + merged-usr   (≈ 80 MB)
#   debian-bookworm-python3.tar   the same + python3, python3-pytest, git
#
# into ${GAUNTLET_CACHE:-$HOME/.cache/gauntlet}/base, with a log beside each.
# A tarball already there is kept (a second run does nothing); delete it to
# rebuild. Each is written under a temporary name and renamed when complete.
# Needs root (mmdebstrap's root mode) and the mmdebstrap package (installed
# with apt-get when missing).
set -euo pipefail

out="${GAUNTLET_CACHE:-$HOME/.cache/gauntlet}/base"
mkdir -p "$out"

if ! command -v mmdebstrap >/dev/null 2>&1; then
	echo "installing mmdebstrap (apt-get)"
	(apt-get update -qq || true) && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap >/dev/null
fi

build() { # build NAME [--include=…]
	local name="$1"; shift
	local tar="$out/debian-bookworm-$name.tar" log="$out/$name.log"
	if [ -f "$tar" ]; then
		echo "base image $tar: present"
		return
	fi
	# The temporary name must end in .tar: mmdebstrap picks its output
	# format from the name (and --format=tar makes sure of it).
	local tmp="$out/.debian-bookworm-$name.tmp.$$.tar"
	trap 'rm -f "$tmp"' EXIT
	echo "base image $tar: building with mmdebstrap (log: $log)"
	local start=$SECONDS
	if ! mmdebstrap --variant=minbase --format=tar \
		--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
		--dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-exclude=/usr/share/man/*' \
		--dpkgopt='path-exclude=/usr/share/locale/*' \
		"$@" bookworm "$tmp" http://deb.debian.org/debian >"$log" 2>&1; then
		echo "mmdebstrap failed for $name; the end of $log:" >&2
		tail -n 20 "$log" >&2
		exit 1
	fi
	mv "$tmp" "$tar"
	trap - EXIT
	echo "base image $tar: $(du -h "$tar" | cut -f1) in $((SECONDS - start)) s"
}

build minbase
build python3 --include=python3,python3-pytest,git
