// Package registry is the registry port and its adapter: reading a Harbor
// registry.json from an https:// or http:// URL, a file:// URL or a local
// path, and fetching the task directories it lists, either from the
// registry's own directory (an empty git_url) or from git repositories
// (shallow, sparse fetches through the git command, cached per repository
// and commit for the lifetime of one Source).
package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/benchmark"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
)

// Source is the registry port: one registry location, read once, and the
// tasks it lists. A Source holds temporary files (cached git checkouts)
// until Close.
type Source interface {
	// Registry returns the parsed registry.json.
	Registry(ctx context.Context) (harbor.Registry, error)
	// FetchTask copies the files of the task ref points at into dst, which
	// must not exist yet, and says where they came from.
	FetchTask(ctx context.Context, ref harbor.TaskRef, dst string) (Fetched, error)
	// Close removes the Source's temporary files.
	Close() error
}

// Fetched says where a fetched task came from.
type Fetched struct {
	// Ref is the task reference with GitCommitID resolved to the full commit
	// that was checked out (for git tasks named at "HEAD" or at no commit).
	Ref harbor.TaskRef
	// LocalDir is the absolute source directory of a task without git_url
	// (read from beside a local registry file); "" for git tasks.
	LocalDir string
	// ContentHash is the Harbor content hash ("sha256:<hex>") a package
	// task was verified against; "" for other tasks.
	ContentHash string
	// Warning is a warning the registry attached to the task (Harbor's
	// yanked task version), or "".
	Warning string
}

// Defaults of Options.
const (
	DefaultHTTPTimeout = 60 * time.Second
	DefaultGitTimeout  = 10 * time.Minute
	// MaxRegistrySize bounds the registry.json read over HTTP or from disk.
	MaxRegistrySize = 64 << 20
)

// ErrUnreachable is wrapped by errors that mean the registry or a task's
// source could not be read at all (network, missing file, HTTP status).
var ErrUnreachable = errors.New("unreachable")

// Options tune a Source. The zero value is usable.
type Options struct {
	// HTTPClient fetches http(s) registries; default a client with
	// DefaultHTTPTimeout.
	HTTPClient *http.Client
	// GitTimeout bounds each git command; default DefaultGitTimeout.
	GitTimeout time.Duration
	// TempDir is where git checkouts are cached; default os.TempDir().
	TempDir string
	// MaxRegistrySize bounds the registry.json; default MaxRegistrySize.
	MaxRegistrySize int64
	// Logger receives debug lines about git commands; default slog.Default().
	Logger *slog.Logger
	// AllowPrivateNetworks lets registry and git fetches reach loopback,
	// private, link-local and other non-public addresses, and lets git use
	// its file://, ssh:// and git:// transports. Off by default: a
	// registry's URLs come from outside, and must not make the server reach
	// its own network. Tests with a local registry turn it on explicitly.
	// It does not apply to an HTTPClient the caller provides.
	AllowPrivateNetworks bool

	// refuse replaces refusedAddr in tests, which can reach only loopback.
	refuse func(netip.Addr) string
}

// Client reads one registry location. It implements Source.
type Client struct {
	location string
	// fileDir is the directory of a local registry file; "" for http(s).
	fileDir string
	path    string // local registry file, "" for http(s)
	opts    Options

	mu       sync.Mutex
	registry harbor.Registry
	git      *gitCache
}

var _ Source = (*Client)(nil)

// Open returns a Source for location: an https:// or http:// URL of a
// registry.json, a file:// URL, or a local file path. Nothing is read until
// Registry or FetchTask is called.
func Open(location string) (Source, error) { return OpenWith(location, Options{}) }

// OpenWith is Open with options.
func OpenWith(location string, opts Options) (*Client, error) {
	if opts.HTTPClient == nil {
		if opts.AllowPrivateNetworks {
			opts.HTTPClient = &http.Client{Timeout: DefaultHTTPTimeout}
		} else {
			opts.HTTPClient = guardedClient(DefaultHTTPTimeout, opts.refuse)
		}
	}
	if opts.GitTimeout <= 0 {
		opts.GitTimeout = DefaultGitTimeout
	}
	if opts.MaxRegistrySize <= 0 {
		opts.MaxRegistrySize = MaxRegistrySize
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	c := &Client{location: location, opts: opts}
	path, err := localRegistryPath(location)
	if err != nil {
		return nil, err
	}
	if path != "" {
		abs, err := filepath.Abs(path)
		if err != nil {
			return nil, fmt.Errorf("registry %s: %w", location, err)
		}
		c.path, c.fileDir = abs, filepath.Dir(abs)
	}
	c.git = newGitCache(opts)
	return c, nil
}

// DirVersion is the version of the one dataset OpenDir lists.
const DirVersion = "local"

// OpenDir returns a Source for a local Harbor dataset directory: its registry
// lists one dataset, named after the directory, at version DirVersion, whose
// tasks are the subdirectories holding a task.toml, in name order.
func OpenDir(dir string, opts Options) (*Client, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("dataset directory %s: %w", dir, err)
	}
	c, err := OpenWith(filepath.Join(abs, "registry.json"), opts)
	if err != nil {
		return nil, err
	}
	c.location = abs
	entries, err := os.ReadDir(abs)
	if err != nil {
		return nil, fmt.Errorf("dataset directory %s %w: %w", abs, ErrUnreachable, err)
	}
	d := harbor.Dataset{Name: filepath.Base(abs), Version: DirVersion, Tasks: []harbor.TaskRef{}}
	for _, e := range entries {
		if e.IsDir() && isFile(filepath.Join(abs, e.Name(), harbor.TaskConfigFile)) {
			if !benchmark.ValidTaskName(e.Name()) {
				return nil, fmt.Errorf("dataset directory %s: task directory %q is not a task name: %s", abs, e.Name(), benchmark.SegmentRule)
			}
			d.Tasks = append(d.Tasks, harbor.TaskRef{Name: e.Name(), Path: e.Name()})
		}
	}
	if len(d.Tasks) == 0 {
		return nil, fmt.Errorf("dataset directory %s: no subdirectory holds a %s", abs, harbor.TaskConfigFile)
	}
	c.registry = harbor.Registry{d}
	return c, nil
}

