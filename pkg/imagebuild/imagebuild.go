// Package imagebuild builds task images from Dockerfiles with Debian's
// buildah, daemonless (overlay storage, chroot isolation, cached layers), and
// hands the result to an importer as an OCI image layout. It is the builder
// adapter of benchmark sync: builds run at sync time, never inside an
// attempt's concurrency slot.
package imagebuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/docker/cli/cli/config"
	"github.com/google/go-containerregistry/pkg/name"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/dockerfile"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
	"github.com/gauntlet-bench/gauntlet/pkg/slirp"
)

// Importer takes a built image, written as an OCI image layout directory
// with one image tagged "latest", into the platform's image store (or
// registry) and returns its digest reference ("host/repo@sha256:…").
type Importer func(ctx context.Context, layoutDir, key string) (string, error)

// Mirror redirects pulls of images under Prefix ("docker.io/library/python")
// to Location ("127.0.0.1:5000/base-python"), as containers' registries.conf
// does; Insecure allows plain HTTP and unverified TLS.
type Mirror struct {
	Prefix   string
	Location string
	Insecure bool
}

// Config wires a Builder.
type Config struct {
	// Dir holds buildah's storage (Dir/<driver>, Dir/<driver>-run) and
	// per-build work dirs; it should live under the data dir and survive
	// restarts, so cached layers are reused across tasks and syncs.
	Dir string
	// StorageDriver is buildah's storage driver: StorageOverlay (the
	// default) or StorageVFS (kept for comparison and for file systems that
	// cannot hold an overlay upper).
	StorageDriver string
	// Import takes each built image into the store; required.
	Import Importer
	// Mirrors are written to a registries.conf for the builds' pulls.
	Mirrors []Mirror
	// Buildah is the program; default "buildah" on PATH.
	Buildah string
	// Network is the RUN steps' network: NetworkIsolated (the default),
	// NetworkHost or NetworkNone.
	Network string
	// DockerConfig is the operator's Docker config.json ("" or missing =
	// none): its logins (credential helpers included) reach the builds'
	// pulls beside a request's own, which win for the same registry.
	DockerConfig string
	// Built answers whether the store already holds the image of a build
	// key (its pinned reference): a build key digests the whole context and
	// the pinned base images, so the same key is the same image, and the
	// build is skipped. The store is the one copy of a built image: no
	// layout is kept beside it. nil = always build.
	Built func(ctx context.Context, key string) (pinned string, ok bool)
	// MaxBuilds caps the builds that run at once through this Builder,
	// whichever sync asked for them (each sync has its own parallelism;
	// two syncs at once must not double the load); 0 = one per core.
	MaxBuilds int
}

// Networks of a build's RUN steps. buildah's chroot isolation runs them
// in buildah's own network namespace, so that is the one set up here.
const (
	// NetworkIsolated runs buildah in a network namespace of its own with
	// slirp4netns (a user-mode stack, --disable-host-loopback): RUN apt-get
	// reaches the package mirror, nothing reaches the host's loopback (the
	// platform's API, a loopback mirror). The bases are pulled before, in
	// the host's network, so a loopback mirror still serves them. A
	// builder that is not root cannot make the namespace and uses the
	// host's network, saying so in the build log.
	NetworkIsolated = "isolated"
	// NetworkHost shares the host's network, loopback included.
	NetworkHost = "host"
	// NetworkNone gives RUN steps loopback only.
	NetworkNone = "none"
)

// Storage drivers of the builder.
const (
	// StorageOverlay stores each layer once as a diff and mounts a
	// build's container as an overlay of them: a RUN step costs what it
	// changes, and N images FROM one base keep the base once. Root uses
	// the kernel's overlayfs; a builder that is not root mounts with
	// fuse-overlayfs, which works in its user namespace.
	StorageOverlay = "overlay"
	// StorageVFS copies the whole rootfs for every layer (≈ 50× slower
	// builds, a full copy of the base per step, never shared).
	StorageVFS = "vfs"
)

// Builder builds Dockerfiles.
type Builder struct {
	cfg Config
	// storageOpts are the driver's --storage-opt values.
	storageOpts []string
	// slots holds one token per build running (cap MaxBuilds).
	slots chan struct{}
}

