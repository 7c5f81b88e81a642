// Package agents pins the agent programs gauntlet runs (codex, claude-code,
// gemini-cli with its Node runtime, opencode) in package.json and
// package-lock.json, embedded so the gauntlet binary can prepare the agent
// bundles from npm without a checkout. Only this folder's lock is installed
// for the bundles, so `make run` installs nothing else of npm's.
package agents

import _ "embed"

// PackageJSON is agents/package.json.
//
//go:embed package.json
var PackageJSON []byte

// PackageLock is agents/package-lock.json: the versions and integrity
// hashes the bundles are prepared from and keyed by.
//
//go:embed package-lock.json
var PackageLock []byte

// Runtime is agents/runtime.json: the pinned Debian packages whose files
// make each bundle independent of its task image (a glibc loader and
// libraries for the dynamically linked programs, a static bash).
//
//go:embed runtime.json
var Runtime []byte
