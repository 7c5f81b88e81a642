#!/usr/bin/env bash
# buildkit.sh — build moby/buildkit's buildkitd and buildctl (the version
# below, from the Go module proxy) into
# ${GAUNTLET_CACHE:-$HOME/.cache/gauntlet}/buildkit/<version>, once: the
# comparison of builders in docs/BENCHMARKS.md (BenchmarkBuilders) runs them.
# Neither Debian nor the npm registry packages BuildKit; the module's go.mod
# has exclude directives, so `go install pkg@version` refuses it and the
# module is built as the main module from a copy of its source.
set -euo pipefail

VERSION=v0.26.2
cache="${GAUNTLET_CACHE:-$HOME/.cache/gauntlet}/buildkit/$VERSION"
if [ -x "$cache/buildkitd" ] && [ -x "$cache/buildctl" ]; then
	echo "buildkit $VERSION: $cache (kept)"
	exit 0
fi
go=${GO:-go}
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
src=$(cd "$work" && GOFLAGS=-mod=mod "$go" mod download -json "github.com/moby/buildkit@$VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
if [ -z "$src" ]; then
	echo "buildkit.sh: go mod download github.com/moby/buildkit@$VERSION gave no source dir" >&2
	exit 1
fi
cp -r "$src" "$work/src"
chmod -R u+w "$work/src"
mkdir -p "$cache.tmp"
(cd "$work/src" && CGO_ENABLED=0 GOFLAGS=-mod=mod "$go" build -trimpath -ldflags "-X github.com/moby/buildkit/version.Version=$VERSION" -o "$cache.tmp/" ./cmd/buildkitd ./cmd/buildctl)
rm -rf "$cache"
mv "$cache.tmp" "$cache"
echo "buildkit $VERSION: $cache"