// ErrNoBuildah reports that buildah is not installed.
var ErrNoBuildah = errors.New("imagebuild: buildah not found (install it: apt-get install -y buildah)")

// New returns a Builder; it checks that buildah can be run.
func New(cfg Config) (*Builder, error) {
	if cfg.Dir == "" || cfg.Import == nil {
		return nil, errors.New("imagebuild: Dir and Import are required")
	}
	if cfg.Buildah == "" {
		cfg.Buildah = "buildah"
	}
	switch {
	case cfg.MaxBuilds < 0:
		return nil, fmt.Errorf("imagebuild: MaxBuilds %d: want 0 (one per core) or more", cfg.MaxBuilds)
	case cfg.MaxBuilds == 0:
		cfg.MaxBuilds = runtime.NumCPU()
	}
	switch cfg.Network {
	case "":
		cfg.Network = NetworkIsolated
	case NetworkIsolated, NetworkHost, NetworkNone:
	default:
		return nil, fmt.Errorf("imagebuild: network %q: want %q, %q or %q", cfg.Network, NetworkIsolated, NetworkHost, NetworkNone)
	}
	var storageOpts []string
	switch cfg.StorageDriver {
	case "":
		cfg.StorageDriver = StorageOverlay
	case StorageOverlay, StorageVFS:
	default:
		return nil, fmt.Errorf("imagebuild: storage driver %q: want %q or %q", cfg.StorageDriver, StorageOverlay, StorageVFS)
	}
	if cfg.StorageDriver == StorageOverlay {
		// containers/storage otherwise bind-mounts its layer dir onto
		// itself (private propagation) in the host's mount namespace, a
		// mount that outlives every build and pins the data dir.
		storageOpts = append(storageOpts, "overlay.skip_mount_home=true")
	}
	if cfg.StorageDriver == StorageOverlay && os.Geteuid() != 0 {
		fuse, err := exec.LookPath("fuse-overlayfs")
		if err != nil {
			return nil, fmt.Errorf("imagebuild: overlay storage without root needs fuse-overlayfs (apt-get install fuse-overlayfs): %w", err)
		}
		storageOpts = append(storageOpts, "overlay.mount_program="+fuse)
	}
	if cfg.Network == NetworkIsolated {
		if _, err := exec.LookPath("slirp4netns"); err != nil {
			return nil, fmt.Errorf("imagebuild: the builds' isolated network needs slirp4netns (apt-get install slirp4netns): %w", err)
		}
	}
	if _, err := exec.LookPath(cfg.Buildah); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoBuildah, err)
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		return nil, fmt.Errorf("imagebuild: the builds' own PID, IPC and UTS namespaces need util-linux's unshare (apt-get install util-linux): %w", err)
	}
	if err := os.MkdirAll(filepath.Join(cfg.Dir, "work"), 0o700); err != nil {
		return nil, fmt.Errorf("imagebuild: %w", err)
	}
	removeAbandonedWork(filepath.Join(cfg.Dir, "work"))
	removeOtherStorage(cfg.Dir, cfg.StorageDriver)
	return &Builder{cfg: cfg, storageOpts: storageOpts, slots: make(chan struct{}, cfg.MaxBuilds)}, nil
}

// removeOtherStorage deletes the storage of drivers other than driver in
// dir: the vfs storage earlier versions kept in dir/root (a full copy of
// the rootfs per layer, often gigabytes) and that of a driver used before.
// Its cached layers are of no use to another driver.
func removeOtherStorage(dir, driver string) {
	for _, d := range []string{"root", "runroot", StorageOverlay, StorageOverlay + "-run", StorageVFS, StorageVFS + "-run"} {
		if d == driver || d == driver+"-run" {
			continue
		}
		path := filepath.Join(dir, d)
		if _, err := os.Lstat(path); err != nil {
			continue
		}
		// buildah may have left a layer mounted (a build killed mid-way on
		// overlay): unmount below path before removing it.
		unmountBelow(path)
		if err := os.RemoveAll(path); err != nil {
			slog.Warn("imagebuild: removing the storage of another driver", "dir", path, "err", err)
		}
	}
}

