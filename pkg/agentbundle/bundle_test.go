package agentbundle

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gauntlet-bench/gauntlet/agents"
	"github.com/gauntlet-bench/gauntlet/pkg/harness"
)

func TestEmbeddedLockPinsEveryBundledHarness(t *testing.T) {
	l, err := ParseLock(agents.PackageLock)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := ParseRuntime(agents.Runtime)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, h := range Bundled(harness.All()) {
		s, err := SpecOf(h, l, rt)
		if err != nil {
			t.Errorf("SpecOf(%s): %v", h.Name, err)
			continue
		}
		if other, ok := seen[s.Digest]; ok {
			t.Errorf("%s and %s share digest %s", h.Name, other, s.Digest)
		}
		seen[s.Digest] = h.Name
		if !strings.HasPrefix(s.DirName(), h.Name+"-"+h.Version+"-") {
			t.Errorf("DirName = %q, want <harness>-<version>-<digest>", s.DirName())
		}
	}
	names := map[string]bool{}
	for _, n := range seen {
		names[n] = true
	}
	for _, want := range []string{"codex", "claude-code", "gemini-cli", "opencode", "qwen-code", "copilot-cli", "cline"} {
		if !names[want] {
			t.Errorf("bundled harnesses %v lack %s", names, want)
		}
	}
}

func TestSpecOfRejectsAVersionTheLockDoesNotPin(t *testing.T) {
	l, _ := ParseLock(agents.PackageLock)
	rt, _ := ParseRuntime(agents.Runtime)
	h, _ := harness.Lookup("codex")
	h.Version = "0.1.0"
	if _, err := SpecOf(h, l, rt); err == nil || !strings.Contains(err.Error(), "pins @openai/codex 0.169.0") {
		t.Errorf("SpecOf(codex 0.1.0) = %v, want a version mismatch", err)
	}
	h, _ = harness.Lookup("codex")
	b := *h.Bundle
	b.Packages = append([]string{"left-pad"}, b.Packages...)
	h.Bundle = &b
	if _, err := SpecOf(h, l, rt); err == nil || !strings.Contains(err.Error(), "does not pin left-pad") {
		t.Errorf("SpecOf(unpinned package) = %v", err)
	}
}

// fakeLock pins one package "tool" whose node_modules the fake npm writes.
const fakeLock = `{"name": "t", "lockfileVersion": 3, "packages": {
  "": {"dependencies": {"tool": "1.2.3"}},
  "node_modules/tool": {"version": "1.2.3", "integrity": "sha512-AAAA"}}}`

// fakeNPM stands in for npm ci (the registry is not reachable from tests):
// it installs node_modules/tool/{bin/tool, lib/data.txt, voice/big.bin} and
// counts its runs.
func fakeNPM(t *testing.T) (path, counter string) {
	dir := t.TempDir()
	counter = filepath.Join(dir, "runs")
	script := `#!/bin/sh
set -e
[ "$1" = ci ] || exit 3
echo run >> ` + counter + `
mkdir -p node_modules/tool/bin node_modules/tool/lib node_modules/tool/voice
printf '#!/bin/sh\necho tool\n' > node_modules/tool/bin/tool
chmod 700 node_modules/tool/bin/tool
echo data > node_modules/tool/lib/data.txt
head -c 100000 /dev/zero > node_modules/tool/voice/big.bin
`
	path = filepath.Join(dir, "npm")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path, counter
}

var toolHarness = harness.Harness{Name: "tool", Version: "1.2.3", Bundle: &harness.Bundle{
	Package: "tool", Packages: []string{"tool"}, Program: "bin/tool",
	Files: []harness.BundleFile{{From: "tool/bin/tool", To: "bin/tool"}, {From: "tool/lib", To: "lib"}},
}}

type recordingProgress struct {
	stages []string
	bytes  int64
}

func (p *recordingProgress) Stage(d string, _ int64) { p.stages = append(p.stages, d) }
func (p *recordingProgress) Add(n int64)             { p.bytes += n }

