package imagebuild

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/gauntlet-bench/gauntlet/internal/testnetns"
	"github.com/gauntlet-bench/gauntlet/internal/testrootfs"
	"github.com/gauntlet-bench/gauntlet/pkg/slirp"
)

// reg is an in-process registry on loopback.
type reg struct {
	host string
	auth authn.Authenticator // the importer's login (nil = none)
}

func newRegistry(t testing.TB) *reg {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return &reg{host: strings.TrimPrefix(srv.URL, "http://")}
}

// pushBase pushes a one-layer image holding /base.txt and returns its
// digest reference.
func (r *reg) pushBase(t *testing.T, opts ...remote.Option) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct{ name, body string }{{"base.txt", "from the base\n"}, {"etc/", ""}} {
		h := &tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), Typeflag: tar.TypeReg}
		if strings.HasSuffix(f.name, "/") {
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		io.WriteString(tw, f.body)
	}
	tw.Close()
	data := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	cf, _ := img.ConfigFile()
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config.Env = []string{"PATH=/usr/bin:/bin"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		t.Fatal(err)
	}
	ref, _ := name.ParseReference(r.host + "/base:1")
	if err := remote.Write(ref, img, opts...); err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	return r.host + "/base@" + d.String()
}

// importer pushes the built layout into the registry, as the platform's
// importer does with its own store.
func (r *reg) importer(t *testing.T) Importer {
	return func(ctx context.Context, dir, key string) (string, error) {
		idx, err := layout.ImageIndexFromPath(dir)
		if err != nil {
			return "", err
		}
		im, err := idx.IndexManifest()
		if err != nil || len(im.Manifests) != 1 {
			return "", errors.New("layout holds no single image")
		}
		img, err := idx.Image(im.Manifests[0].Digest)
		if err != nil {
			return "", err
		}
		ref, _ := name.ParseReference(r.host + "/built:" + key[:12])
		opts := []remote.Option{remote.WithContext(ctx)}
		if r.auth != nil {
			opts = append(opts, remote.WithAuth(r.auth))
		}
		if err := remote.Write(ref, img, opts...); err != nil {
			return "", err
		}
		d, _ := img.Digest()
		return r.host + "/built@" + d.String(), nil
	}
}

func newBuilder(t *testing.T, r *reg) *Builder {
	t.Helper()
	b, err := New(Config{Dir: filepath.Join(t.TempDir(), "buildah"), Import: r.importer(t)})
	if errors.Is(err, ErrNoBuildah) {
		t.Fatalf("%v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func contextDir(t *testing.T) string {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello from the context\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestBuildCopyWorkdirEnv(t *testing.T) {
	requireRoot(t)
	r := newRegistry(t)
	base := r.pushBase(t)
	b := newBuilder(t, r)
	df := "FROM " + base + "\nWORKDIR /app\nENV GREETING=hi\nCOPY hello.txt ./\n"
	var log bytes.Buffer
	pinned, err := b.Build(context.Background(), Request{Key: strings.Repeat("ab", 32), ContextDir: contextDir(t), Dockerfile: []byte(df), Log: &log})
	if err != nil {
		t.Fatalf("Build: %v\n%s", err, log.String())
	}
	if !strings.HasPrefix(pinned, r.host+"/built@sha256:") {
		t.Fatalf("Build = %q, want a digest reference in the registry", pinned)
	}
	ref, _ := name.ParseReference(pinned)
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cf.Config.WorkingDir != "/app" || !slices.Contains(cf.Config.Env, "GREETING=hi") {
		t.Errorf("config: WorkingDir %q, Env %v; want /app and GREETING=hi", cf.Config.WorkingDir, cf.Config.Env)
	}
	files := flatten(t, img)
	if files["app/hello.txt"] != "hello from the context\n" || files["base.txt"] != "from the base\n" {
		t.Errorf("image files: %v", keys(files))
	}
	if !strings.Contains(log.String(), "COPY hello.txt") {
		t.Errorf("build log lacks the COPY step:\n%s", log.String())
	}
}

func TestBuildFailureNamesTheCause(t *testing.T) {
	requireRoot(t)
	r := newRegistry(t)
	b := newBuilder(t, r)
	cases := []struct{ name, df, want string }{
		{"missing file", "FROM " + r.pushBase(t) + "\nCOPY absent.txt /\n", "absent.txt"},
		{"unknown image", "FROM " + r.host + "/nothing@sha256:" + strings.Repeat("0", 64) + "\n", "nothing"},
		{"no shell for RUN", "FROM " + r.pushBase(t) + "\nRUN true\n", "buildah bud"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var log bytes.Buffer
			_, err := b.Build(context.Background(), Request{Key: strings.Repeat("cd", 32), ContextDir: contextDir(t), Dockerfile: []byte(c.df), Log: &log})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Build err = %v, want one naming %q\nlog:\n%s", err, c.want, log.String())
			}
		})
	}
}

