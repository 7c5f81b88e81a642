package registry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// gitProtocols are the transports git may use for a registry's git_url;
// ext:: and other remote helpers that run commands are refused.
const gitProtocols = "https:http:ssh:git:file"

var (
	fullCommitRE = regexp.MustCompile(`^[0-9a-f]{40}([0-9a-f]{24})?$`)
	scpLikeRE    = regexp.MustCompile(`^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^/-]`)
)

// gitCache keeps one sparse checkout per (repository, commit), so tasks
// that share a repository are fetched from it once.
type gitCache struct {
	opts Options

	mu     sync.Mutex
	root   string            // temporary directory, created on first use
	proxy  *fetchProxy       // guards git's connections; started on first use
	heads  map[string]string // git_url → resolved default-branch head
	repos  map[repoKey]*gitRepo
	closed bool
}

type repoKey struct{ url, commit string }

// gitRepo is one checkout. Its mutex serialises sparse-checkout changes.
type gitRepo struct {
	mu      sync.Mutex
	dir     string
	commit  string // the full commit checked out, once fetched
	fetched bool
	err     error // a failed fetch is not retried within one Source
}

func newGitCache(opts Options) *gitCache {
	return &gitCache{opts: opts, heads: map[string]string{}, repos: map[repoKey]*gitRepo{}}
}

// fetch copies directory rel of repository url at commit into dst and
// returns the full commit it came from.
func (g *gitCache) fetch(ctx context.Context, url, commit, rel, dst string) (string, error) {
	if err := checkGitURL(url); err != nil {
		return "", err
	}
	if err := g.checkTransport(url); err != nil {
		return "", err
	}
	if commit == "" || strings.EqualFold(commit, "HEAD") {
		head, err := g.head(ctx, url)
		if err != nil {
			return "", err
		}
		commit = head
	}
	repo, err := g.repo(url, commit)
	if err != nil {
		return "", err
	}
	repo.mu.Lock()
	defer repo.mu.Unlock()
	if err := g.checkout(ctx, repo, url, commit); err != nil {
		return "", err
	}
	if err := g.sparseAdd(ctx, repo, rel); err != nil {
		return "", err
	}
	src := filepath.Join(repo.dir, rel)
	if info, err := os.Stat(src); err != nil || !info.IsDir() {
		return "", fmt.Errorf("path %q is not a directory in %s at %s", filepath.ToSlash(rel), url, repo.commit)
	}
	if err := copyTree(repo.dir, rel, dst); err != nil {
		return "", err
	}
	return repo.commit, nil
}

// head resolves the repository's default-branch head commit once.
func (g *gitCache) head(ctx context.Context, url string) (string, error) {
	g.mu.Lock()
	head, ok := g.heads[url]
	g.mu.Unlock()
	if ok {
		return head, nil
	}
	out, err := g.run(ctx, "", "ls-remote", "--", url, "HEAD")
	if err != nil {
		return "", fmt.Errorf("git ls-remote %s %w: %w", url, ErrUnreachable, err)
	}
	fields := strings.Fields(out)
	if len(fields) < 2 || !fullCommitRE.MatchString(fields[0]) {
		return "", fmt.Errorf("git ls-remote %s: repository has no HEAD (empty repository?)", url)
	}
	g.mu.Lock()
	g.heads[url] = fields[0]
	g.mu.Unlock()
	return fields[0], nil
}

func (g *gitCache) repo(url, commit string) (*gitRepo, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, errors.New("registry source is closed")
	}
	key := repoKey{url, commit}
	if r, ok := g.repos[key]; ok {
		return r, nil
	}
	if g.root == "" {
		root, err := os.MkdirTemp(g.opts.TempDir, "gauntlet-git-")
		if err != nil {
			return nil, fmt.Errorf("git cache: %w", err)
		}
		g.root = root
	}
	r := &gitRepo{dir: filepath.Join(g.root, fmt.Sprintf("repo-%d", len(g.repos)))}
	g.repos[key] = r
	return r, nil
}

// checkout initialises the repository with an empty cone-mode sparse
// checkout and fetches commit, shallowly when the server allows fetching it
// by id, else with the full history. Called with repo.mu held.
func (g *gitCache) checkout(ctx context.Context, repo *gitRepo, url, commit string) error {
	if repo.fetched {
		return repo.err
	}
	repo.fetched = true
	repo.err = g.initAndFetch(ctx, repo, url, commit)
	if repo.err != nil && ctx.Err() != nil {
		repo.fetched = false // a cancelled fetch may be tried again
	}
	return repo.err
}

func (g *gitCache) initAndFetch(ctx context.Context, repo *gitRepo, url, commit string) error {
	steps := []struct {
		name string
		args []string
	}{
		{"init", []string{"init", "--quiet", "--template=", repo.dir}},
		{"remote add", []string{"-C", repo.dir, "remote", "add", "origin", url}},
		{"sparse-checkout set", []string{"-C", repo.dir, "sparse-checkout", "set", "--cone"}},
	}
	for _, s := range steps {
		if _, err := g.run(ctx, "", s.args...); err != nil {
			return fmt.Errorf("git %s for %s: %w", s.name, url, err)
		}
	}
	target := "FETCH_HEAD"
	_, shallowErr := g.run(ctx, repo.dir, "fetch", "--quiet", "--depth", "1", "--filter=blob:none", "origin", commit)
	if shallowErr != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("git fetch %s: %w", url, ctx.Err())
		}
		// The server may refuse unadvertised commits, or the id may be
		// abbreviated: fetch every branch and look the commit up locally.
		if _, err := g.run(ctx, repo.dir, "fetch", "--quiet", "--filter=blob:none", "origin"); err != nil {
			return fmt.Errorf("git fetch %s at %s %w: %w", url, commit, ErrUnreachable, shallowErr)
		}
		if _, err := g.run(ctx, repo.dir, "rev-parse", "--quiet", "--verify", commit+"^{commit}"); err != nil {
			return fmt.Errorf("git fetch %s: commit %s not found in the repository", url, commit)
		}
		target = commit
	}
	if _, err := g.run(ctx, repo.dir, "-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", target, "--"); err != nil {
		return fmt.Errorf("git checkout %s at %s: %w", url, commit, err)
	}
	head, err := g.run(ctx, repo.dir, "rev-parse", "HEAD")
	if err != nil {
		return fmt.Errorf("git rev-parse in %s: %w", url, err)
	}
	repo.commit = strings.TrimSpace(head)
	return nil
}