// unmountBelow detaches every mount at or below dir (lazily: a mount busy
// elsewhere goes when its last user does).
func unmountBelow(dir string) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return
	}
	var mounts []string
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			mounts = append(mounts, f[4])
		}
	}
	// Deepest first.
	slices.SortFunc(mounts, func(a, b string) int { return len(b) - len(a) })
	for _, m := range mounts {
		_ = syscall.Unmount(m, syscall.MNT_DETACH)
	}
}

// workLock is the file a build holds locked (flock) while its work dir is
// in use.
const workLock = ".lock"

// removeAbandonedWork deletes the work dirs of builds whose process died
// (killed mid-build: their auth file, 0600, would otherwise stay): a dir
// whose lock nobody holds.
func removeAbandonedWork(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "build-") {
			continue
		}
		path := filepath.Join(dir, e.Name())
		f, err := os.Open(filepath.Join(path, workLock))
		if err == nil {
			held := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil
			f.Close()
			if held {
				continue
			}
		}
		_ = os.RemoveAll(path)
	}
}

// Request is one build.
type Request struct {
	// Key is the build key (hex); it names the image's tag and work dir.
	Key string
	// ContextDir is the build context.
	ContextDir string
	// Dockerfile is the content to build (its FROM lines pinned by the caller).
	Dockerfile []byte
	// Log receives buildah's output; may be nil.
	Log io.Writer
	// Auth are registry logins for pulling the bases. They reach buildah
	// as an --authfile written 0600 into the build's private work dir
	// (0700) and removed with it after the build, so no password sits on
	// a command line or outlives the build.
	Auth []Credential
}

// Credential is a registry login for a build's pulls.
type Credential struct {
	Registry string // host[:port]; docker.io for Docker Hub
	Username string
	Password secret.Value
	// IdentityToken is an OAuth refresh token some registries hand out at
	// docker login (a Docker config's identitytoken), used instead of the
	// password.
	IdentityToken secret.Value
}

// withDockerLogins adds to creds the logins of the Docker config file
// (username/password or identity token, credential helpers resolved) for
// registries creds does not name: a request's own login wins for its host.
func withDockerLogins(creds []Credential, file string) ([]Credential, error) {
	if file == "" {
		return creds, nil
	}
	f, err := os.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return creds, nil
	}
	if err != nil {
		return nil, fmt.Errorf("imagebuild: docker config: %w", err)
	}
	defer f.Close()
	cf, err := config.LoadFromReader(f)
	if err != nil {
		return nil, fmt.Errorf("imagebuild: docker config %s: %w", file, err)
	}
	all, err := cf.GetAllCredentials()
	if err != nil {
		return nil, fmt.Errorf("imagebuild: docker config %s: %w", file, err)
	}
	out := slices.Clone(creds)
	keys := slices.Sorted(maps.Keys(all))
	for _, key := range keys {
		ac := all[key]
		user, pass := ac.Username, ac.Password
		if user == "" && ac.Auth != "" {
			if raw, err := base64.StdEncoding.DecodeString(ac.Auth); err == nil {
				user, pass, _ = strings.Cut(string(raw), ":")
			}
		}
		registry := registryOfConfigKey(key)
		if (user == "" && ac.IdentityToken == "") || registry == "" || slices.ContainsFunc(out, func(c Credential) bool { return c.Registry == registry }) {
			continue
		}
		out = append(out, Credential{Registry: registry, Username: user, Password: secret.Value(pass), IdentityToken: secret.Value(ac.IdentityToken)})
	}
	return out, nil
}

// registryOfConfigKey turns a Docker config auths key ("ghcr.io",
// "https://index.docker.io/v1/") into the host an auth file names.
func registryOfConfigKey(key string) string {
	host := strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	host, _, _ = strings.Cut(host, "/")
	canonical, err := benchmark.CanonicalRegistry(host)
	if err != nil {
		return ""
	}
	return canonical
}