func isFile(path string) bool {
	info, err := os.Stat(path)
	return err == nil && info.Mode().IsRegular()
}

// localRegistryPath returns the file path of a local location, or "" for
// an http(s) URL.
func localRegistryPath(location string) (string, error) {
	if location == "" {
		return "", errors.New("registry location is empty: set a registry.json URL or path")
	}
	scheme, _, hasScheme := strings.Cut(location, "://")
	if !hasScheme {
		return location, nil
	}
	u, err := url.Parse(location)
	if err != nil {
		return "", fmt.Errorf("registry location %q: %w", location, err)
	}
	switch strings.ToLower(scheme) {
	case "http", "https":
		if u.Host == "" {
			return "", fmt.Errorf("registry location %q: URL has no host", location)
		}
		return "", nil
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return "", fmt.Errorf("registry location %q: file URLs must name a local path (file:///…)", location)
		}
		if u.Path == "" {
			return "", fmt.Errorf("registry location %q: file URL has no path", location)
		}
		return filepath.FromSlash(u.Path), nil
	}
	return "", fmt.Errorf("registry location %q: scheme %q is not supported (use https://, http://, file:// or a path)", location, scheme)
}

// Location returns the location the Client was opened on.
func (c *Client) Location() string { return c.location }

// Registry reads and parses the registry.json once; later calls return the
// same registry.
func (c *Client) Registry(ctx context.Context) (harbor.Registry, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.registry != nil {
		return c.registry, nil
	}
	var (
		reg harbor.Registry
		err error
	)
	if c.path != "" {
		reg, err = readFileRegistry(c.path, c.opts.MaxRegistrySize)
	} else {
		reg, err = readHTTPRegistry(ctx, c.opts.HTTPClient, c.location, c.opts.MaxRegistrySize)
	}
	if err != nil {
		return nil, err
	}
	if refused := reg.Refused(); len(refused) > 0 {
		// The operator's file needs fixing; the entries' own datasets say
		// so to whoever asks for them, every other one is still served.
		c.opts.Logger.Warn("registry entries refused", "registry", c.location, "problems", len(refused), "first", refused[0])
	}
	c.registry = reg
	return reg, nil
}

func readFileRegistry(path string, limit int64) (harbor.Registry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("registry %s %w: %w", path, ErrUnreachable, err)
	}
	defer f.Close()
	return parseLimited(f, path, limit)
}

// FetchTask copies the task's directory into dst: from beside the registry
// file when ref has no git_url, else from its git repository at
// ref.GitCommitID (the default branch head when that is empty or "HEAD").
func (c *Client) FetchTask(ctx context.Context, ref harbor.TaskRef, dst string) (Fetched, error) {
	rel, err := cleanTaskPath(ref.Path)
	if err != nil {
		return Fetched{}, fmt.Errorf("task %s: %w", ref.Name, err)
	}
	if ref.GitURL == "" {
		return c.fetchLocal(ref, rel, dst)
	}
	commit, err := c.git.fetch(ctx, ref.GitURL, ref.GitCommitID, rel, dst)
	if err != nil {
		return Fetched{}, fmt.Errorf("task %s: %w", ref.Name, err)
	}
	ref.GitCommitID = commit
	return Fetched{Ref: ref}, nil
}

func (c *Client) fetchLocal(ref harbor.TaskRef, rel, dst string) (Fetched, error) {
	if c.fileDir == "" {
		return Fetched{}, fmt.Errorf("task %s: has no git_url, and registry %s is not a local file, so path %q has nowhere to be read from", ref.Name, c.location, ref.Path)
	}
	src := filepath.Join(c.fileDir, rel)
	info, err := os.Stat(src)
	if err != nil {
		return Fetched{}, fmt.Errorf("task %s: directory %w: %w", ref.Name, ErrUnreachable, err)
	}
	if !info.IsDir() {
		return Fetched{}, fmt.Errorf("task %s: %s is not a directory", ref.Name, src)
	}
	if err := copyTree(c.fileDir, rel, dst); err != nil {
		return Fetched{}, fmt.Errorf("task %s: %w", ref.Name, err)
	}
	return Fetched{Ref: ref, LocalDir: src}, nil
}

// Close removes the cached git checkouts.
func (c *Client) Close() error { return c.git.close() }

// cleanTaskPath checks a registry task path: relative, inside the registry
// directory or repository, slash-separated.
func cleanTaskPath(p string) (string, error) {
	if p == "" {
		return "", errors.New("path is empty")
	}
	if filepath.IsAbs(p) || strings.HasPrefix(p, "/") || strings.HasPrefix(p, `\`) {
		return "", fmt.Errorf("path %q must be relative", p)
	}
	clean := filepath.Clean(filepath.FromSlash(p))
	if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("path %q escapes the registry directory", p)
	}
	if strings.HasPrefix(clean, "-") {
		return "", fmt.Errorf("path %q must not start with '-'", p)
	}
	return clean, nil
}