func TestBuildTimeoutKillsBuildah(t *testing.T) {
	requireRoot(t)
	r := newRegistry(t)
	b := newBuilder(t, r)
	// A registry that accepts the connection and never answers: the pull
	// hangs until the build's deadline kills buildah.
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select {
		case <-req.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); hang.Close() })
	df := "FROM " + strings.TrimPrefix(hang.URL, "http://") + "/slow@sha256:" + strings.Repeat("1", 64) + "\n"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err := b.Build(ctx, Request{Key: strings.Repeat("ef", 32), ContextDir: contextDir(t), Dockerfile: []byte(df)})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Build err = %v, want the deadline", err)
	}
}

// TestBuildKilledMidwayLeavesNothing: a build killed while buildah runs
// (its deadline) imports nothing, leaves no work dir, and releases its
// key: the next build of the same key runs at once and succeeds.
func TestBuildKilledMidwayLeavesNothing(t *testing.T) {
	requireRoot(t)
	r := newRegistry(t)
	base := r.pushBase(t)
	keys := &builtKeys{m: map[string]string{}}
	dir := filepath.Join(t.TempDir(), "buildah")
	b, err := New(Config{Dir: dir, Import: keys.wrap(r.importer(t)), Built: keys.built})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select {
		case <-req.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); hang.Close() })
	key := strings.Repeat("ab", 32)
	df := "FROM " + strings.TrimPrefix(hang.URL, "http://") + "/slow@sha256:" + strings.Repeat("1", 64) + "\n"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := b.Build(ctx, Request{Key: key, ContextDir: contextDir(t), Dockerfile: []byte(df)}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Build err = %v, want the deadline", err)
	}
	if _, ok := keys.built(context.Background(), key); ok {
		t.Fatal("the killed build imported an image")
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, "work")); len(ents) != 0 {
		t.Errorf("the killed build left %d work entries", len(ents))
	}
	var log bytes.Buffer
	pinned, err := b.Build(context.Background(), Request{Key: key, ContextDir: contextDir(t),
		Dockerfile: []byte("FROM " + base + "\nCOPY hello.txt /\n"), Log: &log})
	if err != nil || pinned == "" {
		t.Fatalf("the next build of the key: %q, %v\n%s", pinned, err, log.String())
	}
}

