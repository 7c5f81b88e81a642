package agentbundle

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/gauntlet-bench/gauntlet/agents"
	"github.com/gauntlet-bench/gauntlet/pkg/harness"
)

// Progress is told what Install is doing; the CLI draws it as a progress
// bar. A nil Progress is fine.
type Progress interface {
	// Stage starts a stage of total bytes (-1 when unknown).
	Stage(description string, total int64)
	// Add reports n more bytes of the current stage done.
	Add(n int64)
}

// InstallOptions tune Install.
type InstallOptions struct {
	// NPM is the npm client ("npm" on PATH unless set).
	NPM string
	// Progress is told about each stage; nil = nothing.
	Progress Progress
	// Output receives npm's own output; nil discards it.
	Output io.Writer
}

// Install prepares the bundles of hs that are not yet in the cache: one
// `npm ci --ignore-scripts` of the lock into a staging directory of the
// cache, the files of each bundle linked (or copied) out of it into a fresh
// directory with the runtime it needs (agents/runtime.json: a static bash,
// and a glibc loader and libraries for a glibc program) renamed into place
// once complete, then the staging directory is removed. Bundles already prepared are kept as they are; an interrupted
// install leaves nothing a later attempt would use.
func (c Cache) Install(ctx context.Context, hs []harness.Harness, opts InstallOptions) ([]Status, error) {
	all, err := c.List(hs)
	if err != nil {
		return nil, err
	}
	var missing []int
	for i, st := range all {
		if !st.Installed {
			missing = append(missing, i)
		}
	}
	if len(missing) == 0 {
		return all, nil
	}
	dir := c.dir()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create agent bundle cache: %w", err)
	}
	var roots []string
	for _, i := range missing {
		roots = append(roots, all[i].Bundle.Packages...)
	}
	staging, err := c.npmInstall(ctx, dir, roots, opts)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(staging)
	_, rt, err := c.lock()
	if err != nil {
		return nil, err
	}
	modules := filepath.Join(staging, "node_modules")
	for _, i := range missing {
		st, err := prepare(ctx, all[i], modules, rt, opts.Progress)
		if err != nil {
			return nil, err
		}
		all[i] = st
	}
	return all, nil
}