// authFile renders logins as a containers-auth.json(5) file.
func authFile(creds []Credential) ([]byte, error) {
	type entry struct {
		Auth          string `json:"auth,omitempty"`
		IdentityToken string `json:"identitytoken,omitempty"`
	}
	auths := map[string]entry{}
	for _, c := range creds {
		if c.Registry == "" || (c.Username == "" && c.IdentityToken == "") {
			return nil, fmt.Errorf("imagebuild: a registry login needs a registry and a username or an identity token")
		}
		e := entry{IdentityToken: c.IdentityToken.Reveal()}
		if c.Username != "" {
			e.Auth = base64.StdEncoding.EncodeToString([]byte(c.Username + ":" + c.Password.Reveal()))
		}
		auths[c.Registry] = e
	}
	return json.Marshal(map[string]any{"auths": auths})
}

// Build runs `buildah bud` on the request, pushes the image to an OCI
// layout and imports it; it returns the imported digest reference. When ctx
// ends (a build timeout) buildah's whole process group is killed. A failed
// build's error carries buildah's own error line.
func (b *Builder) Build(ctx context.Context, req Request) (string, error) {
	if req.Key == "" || req.ContextDir == "" || len(req.Dockerfile) == 0 {
		return "", errors.New("imagebuild: request needs a key, a context dir and a Dockerfile")
	}
	log := req.Log
	if log == nil {
		log = io.Discard
	}
	// One build of a key at a time, in this process or another (two syncs
	// of one Dockerfile): the second finds the first's image in the store.
	unlockKey, err := lockFile(ctx, filepath.Join(b.cfg.Dir, "keys", keyFile(req.Key)+".lock"), syscall.LOCK_EX)
	if err != nil {
		return "", fmt.Errorf("imagebuild: %w", err)
	}
	defer unlockKey()
	if b.cfg.Built != nil {
		if pinned, ok := b.cfg.Built(ctx, req.Key); ok {
			fmt.Fprintf(log, "build %s: reusing the image built before (%s)\n", shortKey(req.Key), pinned)
			return pinned, nil
		}
	}
	release, err := b.slot(ctx, log, req.Key)
	if err != nil {
		return "", err
	}
	defer release()
	// Builds share buildah's storage; Reclaim empties it only when none runs.
	unlockStorage, err := lockFile(ctx, filepath.Join(b.cfg.Dir, storageLock), syscall.LOCK_SH)
	if err != nil {
		return "", fmt.Errorf("imagebuild: %w", err)
	}
	defer unlockStorage()
	work, err := os.MkdirTemp(filepath.Join(b.cfg.Dir, "work"), "build-")
	if err != nil {
		return "", fmt.Errorf("imagebuild: %w", err)
	}
	defer os.RemoveAll(work)
	lock, err := os.OpenFile(filepath.Join(work, workLock), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return "", fmt.Errorf("imagebuild: %w", err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("imagebuild: lock %s: %w", work, err)
	}
	files := map[string][]byte{
		"Dockerfile":  req.Dockerfile,
		"policy.json": []byte(`{"default":[{"type":"insecureAcceptAnything"}]}`),
	}
	bases := baseImages(req.Dockerfile)
	files["registries.conf"] = registriesConf(b.cfg.Mirrors, bases)
	logins, err := withDockerLogins(req.Auth, b.cfg.DockerConfig)
	if err != nil {
		return "", err
	}
	if len(logins) > 0 {
		auth, err := authFile(logins)
		if err != nil {
			return "", err
		}
		files["auth.json"] = auth
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(work, name), data, 0o600); err != nil {
			return "", fmt.Errorf("imagebuild: %w", err)
		}
	}
	auth := func(args []string) []string {
		if len(logins) > 0 {
			args = append(args, "--authfile", filepath.Join(work, "auth.json"))
		}
		return append(args, "--signature-policy", filepath.Join(work, "policy.json"), "--retry", "1")
	}
	network := b.cfg.Network
	if network != NetworkHost && os.Geteuid() != 0 {
		fmt.Fprintf(log, "build %s: not root: the RUN steps share the host's network (loopback included); only root can give them one of their own\n", shortKey(req.Key))
		network = NetworkHost
	}
	if network != NetworkHost {
		// In the host's network: the bases may come from a loopback mirror.
		for _, base := range bases {
			if err := b.run(ctx, log, append(auth(append(b.global(work), "pull", "--quiet")), base), NetworkHost, false); err != nil {
				return "", fmt.Errorf("buildah pull %s: %w", base, err)
			}
		}
	}
	tag := "localhost/gauntlet-build:" + shortKey(req.Key)
	bud := auth(append(b.global(work), "bud"))
	bud = append(bud, "--isolation", "chroot", "--layers", "--timestamp", "0", "--network", "host")
	if network == NetworkIsolated {
		bud = append(bud, "--dns", slirp.DNS)
	}
	bud = append(bud, "--pull=false", "-t", tag, "-f", filepath.Join(work, "Dockerfile"), req.ContextDir)
	if err := b.run(ctx, log, bud, network, true); err != nil {
		return "", fmt.Errorf("buildah bud: %w", err)
	}
	layout := filepath.Join(work, "image")
	// The push compresses every layer again, the base's too (the layout is
	// new, so no blob is reused): zstd at level 1 takes a quarter of
	// gzip's time here and is smaller; the store reads either. Its output
	// is the same for the same layer, so the base keeps one digest, and the
	// importer, which finds that layer unpacked already, copies none of it.
	push := append(b.global(work), "push", "--signature-policy", filepath.Join(work, "policy.json"), "--quiet", "--compression-format", "zstd", "--compression-level", "1", tag, "oci:"+layout+":latest")
	if err := b.run(ctx, log, push, NetworkHost, false); err != nil {
		return "", fmt.Errorf("buildah push to an OCI layout: %w", err)
	}
	pinned, err := b.cfg.Import(ctx, layout, req.Key)
	if err != nil {
		return "", fmt.Errorf("import built image: %w", err)
	}
	// The layout goes with the work dir: the store holds the one copy.
	return pinned, nil
}