// TestReclaimWaitsForNoBuild: emptying buildah's storage (the image
// storage's cap) does nothing while a build holds it, and empties it once
// none runs.
func TestReclaimWaitsForNoBuild(t *testing.T) {
	requireRoot(t)
	r := newRegistry(t)
	base := r.pushBase(t)
	b := newBuilder(t, r)
	if _, err := b.Build(context.Background(), Request{Key: strings.Repeat("12", 32), ContextDir: contextDir(t),
		Dockerfile: []byte("FROM " + base + "\nCOPY hello.txt /\n")}); err != nil {
		t.Fatal(err)
	}
	images := func() string {
		work := t.TempDir()
		out, err := exec.Command(b.cfg.Buildah, append(b.global(work), "images", "--quiet")...).CombinedOutput()
		if err != nil {
			t.Fatalf("buildah images: %v: %s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if images() == "" {
		t.Fatal("no image in buildah's storage after a build")
	}
	before, err := b.Usage(context.Background())
	if err != nil || before == 0 {
		t.Fatalf("Usage = %d, %v", before, err)
	}
	// A build in progress holds the storage shared.
	unlock, err := lockFile(context.Background(), filepath.Join(b.cfg.Dir, storageLock), syscall.LOCK_SH)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Reclaim(context.Background()); err != nil {
		t.Fatal(err)
	}
	if images() == "" {
		t.Fatal("Reclaim emptied the storage while a build held it")
	}
	unlock()
	if err := b.Reclaim(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := images(); got != "" {
		t.Fatalf("buildah images after Reclaim: %q, want none", got)
	}
}

func TestRegistriesConf(t *testing.T) {
	mirrors := []Mirror{{Prefix: "docker.io/library/python", Location: "127.0.0.1:5000/base-python", Insecure: true}}
	got := string(registriesConf(mirrors, []string{"127.0.0.1:6000/base@sha256:ab", "ghcr.io/acme/app:1", "127.0.0.1:6000/other:2"}))
	for _, want := range []string{`prefix = "docker.io/library/python"`, `location = "127.0.0.1:5000/base-python"`, "insecure = true",
		"[[registry]]\nlocation = \"127.0.0.1:6000\"\ninsecure = true\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("registries.conf lacks %q:\n%s", want, got)
		}
	}
	// TLS is verified for every other registry: a pull may carry a login.
	if strings.Contains(got, "ghcr.io") || strings.Count(got, `location = "127.0.0.1:6000"`) != 1 {
		t.Errorf("registries.conf marks more than the loopback registry insecure, or it twice:\n%s", got)
	}
}

func TestBaseImages(t *testing.T) {
	df := "# syntax\nFROM --platform=linux/amd64 python:3.13-slim AS build\nRUN make\nfrom scratch\nFROM build AS test\n" +
		"FROM 127.0.0.1:5000/base@sha256:ab\nFROM python:3.13-slim\nCOPY --from=build /a /a\nCOPY --from=127.0.0.1:5000/uv@sha256:cd /uv /bin/\n"
	if diff := cmp.Diff([]string{"python:3.13-slim", "127.0.0.1:5000/base@sha256:ab", "127.0.0.1:5000/uv@sha256:cd"}, baseImages([]byte(df))); diff != "" {
		t.Errorf("baseImages (-want +got):\n%s", diff)
	}
	// A base named by a build argument cannot be told before the build,
	// which then says so itself.
	if got := baseImages([]byte("ARG B=x\nFROM ${B}\n")); got != nil {
		t.Errorf("baseImages with a build-argument base = %q, want none", got)
	}
}

// TestBuildRunStepsDoNotReachTheHostsLoopback: RUN steps run in a network
// of their own (slirp4netns, without the host's loopback), so a task's
// Dockerfile cannot reach the platform's API or anything else on the
// host's 127.0.0.1 during a sync; NetworkHost, the operator's opt-in,
// shares the host's.
func TestBuildRunStepsDoNotReachTheHostsLoopback(t *testing.T) {
	requireRoot(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go testnetns.Serve(ln, "host-loopback")
	port := ln.Addr().(*net.TCPAddr).Port
	ctxDir := contextDir(t)
	base := filepath.Join(testrootfs.BaseDir(), "debian-bookworm-minbase.tar")
	if err := os.Link(base, filepath.Join(ctxDir, "rootfs.tar")); err != nil {
		if out, err := exec.Command("cp", base, filepath.Join(ctxDir, "rootfs.tar")).CombinedOutput(); err != nil {
			t.Fatalf("the Debian base image (make base-images): %v: %s", err, out)
		}
	}
	nsHost, nsPort, _ := net.SplitHostPort(testnetns.Server(t, "hello-from-netns"))
	probe := fmt.Sprintf(`{ echo "loopback=$( (exec 3<>/dev/tcp/127.0.0.1/%d) 2>/dev/null && echo reached || echo unreachable)"; `+
		`echo "netns=$(timeout 5 bash -c 'exec 3<>/dev/tcp/%s/%s && head -n1 <&3' 2>/dev/null || echo unreachable)"; `+
		`echo "tap0=$(grep -c tap0 /proc/net/dev)"; echo "dns=$(grep nameserver /etc/resolv.conf | head -1)"; } > /probe.txt`, port, nsHost, nsPort)
	df := "FROM scratch\nADD rootfs.tar /\nRUN [\"/bin/bash\", \"-c\", " + strconv.Quote(probe) + "]\n"
	r := newRegistry(t)
	for _, tc := range []struct {
		network string
		want    map[string]string
	}{
		// The network beyond the host (here: a server in a namespace the
		// test made) is reached through slirp4netns.
		{network: "", want: map[string]string{"loopback": "unreachable", "netns": "hello-from-netns", "tap0": "1", "dns": "nameserver " + slirp.DNS}},
		{network: NetworkNone, want: map[string]string{"loopback": "unreachable", "netns": "unreachable", "tap0": "0"}},
		{network: NetworkHost, want: map[string]string{"loopback": "reached", "netns": "hello-from-netns", "tap0": "0"}},
	} {
		t.Run("network "+tc.network, func(t *testing.T) {
			b, err := New(Config{Dir: filepath.Join(t.TempDir(), "buildah"), Import: r.importer(t), Network: tc.network})
			if err != nil {
				t.Fatal(err)
			}
			var buildLog bytes.Buffer
			key := fmt.Sprintf("%064x", len(tc.network)+1)
			pinned, err := b.Build(context.Background(), Request{Key: key, ContextDir: ctxDir, Dockerfile: []byte(df), Log: &buildLog})
			if err != nil {
				t.Fatalf("Build: %v\n%s", err, buildLog.String())
			}
			ref, _ := name.ParseReference(pinned)
			img, err := remote.Image(ref)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(flatten(t, img)["probe.txt"]), "\n") {
				k, v, _ := strings.Cut(line, "=")
				got[k] = v
			}
			for k, v := range tc.want {
				if got[k] != v {
					t.Errorf("RUN step saw %s=%q, want %q (all: %v)", k, got[k], v, got)
				}
			}
		})
	}
}

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Fatal("these buildah builds (chroot isolation, host network) need root here; run the tests as root")
	}
}

