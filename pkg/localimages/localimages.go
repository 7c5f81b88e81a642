// Package localimages wires task environments for the embedded platform
// (`gauntlet local`): benchmark sync resolves images with the local image
// store (pkg/image), builds Dockerfile tasks with buildah (pkg/imagebuild)
// into that store, and unpacks every pinned image into the store's rootfs
// cache at sync, so that a sandbox launch finds it there and never pulls
// inside an attempt's concurrency slot.
package localimages

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/benchsync"
	"github.com/gauntlet-bench/gauntlet/pkg/image"
	"github.com/gauntlet-bench/gauntlet/pkg/imagebuild"
	"github.com/gauntlet-bench/gauntlet/pkg/localsandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/records"
	"github.com/gauntlet-bench/gauntlet/pkg/run"
)

// Policy is the operator's part of task environments beyond the store's
// own settings (mirrors, credentials, cache size).
type Policy struct {
	// DefaultImage runs tasks that name no docker_image and ship no
	// Dockerfile; "" makes such tasks unavailable.
	DefaultImage string
	// ForceBuild builds a task's Dockerfile even when it names a docker_image.
	ForceBuild bool
	// NoPublicNetwork forbids network_mode "public": tasks that need it are
	// unavailable with that reason.
	NoPublicNetwork bool
	// MaxBuildTimeout caps a task's build_timeout_sec (0: no cap).
	MaxBuildTimeout time.Duration
	// ParallelBuilds is how many task images a sync prepares at once, and
	// how many builds run at once across every sync of the platform (0: one
	// per core); buildah's overlay storage is shared by the builds.
	ParallelBuilds int
}

// Config wires the environments of a local platform.
type Config struct {
	Store *image.Store
	// Mirrors are the store's mirror setting; builds pull their FROM
	// images through the same mirrors.
	Mirrors []image.Mirror
	// BuildDir holds buildah's storage (kept between builds so layers are
	// cached). "" disables builds: Dockerfile tasks are unavailable.
	BuildDir string
	Policy   Policy
}

// Environments returns the sync configuration of a local platform.
func Environments(cfg Config) (*benchsync.Environments, error) {
	if cfg.Store == nil {
		return nil, errors.New("local images: Store is required")
	}
	envs := &benchsync.Environments{
		Resolver: resolver{cfg.Store}, Warm: warmer{cfg.Store}.warm, HasFile: warmer{cfg.Store}.hasFile,
		DefaultImage: cfg.Policy.DefaultImage, ForceBuild: cfg.Policy.ForceBuild,
		NoPublicNetwork: cfg.Policy.NoPublicNetwork, MaxBuildTimeout: cfg.Policy.MaxBuildTimeout,
		ParallelBuilds: cfg.Policy.ParallelBuilds,
		// The image sandbox runs sidecar services (runner/services.go).
		Services: true,
		Volumes:  true,
	}
	if cfg.BuildDir != "" {
		mirrors, err := BuildMirrors(cfg.Mirrors)
		if err != nil {
			return nil, err
		}
		imp := importer{cfg.Store}
		b, err := imagebuild.New(imagebuild.Config{Dir: cfg.BuildDir, Mirrors: mirrors,
			DockerConfig: cfg.Store.DockerConfig(), Import: imp.importLayout, Built: imp.built,
			MaxBuilds: cfg.Policy.ParallelBuilds})
		if err != nil {
			return nil, fmt.Errorf("local images: %w", err)
		}
		envs.Builder = builder{b}
		// The cap (max_rootfs_gb) covers buildah's storage too.
		cfg.Store.SetExtra(b)
	}
	return envs, nil
}

// resolver pins references with the image store.
type resolver struct{ s *image.Store }

func (r resolver) Resolve(ctx context.Context, ref string, creds []benchsync.PullCredential) (string, error) {
	res, err := r.s.Resolve(ctx, ref, imageCredentials(creds)...)
	if err != nil {
		return "", cause(err)
	}
	return res.Ref, nil
}

// warmer unpacks a pinned image into the rootfs cache.
type warmer struct{ s *image.Store }

func (w warmer) warm(ctx context.Context, pinned string, creds []benchsync.PullCredential) error {
	rf, err := w.s.Rootfs(ctx, pinned, imageCredentials(creds)...)
	if err != nil {
		return cause(err)
	}
	return rf.Close()
}

// imageCredentials are the sync's credentials as the image store takes them.
func imageCredentials(creds []benchsync.PullCredential) []image.Credential {
	out := make([]image.Credential, len(creds))
	for i, c := range creds {
		out[i] = image.Credential{Registry: c.Registry, Username: c.Username, Password: c.Password.Reveal()}
	}
	return out
}

// cause drops the store's "image X:" wrapper: sync names the image itself.
func cause(err error) error {
	var ie *image.Error
	if errors.As(err, &ie) {
		return ie.Err
	}
	return err
}

// importer takes built layouts into the store under a name of the build key.
type importer struct{ s *image.Store }

// BuildRepository is the repository built task images are stored under.
const BuildRepository = "gauntlet.local/build"

func (i importer) importLayout(ctx context.Context, dir, key string) (string, error) {
	res, err := i.s.Import(ctx, dir, buildName(key))
	if err != nil {
		return "", cause(err)
	}
	return res.Ref, nil
}

// built finds the image a build key made in the store: the one copy of a
// built image, so a second sync (or platform on the same data dir) of the
// same Dockerfile and context does not build again.
func (i importer) built(ctx context.Context, key string) (string, bool) {
	res, ok, err := i.s.Stored(ctx, buildName(key))
	if err != nil || !ok {
		return "", false
	}
	return res.Ref, true
}