// slot waits for one of the MaxBuilds build slots (saying so in the log
// when all are taken) or for ctx to end; it returns the slot's release.
func (b *Builder) slot(ctx context.Context, log io.Writer, key string) (func(), error) {
	select {
	case b.slots <- struct{}{}:
		return func() { <-b.slots }, nil
	default:
	}
	fmt.Fprintf(log, "build %s: waiting for a build slot (%d builds run at once)\n", shortKey(key), cap(b.slots))
	select {
	case b.slots <- struct{}{}:
		return func() { <-b.slots }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("imagebuild: waiting for a build slot: %w", context.Cause(ctx))
	}
}

// keyFile names a build key's lock file.
func keyFile(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:16])
}

// storageLock is the file builds hold shared while they use buildah's
// storage, and Reclaim exclusively while it empties it.
const storageLock = "storage.lock"

// lockFile takes a flock on path (made if missing), waiting until ctx ends
// (a sync cancelled while another build of its key runs); it returns the
// release.
func lockFile(ctx context.Context, path string, how int) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Usage is the bytes buildah's storage and the builds' work dirs hold: the
// builder's part of the image storage the operator's cap bounds.
func (b *Builder) Usage(ctx context.Context) (int64, error) { return StorageUsage(ctx, b.cfg.Dir) }

// StorageUsage is the bytes a builder's Dir holds on disk (blocks, each
// hardlinked file once); 0 when it does not exist.
func StorageUsage(ctx context.Context, dir string) (int64, error) {
	var total int64
	seen := map[[2]uint64]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
				return nil // removed meanwhile, or a build's private dir
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.Type()&fs.ModeType != 0 && !d.IsDir() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			id := [2]uint64{st.Dev, st.Ino}
			if seen[id] {
				return nil // a hardlink: counted once
			}
			seen[id] = true
			total += st.Blocks * 512
			return nil
		}
		total += info.Size()
		return nil
	})
	return total, err
}