func flatten(t *testing.T, img v1.Image) map[string]string {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, _ := io.ReadAll(tr)
			out[strings.TrimPrefix(h.Name, "/")] = string(b)
		}
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// builtKeys is a store's answer to Config.Built: what each key imported.
type builtKeys struct {
	sync.Mutex
	m map[string]string
}

func (k *builtKeys) wrap(imp Importer) Importer {
	return func(ctx context.Context, dir, key string) (string, error) {
		pinned, err := imp(ctx, dir, key)
		if err == nil {
			k.Lock()
			k.m[key] = pinned
			k.Unlock()
		}
		return pinned, err
	}
}

func (k *builtKeys) built(_ context.Context, key string) (string, bool) {
	k.Lock()
	defer k.Unlock()
	p, ok := k.m[key]
	return p, ok
}

// TestBuildOfAKeyTheStoreHoldsIsSkipped: a build key the store already
// holds an image for is answered from the store, without buildah (and no
// OCI layout is kept beside the store).
func TestBuildOfAKeyTheStoreHoldsIsSkipped(t *testing.T) {
	requireRoot(t)
	r := newRegistry(t)
	base := r.pushBase(t)
	keys := &builtKeys{m: map[string]string{}}
	build := func(buildah string) (string, string, string) {
		dir := filepath.Join(t.TempDir(), "buildah")
		b, err := New(Config{Dir: dir, Import: keys.wrap(r.importer(t)), Built: keys.built, Buildah: buildah})
		if err != nil {
			t.Fatal(err)
		}
		var log bytes.Buffer
		pinned, err := b.Build(context.Background(), Request{Key: strings.Repeat("cd", 32), ContextDir: contextDir(t),
			Dockerfile: []byte("FROM " + base + "\nCOPY hello.txt /\n"), Log: &log})
		if err != nil {
			t.Fatalf("Build: %v\n%s", err, log.String())
		}
		return pinned, log.String(), dir
	}
	first, _, dir := build("")
	if ents, _ := os.ReadDir(filepath.Join(dir, "work")); len(ents) != 0 {
		t.Errorf("the build left %d work entries (an OCI layout beside the store?)", len(ents))
	}
	// A builder whose buildah cannot run at all still answers the same key.
	fake := filepath.Join(t.TempDir(), "buildah")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\necho buildah must not run >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	second, log, _ := build(fake)
	if second != first || !strings.Contains(log, "reusing the image built before") {
		t.Errorf("second build = %q (log %q), want %q from the store", second, log, first)
	}
}

