// Package agentbundle prepares and finds agent bundles: the pinned agent
// programs of the harness table (harness.Bundle), installed once from the
// npm registry with agents/package-lock.json, pruned to the files each
// harness runs, and kept in a content-addressed cache
// (<cache>/<harness>-<version>-<digest>/) that every attempt mounts
// read-only. Nothing is installed per attempt.
package agentbundle

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/gauntlet-bench/gauntlet/agents"
	"github.com/gauntlet-bench/gauntlet/pkg/harness"
)

// ErrNotInstalled reports that a harness's bundle is not in the cache.
var ErrNotInstalled = errors.New("agent bundle not installed")

// CacheEnv overrides the cache root (as for the other caches of gauntlet).
const CacheEnv = "GAUNTLET_CACHE"

// completeMarker is written last into a prepared bundle: a directory
// without it is a leftover of an interrupted install and is never used.
const completeMarker = ".gauntlet-bundle.json"

// DefaultDir is ${GAUNTLET_CACHE:-$HOME/.cache/gauntlet}/agents.
func DefaultDir() string {
	root := os.Getenv(CacheEnv)
	if root == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			home = os.TempDir()
		}
		root = filepath.Join(home, ".cache", "gauntlet")
	}
	return filepath.Join(root, "agents")
}

// Lock is a parsed package-lock.json (lockfileVersion 3).
type Lock struct {
	Packages map[string]LockEntry `json:"packages"`
}

// LockEntry is one installed package of a lock.
type LockEntry struct {
	Name      string `json:"name"` // set for aliased packages
	Version   string `json:"version"`
	Resolved  string `json:"resolved"`
	Integrity string `json:"integrity"`
}

// ParseLock parses a package-lock.json.
func ParseLock(data []byte) (Lock, error) {
	var l Lock
	if err := json.Unmarshal(data, &l); err != nil {
		return Lock{}, fmt.Errorf("parse package-lock.json: %w", err)
	}
	if len(l.Packages) == 0 {
		return Lock{}, errors.New("parse package-lock.json: no packages (want lockfileVersion 3)")
	}
	return l, nil
}

// Entry returns the lock entry of the npm package installed as name.
func (l Lock) Entry(name string) (LockEntry, bool) {
	e, ok := l.Packages["node_modules/"+name]
	return e, ok
}

// Spec is one harness's bundle as the lock pins it.
type Spec struct {
	Harness string
	Version string
	// Digest is the sha256 of what makes the bundle: each package's
	// integrity hash (npm's sha512 of its tarball) and the file list.
	Digest string
	Bundle harness.Bundle
}

// DirName is the bundle's directory name in the cache.
func (s Spec) DirName() string {
	return s.Harness + "-" + s.Version + "-" + s.Digest[:16]
}

// SpecOf resolves h's bundle against the lock and the runtime. It fails
// when the lock does not pin every package the bundle needs, or pins the
// harness's package at another version than the harness row says.
func SpecOf(h harness.Harness, l Lock, rt Runtime) (Spec, error) {
	if h.Bundle == nil {
		return Spec{}, fmt.Errorf("harness %q has no agent bundle", h.Name)
	}
	b := *h.Bundle
	main, ok := l.Entry(b.Package)
	if !ok {
		return Spec{}, fmt.Errorf("harness %q: agents/package-lock.json does not pin %s", h.Name, b.Package)
	}
	if main.Version != h.Version {
		return Spec{}, fmt.Errorf("harness %q is version %s but agents/package-lock.json pins %s %s", h.Name, h.Version, b.Package, main.Version)
	}
	sum := sha256.New()
	fmt.Fprintf(sum, "gauntlet agent bundle v1\x00%s\x00%s\x00%s\x00", h.Name, h.Version, b.Program)
	pkgs := append([]string(nil), b.Packages...)
	sort.Strings(pkgs)
	for _, p := range pkgs {
		e, ok := l.Entry(p)
		if !ok {
			return Spec{}, fmt.Errorf("harness %q: agents/package-lock.json does not pin %s", h.Name, p)
		}
		if e.Integrity == "" {
			return Spec{}, fmt.Errorf("harness %q: agents/package-lock.json has no integrity hash for %s", h.Name, p)
		}
		fmt.Fprintf(sum, "%s\x00%s\x00%s\x00", p, e.Version, e.Integrity)
	}
	for _, f := range b.Files {
		fmt.Fprintf(sum, "%s\x00%s\x00", f.From, f.To)
	}
	if b.Prepare != "" {
		fmt.Fprintf(sum, "prepare\x00%s\x00", b.Prepare)
	}
	sum.Write([]byte(rt.digestInput(b)))
	return Spec{Harness: h.Name, Version: h.Version, Digest: hex.EncodeToString(sum.Sum(nil)), Bundle: b}, nil
}