func buildName(key string) string { return BuildRepository + ":" + key[:min(len(key), 64)] }

// builder adapts imagebuild to the sync's port.
type builder struct{ b *imagebuild.Builder }

func (b builder) Build(ctx context.Context, r benchsync.BuildRequest) (string, error) {
	auth := make([]imagebuild.Credential, len(r.Credentials))
	for i, c := range r.Credentials {
		auth[i] = imagebuild.Credential{Registry: c.Registry, Username: c.Username, Password: c.Password}
	}
	return b.b.Build(ctx, imagebuild.Request{Key: r.Key, ContextDir: r.ContextDir, Dockerfile: r.Dockerfile, Log: r.Log, Auth: auth})
}

// BuildMirrors turns the store's mirror setting into buildah's
// registries.conf entries (the first endpoint of each prefix; http
// endpoints are insecure, which the store allows on loopback only).
func BuildMirrors(ms []image.Mirror) ([]imagebuild.Mirror, error) {
	var out []imagebuild.Mirror
	for _, m := range ms {
		if len(m.Endpoints) == 0 {
			continue
		}
		u, err := url.Parse(m.Endpoints[0])
		if err != nil || u.Host == "" {
			return nil, fmt.Errorf("mirror %s: endpoint %q: want a URL such as http://127.0.0.1:5000", m.Prefix, m.Endpoints[0])
		}
		prefix := m.Prefix
		if prefix == "docker.io" || strings.HasPrefix(prefix, "docker.io/") {
			// containers' registries.conf spells Docker Hub docker.io too.
			prefix = strings.TrimSuffix(prefix, "/")
		}
		out = append(out, imagebuild.Mirror{Prefix: prefix, Location: u.Host + strings.TrimSuffix(u.Path, "/"), Insecure: u.Scheme == "http"})
	}
	return out, nil
}

// DefaultBuildDir is where a platform on dataDir keeps buildah's storage.
func DefaultBuildDir(dataDir string) string { return filepath.Join(dataDir, "buildah") }

// SandboxImages is the sandbox driver's view of the image store: the
// unpacked rootfs of a pinned image from the cache, never a pull — images
// are pulled, built and unpacked at sync, outside any attempt's
// concurrency slot. A rootfs evicted since (max_rootfs_gb) is unpacked
// again from the blobs the store still holds (Store.RestoreRootfs, no
// network), and logged; a miss is the launch's infrastructure error.
func SandboxImages(s *image.Store, logger *slog.Logger) localsandbox.Images {
	if logger == nil {
		logger = slog.Default()
	}
	return sandboxImages{s, logger}
}

type sandboxImages struct {
	s      *image.Store
	logger *slog.Logger
}

var _ localsandbox.Images = sandboxImages{}

func (si sandboxImages) CachedRootfs(ctx context.Context, ref string) (localsandbox.Rootfs, error) {
	rf, restored, err := si.s.RestoreRootfs(ctx, ref)
	if err != nil {
		return localsandbox.Rootfs{}, fmt.Errorf("images are pulled, built and unpacked at sync: %w", cause(err))
	}
	if restored {
		si.logger.WarnContext(ctx, "the image's rootfs had been evicted from the cache: unpacked it again from the stored layers", "image", ref)
	}
	return localsandbox.Rootfs{Layers: rf.Layers, Env: rf.Config.Env, WorkingDir: rf.Config.WorkingDir, User: rf.Config.User,
		Entrypoint: rf.Config.Entrypoint, Cmd: rf.Config.Cmd, Release: func() { _ = rf.Close() }}, nil
}

// RunPins reads the runs the image store must not evict images of
// (records.Runs).
type RunPins interface {
	ActiveRuns(ctx context.Context) ([]string, error)
	Run(ctx context.Context, id string) (run.Run, error)
}

// Manifests reads the manifest versions those runs pinned
// (records.Benchmarks).
type Manifests interface {
	Manifest(ctx context.Context, ws, key, version string) (benchmark.Manifest, map[string]records.TaskFiles, error)
}

// PinnedImages lists the pinned images of the runs not yet finished — each
// active run's manifest's environments, for the tasks it selected — for
// the store's eviction (image.Options.Pinned, Store.SetPinned) never to
// drop. An error leaves eviction evicting nothing.
func PinnedImages(runs RunPins, manifests Manifests) func(ctx context.Context) ([]string, error) {
	return func(ctx context.Context) ([]string, error) {
		ids, err := runs.ActiveRuns(ctx)
		if err != nil {
			return nil, err
		}
		seen := map[string]bool{}
		var out []string
		for _, id := range ids {
			r, err := runs.Run(ctx, id)
			if err != nil {
				return nil, fmt.Errorf("run %s: %w", id, err)
			}
			m, _, err := manifests.Manifest(ctx, r.ManifestWorkspace, r.Benchmark, r.ManifestVersion)
			if err != nil {
				return nil, fmt.Errorf("run %s: manifest %s@%s: %w", id, r.Benchmark, r.ManifestVersion, err)
			}
			selected := map[string]bool{}
			for _, t := range r.Tasks {
				selected[t] = true
			}
			for _, t := range m.Tasks {
				if e := t.Environment; e != nil && e.Pinned != "" && selected[t.Name] && !seen[e.Pinned] {
					seen[e.Pinned] = true
					out = append(out, e.Pinned)
				}
			}
		}
		return out, nil
	}
}