// sparseAdd adds directory rel to the checkout. Called with repo.mu held.
func (g *gitCache) sparseAdd(ctx context.Context, repo *gitRepo, rel string) error {
	if rel == "." {
		if _, err := g.run(ctx, repo.dir, "sparse-checkout", "disable"); err != nil {
			return fmt.Errorf("git sparse-checkout disable: %w", err)
		}
		return nil
	}
	if _, err := g.run(ctx, repo.dir, "sparse-checkout", "add", "--", filepath.ToSlash(rel)); err != nil {
		return fmt.Errorf("git sparse-checkout add %s: %w", filepath.ToSlash(rel), err)
	}
	return nil
}

// run runs git with a timeout, no prompts and only the allowed transports,
// returning stdout; a failure carries git's stderr.
func (g *gitCache) run(ctx context.Context, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, g.opts.GitTimeout)
	defer cancel()
	env := gitEnv()
	var proxy *fetchProxy
	if !g.opts.AllowPrivateNetworks {
		var err error
		if proxy, err = g.fetchProxy(); err != nil {
			return "", err
		}
		// Every HTTP(S) connection git makes goes through the proxy, which
		// dials through the guarded dialer; no environment may steer it.
		args = append([]string{"-c", "http.proxy=" + proxy.URL(), "-c", "http.proxyAuthMethod=basic"}, args...)
		env = slices.DeleteFunc(env, isProxyEnv)
		env = append(env, "GIT_ALLOW_PROTOCOL="+guardedGitProtocols)
	}
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	g.opts.Logger.DebugContext(ctx, "git", "args", args)
	err := cmd.Run()
	switch {
	case errors.Is(err, exec.ErrNotFound):
		return "", errors.New("the git command is not installed (it is needed for tasks with a git_url)")
	case ctx.Err() == context.DeadlineExceeded:
		return "", fmt.Errorf("timed out after %s", g.opts.GitTimeout)
	case err != nil:
		if proxy != nil {
			if refused := proxy.lastRefusal(); refused != nil {
				return "", refused
			}
		}
		return "", fmt.Errorf("%w: %s", err, lastLines(stderr.String(), 2048))
	}
	return stdout.String(), nil
}

// fetchProxy starts the guarding proxy once.
func (g *gitCache) fetchProxy() (*fetchProxy, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.proxy == nil {
		p, err := startFetchProxy(g.opts.refuse)
		if err != nil {
			return nil, err
		}
		g.proxy = p
	}
	return g.proxy, nil
}

// checkTransport refuses, under the default policy, git transports whose
// connections the fetch proxy cannot check.
func (g *gitCache) checkTransport(url string) error {
	if g.opts.AllowPrivateNetworks {
		return nil
	}
	scheme, _, ok := strings.Cut(url, "://")
	if ok && strings.Contains(":"+guardedGitProtocols+":", ":"+strings.ToLower(scheme)+":") {
		return nil
	}
	return fmt.Errorf("git_url %q: %w: only https:// and http:// repositories are fetched (file://, ssh:// and git:// reach where no address check can be made) unless the operator chooses to %s", url, ErrAddressRefused, AllowOption)
}

func gitEnv() []string {
	env := append(os.Environ(),
		"GIT_TERMINAL_PROMPT=0",
		"GCM_INTERACTIVE=never",
		"GIT_ALLOW_PROTOCOL="+gitProtocols,
		"LC_ALL=C",
	)
	if os.Getenv("GIT_SSH_COMMAND") == "" {
		env = append(env, "GIT_SSH_COMMAND=ssh -o BatchMode=yes")
	}
	return env
}

// lastLines returns the tail of git's stderr, at most max bytes, on one
// line ("; " between git's lines).
func lastLines(s string, max int) string {
	var lines []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	s = strings.Join(lines, "; ")
	if len(s) > max {
		s = "…" + s[len(s)-max:]
	}
	if s == "" {
		return "(no output)"
	}
	return s
}

// checkGitURL accepts the URL forms git fetches over the allowed transports.
func checkGitURL(url string) error {
	if strings.HasPrefix(url, "-") {
		return fmt.Errorf("git_url %q must not start with '-'", url)
	}
	if scheme, _, ok := strings.Cut(url, "://"); ok {
		if !strings.Contains(":"+gitProtocols+":", ":"+strings.ToLower(scheme)+":") {
			return fmt.Errorf("git_url %q: scheme %q is not allowed (use %s)", url, scheme, strings.ReplaceAll(gitProtocols, ":", ", "))
		}
		return nil
	}
	if scpLikeRE.MatchString(url) {
		return nil
	}
	return fmt.Errorf("git_url %q must be a URL (https://, ssh://, file://, …) or user@host:path", url)
}

// close removes the cache directory.
func (g *gitCache) close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	if g.proxy != nil {
		_ = g.proxy.close()
		g.proxy = nil
	}
	if g.root == "" {
		return nil
	}
	if err := os.RemoveAll(g.root); err != nil {
		return fmt.Errorf("remove git cache: %w", err)
	}
	g.root = ""
	return nil
}