// Reclaim removes every image from buildah's storage (its layer cache) if
// no build runs, in this process or another; otherwise it does nothing:
// a build in progress keeps its layers. The next builds start cold.
func (b *Builder) Reclaim(ctx context.Context) error {
	path := filepath.Join(b.cfg.Dir, storageLock)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return fmt.Errorf("imagebuild: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil
		}
		return fmt.Errorf("imagebuild: lock %s: %w", path, err)
	}
	work, err := os.MkdirTemp(filepath.Join(b.cfg.Dir, "work"), "reclaim-")
	if err != nil {
		return fmt.Errorf("imagebuild: %w", err)
	}
	defer os.RemoveAll(work)
	var out strings.Builder
	if err := b.run(ctx, &out, append(b.global(work), "rmi", "--all", "--force"), NetworkHost, false); err != nil {
		return fmt.Errorf("imagebuild: empty buildah's storage: %w", err)
	}
	return nil
}

func (b *Builder) global(work string) []string {
	d := b.cfg.StorageDriver
	args := []string{"--root", filepath.Join(b.cfg.Dir, d), "--runroot", filepath.Join(b.cfg.Dir, d+"-run"), "--storage-driver", d}
	for _, o := range b.storageOpts {
		args = append(args, "--storage-opt", o)
	}
	return append(args, "--registries-conf", filepath.Join(work, "registries.conf"))
}

// run runs buildah in its own process group, in the network given
// (NetworkHost: the host's; else a network namespace of its own, with
// slirp4netns attached for NetworkIsolated before buildah starts), teeing
// its output to log and keeping the tail for the error message. A command
// that runs the Dockerfile's RUN steps (runsSteps) starts in namespaces of
// its own besides (see stepNamespaces).
func (b *Builder) run(ctx context.Context, log io.Writer, args []string, network string, runsSteps bool) error {
	tail := &lastLines{}
	program, argv := b.cfg.Buildah, args
	var gate *os.File // the write end that lets buildah start
	var gateR *os.File
	if network != NetworkHost {
		var err error
		if gateR, gate, err = os.Pipe(); err != nil {
			return err
		}
		defer gate.Close()
	}
	if network != NetworkHost || runsSteps {
		program, argv = b.wrap(args, gateR != nil, runsSteps)
	}
	cmd := exec.CommandContext(ctx, program, argv...)
	cmd.Stdout = io.MultiWriter(log, tail)
	cmd.Stderr = cmd.Stdout
	cmd.Env = append(os.Environ(), "BUILDAH_ISOLATION=chroot")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if gateR != nil {
		cmd.ExtraFiles = []*os.File{gateR}
		cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWNET
	}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	fmt.Fprintf(log, "$ buildah %s\n", strings.Join(args, " "))
	err := cmd.Start()
	if gateR != nil {
		gateR.Close()
	}
	if err != nil {
		return err
	}
	if gate != nil {
		if network == NetworkIsolated {
			stop, err := slirp.Start("slirp4netns", cmd.Process.Pid)
			if err != nil {
				_ = cmd.Cancel()
				_ = cmd.Wait()
				return fmt.Errorf("imagebuild: the RUN steps' network: %w", err)
			}
			defer stop()
		}
		_, _ = gate.Write([]byte("go\n"))
		gate.Close()
	}
	err = cmd.Wait()
	if ctx.Err() != nil {
		return fmt.Errorf("stopped: %w", context.Cause(ctx))
	}
	if err != nil {
		if line := tail.errorLine(); line != "" {
			return fmt.Errorf("%v: %s", err, line)
		}
		return err
	}
	return nil
}

// stepNamespaces are the util-linux unshare options that start bud as
// pid 1 of new PID, IPC, UTS and mount namespaces. buildah's chroot
// isolation runs a RUN step in buildah's own PID and IPC namespaces and
// bind-mounts buildah's /proc and /dev into it (its --pid and --ipc
// options apply to the OCI isolations only), so without these a RUN step
// sees and can signal every process of the host, the host's SysV IPC
// objects and its /dev/shm. The fresh /proc (--mount-proc) is what the
// chroot's bind then shows; --kill-child and the PID namespace end every
// process a RUN step left behind with the build.
var stepNamespaces = []string{"--pid", "--fork", "--kill-child", "--mount-proc", "--ipc", "--uts", "--mount", "--propagation", "private"}

