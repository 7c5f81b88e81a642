package image_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gauntlet-bench/gauntlet/pkg/image"
	"github.com/gauntlet-bench/gauntlet/pkg/image/imagetest"
	"github.com/gauntlet-bench/gauntlet/pkg/image/localreg"
	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// fixture is a store whose docker.io goes to a fresh loopback registry.
type fixture struct {
	reg   *localreg.Registry
	store *image.Store
	logs  *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func newFixture(t *testing.T, ropts localreg.Options, sopts image.Options) *fixture {
	t.Helper()
	reg := imagetest.Registry(t, ropts)
	logs := &syncBuffer{}
	if sopts.Mirrors == nil {
		sopts.Mirrors = []image.Mirror{reg.Mirror("docker.io")}
	}
	sopts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	st, err := image.Open(filepath.Join(t.TempDir(), "images"), sopts)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{reg: reg, store: st, logs: logs}
}

func (f *fixture) push(t *testing.T, repoTag string, img v1.Image) {
	t.Helper()
	if err := f.reg.Push(context.Background(), repoTag, img); err != nil {
		t.Fatal(err)
	}
}

var simpleConfig = v1.Config{Env: []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"}, WorkingDir: "/app", User: "1000:1000"}

func simpleImage(t *testing.T) v1.Image {
	return imagetest.Image(t, simpleConfig,
		imagetest.Layer(t, imagetest.Dir("etc"), imagetest.File("etc/os-release", "ID=test\n")),
		imagetest.Layer(t, imagetest.Dir("app"), imagetest.File("app/main.py", "print(1)\n")),
	)
}

func TestResolveTagAndDigestShareOneRootfs(t *testing.T) {
	f := newFixture(t, localreg.Options{}, image.Options{})
	img := simpleImage(t)
	f.push(t, "library/app:1", img)
	ctx := context.Background()

	res, err := f.store.Resolve(ctx, "app:1")
	if err != nil {
		t.Fatal(err)
	}
	want := "docker.io/library/app@" + imagetest.Digest(t, img)
	if res.Ref != want || res.Tag != "1" || res.Source != f.reg.URL {
		t.Fatalf("Resolve(app:1) = %+v, want Ref %s, Tag 1, Source %s", res, want, f.reg.URL)
	}
	byDigest, err := f.store.Resolve(ctx, "docker.io/library/app@"+res.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if byDigest.Ref != res.Ref || byDigest.Config != res.Config || byDigest.Source != "local" {
		t.Fatalf("Resolve(digest) = %+v, want the same image answered locally", byDigest)
	}

	a, err := f.store.Rootfs(ctx, res.Ref)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := f.store.Rootfs(ctx, "index.docker.io/library/app@"+res.Digest)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if strings.Join(a.Layers, ":") != strings.Join(b.Layers, ":") {
		t.Fatalf("tag and digest unpacked twice: %s and %s", a.Layers, b.Layers)
	}
	if got, _ := os.ReadFile(filepath.Join(imagetest.Mount(t, a.Layers), "app/main.py")); string(got) != "print(1)\n" {
		t.Fatalf("app/main.py = %q", got)
	}
	wantCfg := image.Config{Env: []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8"}, WorkingDir: "/app", User: "1000:1000"}
	if a.Config.WorkingDir != wantCfg.WorkingDir || a.Config.User != wantCfg.User || strings.Join(a.Config.Env, ",") != strings.Join(wantCfg.Env, ",") {
		t.Fatalf("Config = %+v, want %+v", a.Config, wantCfg)
	}
	for _, l := range a.Layers {
		if fi, err := os.Stat(l); err != nil || fi.Mode().Perm() != 0o755 {
			t.Fatalf("layer dir %s mode = %v (%v), want 0755 (overlay lowers must be readable)", l, fi.Mode(), err)
		}
	}
	if n := strings.Count(f.logs.String(), "image unpacked"); n != 1 {
		t.Fatalf("unpacked %d times, want 1", n)
	}
}

func TestRootfsWantsPinnedRef(t *testing.T) {
	f := newFixture(t, localreg.Options{}, image.Options{})
	_, err := f.store.Rootfs(context.Background(), "app:1")
	if !errors.Is(err, image.ErrInvalidReference) || !strings.Contains(err.Error(), "app:1") {
		t.Fatalf("Rootfs(tag) = %v, want ErrInvalidReference naming the image", err)
	}
}

func TestConcurrentFirstUseUnpacksOnce(t *testing.T) {
	f := newFixture(t, localreg.Options{}, image.Options{})
	f.push(t, "library/app:1", simpleImage(t))
	ctx := context.Background()
	res, err := f.store.Resolve(ctx, "app:1")
	if err != nil {
		t.Fatal(err)
	}
	// A second store on the same directory stands for another process.
	other, err := image.Open(f.store.Dir(), image.Options{Mirrors: []image.Mirror{f.reg.Mirror("docker.io")},
		Logger: slog.New(slog.NewTextHandler(f.logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	dirs := make([]string, 16)
	errs := make([]error, 16)
	for i := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := f.store
			if i%2 == 1 {
				st = other
			}
			r, err := st.Rootfs(ctx, res.Ref)
			if err != nil {
				errs[i] = err
				return
			}
			dirs[i] = strings.Join(r.Layers, ":")
			r.Close()
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("user %d: %v", i, err)
		}
		if dirs[i] != dirs[0] {
			t.Fatalf("user %d got %s, user 0 %s", i, dirs[i], dirs[0])
		}
	}
	if n := strings.Count(f.logs.String(), "image unpacked"); n != 1 {
		t.Fatalf("unpacked %d times by 16 concurrent first users, want 1", n)
	}
}

func TestIndexChoosesLinuxAmd64(t *testing.T) {
	f := newFixture(t, localreg.Options{}, image.Options{})
	amd := simpleImage(t)
	arm := imagetest.PlatformImage(t, v1.Platform{OS: "linux", Architecture: "arm64"}, v1.Config{}, imagetest.Layer(t, imagetest.File("arm", "")))
	if err := f.reg.PushIndex(context.Background(), "library/multi:1", imagetest.Index(t, arm, amd)); err != nil {
		t.Fatal(err)
	}
	res, err := f.store.Resolve(context.Background(), "multi:1")
	if err != nil {
		t.Fatal(err)
	}
	if res.Digest != imagetest.Digest(t, amd) || res.Index == "" {
		t.Fatalf("Resolve(index) = %+v, want the amd64 child %s and the index digest", res, imagetest.Digest(t, amd))
	}
	// Warm: the index and child are stored; resolving again answers the same.
	again, err := f.store.Resolve(context.Background(), "multi:1")
	if err != nil || again.Digest != res.Digest || again.Index != res.Index {
		t.Fatalf("warm Resolve = %+v, %v; want %+v", again, err, res)
	}
}

func TestWrongArchitecture(t *testing.T) {
	f := newFixture(t, localreg.Options{}, image.Options{})
	arm := imagetest.PlatformImage(t, v1.Platform{OS: "linux", Architecture: "arm64"}, v1.Config{}, imagetest.Layer(t, imagetest.File("arm", "")))
	f.push(t, "library/armonly:1", arm)
	s390 := imagetest.PlatformImage(t, v1.Platform{OS: "linux", Architecture: "s390x"}, v1.Config{}, imagetest.Layer(t, imagetest.File("s", "")))
	if err := f.reg.PushIndex(context.Background(), "library/armindex:1", imagetest.Index(t, arm, s390)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ ref, want string }{
		{"armonly:1", "linux/arm64 only"},
		{"armindex:1", "linux/arm64, linux/s390x only"},
	} {
		_, err := f.store.Resolve(context.Background(), tc.ref)
		if !errors.Is(err, image.ErrPlatform) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.ref) {
			t.Errorf("Resolve(%s) = %v, want ErrPlatform naming the image and %q", tc.ref, err, tc.want)
		}
	}
}

func TestUnknownImageAndUnreachable(t *testing.T) {
	f := newFixture(t, localreg.Options{}, image.Options{})
	_, err := f.store.Resolve(context.Background(), "nosuch:1")
	if !errors.Is(err, image.ErrNotFound) || !strings.Contains(err.Error(), "nosuch:1") {
		t.Fatalf("Resolve(nosuch) = %v, want ErrNotFound naming the image", err)
	}
	f.push(t, "library/app:1", simpleImage(t))
	_, err = f.store.Resolve(context.Background(), "app:2")
	if !errors.Is(err, image.ErrNotFound) {
		t.Fatalf("Resolve(unknown tag) = %v, want ErrNotFound", err)
	}

	dead := imagetest.Registry(t, localreg.Options{})
	dead.Close()
	st, err := image.Open(t.TempDir(), image.Options{Mirrors: []image.Mirror{dead.Mirror("docker.io")}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Resolve(context.Background(), "app:1")
	if !errors.Is(err, image.ErrUnreachable) || !strings.Contains(err.Error(), "app:1") || !strings.Contains(err.Error(), dead.URL) {
		t.Fatalf("Resolve(dead registry) = %v, want ErrUnreachable naming the image and the endpoint", err)
	}
}

func TestCredentials(t *testing.T) {
	f := newFixture(t, localreg.Options{Handler: imagetest.BasicAuth("alice", "s3cret")}, image.Options{})
	ctx := context.Background()
	if err := f.reg.Push(ctx, "library/app:1", simpleImage(t), remote.WithAuth(&authn.Basic{Username: "alice", Password: "s3cret"})); err != nil {
		t.Fatal(err)
	}

	_, err := f.store.Resolve(ctx, "app:1")
	if !errors.Is(err, image.ErrUnauthorized) || !strings.Contains(err.Error(), "app:1") {
		t.Fatalf("Resolve without credentials = %v, want ErrUnauthorized", err)
	}
	_, err = f.store.Resolve(ctx, "app:1", image.Credential{Registry: f.reg.Host, Username: "alice", Password: "wrong"})
	if !errors.Is(err, image.ErrUnauthorized) {
		t.Fatalf("Resolve with a wrong password = %v, want ErrUnauthorized", err)
	}
	if strings.Contains(fmt.Sprint(err), "wrong") {
		t.Fatalf("error shows the password: %v", err)
	}
	cred := image.Credential{Registry: f.reg.Host, Username: "alice", Password: "s3cret"}
	res, err := f.store.Resolve(ctx, "app:1", cred)
	if err != nil {
		t.Fatalf("Resolve with credentials: %v", err)
	}
	if strings.Contains(fmt.Sprint(cred), "s3cret") || strings.Contains(fmt.Sprintf("%#v %+v", cred, []image.Credential{cred}), "s3cret") {
		t.Fatalf("Credential prints its secret: %v", cred)
	}
	r, err := f.store.Rootfs(ctx, res.Ref, cred)
	if err != nil {
		t.Fatalf("Rootfs with credentials: %v", err)
	}
	r.Close()

	// The same from a Docker config.json.
	cfg := filepath.Join(t.TempDir(), "config.json")
	auth := base64.StdEncoding.EncodeToString([]byte("alice:s3cret"))
	if err := os.WriteFile(cfg, []byte(`{"auths":{"`+f.reg.Host+`":{"auth":"`+auth+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := image.Open(t.TempDir(), image.Options{Mirrors: []image.Mirror{f.reg.Mirror("docker.io")}, DockerConfig: cfg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Resolve(ctx, "app:1"); err != nil {
		t.Fatalf("Resolve with a Docker config: %v", err)
	}
}

func TestCachedRootfsNeverPulls(t *testing.T) {
	f := newFixture(t, localreg.Options{}, image.Options{})
	f.push(t, "library/app:1", simpleImage(t))
	ctx := context.Background()
	res, err := f.store.Resolve(ctx, "app:1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.CachedRootfs(ctx, res.Ref); !errors.Is(err, image.ErrNotCached) || !strings.Contains(err.Error(), "not unpacked") {
		t.Fatalf("CachedRootfs before any unpack = %v, want ErrNotCached", err)
	}
	if _, err := f.store.CachedRootfs(ctx, "docker.io/library/other@sha256:"+strings.Repeat("a", 64)); !errors.Is(err, image.ErrNotCached) {
		t.Fatalf("CachedRootfs of an unknown image = %v, want ErrNotCached", err)
	}
	if _, err := f.store.CachedRootfs(ctx, "app:1"); !errors.Is(err, image.ErrInvalidReference) {
		t.Fatalf("CachedRootfs(tag) = %v, want ErrInvalidReference", err)
	}
	if _, err := f.store.Pull(ctx, "app:1", nil); err != nil {
		t.Fatal(err)
	}
	f.reg.Close() // from here on nothing may need the registry
	r, err := f.store.CachedRootfs(ctx, res.Ref)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Config.WorkingDir != "/app" || r.Ref != res.Ref {
		t.Fatalf("CachedRootfs = %+v", r)
	}
	if list, _ := f.store.List(ctx); len(list) != 1 || !list[0].InUse {
		t.Fatalf("List = %+v, want the image in use while the Rootfs is open", list)
	}
}

func TestMovedTagLeavesTheOldImage(t *testing.T) {
	f := newFixture(t, localreg.Options{}, image.Options{})
	ctx := context.Background()
	f.push(t, "library/app:1", simpleImage(t))
	old, err := f.store.Resolve(ctx, "app:1")
	if err != nil {
		t.Fatal(err)
	}
	f.push(t, "library/app:1", sizedImage(t, "new", 10))
	moved, err := f.store.Resolve(ctx, "app:1")
	if err != nil {
		t.Fatal(err)
	}
	if moved.Digest == old.Digest {
		t.Fatal("the tag did not move")
	}
	list, err := f.store.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range list {
		named := strings.Join(i.Names, ",") == "docker.io/library/app:1"
		if named != (i.Digest == moved.Digest) {
			t.Fatalf("List = %+v: only %s should be named app:1", list, moved.Digest)
		}
	}
	// The old pinned reference still resolves and unpacks: a pinned run never moves.
	r, err := f.store.Rootfs(ctx, old.Ref)
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
}

// TestOpenDropsTheWholeTreesOfTheOldStore: a store made before layers were
// shared (rootfs/<config>/ trees, records without layer chains) opens, its
// trees go, and its images unpack again as layers.
func TestOpenDropsTheWholeTreesOfTheOldStore(t *testing.T) {
	f := newFixture(t, localreg.Options{}, image.Options{})
	f.push(t, "library/app:1", simpleImage(t))
	ctx := context.Background()
	res, err := f.store.Pull(ctx, "app:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Make it look like the old store's: a whole tree and a record without chains.
	dir := f.store.Dir()
	cfg := strings.TrimPrefix(res.Config, "sha256:")
	if err := os.MkdirAll(filepath.Join(dir, "rootfs", cfg, "app"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rootfs", cfg+".json"), []byte(`{"config":"`+res.Config+`","size":9,"layers":2}`), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := image.Open(dir, image.Options{Mirrors: []image.Mirror{f.reg.Mirror("docker.io")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "rootfs", cfg)); !os.IsNotExist(err) {
		t.Fatalf("the old whole tree is still in rootfs/: %v", err)
	}
	r, err := st.Rootfs(ctx, res.Ref)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if len(r.Layers) != 2 {
		t.Fatalf("Layers = %v, want the image's 2 layers", r.Layers)
	}
	if _, err := r.Lookup("app/main.py"); err != nil {
		t.Fatal(err)
	}
}