// TestTwoBuildsOfOneKeyBuildOnce: two syncs building the same Dockerfile
// at once (two builders on one buildah dir, as two platforms on a data
// dir) run buildah once: the second waits for the first and takes its
// image from the store.
func TestTwoBuildsOfOneKeyBuildOnce(t *testing.T) {
	requireRoot(t)
	r := newRegistry(t)
	base := r.pushBase(t)
	keys := &builtKeys{m: map[string]string{}}
	dir := filepath.Join(t.TempDir(), "buildah")
	var wg sync.WaitGroup
	pinned := make([]string, 2)
	logs := make([]bytes.Buffer, 2)
	errs := make([]error, 2)
	ctxDir := contextDir(t)
	for i := range 2 {
		b, err := New(Config{Dir: dir, Import: keys.wrap(r.importer(t)), Built: keys.built})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			pinned[i], errs[i] = b.Build(context.Background(), Request{Key: strings.Repeat("ef", 32), ContextDir: ctxDir,
				Dockerfile: []byte("FROM " + base + "\nCOPY hello.txt /built.txt\n"), Log: &logs[i]})
		}()
	}
	wg.Wait()
	for i := range 2 {
		if errs[i] != nil {
			t.Fatalf("build %d: %v\n%s", i, errs[i], logs[i].String())
		}
	}
	if pinned[0] != pinned[1] {
		t.Fatalf("the two builds answered %q and %q, want one image", pinned[0], pinned[1])
	}
	reused := 0
	for i := range 2 {
		if strings.Contains(logs[i].String(), "reusing the image built before") {
			reused++
		}
	}
	if reused != 1 {
		t.Errorf("%d of the 2 builds reused the other's image, want exactly 1:\n--- 0\n%s\n--- 1\n%s", reused, logs[0].String(), logs[1].String())
	}
}