// npmInstall runs npm ci in a staging directory, of the part of the
// cache's lock that the packages roots need (so preparing codex alone
// downloads codex alone).
func (c Cache) npmInstall(ctx context.Context, dir string, roots []string, opts InstallOptions) (string, error) {
	full := c.Lock
	if full == nil {
		full = agents.PackageLock
	}
	pkg, lock, err := subset(full, roots)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(lock)
	staging := filepath.Join(dir, ".npm-"+hex.EncodeToString(sum[:8]))
	if err := os.RemoveAll(staging); err != nil {
		return "", fmt.Errorf("clear npm staging dir: %w", err)
	}
	if err := os.MkdirAll(staging, 0o755); err != nil {
		return "", fmt.Errorf("create npm staging dir: %w", err)
	}
	for name, data := range map[string][]byte{"package.json": pkg, "package-lock.json": lock} {
		if err := os.WriteFile(filepath.Join(staging, name), data, 0o644); err != nil {
			return "", fmt.Errorf("write %s: %w", name, err)
		}
	}
	npm := opts.NPM
	if npm == "" {
		npm = "npm"
	}
	if opts.Progress != nil {
		opts.Progress.Stage("npm ci (agents/package-lock.json)", -1)
	}
	// --ignore-scripts: the packages' postinstall steps only relink the
	// platform binary, which the bundle takes directly; scripts would also
	// need a Node of their own.
	cmd := exec.CommandContext(ctx, npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--no-update-notifier", "--loglevel=error")
	cmd.Dir = staging
	out := opts.Output
	if out == nil {
		out = io.Discard
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		_ = os.RemoveAll(staging)
		return "", fmt.Errorf("npm ci of agents/package-lock.json (is npm installed and the registry reachable?): %w", err)
	}
	return staging, nil
}

// prepare builds one bundle from node_modules and the runtime.
func prepare(ctx context.Context, st Status, modules string, rt Runtime, p Progress) (Status, error) {
	var total int64
	for _, f := range st.Bundle.Files {
		n, err := treeSize(filepath.Join(modules, f.From))
		if err != nil {
			return st, fmt.Errorf("bundle %s: %s is not in the npm install: %w", st.Harness, f.From, err)
		}
		total += n
	}
	if p != nil {
		p.Stage(fmt.Sprintf("bundle %s %s", st.Harness, st.Version), total)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(st.Dir), ".tmp-"+st.Harness+"-")
	if err != nil {
		return st, fmt.Errorf("bundle %s: %w", st.Harness, err)
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return st, fmt.Errorf("bundle %s: %w", st.Harness, err)
	}
	for _, f := range st.Bundle.Files {
		if err := copyTree(filepath.Join(modules, f.From), filepath.Join(tmp, f.To), p); err != nil {
			return st, fmt.Errorf("bundle %s: %w", st.Harness, err)
		}
	}
	if err := addRuntime(ctx, rt, filepath.Dir(st.Dir), tmp, st.Bundle, p); err != nil {
		return st, fmt.Errorf("bundle %s: runtime: %w", st.Harness, err)
	}
	if err := runPrepare(ctx, tmp, st.Bundle); err != nil {
		return st, fmt.Errorf("bundle %s: %w", st.Harness, err)
	}
	if total, err = treeSize(tmp); err != nil {
		return st, fmt.Errorf("bundle %s: %w", st.Harness, err)
	}
	m, err := json.Marshal(marker{Harness: st.Harness, Version: st.Version, Digest: st.Digest, Bytes: total})
	if err != nil {
		return st, err
	}
	if err := os.WriteFile(filepath.Join(tmp, completeMarker), m, 0o644); err != nil {
		return st, fmt.Errorf("bundle %s: %w", st.Harness, err)
	}
	if err := os.RemoveAll(st.Dir); err != nil {
		return st, fmt.Errorf("bundle %s: remove incomplete %s: %w", st.Harness, st.Dir, err)
	}
	if err := os.Rename(tmp, st.Dir); err != nil {
		return st, fmt.Errorf("bundle %s: %w", st.Harness, err)
	}
	st.Installed, st.Bytes = true, total
	return st, nil
}

// runPrepare runs the bundle's Prepare step in dir with the bundle's own
// static bash, its environment only $BUNDLE, $HOME (a scratch directory)
// and PATH; its output is part of the error when it fails.
func runPrepare(ctx context.Context, dir string, b harness.Bundle) error {
	if b.Prepare == "" {
		return nil
	}
	home, err := os.MkdirTemp(filepath.Dir(dir), ".prepare-home-")
	if err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	defer os.RemoveAll(home)
	script := b.Prepare
	if b.Glibc {
		script = "exec " + harness.RuntimeFD + "<\"$BUNDLE/" + harness.RuntimeLib + "\" && " + script
	}
	cmd := exec.CommandContext(ctx, filepath.Join(dir, harness.RuntimePath, "bash"), "-c", script)
	cmd.Dir = dir
	cmd.Env = []string{"BUNDLE=" + dir, "HOME=" + home, "PATH=" + filepath.Join(dir, harness.RuntimePath) + ":/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("prepare step failed: %w: %s", err, bytes.TrimSpace(out))
	}
	return nil
}

func treeSize(path string) (int64, error) {
	var n int64
	err := filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	return n, err
}

// copyTree hard-links (same file system) or copies the regular files and
// directories under from to to; symlinks are copied as links. Files end
// world-readable, executables world-executable: the agent may run under a
// uid of its own.
func copyTree(from, to string, p Progress) error {
	return filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, path)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(dst, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			return os.Symlink(target, dst)
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is neither a file, a directory nor a symlink", path)
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if info.Mode()&0o111 != 0 {
			mode = 0o755
		}
		if err := os.Chmod(path, mode); err != nil {
			return err
		}
		if err := os.Link(path, dst); err != nil {
			if err := copyFile(path, dst, mode); err != nil {
				return err
			}
		}
		if p != nil {
			p.Add(info.Size())
		}
		return nil
	})
}