func TestInstallPreparesOncePrunedAndContentAddressed(t *testing.T) {
	npm, counter := fakeNPM(t)
	cache := Cache{Dir: t.TempDir(), Lock: []byte(fakeLock), Runtime: fakeRuntime(t)}
	table := []harness.Harness{toolHarness}
	if _, err := cache.Path(toolHarness); !errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), "gauntlet agents install tool") {
		t.Fatalf("Path before install = %v, want ErrNotInstalled saying how to install", err)
	}
	p := &recordingProgress{}
	sts, err := cache.Install(context.Background(), table, InstallOptions{NPM: npm, Progress: p})
	if err != nil {
		t.Fatal(err)
	}
	if len(sts) != 1 || !sts[0].Installed {
		t.Fatalf("Install = %+v", sts)
	}
	dir, err := cache.Path(toolHarness)
	if err != nil || dir != sts[0].Dir {
		t.Fatalf("Path = %q, %v; want %q", dir, err, sts[0].Dir)
	}
	info, err := os.Stat(filepath.Join(dir, "bin/tool"))
	if err != nil || info.Mode().Perm() != 0o755 {
		t.Errorf("bin/tool = %v, %v; want mode 0755 (the agent may run under its own uid)", info, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "lib/data.txt")); err != nil {
		t.Errorf("lib/data.txt missing: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "voice")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("voice/ was kept (err %v); only the bundle's files belong in it", err)
	}
	entries, _ := os.ReadDir(cache.Dir)
	if len(entries) != 2 {
		t.Errorf("cache holds %d entries, want only the bundle and .debs (npm staging pruned)", len(entries))
	}
	if got, err := os.ReadFile(filepath.Join(dir, "path/bash")); err != nil || string(got) != fakeShell {
		t.Errorf("path/bash = %q, %v; want the runtime's shell", got, err)
	}
	if p.bytes != int64(len("#!/bin/sh\necho tool\n")+len("data\n")) || len(p.stages) != 3 {
		t.Errorf("progress = %+v", p)
	}
	// A second install (another run, CI's fresh clone with the same cache)
	// reuses the bundle without npm.
	if _, err := cache.Install(context.Background(), table, InstallOptions{NPM: npm}); err != nil {
		t.Fatal(err)
	}
	runs, _ := os.ReadFile(counter)
	if strings.Count(string(runs), "run") != 1 {
		t.Errorf("npm ran %d times, want once", strings.Count(string(runs), "run"))
	}
	// Another lock (a new integrity hash) is another bundle, and so is
	// another runtime.
	other := cache
	other.Lock = []byte(strings.Replace(fakeLock, "sha512-AAAA", "sha512-BBBB", 1))
	if _, err := other.Path(toolHarness); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("Path with a changed lock = %v, want ErrNotInstalled", err)
	}
	other = cache
	other.Runtime = []byte(strings.Replace(string(cache.Runtime), `"to": "path/bash"`, `"to": "path/sh"`, 1))
	if _, err := other.Path(toolHarness); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("Path with a changed runtime = %v, want ErrNotInstalled", err)
	}
}

// fakeShell is the shell the fake runtime's package holds.
const fakeShell = "#!/bin/sh\necho fake bash\n"

// fakeRuntime is a runtime.json of one Debian package holding a "static
// bash" (built with dpkg-deb), served by a loopback mirror.
func fakeRuntime(t *testing.T) []byte {
	t.Helper()
	return fakeRuntimeWith(t, fakeShell)
}

// fakeRuntimeWith is fakeRuntime whose "static bash" is shell.
func fakeRuntimeWith(t *testing.T, shell string) []byte {
	t.Helper()
	root := t.TempDir()
	pkg := filepath.Join(root, "pkg")
	for name, data := range map[string]string{"DEBIAN/control": "Package: fake-bash\nVersion: 1\nArchitecture: amd64\nMaintainer: t <t@t>\nDescription: t\n",
		"bin/bash-static": shell} {
		if err := os.MkdirAll(filepath.Join(pkg, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(pkg, name), []byte(data), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	deb := filepath.Join(root, "fake-bash.deb")
	if out, err := exec.Command("dpkg-deb", "--root-owner-group", "--build", pkg, deb).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb --build: %v: %s", err, out)
	}
	data, err := os.ReadFile(deb)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/pool/fake-bash.deb" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(data)
	}))
	t.Cleanup(srv.Close)
	return []byte(fmt.Sprintf(`{"mirror": %q, "packages": [{"name": "fake-bash", "version": "1", "path": "pool/fake-bash.deb",
  "sha256": %q, "files": [{"from": "bin/bash-static", "to": "path/bash", "part": "shell"}]}]}`, srv.URL, hex.EncodeToString(sum[:])))
}

