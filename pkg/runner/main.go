package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/gauntlet-bench/gauntlet/pkg/gateway"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/sandbox"
	"github.com/gauntlet-bench/gauntlet/pkg/sealed"
)

// SpecEnv is the environment variable that may carry the slot spec as JSON
// instead of --spec (the cloud driver passes it this way).
const SpecEnv = sandbox.SpecEnv

// Main is sandbox-runner's entry point: it parses args (without the program
// name), takes the spec, the secrets and the sealed secrets' location out of
// env (the process environment) and scrubs them, runs the trial and returns
// the exit code: sandbox.ExitOK when result.json was written,
// sandbox.ExitInfra when the runner could not do its job. keys unwraps the
// data key of sealed secrets (KMS in the cloud); nil when none can arrive.
//
// The subcommands install, exec-phase, kill-all and pod-init are the
// runner's helpers (the ECS init container; container isolation; an image
// trial's pod), gateway-forward the agent's relay to its model gateway.
func Main(args []string, env []string, keys sealed.DataKeyOpener) int {
	logger := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("component", "sandbox-runner")
	if len(args) > 0 {
		switch args[0] {
		case "install":
			fs := flag.NewFlagSet("install", flag.ContinueOnError)
			fs.SetOutput(os.Stderr)
			staticBin := fs.String("static-bin", "", "also copy this directory's files (static helper binaries) to bin/ beside DEST")
			if err := fs.Parse(args[1:]); err != nil || fs.NArg() != 1 {
				logger.Error("usage: sandbox-runner install [--static-bin DIR] DEST")
				return sandbox.ExitInfra
			}
			if err := Install(fs.Arg(0), *staticBin); err != nil {
				logger.Error("install failed", "err", err)
				return sandbox.ExitInfra
			}
			return sandbox.ExitOK
		case ForwardCommand:
			// Inside the agent's sandbox: relay a loopback port to the
			// model gateway's socket until the phase's shell that started
			// it ends. The sandbox (an image trial's pod) may outlive the
			// phase: a forwarder left behind would hold the phase's
			// environment (its gateway token) and a port into the next
			// phase.
			if err := prctl(prSetPdeathsig, uintptr(syscall.SIGKILL)); err != nil || os.Getppid() == 1 {
				return 1 // the shell is gone already
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return gateway.ForwardMain(ctx, args[1:], os.Stdout, os.Stderr)
		case execPhaseCommand:
			return execPhase(args[1:], os.Stderr)
		case killAllCommand:
			return killAll(os.Stderr)
		case handoffWaitCommand:
			return handoffWait(args[1:], os.Stdout, os.Stderr)
		case VerifierContainerCommand:
			return verifierContainer(args[1:], os.Stderr)
		case podInitCommand:
			return podInit(args[1:], os.Stderr)
		}
	}
	if cfg, err := parseFlags(args, io.Discard); err == nil && cfg.opts.Isolation == IsolationBwrap && os.Geteuid() != 0 {
		// Not root: the image sandbox is rootless (rootless.go). This
		// returns only when the runner could not re-execute itself so.
		err := enterRootless(args, env)
		logger.Error("image sandbox unavailable", "err", err)
		return sandbox.ExitInfra
	}
	for _, note := range hardenRunner(sensitiveRunnerVar) {
		logger.Warn("runner hardening incomplete", "note", note)
	}
	agentSecrets, verifierSecrets, judgeKey, carriers := takeSecrets(env)
	sealedURL, wrappedKey := lookupEnv(env, sealed.URLEnv), lookupEnv(env, sealed.DataKeyEnv)
	specJSON := lookupEnv(env, SpecEnv)
	gatewayKeys, keyCarriers := takeGatewayKeys(env)
	modelsTOML := lookupEnv(env, sandbox.GatewayConfigEnv)
	carriers = append(carriers, keyCarriers...)
	for _, key := range append(carriers, sealed.URLEnv, sealed.DataKeyEnv, SpecEnv, sandbox.GatewayConfigEnv) {
		_ = os.Unsetenv(key)
	}
	cfg, err := parseFlags(args, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		return sandbox.ExitOK
	}
	if err != nil {
		logger.Error("bad arguments", "err", err)
		return sandbox.ExitInfra
	}
	if cfg.opts.Models, err = loadModels(cfg.modelsFile, modelsTOML, gatewayKeys); err != nil {
		logger.Error("bad model gateway config", "err", err)
		return sandbox.ExitInfra
	}
	spec, err := loadSpec(cfg.specFile, specJSON)
	if err != nil {
		logger.Error("bad spec", "err", err)
		return sandbox.ExitInfra
	}
	spec.Secrets, spec.VerifierSecrets, spec.JudgeKey = agentSecrets, verifierSecrets, judgeKey
	if err := openSealedSecrets(context.Background(), &spec, sealedURL, wrappedKey, keys, nil); err != nil {
		logger.Error("bad sealed secrets", "launch_id", spec.LaunchID, "err", err)
		return sandbox.ExitInfra
	}
	// The task role's credentials served that alone; no phase inherits the
	// runner's environment, and this leaves nothing in it either.
	for _, kv := range env {
		if key, _, _ := strings.Cut(kv, "="); sensitiveRunnerVar(key) {
			_ = os.Unsetenv(key)
		}
	}
	if cfg.opts.WorkDir == "" {
		dir, err := os.MkdirTemp("", "gauntlet-trial-")
		if err != nil {
			logger.Error("create work dir", "err", err)
			return sandbox.ExitInfra
		}
		defer os.RemoveAll(dir)
		cfg.opts.WorkDir = dir
	}
	cfg.opts.Logger = logger
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if _, err := Run(ctx, spec, cfg.opts); err != nil {
		logger.Error("trial failed", "launch_id", spec.LaunchID, "err", err)
		return sandbox.ExitInfra
	}
	return sandbox.ExitOK
}

type mainConfig struct {
	specFile  string
	imageFile string
	// verifierImageFile is --verifier-image (a separate verifier's image).
	verifierImageFile string
	servicesFile      string
	modelsFile        string
	opts              Options
}

func parseFlags(args []string, usage io.Writer) (mainConfig, error) {
	var cfg mainConfig
	fs := flag.NewFlagSet("sandbox-runner", flag.ContinueOnError)
	fs.SetOutput(usage)
	fs.StringVar(&cfg.specFile, "spec", "", "slot spec JSON file (default: $"+SpecEnv+")")
	fs.StringVar(&cfg.opts.WorkDir, "work", "", "work directory for /app and /logs (default: a temporary directory)")
	fs.StringVar(&cfg.opts.OutDir, "out", "", "output directory for result.json and artifacts/ (required)")
	fs.StringVar(&cfg.opts.Isolation, "isolation", IsolationBwrap,
		"bwrap (the task's image); bwrap-host (the host's root filesystem, development only); container (the runner is root in a container that is the sandbox: ECS); or process (no isolation at all)")
	fs.IntVar(&cfg.opts.AgentUID, "agent-uid", DefaultAgentUID, "uid the agent runs as under container isolation")
	fs.IntVar(&cfg.opts.AgentGID, "agent-gid", DefaultAgentGID, "gid the agent runs as under container isolation")
	fs.StringVar(&cfg.opts.AgentsDir, "agents-dir", "", "directory mounted read-only at /agent for command agents")
	fs.StringVar(&cfg.opts.BwrapPath, "bwrap", "", "bubblewrap binary (default: bwrap on PATH)")
	fs.StringVar(&cfg.opts.AgentBundles, "agent-bundles", "", "agent bundle cache (default ${GAUNTLET_CACHE:-~/.cache/gauntlet}/agents)")
	fs.StringVar(&cfg.modelsFile, "model-gateway-config", "", "operator TOML overriding the model gateway's provider table (default: the TOML in $"+sandbox.GatewayConfigEnv+", if set)")
	fs.StringVar(&cfg.imageFile, "image", "", "JSON file of the task's unpacked image (rootfs, env, working_dir, user); required by --isolation=bwrap")
	fs.StringVar(&cfg.verifierImageFile, "verifier-image", "", "JSON file of the separate verifier's unpacked image (a task with [verifier] environment_mode = \"separate\")")
	fs.StringVar(&cfg.opts.VerifierHandoff, "verifier-handoff", "", "directory shared with the task's verifier container (container isolation, a separate verifier)")
	fs.StringVar(&cfg.servicesFile, "services", "", "JSON file of the task's sidecar services' unpacked images, by service name (rootfs, env, working_dir, user, entrypoint, cmd)")
	fs.StringVar(&cfg.opts.InstalledAgentDir, "installed-agent-dir", "", "agent bundle dir mounted read-only at "+InstalledAgentMount)
	fs.StringVar(&cfg.opts.StaticBinDir, "static-bin-dir", "", "platform helper binaries mounted read-only at "+StaticBinMount)
	fs.IntVar(&cfg.opts.PidsLimit, "pids-limit", 0, fmt.Sprintf("most processes per phase (0 = %d, -1 = none)", DefaultPidsLimit))
	fs.IntVar(&cfg.opts.StorageMB, "storage-mb", 0, fmt.Sprintf("storage limit of an attempt whose task sets no storage_mb (0 = %d, -1 = none)", DefaultStorageMB))
	fs.StringVar(&cfg.opts.NetworkCeiling, "network-ceiling", "", "most permissive network mode any phase gets: public (default), allowlist or no-network")
	fs.StringVar(&cfg.opts.Overlay, "overlay", OverlayAuto, "driver of an image attempt's writable root: \"\" (the kernel's overlayfs, else fuse-overlayfs), kernel or fuse")
	fs.BoolVar(&cfg.opts.KeepDiff, "keep-diff", false, "keep the writable layer as artifacts/"+DiffArtifact)
	fs.Float64Var(&cfg.opts.MemoryStarvation.StallPercent, "memory-stall-percent", 0,
		fmt.Sprintf("end the agent phase as memory-starved when its processes were stalled on memory (PSI) this share of the window (0 = %d, -1 = never)", DefaultMemoryStallPercent))
	fs.DurationVar(&cfg.opts.MemoryStarvation.Window, "memory-stall-window", 0,
		fmt.Sprintf("the window the memory stall share is measured over (0 = %s)", DefaultMemoryStallWindow))
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if cfg.opts.OutDir == "" {
		return cfg, errors.New("--out is required")
	}
	if cfg.imageFile != "" {
		img, err := LoadImage(cfg.imageFile)
		if err != nil {
			return cfg, fmt.Errorf("--image: %w", err)
		}
		cfg.opts.Image = &img
	}
	if cfg.verifierImageFile != "" {
		img, err := LoadImage(cfg.verifierImageFile)
		if err != nil {
			return cfg, fmt.Errorf("--verifier-image: %w", err)
		}
		cfg.opts.VerifierImage = &img
	}
	if cfg.servicesFile != "" {
		imgs, err := LoadServiceImages(cfg.servicesFile)
		if err != nil {
			return cfg, fmt.Errorf("--services: %w", err)
		}
		cfg.opts.Services = imgs
	}
	if err := cfg.opts.MemoryStarvation.Validate(); err != nil {
		return cfg, fmt.Errorf("--memory-stall-percent/--memory-stall-window: %w", err)
	}
	switch cfg.opts.Overlay {
	case OverlayAuto, OverlayKernel, OverlayFuse:
	default:
		return cfg, fmt.Errorf("--overlay %q: want \"\" (auto), %s or %s", cfg.opts.Overlay, OverlayKernel, OverlayFuse)
	}
	switch cfg.opts.NetworkCeiling {
	case "", harbor.NetworkPublic, harbor.NetworkAllowlist, harbor.NetworkNone:
	default:
		return cfg, fmt.Errorf("--network-ceiling %q: want %s, %s or %s", cfg.opts.NetworkCeiling, harbor.NetworkPublic, harbor.NetworkAllowlist, harbor.NetworkNone)
	}
	return cfg, nil
}

// loadModels reads the operator's model gateway config from file, else from
// the TOML in fromEnv (a Fargate task has no operator files; the dispatcher
// passes it in $GAUNTLET_MODEL_GATEWAY_CONFIG); nil when there is neither
// (the default provider table). A hosted.api_key_env is looked up in keys,
// the GAUNTLET_GATEWAY_KEY_ variables the runner took from its environment.
func loadModels(file, fromEnv string, keys map[string]string) (*gateway.Resolver, error) {
	data, source := []byte(fromEnv), "$"+sandbox.GatewayConfigEnv
	switch {
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--model-gateway-config: %w", err)
		}
		data, source = b, "--model-gateway-config "+file
	case fromEnv == "":
		return nil, nil
	}
	r, err := gateway.ParseOperatorConfigWith(data, gateway.ParseOptions{LookupEnv: func(k string) (string, bool) {
		v, ok := keys[k]
		return v, ok
	}})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	return r, nil
}

// loadSpec reads the spec from file, else from the JSON in fromEnv.
func loadSpec(file, fromEnv string) (sandbox.Spec, error) {
	var data []byte
	switch {
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return sandbox.Spec{}, fmt.Errorf("read spec: %w", err)
		}
		data = b
	case fromEnv != "":
		data = []byte(fromEnv)
	default:
		return sandbox.Spec{}, fmt.Errorf("no spec: pass --spec FILE or set $%s", SpecEnv)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var spec sandbox.Spec
	if err := dec.Decode(&spec); err != nil {
		return sandbox.Spec{}, fmt.Errorf("decode spec: %w", err)
	}
	if spec.Harness == "" {
		return sandbox.Spec{}, errors.New("spec: harness is empty")
	}
	return spec, nil
}

func lookupEnv(env []string, key string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}