func copyFile(from, to string, mode os.FileMode) (err error) {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, out.Close()) }()
	_, err = io.Copy(out, in)
	return err
}

// subset cuts a package-lock.json (v3) down to the root dependencies among
// roots and everything they depend on (optional platform packages
// included), and writes the package.json that goes with it: npm ci wants
// the two in sync. A dependency resolves the way Node and npm resolve it:
// the nearest node_modules/ from the dependent's own folder up (qwen-code
// nests a node-pty of its own beside gemini-cli's hoisted one). An optional
// dependency the lock never resolved — another platform's package the
// registry does not serve, which npm left out of the lock — is dropped from
// its dependent's entry in the cut-down lock, as npm skips it when it
// installs: npm ci refuses a lock that names a package it does not hold.
func subset(lock []byte, roots []string) (pkgJSON, lockJSON []byte, err error) {
	var l struct {
		Name            string                    `json:"name"`
		LockfileVersion int                       `json:"lockfileVersion"`
		Requires        bool                      `json:"requires"`
		Packages        map[string]map[string]any `json:"packages"`
	}
	if err := json.Unmarshal(lock, &l); err != nil {
		return nil, nil, fmt.Errorf("parse package-lock.json: %w", err)
	}
	root, ok := l.Packages[""]
	if !ok {
		return nil, nil, errors.New("package-lock.json has no root package")
	}
	rootDeps, _ := root["dependencies"].(map[string]any)
	keep := map[string]bool{}
	deps := map[string]any{}
	// unresolved are the optional dependencies, per dependent's key, that
	// the lock holds no package for.
	unresolved := map[string][]string{}
	var walk func(key string)
	walk = func(key string) {
		e, ok := l.Packages[key]
		if !ok || keep[key] {
			return
		}
		keep[key] = true
		for _, field := range []string{"dependencies", "optionalDependencies"} {
			m, _ := e[field].(map[string]any)
			for dep := range m {
				at, ok := resolveDep(l.Packages, key, dep)
				if !ok {
					if field == "optionalDependencies" {
						unresolved[key] = append(unresolved[key], dep)
					}
					continue
				}
				walk(at)
			}
		}
	}
	for _, r := range roots {
		if v, ok := rootDeps[r]; ok {
			deps[r] = v
			walk("node_modules/" + r)
		}
	}
	if len(deps) == 0 {
		return nil, nil, fmt.Errorf("package-lock.json's root depends on none of %s", strings.Join(roots, ", "))
	}
	out := map[string]map[string]any{"": {"name": l.Name, "dependencies": deps}}
	for key, e := range l.Packages {
		if !keep[key] {
			continue
		}
		if missing := unresolved[key]; len(missing) > 0 {
			opt := maps.Clone(e["optionalDependencies"].(map[string]any))
			for _, dep := range missing {
				delete(opt, dep)
			}
			e = maps.Clone(e)
			e["optionalDependencies"] = opt
		}
		out[key] = e
	}
	lockJSON, err = json.MarshalIndent(map[string]any{"name": l.Name, "lockfileVersion": l.LockfileVersion,
		"requires": l.Requires, "packages": out}, "", "  ")
	if err != nil {
		return nil, nil, err
	}
	pkgJSON, err = json.MarshalIndent(map[string]any{"name": l.Name, "private": true, "dependencies": deps}, "", "  ")
	return pkgJSON, lockJSON, err
}

// resolveDep finds the lock entry a package at key gets for the dependency
// name: key's own node_modules/, then each enclosing package's, then the
// top level.
func resolveDep(pkgs map[string]map[string]any, key, name string) (string, bool) {
	for dir := key; ; {
		cand := "node_modules/" + name
		if dir != "" {
			cand = dir + "/node_modules/" + name
		}
		if _, ok := pkgs[cand]; ok {
			return cand, true
		}
		if dir == "" {
			return "", false
		}
		i := strings.LastIndex(dir, "/node_modules/")
		if i < 0 {
			dir = ""
		} else {
			dir = dir[:i]
		}
	}
}