// Bundled returns the table's harnesses that run a bundle.
func Bundled(table []harness.Harness) []harness.Harness {
	var out []harness.Harness
	for _, h := range table {
		if h.Bundle != nil {
			out = append(out, h)
		}
	}
	return out
}

// Cache is the agent-bundle cache directory.
type Cache struct {
	// Dir is the cache directory (DefaultDir unless set).
	Dir string
	// Lock is the package-lock.json bundles are prepared from (the
	// embedded agents/package-lock.json unless set).
	Lock []byte
	// Runtime is the runtime.json every bundle takes its loader,
	// libraries and shell from (the embedded agents/runtime.json unless set).
	Runtime []byte
}

func (c Cache) dir() string {
	if c.Dir != "" {
		return c.Dir
	}
	return DefaultDir()
}

func (c Cache) lock() (Lock, Runtime, error) {
	data := c.Lock
	if data == nil {
		data = agents.PackageLock
	}
	l, err := ParseLock(data)
	if err != nil {
		return Lock{}, Runtime{}, err
	}
	data = c.Runtime
	if data == nil {
		data = agents.Runtime
	}
	rt, err := ParseRuntime(data)
	return l, rt, err
}

// Status is one bundle's state in the cache.
type Status struct {
	Spec
	// Dir is where the bundle is (or would be) in the cache.
	Dir       string
	Installed bool
	// Bytes is the installed bundle's size.
	Bytes int64
}

// List reports the state of every bundle of table.
func (c Cache) List(table []harness.Harness) ([]Status, error) {
	l, rt, err := c.lock()
	if err != nil {
		return nil, err
	}
	var out []Status
	for _, h := range Bundled(table) {
		s, err := SpecOf(h, l, rt)
		if err != nil {
			return nil, err
		}
		st := Status{Spec: s, Dir: filepath.Join(c.dir(), s.DirName())}
		if m, err := readMarker(st.Dir); err == nil && m.Digest == s.Digest {
			st.Installed, st.Bytes = true, m.Bytes
		}
		out = append(out, st)
	}
	return out, nil
}

// Path returns the prepared bundle of h, or an error wrapping
// ErrNotInstalled that says how to prepare it.
func (c Cache) Path(h harness.Harness) (string, error) {
	l, rt, err := c.lock()
	if err != nil {
		return "", err
	}
	s, err := SpecOf(h, l, rt)
	if err != nil {
		return "", err
	}
	dir := filepath.Join(c.dir(), s.DirName())
	m, err := readMarker(dir)
	if err != nil || m.Digest != s.Digest {
		return "", fmt.Errorf("%w: harness %q needs %s (prepare it with `gauntlet agents install %s` or `make agents`)", ErrNotInstalled, h.Name, dir, h.Name)
	}
	return dir, nil
}

// marker is the content of completeMarker.
type marker struct {
	Harness string `json:"harness"`
	Version string `json:"version"`
	Digest  string `json:"digest"`
	Bytes   int64  `json:"bytes"`
}

func readMarker(dir string) (marker, error) {
	data, err := os.ReadFile(filepath.Join(dir, completeMarker))
	if err != nil {
		return marker{}, err
	}
	var m marker
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&m); err != nil {
		return marker{}, fmt.Errorf("read %s: %w", completeMarker, err)
	}
	return m, nil
}