// TestBuildPullsWithTheOperatorsDockerConfig: a base behind a login is
// pulled with the login of the operator's Docker config.json (the same
// file the image store reads), and refused without it.
func TestBuildPullsWithTheOperatorsDockerConfig(t *testing.T) {
	requireRoot(t)
	const user, pass = "operator", "op-secret-pass"
	guarded := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if u, p, ok := req.BasicAuth(); !ok || u != user || p != pass {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED"}]}`, http.StatusUnauthorized)
			return
		}
		guarded.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	login := &authn.Basic{Username: user, Password: pass}
	r := &reg{host: strings.TrimPrefix(srv.URL, "http://"), auth: login}
	base := r.pushBase(t, remote.WithAuth(login))
	dockerConfig := filepath.Join(t.TempDir(), "config.json")
	cfgJSON := `{"auths": {"` + r.host + `": {"auth": "` + base64.StdEncoding.EncodeToString([]byte(user+":"+pass)) + `"}}}`
	if err := os.WriteFile(dockerConfig, []byte(cfgJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	df := []byte("FROM " + base + "\nCOPY hello.txt /\n")
	for _, tc := range []struct {
		name, config string
		wantErr      bool
	}{
		{name: "without a login", config: "", wantErr: true},
		{name: "with the docker config's login", config: dockerConfig},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := New(Config{Dir: filepath.Join(t.TempDir(), "buildah"), Import: r.importer(t), DockerConfig: tc.config})
			if err != nil {
				t.Fatal(err)
			}
			var buildLog bytes.Buffer
			key := strings.Repeat("cd", 32)
			if tc.wantErr {
				key = strings.Repeat("ce", 32)
			}
			_, err = b.Build(context.Background(), Request{Key: key, ContextDir: contextDir(t), Dockerfile: df, Log: &buildLog})
			if tc.wantErr != (err != nil) {
				t.Fatalf("Build error = %v, want error %v\n%s", err, tc.wantErr, buildLog.String())
			}
			if strings.Contains(buildLog.String(), pass) || (err != nil && strings.Contains(err.Error(), pass)) {
				t.Errorf("the password is in the build log or error")
			}
		})
	}
}

// TestDockerLoginsJoinTheBuildsAuthFile: the operator's config.json logins
// (a password login, one written as auth, an identity token) join the
// auth file; a request's own login wins for its host.
func TestDockerLoginsJoinTheBuildsAuthFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "config.json")
	cfg := `{"auths": {
		"https://index.docker.io/v1/": {"auth": "` + base64.StdEncoding.EncodeToString([]byte("hub-user:hub-pass")) + `"},
		"ghcr.io": {"username": "op", "password": "op-pass"},
		"registry.example:5000": {"identitytoken": "refresh-token"}}}`
	if err := os.WriteFile(file, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	logins, err := withDockerLogins([]Credential{{Registry: "ghcr.io", Username: "workspace", Password: "ws-pass"}}, file)
	if err != nil {
		t.Fatal(err)
	}
	data, err := authFile(logins)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Auths map[string]struct {
			Auth          string `json:"auth"`
			IdentityToken string `json:"identitytoken"`
		} `json:"auths"`
	}
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	decoded := map[string]string{}
	for host, e := range got.Auths {
		raw, _ := base64.StdEncoding.DecodeString(e.Auth)
		decoded[host] = string(raw) + "|" + e.IdentityToken
	}
	want := map[string]string{"docker.io": "hub-user:hub-pass|", "ghcr.io": "workspace:ws-pass|", "registry.example:5000": "|refresh-token"}
	if diff := cmp.Diff(want, decoded); diff != "" {
		t.Errorf("auth file logins (-want +got):\n%s", diff)
	}
	if logins, err := withDockerLogins(nil, filepath.Join(t.TempDir(), "absent.json")); err != nil || len(logins) != 0 {
		t.Errorf("a missing config file: %v, %v; want no logins and no error", logins, err)
	}
}

// TestNewRemovesTheWorkOfBuildsThatDied: a build killed mid-way leaves its
// work dir (and its 0600 auth file); the next Builder on the dir removes
// it, but not the work dir of a build still running (its lock is held).
func TestNewRemovesTheWorkOfBuildsThatDied(t *testing.T) {
	dir := t.TempDir()
	work := filepath.Join(dir, "work")
	dead, live := filepath.Join(work, "build-dead"), filepath.Join(work, "build-live")
	for _, d := range []string{dead, live} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "auth.json"), []byte(`{"auths":{}}`), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	held, err := os.OpenFile(filepath.Join(live, workLock), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := syscall.Flock(int(held.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Dir: dir, Import: newRegistry(t).importer(t), Network: NetworkHost}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dead); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the dead build's work dir: %v, want it removed", err)
	}
	if _, err := os.Stat(filepath.Join(live, "auth.json")); err != nil {
		t.Errorf("the running build's work dir: %v, want it kept", err)
	}
}