// TestInstallRunsTheBundlesPrepareStep: what a row's Prepare writes under
// $BUNDLE is part of the bundle, its scratch $HOME is gone; a failing step
// fails the install with its output and leaves nothing usable; the step is
// part of the digest.
func TestInstallRunsTheBundlesPrepareStep(t *testing.T) {
	npm, _ := fakeNPM(t)
	// The runtime's "static bash" hands over to the host's bash.
	rt := fakeRuntimeWith(t, "#!/bin/sh\nexec /bin/bash \"$@\"\n")
	h := toolHarness
	b := *h.Bundle
	b.Prepare = `echo "unpacked by $(basename "$BUNDLE")" > "$BUNDLE/unpacked.txt" && touch "$HOME/scratch" && test -f "$BUNDLE/bin/tool"`
	h.Bundle = &b
	cache := Cache{Dir: t.TempDir(), Lock: []byte(fakeLock), Runtime: rt}
	sts, err := cache.Install(context.Background(), []harness.Harness{h}, InstallOptions{NPM: npm})
	if err != nil {
		t.Fatal(err)
	}
	dir := sts[0].Dir
	got, err := os.ReadFile(filepath.Join(dir, "unpacked.txt"))
	if err != nil || !strings.HasPrefix(string(got), "unpacked by .tmp-tool-") {
		t.Errorf("unpacked.txt = %q, %v; want what Prepare wrote in the bundle being made", got, err)
	}
	if entries, _ := os.ReadDir(cache.Dir); len(entries) != 2 {
		t.Errorf("cache holds %d entries, want the bundle and .debs (Prepare's home removed)", len(entries))
	}
	if _, err := cache.Path(toolHarness); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("Path of the same bundle without the Prepare step = %v, want ErrNotInstalled (another digest)", err)
	}

	b.Prepare = `echo cannot unpack >&2; exit 3`
	failing := Cache{Dir: t.TempDir(), Lock: []byte(fakeLock), Runtime: rt}
	_, err = failing.Install(context.Background(), []harness.Harness{h}, InstallOptions{NPM: npm})
	if err == nil || !strings.Contains(err.Error(), "cannot unpack") {
		t.Fatalf("Install with a failing Prepare = %v, want its output in the error", err)
	}
	if _, err := failing.Path(h); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("Path after a failed Prepare = %v, want ErrNotInstalled", err)
	}
}

func TestInstallLeavesNothingUsableWhenNPMFails(t *testing.T) {
	cache := Cache{Dir: t.TempDir(), Lock: []byte(fakeLock), Runtime: fakeRuntime(t)}
	_, err := cache.Install(context.Background(), []harness.Harness{toolHarness}, InstallOptions{NPM: "/bin/false"})
	if err == nil || !strings.Contains(err.Error(), "npm ci") {
		t.Fatalf("Install with a failing npm = %v", err)
	}
	if _, err := cache.Path(toolHarness); !errors.Is(err, ErrNotInstalled) {
		t.Errorf("Path after a failed install = %v", err)
	}
	entries, _ := os.ReadDir(cache.Dir)
	if len(entries) != 0 {
		t.Errorf("a failed install left %d entries", len(entries))
	}
}