// stepShm is the size of a build's own /dev/shm (Docker's default).
const stepShm = "64m"

// wrap returns the command that runs buildah with args: behind a shell that
// waits on fd 3 until the network namespace is in place (gated), and for a
// bud (runsSteps) in the namespaces of stepNamespaces with a /dev/shm of its
// own. A builder that is not root gets those namespaces inside buildah's
// own user namespace (`buildah unshare`, its subordinate ids mapped as in
// any rootless build), the only place it may make them.
func (b *Builder) wrap(args []string, gated, runsSteps bool) (string, []string) {
	var script strings.Builder
	script.WriteString("set -e; ")
	if gated {
		script.WriteString(`read -r _ <&3; exec 3<&-; `)
	}
	if runsSteps {
		script.WriteString("mount -t tmpfs -o nosuid,nodev,noexec,mode=1777,size=" + stepShm + " shm /dev/shm; ")
	}
	script.WriteString(`exec "$@"`)
	argv := append([]string{"-c", script.String(), "sh", b.cfg.Buildah}, args...)
	if !runsSteps {
		return "/bin/sh", argv
	}
	argv = append(append(slices.Clone(stepNamespaces), "--", "/bin/sh"), argv...)
	if os.Geteuid() != 0 {
		return b.cfg.Buildah, append([]string{"unshare", "--", "unshare"}, argv...)
	}
	return "unshare", argv
}

func shortKey(key string) string {
	if len(key) > 32 {
		return key[:32]
	}
	return key
}

// registriesConf renders mirrors as containers-registries.conf(5) v2.
func registriesConf(mirrors []Mirror, bases []string) []byte {
	var buf bytes.Buffer
	buf.WriteString("unqualified-search-registries = [\"docker.io\"]\n")
	for _, m := range mirrors {
		fmt.Fprintf(&buf, "\n[[registry]]\nprefix = %q\nlocation = %q\ninsecure = %t\n", m.Prefix, m.Location, m.Insecure)
	}
	// TLS is verified everywhere (the pulls may carry logins), except on a
	// loopback registry, which serves plain HTTP.
	var loopback []string
	for _, base := range bases {
		if host := registryHost(base); isLoopback(host) && !slices.Contains(loopback, host) &&
			!slices.ContainsFunc(mirrors, func(m Mirror) bool { return m.Prefix == host }) {
			loopback = append(loopback, host)
		}
	}
	for _, host := range loopback {
		fmt.Fprintf(&buf, "\n[[registry]]\nlocation = %q\ninsecure = true\n", host)
	}
	return buf.Bytes()
}

// baseImages lists the images a Dockerfile names (its FROM lines and
// COPY/ADD --from=), in order, once each, without scratch and the names of
// its own earlier stages; nil when they cannot be told (a build argument),
// as the build will then say.
func baseImages(df []byte) []string {
	froms, err := dockerfile.Bases(df)
	if err != nil {
		return nil
	}
	var bases []string
	for _, f := range froms {
		if !slices.Contains(bases, f.Image) {
			bases = append(bases, f.Image)
		}
	}
	return bases
}

// registryHost is the registry of an image reference ("" when it does not
// parse).
func registryHost(ref string) string {
	r, err := name.ParseReference(ref, name.WeakValidation)
	if err != nil {
		return ""
	}
	return r.Context().RegistryStr()
}

func isLoopback(host string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}

// lastLines keeps the last 64 KiB of output.
type lastLines struct{ buf []byte }

func (l *lastLines) Write(p []byte) (int, error) {
	l.buf = append(l.buf, p...)
	if over := len(l.buf) - 64<<10; over > 0 {
		l.buf = l.buf[over:]
	}
	return len(p), nil
}

// errorLine is buildah's last "Error: …" line, or the last line.
func (l *lastLines) errorLine() string {
	lines := strings.Split(strings.TrimSpace(string(l.buf)), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if s := strings.TrimSpace(lines[i]); strings.HasPrefix(s, "Error:") || strings.HasPrefix(s, "error ") {
			return s
		}
	}
	if len(lines) > 0 {
		return strings.TrimSpace(lines[len(lines)-1])
	}
	return ""
}