// gateLog is a build log whose first write blocks until open is closed:
// the build that writes it holds its build slot meanwhile.
type gateLog struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	entered chan struct{} // closed at the first write
	open    chan struct{}
	once    sync.Once
}

func newGateLog() *gateLog {
	return &gateLog{entered: make(chan struct{}), open: make(chan struct{})}
}

func (g *gateLog) Write(p []byte) (int, error) {
	g.once.Do(func() { close(g.entered); <-g.open })
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.buf.Write(p)
}

// syncLog is a build log safe to read while the build writes it.
type syncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncLog) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncLog) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// TestMaxBuildsCapsBuildsAcrossCallers: with MaxBuilds 1, a second build
// (another sync's, another key) waits, saying so in its log, while the
// first runs, and runs once the first is done; a build waiting for a slot
// stops when its context ends.
func TestMaxBuildsCapsBuildsAcrossCallers(t *testing.T) {
	requireRoot(t)
	r := newRegistry(t)
	base := r.pushBase(t)
	b, err := New(Config{Dir: filepath.Join(t.TempDir(), "buildah"), Import: r.importer(t), Network: NetworkHost, MaxBuilds: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	first := newGateLog()
	firstErr := make(chan error, 1)
	go func() {
		_, err := b.Build(ctx, Request{Key: strings.Repeat("a1", 32), ContextDir: contextDir(t), Dockerfile: []byte("FROM " + base + "\nCOPY hello.txt /one.txt\n"), Log: first})
		firstErr <- err
	}()
	<-first.entered // the first build holds the only slot
	second := &syncLog{}
	secondErr := make(chan error, 1)
	go func() {
		_, err := b.Build(ctx, Request{Key: strings.Repeat("b2", 32), ContextDir: contextDir(t), Dockerfile: []byte("FROM " + base + "\nCOPY hello.txt /two.txt\n"), Log: second})
		secondErr <- err
	}()
	waitFor(t, "the second build to wait for a slot", func() bool {
		return strings.Contains(second.String(), "waiting for a build slot (1 builds run at once)")
	})
	if strings.Contains(second.String(), "$ buildah") {
		t.Fatalf("the second build ran buildah while the first held the only slot:\n%s", second.String())
	}
	// A third caller gives up while waiting.
	cctx, cancel := context.WithCancel(ctx)
	third := &syncLog{}
	thirdErr := make(chan error, 1)
	go func() {
		_, err := b.Build(cctx, Request{Key: strings.Repeat("c3", 32), ContextDir: contextDir(t), Dockerfile: []byte("FROM " + base + "\n"), Log: third})
		thirdErr <- err
	}()
	waitFor(t, "the third build to wait for a slot", func() bool { return strings.Contains(third.String(), "waiting for a build slot") })
	cancel()
	if err := <-thirdErr; err == nil || !strings.Contains(err.Error(), "waiting for a build slot") {
		t.Errorf("cancelled waiting build: err = %v, want one saying it waited for a build slot", err)
	}
	close(first.open)
	if err := <-firstErr; err != nil {
		t.Fatalf("first build: %v\n%s", err, first.buf.String())
	}
	if err := <-secondErr; err != nil {
		t.Fatalf("second build: %v\n%s", err, second.String())
	}
	if !strings.Contains(second.String(), "$ buildah") {
		t.Errorf("the second build never ran buildah:\n%s", second.String())
	}
}

func TestMaxBuildsMustNotBeNegative(t *testing.T) {
	_, err := New(Config{Dir: t.TempDir(), Import: newRegistry(t).importer(t), Network: NetworkHost, MaxBuilds: -1})
	if err == nil || !strings.Contains(err.Error(), "MaxBuilds") {
		t.Fatalf("New with MaxBuilds -1: err = %v, want one naming MaxBuilds", err)
	}
}

// waitFor polls cond until it holds, failing after two minutes (a busy
// machine is slow, never wrong).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(2 * time.Minute)
	for !cond() {
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}