func TestCheckRunnable(t *testing.T) {
	// /bin/bash: glibc-linked like the Bun binaries; /sbin/ldconfig:
	// static like codex's musl build.
	emptyRoot := t.TempDir()
	if err := CheckRunnable("/bin/bash", "/"); err != nil {
		t.Errorf("bash on the host root: %v", err)
	}
	if err := CheckRunnable("/sbin/ldconfig", emptyRoot); err != nil {
		t.Errorf("a static program in an empty root: %v", err)
	}
	err := CheckRunnable("/bin/bash", emptyRoot)
	if !errors.Is(err, ErrUnrunnable) || !strings.Contains(err.Error(), "needs the loader /lib64/ld-linux-x86-64.so.2") {
		t.Errorf("bash in an empty root = %v, want ErrUnrunnable naming the loader", err)
	}
	// A root with the loader (behind an absolute symlink, as in Debian)
	// but no C library.
	loaderOnly := t.TempDir()
	mustLink(t, "/lib64/ld-linux-x86-64.so.2", filepath.Join(loaderOnly, "lib64/ld-linux-x86-64.so.2"), "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
	err = CheckRunnable("/bin/bash", loaderOnly)
	if !errors.Is(err, ErrUnrunnable) || !strings.Contains(err.Error(), "libc.so.6") {
		t.Errorf("bash without libc = %v, want ErrUnrunnable naming libc.so.6", err)
	}
}

// mustLink copies the host file from into root at target's path and links
// link to it.
func mustLink(t *testing.T, from, link, target string) {
	t.Helper()
	root := strings.TrimSuffix(link, "/lib64/ld-linux-x86-64.so.2")
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(root, target)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func TestSubsetInstallsOnlyWhatTheBundlesNeed(t *testing.T) {
	h, _ := harness.Lookup("codex")
	pkg, lock, err := subset(agents.PackageLock, h.Bundle.Packages)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ParseLock(lock)
	if err != nil {
		t.Fatal(err)
	}
	for key := range l.Packages {
		if key != "" && !strings.HasPrefix(key, "node_modules/@openai/codex") {
			t.Errorf("codex's lock subset holds %s", key)
		}
	}
	if _, ok := l.Entry("@openai/codex-linux-x64"); !ok {
		t.Error("codex's lock subset lacks its Linux binary package")
	}
	if !strings.Contains(string(pkg), `"@openai/codex": "0.169.0"`) || strings.Contains(string(pkg), "claude") {
		t.Errorf("package.json = %s", pkg)
	}
	if _, _, err := subset(agents.PackageLock, []string{"left-pad"}); err == nil {
		t.Error("subset of a package the lock does not pin succeeded")
	}
}

// TestSubsetResolvesNestedAndDropsUnservedOptionals cuts the lock for
// qwen-code: its own node-pty (nested under it, a different version from the
// hoisted one gemini-cli's tree pins) is the one kept, and the clipboard
// package's other-platform optionals — which the registry here does not
// serve, so npm left them out of the lock — are dropped from its entry, or
// npm ci would refuse the lock.
func TestSubsetResolvesNestedAndDropsUnservedOptionals(t *testing.T) {
	h, _ := harness.Lookup("qwen-code")
	_, lock, err := subset(agents.PackageLock, h.Bundle.Packages)
	if err != nil {
		t.Fatal(err)
	}
	var l struct {
		Packages map[string]map[string]any `json:"packages"`
	}
	if err := json.Unmarshal(lock, &l); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.Packages["node_modules/@qwen-code/qwen-code/node_modules/@lydell/node-pty"]; !ok {
		t.Error("the subset lacks qwen-code's nested node-pty")
	}
	if _, ok := l.Packages["node_modules/@lydell/node-pty"]; ok {
		t.Error("the subset holds the hoisted node-pty of another harness's tree")
	}
	for key, e := range l.Packages {
		opt, _ := e["optionalDependencies"].(map[string]any)
		for dep := range opt {
			if _, ok := resolveDep(l.Packages, key, dep); !ok {
				t.Errorf("%s names optional %s, which the subset does not hold", key, dep)
			}
		}
	}
	if e, ok := l.Packages["node_modules/@teddyzhu/clipboard"]; !ok {
		t.Error("the subset lacks qwen-code's clipboard package")
	} else if opt := e["optionalDependencies"].(map[string]any); len(opt) != 1 || opt["@teddyzhu/clipboard-linux-x64-gnu"] == nil {
		t.Errorf("clipboard's optionals = %v, want the Linux x64 one the lock holds", opt)
	}
}
