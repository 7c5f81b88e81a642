package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/agentbundle"
	"github.com/gauntlet-bench/gauntlet/pkg/hub"
	"github.com/gauntlet-bench/gauntlet/pkg/local"
	"github.com/gauntlet-bench/gauntlet/pkg/localsecret"
	"github.com/gauntlet-bench/gauntlet/pkg/server"
)

// runLocal is `gauntlet local`: the whole platform in this process.
func runLocal(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return exitCode(serveLocal(ctx, stdout, stderr, args), "local", stderr)
}

func serveLocal(ctx context.Context, stdout, stderr io.Writer, args []string) error {
	fs := newFlagSet("local", "local [--data DIR] [--addr HOST:PORT] [--sandbox bwrap|bwrap-host|process] [--registry PATH|URL]", stderr)
	// The variables make run honours are the flags' defaults, so the
	// server and the CLI agree whichever way they were started.
	data := fs.String("data", first(os.Getenv("GAUNTLET_DATA"), defaultDataDir()), "data directory (database, blobs, secrets, token); $GAUNTLET_DATA")
	addr := fs.String("addr", first(os.Getenv("GAUNTLET_ADDR"), server.DefaultAddr), "listen address; keep it on loopback unless you know why not; $GAUNTLET_ADDR")
	isolation := fs.String("sandbox", first(os.Getenv("GAUNTLET_SANDBOX"), "bwrap"), "$GAUNTLET_SANDBOX; sandbox isolation: bwrap (bubblewrap over each task's image), bwrap-host (bubblewrap over the host's root filesystem: development only) or process (NO isolation: trusted agents only)")
	registry := fs.String("registry", existing("examples/registry.json"), "Harbor registry (path or URL) benchmarks are added from")
	pkgRegistry := fs.String("package-registry", os.Getenv("GAUNTLET_PACKAGE_REGISTRY"), "Harbor package registry URL org/name datasets are added from ($GAUNTLET_PACKAGE_REGISTRY; default Harbor's hub, "+hub.DefaultURL+")")
	pkgRegistryKey := fs.String("package-registry-key", os.Getenv("GAUNTLET_PACKAGE_REGISTRY_KEY"), "the package registry's public (publishable) client key ($GAUNTLET_PACKAGE_REGISTRY_KEY; default Harbor's)")
	catalog := fs.String("catalog", existing("examples/catalog.toml"), "managed-benchmark catalog (TOML); empty for none")
	agents := fs.String("agents-dir", existing("examples/agents"), "directory mounted read-only at /agent in every sandbox")
	runner := fs.String("runner", defaultRunner(), "sandbox-runner binary")
	terminus := fs.String("terminus-2", besideThisBinary("terminus-2"), "static terminus-2 binary the terminus-2 harness runs (make build makes it); empty: that harness cannot run")
	bundles := fs.String("agent-bundles", agentbundle.DefaultDir(), "agent bundle cache (gauntlet agents install fills it)")
	gatewayCfg := fs.String("model-gateway-config", "", "operator TOML overriding the model gateway's provider table (e.g. route a provider to a local model server)")
	pidsLimit := fs.Int("pids-limit", 0, "most processes per sandbox phase (0 = the runner's default, 1024; -1 = none)")
	storageMB := fs.Int("storage-mb", 0, "storage limit of an attempt whose task sets no storage_mb (0 = the runner's default, 10240; -1 = none)")
	networkCeiling := fs.String("network-ceiling", "", "most permissive network any sandbox phase gets: public (default), allowlist or no-network")
	maxSandboxes := fs.Int("max-sandboxes", 0, "sandboxes running at once across runs (0 = the platform default)")
	minFreeMB := fs.Int("min-free-mb", local.DefaultMinFreeMB, "free space (MiB) the data dir keeps: below it no sandbox launches and slots wait, without spending retries, until space returns (0 = no floor)")
	networkInstalls := fs.Bool("allow-network-installs", false, "let harnesses that install from the network per attempt (mini-swe-agent, openhands: PyPI; cursor-cli: a vendor script) run their pinned recipe, with public network during the install step")
	allowPrivate := fs.Bool("allow-private-registry", false, "let registry and git fetches reach loopback, private and link-local addresses (and git's file://, ssh://, git://)")
	creds := fs.String("credentials", os.Getenv("GAUNTLET_CREDENTIALS"), `where to write the CLI credentials ($GAUNTLET_CREDENTIALS, else ~/.config/gauntlet/credentials; "-" for nowhere)`)
	secretsKeyFile := fs.String("secrets-key-file", os.Getenv(secretsKeyFileEnv), "file outside the data dir (mode 0600) holding the key that encrypts the secret records (64 hex digits or base64 of 32 bytes); $"+secretsKeyFileEnv+", or the key itself in $"+secretsKeyEnv+"; neither: a key kept in the data dir")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn or error")
	images := addImageFlags(fs)
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usageError("takes no arguments")
	}
	if *isolation != "bwrap" && *isolation != "bwrap-host" && *isolation != "process" {
		return usageError("--sandbox %q: want bwrap, bwrap-host (development: the host's root filesystem) or process", *isolation)
	}
	switch *networkCeiling {
	case "", "public", "allowlist", "no-network":
	default:
		return usageError("--network-ceiling %q: want public, allowlist or no-network", *networkCeiling)
	}
	if *minFreeMB < 0 {
		return usageError("--min-free-mb %d: want a number of MiB, or 0 for no floor", *minFreeMB)
	}
	if *minFreeMB == 0 {
		*minFreeMB = -1 // local.Options' "no floor"
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return usageError("--log-level %q: want debug, info, warn or error", *logLevel)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if *isolation == "process" {
		logger.Warn("SANDBOX ISOLATION IS OFF (--sandbox=process): agents run as plain processes with your user's rights; run only agents you trust")
	}
	if host, _, err := net.SplitHostPort(*addr); err == nil && !isLoopback(host) {
		logger.Warn("listening beyond loopback: anyone who can reach this address and holds the token can run code in sandboxes", "addr", *addr)
	}
	secretsKey, err := operatorSecretsKey(*secretsKeyFile, *data)
	if err != nil {
		return err
	}
	var static []string
	if *terminus != "" {
		static = append(static, abs(*terminus))
	}
	lo := local.Options{RunnerPath: *runner, StaticBinaries: static, Isolation: *isolation, AgentsDir: abs(*agents), AgentBundles: abs(*bundles),
		ModelGatewayConfig: abs(*gatewayCfg), Catalog: abs(*catalog), MaxSandboxes: *maxSandboxes, MinFreeMB: *minFreeMB, AllowPrivateRegistry: *allowPrivate, SecretsKey: secretsKey,
		Sandbox:  local.SandboxPolicy{PidsLimit: *pidsLimit, StorageMB: *storageMB, NetworkCeiling: *networkCeiling},
		Registry: abs(*registry), PackageRegistry: *pkgRegistry, PackageRegistryKey: *pkgRegistryKey}
	lo.Pipeline.Platform.NetworkInstalls = *networkInstalls
	if err := images.apply(&lo, *data, logger); err != nil {
		return err
	}
	srv, err := server.Open(ctx, server.Options{
		DataDir: *data, Addr: *addr, CredentialsPath: *creds, Logger: logger, Local: lo,
		// Answer at once: the first catalog sync prepares images for minutes.
		ListenFirst: true,
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	recs := srv.Records()
	images.pinRuns(recs.Runs, recs.Benchmarks)
	printBanner(stdout, srv)
	if err := srv.Serve(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	fmt.Fprintln(stdout, "gauntlet local stopped")
	return nil
}

// The operator's secrets key: a file (flag or variable) or the key itself
// in the environment, never on the command line, where ps shows it.
const (
	secretsKeyFileEnv = "GAUNTLET_SECRETS_KEY_FILE"
	secretsKeyEnv     = "GAUNTLET_SECRETS_KEY"
)

// operatorSecretsKey reads the operator's secrets key from the key file or
// $GAUNTLET_SECRETS_KEY (at most one of them), or returns the zero Key for
// the zero-setup default. The variable is unset once read, so that no
// process this one starts inherits it.
func operatorSecretsKey(file, dataDir string) (localsecret.Key, error) {
	text, inEnv := os.LookupEnv(secretsKeyEnv)
	if inEnv {
		if err := os.Unsetenv(secretsKeyEnv); err != nil {
			return localsecret.Key{}, fmt.Errorf("unset $%s: %w", secretsKeyEnv, err)
		}
	}
	switch {
	case inEnv && file != "":
		return localsecret.Key{}, usageError("give the secrets key once: --secrets-key-file (or $%s) or $%s, not both", secretsKeyFileEnv, secretsKeyEnv)
	case inEnv:
		return localsecret.ParseKey("$"+secretsKeyEnv, []byte(text))
	case file != "":
		return localsecret.ReadKeyFile(file, dataDir)
	}
	return localsecret.Key{}, nil
}

func printBanner(w io.Writer, srv *server.Server) {
	t := srv.Tenant()
	state := "existing workspace"
	if srv.Created() {
		state = "new workspace"
	}
	fmt.Fprintf(w, "gauntlet local is serving on %s (%s %s)\n", srv.URL(), state, t.Workspace)
	fmt.Fprintf(w, "  console: %s/\n  API:     %s/v1   (OpenAPI: %s/v1/openapi.json)\n", srv.URL(), srv.URL(), srv.URL())
	// The token itself is never printed: stdout often lands in a log file.
	fmt.Fprintf(w, "  token:   in %s (mode 0600)", srv.TokenPath())
	if p := srv.CredentialsPath(); p != "-" {
		fmt.Fprintf(w, " and %s (the CLI reads it)", p)
	}
	fmt.Fprintln(w, "\n  stop with Ctrl-C (or SIGTERM)")
	if what := srv.Starting(); what != "" {
		fmt.Fprintf(w, "  starting: %s — the API answers 503 until it ends (GET %s/v1/health says ready)\n", what, srv.URL())
	}
}

func defaultDataDir() string {
	if dir := os.Getenv("XDG_DATA_HOME"); dir != "" {
		return filepath.Join(dir, "gauntlet")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "share", "gauntlet")
	}
	return ".gauntlet"
}

// existing returns path when it exists (relative to the working directory),
// else "".
func existing(path string) string {
	if _, err := os.Stat(path); err == nil {
		return path
	}
	return ""
}

func abs(path string) string {
	if path == "" || strings.Contains(path, "://") || !filepath.IsLocal(path) {
		return path
	}
	if a, err := filepath.Abs(path); err == nil {
		return a
	}
	return path
}

// defaultRunner is the sandbox-runner next to this binary, else on PATH.
func defaultRunner() string {
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "sandbox-runner")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if p, err := exec.LookPath("sandbox-runner"); err == nil {
		return p
	}
	return "sandbox-runner"
}

// besideThisBinary is the path of program next to this binary, or "" when
// there is none.
func besideThisBinary(program string) string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	p := filepath.Join(filepath.Dir(exe), program)
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
