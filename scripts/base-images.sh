#!/usr/bin/env bash
# base-images.sh — build the Debian rootfs tarballs that stand in for the
# upstream base images (python:3.13-slim-bookworm, debian:bookworm-slim, …)
# in tests and in `make run`'s demo: no public container registry is
# reachable from these machines, Debian's package mirror is.
#
#   debian-bookworm-minbase.tar   mmdebstrap minbase + merged-usr   (≈ 80 MB)
#   debian-bookworm-python3.tar   the same + python3, python3-pytest, git
#                                 (kept for the tests that name it)
#   debian-bookworm-python-r2.tar the python:* stand-in: python3 as
#                                 `python` too (python-is-python3), pip
#                                 (python3-pip, `pip`/`pip3`, PEP 668's
#                                 EXTERNALLY-MANAGED marker removed as the
#                                 real images have none), venv, pytest, git
#   debian-trixie-ubuntu2404-r1.tar  the ubuntu:24.04 stand-in: trixie's
#                                 minbase + gpgv, the `ubuntu` user and
#                                 group (uid/gid 1000, /home/ubuntu) that
#                                 the real image has
#   debian-trixie-minbase.tar     Debian 13's minbase: a newer glibc (2.41,
#                                 Ubuntu 25.04's; 24.04 has 2.39), the
#                                 Ubuntu-like image of the agent matrix (no
#                                 Ubuntu mirror is reachable from here)
#   debian-bookworm-nobash.tar    minbase without bash and /usr/bin/env:
#                                 nothing but dash's /bin/sh
#   musl-busybox.tar              musl only, no glibc at all (Debian's musl
#                                 + busybox-static, assembled offline from
#                                 the two packages): the Alpine-like image
#
# into ${GAUNTLET_CACHE:-$HOME/.cache/gauntlet}/base, with a log beside each.
# That cache is shared by every checkout and session of the machine: a
# stand-in whose content changes gets a new file name (the -rN suffix),
# never a rebuild under the old one.
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

build() { # build SUITE NAME [--include=…]
	local suite="$1" name="$2"; shift 2
	local tar="$out/debian-$suite-$name.tar" log="$out/$name.log"
	[ "$suite" = bookworm ] || log="$out/$suite-$name.log"
	if [ -f "$tar" ]; then
		echo "base image $tar: present"
		return
	fi
	# The temporary name must end in .tar: mmdebstrap picks its output
	# format from the name (and --format=tar makes sure of it).
	local tmp="$out/.debian-$suite-$name.tmp.$$.tar"
	trap 'rm -f "$tmp"' EXIT
	echo "base image $tar: building with mmdebstrap (log: $log)"
	local start=$SECONDS
	if ! mmdebstrap --variant=minbase --format=tar \
		--hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
		--dpkgopt='path-exclude=/usr/share/doc/*' \
		--dpkgopt='path-exclude=/usr/share/man/*' \
		--dpkgopt='path-exclude=/usr/share/locale/*' \
		"$@" "$suite" "$tmp" http://deb.debian.org/debian >"$log" 2>&1; then
		echo "mmdebstrap failed for $name; the end of $log:" >&2
		tail -n 20 "$log" >&2
		exit 1
	fi
	mv "$tmp" "$tar"
	trap - EXIT
	echo "base image $tar: $(du -h "$tar" | cut -f1) in $((SECONDS - start)) s"
}

# derive NAME FROM PATH… — FROM's tarball without PATHs.
derive() {
	local name="$1" from="$2"; shift 2
	local tar="$out/$name.tar"
	if [ -f "$tar" ]; then
		echo "base image $tar: present"
		return
	fi
	local tmp="$out/.$name.tmp.$$.tar"
	trap 'rm -f "$tmp"' EXIT
	cp "$out/$from" "$tmp"
	tar --delete -f "$tmp" "$@"
	mv "$tmp" "$tar"
	trap - EXIT
	echo "base image $tar: $(du -h "$tar" | cut -f1)"
}

# musl_image: / of Debian's musl and busybox-static, busybox's applets
# linked in /bin, a root user; no glibc, no bash.
musl_image() {
	local tar="$out/musl-busybox.tar"
	if [ -f "$tar" ]; then
		echo "base image $tar: present"
		return
	fi
	local work
	work=$(mktemp -d)
	trap 'rm -rf "$work"' EXIT
	(cd "$work" && { apt-get download musl busybox-static >/dev/null 2>&1 ||
		{ apt-get update -qq >/dev/null 2>&1; apt-get download musl busybox-static >/dev/null; }; })
	mkdir "$work/root"
	for deb in "$work"/*.deb; do dpkg-deb -x "$deb" "$work/root"; done
	(
		cd "$work/root"
		rm -rf usr/share
		for app in $(bin/busybox --list); do
			[ -e "bin/$app" ] || ln -s busybox "bin/$app"
		done
		mkdir -p etc tmp app root
		chmod 1777 tmp
		echo 'root:x:0:0:root:/root:/bin/sh' >etc/passwd
		echo 'root:x:0:' >etc/group
		tar --numeric-owner --owner=0 --group=0 -cf "$out/.musl-busybox.tmp.tar" .
	)
	mv "$out/.musl-busybox.tmp.tar" "$tar"
	rm -rf "$work"
	trap - EXIT
	echo "base image $tar: $(du -h "$tar" | cut -f1)"
}

build bookworm minbase
build bookworm python3 --include=python3,python3-pytest,git
build bookworm python-r2 --include=python3,python-is-python3,python3-pip,python3-venv,python3-pytest,git \
	--aptopt='APT::Install-Recommends "false"' \
	--customize-hook='rm -f "$1"/usr/lib/python3*/EXTERNALLY-MANAGED'
build trixie ubuntu2404-r1 --include=gpgv \
	--customize-hook='chroot "$1" groupadd --gid 1000 ubuntu' \
	--customize-hook='chroot "$1" useradd --uid 1000 --gid 1000 --create-home --shell /bin/bash ubuntu'
build trixie minbase
derive debian-bookworm-nobash debian-bookworm-minbase.tar ./usr/bin/bash ./usr/bin/rbash ./usr/bin/env
musl_image
