package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/agentbundle"
	"github.com/gauntlet-bench/gauntlet/pkg/atif"
	"github.com/gauntlet-bench/gauntlet/pkg/gateway"
	"github.com/gauntlet-bench/gauntlet/pkg/harbor"
	"github.com/gauntlet-bench/gauntlet/pkg/harness"
	"github.com/gauntlet-bench/gauntlet/pkg/modelref"
	"github.com/gauntlet-bench/gauntlet/pkg/secret"
	"github.com/gauntlet-bench/gauntlet/pkg/wireapi"
)

// Paths of the agent phase of a bundled harness, in the sandbox.
const (
	// gatewayMount holds the gateway's unix socket and the runner binary
	// that relays a loopback port to it.
	gatewayMount   = "/run/gauntlet"
	gatewaySocket  = gatewayMount + "/gateway.sock"
	forwarderPath  = "/run/gauntlet-runner"
	nativeLogDir   = "native"
	gatewayRecord  = "gateway-calls.jsonl"
	forwarderLog   = "gateway-forward.log"
	programUsageMD = "program_usage"
)

// gatewayTokenName names the gateway token where it is redacted.
const gatewayTokenName = "gateway_token"

// testHookGatewayToken, when set (by tests only), is told each attempt's
// gateway token with the attempt's work dir (tests run attempts in
// parallel), so a test can search everything stored for it.
var testHookGatewayToken func(work, token string)

// agentRig is what the runner sets up around a harness that runs a bundled
// program through the model gateway: the bundle mounted read-only, the
// gateway (outside the sandbox) and how the sandbox reaches it.
type agentRig struct {
	bundle string // host path of the prepared bundle
	gw     *gateway.Gateway
	// url is the gateway's base URL as the agent reaches it.
	url string
	// forwardPort is the loopback port the in-sandbox forwarder listens on
	// (bubblewrap); 0 when the agent reaches the gateway's TCP port.
	forwardPort int
	// keyNames are the agent secrets that hold the model key: withheld from
	// the sandbox, which gets the gateway token instead.
	keyNames []string
	// socketTmp is the short-path directory made for the gateway socket
	// when the attempt's own would exceed a unix socket path's limit.
	socketTmp string
}

// maxSocketPath is the longest unix socket path bind(2) accepts on Linux
// (sun_path is 108 bytes with its terminating NUL).
const maxSocketPath = 107

// gatewaySocketPath is where the gateway listens: in the attempt's work
// dir, or — when a deep data dir makes that path too long for a unix
// socket — in a fresh private directory under the system's temp dir,
// which the caller removes with the rig.
func (rg rigging) gatewaySocketPath(dir string) (path, tmp string, err error) {
	t := rg.t
	path = filepath.Join(t.work, dir, "gateway.sock")
	if len(path) <= maxSocketPath {
		return path, "", os.MkdirAll(filepath.Dir(path), 0o755)
	}
	tmp, err = os.MkdirTemp("", "gauntlet-gw-")
	if err != nil {
		return "", "", err
	}
	if err := os.Chmod(tmp, 0o755); err != nil { // the sandbox's user connects through the bind mount
		os.RemoveAll(tmp)
		return "", "", err
	}
	return filepath.Join(tmp, "gateway.sock"), tmp, nil
}

// bundleRoot is the root filesystem the agent phase runs on, against which
// a bundle's program is checked: the host's system directories under the
// bubblewrap layout and process isolation, the container's own root under
// container isolation.
func (rg rigging) bundleRoot() string {
	t := rg.t
	if t.image != nil {
		return t.image.root()
	}
	return "/"
}

// checkImageNeeds fails the attempt when the sandbox's root filesystem
// lacks a path the harness's program starts from the image itself (its
// ImageNeeds). The lookup stays inside root: a symlink of the image's
// resolves within it, never on the host.
func checkImageNeeds(h harness.Harness, root string) error {
	if len(h.ImageNeeds) == 0 {
		return nil
	}
	r, err := os.OpenRoot(root)
	if err != nil {
		return fmt.Errorf("agent %s: open the sandbox's root filesystem: %w", h.Name, err)
	}
	defer r.Close()
	for _, p := range h.ImageNeeds {
		rel := strings.TrimPrefix(p, "/")
		if _, err := r.Stat(rel); err != nil {
			if _, lerr := r.Lstat(rel); lerr == nil {
				continue // an absolute symlink, which resolves in the sandbox
			}
			return fmt.Errorf("%w: harness %s %s starts %s from the task image, which has none", agentbundle.ErrUnrunnable, h.Name, h.Version, p)
		}
	}
	return nil
}

// checkStaticBinary fails the trial (an infra error, before the agent
// starts) when the harness runs a platform static binary (terminus-2) that
// the agent phase would not find: without this the agent's shell exits 127
// and the platform's missing file is scored as the agent's failure.
func (rg rigging) checkStaticBinary() error {
	t := rg.t
	seen := t.harness.StaticBinary()
	if seen == "" {
		return nil
	}
	// Where the phase finds it: the --static-bin-dir mounted at
	// StaticBinMount, or (under container isolation, which serves that dir
	// at StaticBinMount itself, and without the flag) the agent's root.
	path := filepath.Join(rg.bundleRoot(), seen)
	if t.opts.StaticBinDir != "" && t.container == nil {
		path = filepath.Join(t.opts.StaticBinDir, strings.TrimPrefix(seen, StaticBinMount+"/"))
	}
	info, err := os.Stat(path)
	switch {
	case err != nil:
		return fmt.Errorf("harness %s needs the platform's static binary %s, which is missing (the runner's --static-bin-dir %q serves %s): %w",
			t.harness.Name, seen, t.opts.StaticBinDir, StaticBinMount, err)
	case !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("harness %s needs the platform's static binary %s: %s is not an executable file (mode %v)",
			t.harness.Name, seen, path, info.Mode())
	}
	return nil
}

// ownNetwork reports whether the agent phase runs in a network namespace
// of its own (bubblewrap, on the host's root or the task's image), where it
// reaches the gateway through the in-sandbox forwarder; process and
// container isolation share the runner's.
func (rg rigging) ownNetwork() bool { return rg.t.iso.traits().ownNetwork }

// prepareRig finds the harness's bundle, checks that it can run in the
// sandbox's root filesystem and starts the model gateway. Its error is the
// platform's (an infra error): the bundle is missing or cannot run here, or
// the gateway cannot start.
func (rg rigging) prepareRig(ctx context.Context) (*agentRig, error) {
	t := rg.t
	h := t.harness
	if h.Bundle == nil && h.WireAPI == "" {
		return nil, nil // no program to mount and no model to reach (oracle, nop, command)
	}
	started := time.Now()
	rig := &agentRig{}
	if h.Bundle != nil {
		dir := t.opts.InstalledAgentDir
		if dir == "" {
			var err error
			if dir, err = (agentbundle.Cache{Dir: t.opts.AgentBundles}).Path(h); err != nil {
				return nil, fmt.Errorf("agent bundle: %w", err)
			}
		}
		if err := agentbundle.CheckRunnable(filepath.Join(dir, h.Bundle.Program), rg.bundleRoot()); err != nil {
			return nil, fmt.Errorf("agent bundle %s %s: %w", h.Name, h.Version, err)
		}
		if err := checkImageNeeds(h, rg.bundleRoot()); err != nil {
			return nil, err
		}
		rig.bundle = dir
		t.agentProgram = filepath.Join(dir, h.Bundle.Program)
	}
	route, err := rg.modelRoute()
	if err != nil {
		return nil, err
	}
	if err := route.CheckHarness(wireapi.API(h.WireAPI)); err != nil {
		return nil, fmt.Errorf("harness %s: %w", h.Name, err)
	}
	key := t.spec.Secrets[h.KeyEnv]
	if route.Key != "" {
		// A hosted model: the operator's key, which no secret holds.
		key = secret.Value(route.Key)
	}
	for name, v := range t.spec.Secrets {
		if key != "" && v == key {
			rig.keyNames = append(rig.keyNames, name)
		}
	}
	if err := rg.startGateway(ctx, rig, gatewayStart{
		socketDir: "gateway", record: gatewayRecord, component: "model-gateway",
		route: route, key: key, timeout: t.spec.AgentTimeout,
		// The run's per-attempt budget bounds the agent's model use only;
		// the judge's gateway (judge.go) gets none.
		budget:    gateway.Limits{MaxTokens: t.spec.MaxTokens, MaxCostUSD: t.spec.MaxCostUSD},
		tokenName: gatewayTokenName, tokenHook: hookOf(testHookGatewayToken, t.work),
	}); err != nil {
		return nil, err
	}
	if route.Key != "" {
		t.verification().addRedacted("hosted_model_key", route.Key)
	}
	t.log.Info("agent rig ready", "bundle", filepath.Base(rig.bundle), "wire_api", h.WireAPI, "upstream_model", route.Model,
		"duration", time.Since(started).Round(time.Microsecond).String())
	return rig, nil
}

// gatewayStart is what differs between the agent's and the judge's model
// gateway.
type gatewayStart struct {
	socketDir, record, component string
	route                        gateway.Route
	key                          secret.Value
	// timeout bounds the gateway's calls (the phase's timeout; 0: none).
	timeout time.Duration
	// budget is the phase's token and cost budget (leave its Deadline to
	// timeout); zero values are none.
	budget    gateway.Limits
	tokenName string       // the token's name in the redaction list
	tokenHook func(string) // tests' view of the token, when set
}

// startGateway starts a model gateway on rig for one phase: its socket,
// its record of calls (redacted), its token redacted, and how the sandbox
// reaches it. On failure nothing is left running.
func (rg rigging) startGateway(ctx context.Context, rig *agentRig, g gatewayStart) error {
	t := rg.t
	var socket string
	var err error
	if t.image != nil {
		// The pod's one gateway directory, which the trial removes.
		socket, err = t.imageSandbox().podGatewaySocket()
	} else {
		socket, rig.socketTmp, err = rg.gatewaySocketPath(g.socketDir)
		if err != nil {
			err = fmt.Errorf("model gateway: socket: %w", err)
		}
	}
	if err != nil {
		return err
	}
	cfg := gateway.Config{
		Route: g.route, Key: g.key.Reveal(),
		SocketPath: socket,
		RecordPath: filepath.Join(t.out, ArtifactsDir, g.record),
		Redact:     rg.secretValues(),
		Logger:     t.log.With("component", g.component),
		Limits:     g.budget,
	}
	if g.budget.MaxCostUSD > 0 && g.route.PriceProvider == "" {
		// Submit refuses a cost budget for an unpriced model; a spec that
		// carries one anyway (an older platform, a hand-made spec) gets
		// calls without a cost, which never spend it: say so.
		t.log.Warn("the attempt's cost budget is not enforced: the model has no price", "model", g.route.Label, "max_cost_usd", g.budget.MaxCostUSD)
	}
	if g.timeout > 0 {
		cfg.Limits.Deadline = time.Now().Add(g.timeout)
	}
	bwrap := rg.ownNetwork()
	if !bwrap {
		// Process and container isolation share the runner's network
		// namespace: the sandbox reaches the gateway's loopback port.
		cfg.TCPAddr = "127.0.0.1:0"
	}
	if rig.gw, err = gateway.Start(ctx, cfg); err != nil {
		_ = rig.removeSocketDir()
		return err
	}
	t.verification().addRedacted(g.tokenName, rig.gw.Token())
	if g.tokenHook != nil {
		g.tokenHook(rig.gw.Token())
	}
	return rig.reach(bwrap)
}

// removeSocketDir removes the short-path directory made for the gateway's
// socket, if one was made.
func (rig *agentRig) removeSocketDir() error {
	if rig.socketTmp == "" {
		return nil
	}
	return os.RemoveAll(rig.socketTmp)
}

// reach sets how the sandbox reaches the started gateway: its TCP URL, or
// (in a network namespace of the sandbox's own) a loopback port the
// in-sandbox forwarder relays to the socket. On failure it stops the
// gateway.
func (rig *agentRig) reach(bwrap bool) error {
	rig.url = rig.gw.URL()
	if !bwrap {
		return nil
	}
	port, err := freeLoopbackPort()
	if err != nil {
		_ = rig.gw.Close()
		_ = rig.removeSocketDir()
		return fmt.Errorf("model gateway: %w", err)
	}
	rig.forwardPort = port
	rig.url = "http://127.0.0.1:" + strconv.Itoa(port)
	return nil
}

// modelRoute resolves the agent's model (a provider's "<provider>/<name>",
// an endpoint, or a model the operator hosts) to the upstream the gateway
// forwards to.
func (rg rigging) modelRoute() (gateway.Route, error) {
	t := rg.t
	r := t.opts.Models
	if r == nil {
		r = gateway.NewResolver()
	}
	m := modelref.Model{Type: modelref.Type(t.spec.ModelType), Model: t.spec.Model, BaseURL: t.spec.BaseURL,
		ExtraHeaders: t.spec.ExtraHeaders, BaseModel: t.spec.BaseModel, LoraModelName: t.spec.LoraModelName}
	switch m.Type {
	case "":
		m.Type = modelref.Provider // a spec from before model types reached the runner
	case modelref.Hosted:
		m.Model = "" // the label; a hosted model is base_model + lora_model_name
	}
	route, err := r.Resolve(m)
	if err != nil {
		return gateway.Route{}, fmt.Errorf("agent model %q: %w", t.spec.Model, err)
	}
	return route, nil
}

// freeLoopbackPort picks a port for the in-sandbox forwarder. In the
// sandbox's own network namespace any port is free (in an image trial's
// pod, unless a process an earlier phase left running took it); where the
// sandbox shares the host's (network_mode public), one free here is the
// best guess.
func freeLoopbackPort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// secretValues are every secret value of the trial, which the gateway must
// keep out of its records.
func (rg rigging) secretValues() []string {
	t := rg.t
	var out []string
	for _, set := range []map[string]secret.Value{t.spec.Secrets, t.spec.VerifierSecrets, t.redacted} {
		for _, v := range set {
			if len(v) >= MinRedactedLen {
				out = append(out, v.Reveal())
			}
		}
	}
	if len(t.spec.JudgeKey) >= MinRedactedLen {
		out = append(out, t.spec.JudgeKey.Reveal())
	}
	return out
}

// templateData is what the harness's templates see.
func (rg rigging) templateData(rig *agentRig) harness.RunTemplateData {
	t := rg.t
	d := harness.RunTemplateData{
		Command: t.spec.Command, Model: t.spec.Model, ModelName: modelName(t.spec.Model),
		InstructionFile: t.seen.AgentLogs + "/instruction.md",
		SolutionDir:     t.seen.Solution, AgentsDir: t.seen.Agents,
		Home: t.seen.Tmp, KeyEnv: t.harness.KeyEnv,
	}
	if rig != nil {
		if rig.bundle != "" {
			d.BundleDir = rg.bundleSeen(rig)
		}
		d.GatewayURL = rig.url
	}
	return d
}

// bundleSeen is where the phase sees the bundle.
func (rg rigging) bundleSeen(rig *agentRig) string {
	if rg.ownNetwork() {
		return harness.BundleMount
	}
	return rig.bundle
}

// modelName is the model's name without its provider ("openai/gpt-5.2" →
// "gpt-5.2").
func modelName(model string) string {
	if _, name, ok := strings.Cut(model, "/"); ok {
		return name
	}
	return model
}

// rigPhase completes the agent phase's command (after the image's own
// environment is applied) for the rig: the harness's environment with the
// gateway token in place of the key and the attempt's /tmp as $HOME, its
// files there, the bundle and the gateway socket mounted.
func (rg rigging) rigPhase(rig *agentRig, pc *phaseCommand) error {
	t := rg.t
	data := rg.templateData(rig)
	env, err := t.harness.Environment(data)
	if err != nil {
		return err
	}
	files, err := t.harness.HomeFiles(data)
	if err != nil {
		return err
	}
	for rel, content := range files {
		path := filepath.Join(t.host.Tmp, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("write harness file %s: %w", rel, err)
		}
		if err := os.WriteFile(path, content, 0o644); err != nil {
			return fmt.Errorf("write harness file %s: %w", rel, err)
		}
		if err := ownLikeHome(t.host.Tmp, path); err != nil {
			return err
		}
	}
	list := pc.env[:0:0]
	withheld := map[string]bool{}
	for _, n := range rig.keyNames {
		withheld[n] = true
	}
	path := sandboxPath
	for _, kv := range pc.env {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case withheld[k], k == t.harness.KeyEnv:
			continue
		case k == "PATH":
			path = v
			continue
		case k == "HOME":
			continue
		}
		if _, ok := env[k]; ok {
			continue
		}
		list = append(list, kv)
	}
	if t.harness.Bundle != nil {
		for _, dir := range t.harness.Bundle.Path {
			path = data.BundleDir + "/" + dir + ":" + path
		}
	}
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	// The programs keep their state and native logs under $HOME: the
	// attempt's /tmp, which the runner reads afterwards (an image user's
	// own home is inside the writable layer the runner does not inspect).
	list = append(list, "PATH="+path, "HOME="+data.Home, t.harness.KeyEnv+"="+rig.gw.Token())
	pc.env = list
	var extra []mount
	if rig.bundle != "" && (t.opts.InstalledAgentDir == "" || t.image == nil) {
		extra = append(extra, mount{host: rig.bundle, target: harness.BundleMount})
	}
	return rg.rigMounts(rig, pc, extra)
}

// rigMounts adds extra and, where the phase reaches the gateway through
// the in-sandbox forwarder, the gateway's socket and the forwarder to the
// phase's mounts. An image trial's pod binds them for the whole trial
// (podMounts): nothing is added there.
func (rg rigging) rigMounts(rig *agentRig, pc *phaseCommand, extra []mount) error {
	t := rg.t
	if t.image != nil {
		return nil
	}
	if rig.forwardPort != 0 {
		self, err := rg.forwarderBinary()
		if err != nil {
			return err
		}
		extra = append(extra,
			mount{host: filepath.Dir(rig.gw.SocketPath()), target: gatewayMount},
			mount{host: self, target: forwarderPath, file: true})
	}
	pc.mounts = append(pc.mounts, extra...)
	return nil
}

// forwarderBinary is the runner binary the sandbox runs to relay a
// loopback port to the gateway's socket.
func (rg rigging) forwarderBinary() (string, error) {
	t := rg.t
	if t.opts.Forwarder != "" {
		return t.opts.Forwarder, nil
	}
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("model gateway forwarder: %w", err)
	}
	return self, nil
}

// rigScript starts the in-sandbox forwarder before the program. It prints
// "listening on ADDR" once it accepts; reading that line is the wait. It
// dies with the sandbox.
func (rg rigging) rigScript(rig *agentRig, pc *phaseCommand, logDir string) {
	if rig.forwardPort == 0 {
		return
	}
	pc.script = fmt.Sprintf("exec 3< <(exec %s %s -listen 127.0.0.1:%d -socket %s 2>>%s/%s)\n"+
		"read -r _ <&3 || { echo 'model gateway forwarder did not start' >&2; exit 125; }\n%s",
		forwarderPath, ForwardCommand, rig.forwardPort, gatewaySocket, logDir, forwarderLog, pc.script)
}

// ownLikeHome gives path (and its directories up to home) the owner of
// home: the agent may run under a uid of its own (an image's user, the
// container isolation's agent uid) and must be able to write its config
// directory (CODEX_HOME, ~/.gemini).
func ownLikeHome(home, path string) error {
	info, err := os.Stat(home)
	if err != nil {
		return err
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || st.Uid == uint32(os.Geteuid()) {
		return nil
	}
	for p := path; p != home && strings.HasPrefix(p, home+string(filepath.Separator)); p = filepath.Dir(p) {
		if err := os.Lchown(p, int(st.Uid), int(st.Gid)); err != nil {
			return fmt.Errorf("hand %s to the agent: %w", p, err)
		}
	}
	return nil
}

// ForwardCommand is the runner subcommand the sandbox runs to relay its
// loopback port to the model gateway's socket.
const ForwardCommand = "gateway-forward"

// modelException records the model failure the attempt ended with, from
// the gateway's view first (what the provider answered), else from what the
// program reported. It reports whether there was one. A gateway fault is
// the platform's: an error.
func (rg rigging) modelException(rig *agentRig, exitCode int) (bool, error) {
	t := rg.t
	class, detail := "", ""
	if rig != nil {
		if f := rig.gw.Fault(); f != nil {
			if f.Kind == gateway.FaultGateway {
				return false, fmt.Errorf("model gateway failed: %s", f.Message)
			}
			class, detail = f.Kind, f.Message
		}
	}
	if class == "" && exitCode != 0 {
		class, detail = t.rigging().programModelError(exitCode)
	}
	typ := map[string]string{
		gateway.FaultAuth: harbor.ExceptionModelAuth, gateway.FaultModelUnavailable: harbor.ExceptionModelUnavailable,
		gateway.FaultBudget: harbor.ExceptionModelBudget,
	}[class]
	if typ == "" {
		return false, nil
	}
	t.except(typ, fmt.Sprintf("%s: %s (agent exit code %d)", class, detail, exitCode))
	return true, nil
}

// feedOutput feeds the agent's captured stdout and stderr to a new parser
// of the row's Output (a missing file is an empty stream) and closes it.
func (rg rigging) feedOutput() (harness.OutputParser, error) {
	t := rg.t
	p := t.harness.Output()
	var errs []error
	for _, s := range []struct {
		w    io.Writer
		file string
	}{{p.Stdout(), agentStdout}, {p.Stderr(), agentStderr}} {
		if s.w == nil {
			continue
		}
		if err := harness.FeedFile(s.w, filepath.Join(t.host.AgentLogs, s.file)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return p, errors.Join(append(errs, p.Close())...)
}

// reportedUsage is the usage the program reported, read by the row's
// Output parser (or its Usage reader); ok is false when it reported none.
func (rg rigging) reportedUsage() (harness.Usage, bool, error) {
	t := rg.t
	h := t.harness
	switch {
	case h.Output != nil:
		p, err := t.rigging().feedOutput()
		if err != nil {
			return harness.Usage{}, false, err
		}
		u, ok := p.Usage()
		return u, ok, nil
	case h.Usage != nil:
		return h.Usage(t.host.AgentLogs)
	}
	return harness.Usage{}, false, nil
}

// programModelError is what the program's output says of a model failure
// (see harness.OutputParser.ModelError); an unreadable output says nothing.
func (rg rigging) programModelError(exitCode int) (class, detail string) {
	t := rg.t
	h := t.harness
	switch {
	case h.Output != nil:
		p, _ := t.rigging().feedOutput()
		return p.ModelError(exitCode)
	case h.ModelError != nil:
		return h.ModelError(t.host.AgentLogs, exitCode)
	}
	return "", ""
}

// programTrajectory builds the trajectory from the program's native
// session log — the row's SessionLog, fed to its Session parser — or with
// the row's Trajectory reader.
func (rg rigging) programTrajectory() (atif.Trajectory, error) {
	t := rg.t
	h := t.harness
	if h.Session == nil {
		return h.Trajectory(harness.LogSource{AgentLogDir: t.host.AgentLogs, HomeDir: t.host.Tmp})
	}
	path, err := h.SessionLog(t.host.Tmp)
	if err != nil {
		return atif.Trajectory{}, err
	}
	p := h.Session()
	if err := harness.FeedFile(p, path); err != nil {
		return atif.Trajectory{}, err
	}
	if err := p.Close(); err != nil {
		return atif.Trajectory{}, fmt.Errorf("read %s session log: %w", h.Name, err)
	}
	return p.Trajectory(), nil
}

// closeRig stops the gateway and takes its usage: the attempt's tokens and
// cost are the gateway's (metered from the wire), the program's own report
// is kept beside them and a mismatch logged.
func (rg rigging) closeRig(rig *agentRig) {
	t := rg.t
	if rig == nil {
		return
	}
	if err := rig.gw.Close(); err != nil {
		t.log.Warn("model gateway did not close cleanly", "err", err)
	}
	if err := rig.removeSocketDir(); err != nil {
		t.log.Warn("gateway socket dir not removed", "dir", rig.socketTmp, "err", err)
	}
	tot := rig.gw.Totals()
	t.gateway = &tot
	program := t.usage
	u := harness.Usage{InputTokens: tot.Usage.Input, CacheTokens: tot.Usage.Cached, OutputTokens: tot.Usage.Output,
		ReasoningTokens: tot.Usage.Reasoning, CostUSD: tot.CostUSD, CostReported: tot.CostKnown}
	t.usage = &u
	t.programUsage = program
	t.log.Info("model usage", "calls", tot.Calls, "input_tokens", u.InputTokens, "cached_tokens", u.CacheTokens,
		"output_tokens", u.OutputTokens, "cost_usd", u.CostUSD, "cost_known", tot.CostKnown, "cost_estimated", tot.CostEstimated)
	if program != nil && (program.InputTokens != u.InputTokens || program.CacheTokens != u.CacheTokens || program.OutputTokens != u.OutputTokens) {
		t.log.Warn("the program's usage report differs from the gateway's metering; the gateway's is recorded",
			"program_input", program.InputTokens, "program_cached", program.CacheTokens, "program_output", program.OutputTokens,
			"gateway_input", u.InputTokens, "gateway_cached", u.CacheTokens, "gateway_output", u.OutputTokens)
	}
}

// keepAgentLogs copies the program's native logs out of the agent's home
// into /logs/agent/native/ (collected, redacted, as artifacts) and builds
// the ATIF trajectory from them, checked against the gateway's record. It
// runs after every agent process has ended. Nothing here fails the trial:
// a missing or unreadable log is logged.
func (rg rigging) keepAgentLogs(rig *agentRig) {
	t := rg.t
	h := t.harness
	for _, pattern := range h.NativeLogs {
		matches, _ := filepath.Glob(filepath.Join(t.host.Tmp, pattern))
		for _, src := range matches {
			rel, err := filepath.Rel(t.host.Tmp, src)
			if err != nil {
				continue
			}
			dst := filepath.Join(t.host.AgentLogs, nativeLogDir, rel)
			if err := copyNative(src, dst); err != nil {
				t.log.Warn("native log not kept", "file", rel, "err", err)
			}
		}
	}
	if h.Trajectory == nil && h.Session == nil {
		return
	}
	tr, err := t.rigging().programTrajectory()
	fromGateway := false
	if err != nil || len(tr.Steps) == 0 {
		if err == nil {
			err = errors.New("the program's log holds no step")
		}
		calls := rig.gw.Calls()
		if t.gateway == nil || !anyMetered(calls) {
			t.log.Warn("no trajectory", "err", err)
			return
		}
		// The program was ended before it wrote its log (a memory kill, a
		// timeout) or wrote none we can read: its model calls are still
		// known, from the gateway, so the trajectory shows those rather
		// than disagreeing with result.json about the tokens spent.
		t.log.Warn("no trajectory from the program's logs; built from the gateway's record of its model calls", "err", err)
		session := t.spec.LaunchID
		if session == "" {
			session = "attempt-without-launch-id"
		}
		tr = gatewayTrajectory(calls, session, rg.instruction())
		fromGateway = true
	}
	tr.SchemaVersion = atif.SchemaVersion
	tr.Agent = atif.Agent{Name: h.Name, Version: h.Version, ModelName: t.spec.Model}
	tr.Total()
	if err := atif.Validate(tr); err != nil {
		t.log.Warn("trajectory does not validate as ATIF; kept as it is", "err", err)
	}
	if t.gateway != nil {
		fm := tr.FinalMetrics
		if tr.ModelCalls() != t.gateway.Calls || fm.TotalPromptTokens != t.gateway.Usage.Input ||
			fm.TotalCompletionTokens != t.gateway.Usage.Output || fm.TotalCachedTokens != t.gateway.Usage.Cached {
			t.log.Warn("the trajectory differs from the gateway's record",
				"trajectory_calls", tr.ModelCalls(), "gateway_calls", t.gateway.Calls,
				"trajectory_prompt_tokens", fm.TotalPromptTokens, "gateway_input_tokens", t.gateway.Usage.Input,
				"trajectory_completion_tokens", fm.TotalCompletionTokens, "gateway_output_tokens", t.gateway.Usage.Output)
		} else {
			t.log.Info("trajectory matches the gateway's record", "model_calls", tr.ModelCalls())
		}
		// result.json reports the gateway's metering: the trajectory's
		// totals count what its steps miss, so the two agree.
		tr.Cover(t.gateway.Calls, t.gateway.Usage.Input, t.gateway.Usage.Output, t.gateway.Usage.Cached)
	}
	if reason := rg.agentCutShort(); reason != "" || fromGateway {
		markPartial(&tr, reason, fromGateway)
	}
	data, err := json.MarshalIndent(tr, "", "  ")
	if err == nil {
		err = os.WriteFile(filepath.Join(t.host.AgentLogs, atif.FileName), data, 0o644)
	}
	if err != nil {
		t.log.Warn("trajectory not written", "err", err)
	}
}

// copyNative copies one native log (never following a symlink the agent
// may have planted).
func copyNative(src, dst string) error {
	info, err := os.Lstat(src)
	if err != nil {
		return err
	}
	if !info.Mode().IsRegular() {
		return errors.New("not a regular file")
	}
	data, err := harness.ReadAgentFile(src, maxArtifactBytes)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, data, fs.FileMode(0o644))
}

// anyMetered reports whether any of the gateway's calls carried usage.
func anyMetered(calls []gateway.Call) bool {
	for _, c := range calls {
		if c.Metered {
			return true
		}
	}
	return false
}

// gatewayTrajectory is the trajectory of an agent whose own log is missing:
// the instruction as the user step, then one agent step per model call the
// gateway metered, with its tokens and cost, in the order the calls ended.
// What the model answered and which tools ran are not in it (the gateway
// keeps no answer text in memory; artifacts/gateway-calls.jsonl has the
// record).
func gatewayTrajectory(calls []gateway.Call, session, instruction string) atif.Trajectory {
	tr := atif.Trajectory{SessionID: session}
	add := func(s atif.Step) {
		s.StepID = len(tr.Steps) + 1
		tr.Steps = append(tr.Steps, s)
	}
	if instruction != "" {
		add(atif.Step{Source: atif.SourceUser, Message: instruction})
	}
	for _, c := range calls {
		if !c.Metered {
			continue
		}
		m := &atif.Metrics{PromptTokens: c.Usage.Input, CompletionTokens: c.Usage.Output, CachedTokens: c.Usage.Cached}
		if c.CostKnown {
			cost := c.CostUSD
			m.CostUSD = &cost
		}
		add(atif.Step{Source: atif.SourceAgent, Timestamp: c.Start.UTC().Format(time.RFC3339Nano), Metrics: m,
			Extra: map[string]any{"source": "model gateway", "gateway_call": c.Seq}})
	}
	return tr
}

// markPartial says in the trajectory's final_metrics.extra that it does not
// hold the whole session: the agent was ended (reason), and/or its steps
// were built from the gateway's record because the program left no log.
// The totals are the gateway's either way (Cover).
func markPartial(tr *atif.Trajectory, reason string, fromGateway bool) {
	if tr.FinalMetrics == nil {
		tr.Total()
	}
	fm := tr.FinalMetrics
	if fm.Extra == nil {
		fm.Extra = map[string]any{}
	}
	p := map[string]any{"steps_from": "agent log"}
	if fromGateway {
		p["steps_from"] = "model gateway"
	}
	if reason != "" {
		p["reason"] = reason
	}
	fm.Extra["partial"] = p
}

// agentCutShort is why the agent phase was ended before the program
// finished on its own ("" when it was not): the exception type of a
// timeout or an out-of-memory kill.
func (rg rigging) agentCutShort() string {
	t := rg.t
	for _, e := range t.exceptions {
		switch e.ExceptionType {
		case harbor.ExceptionAgentTimeout, harbor.ExceptionAgentOOM:
			return e.ExceptionType
		}
	}
	return ""
}

// instruction is the task instruction as the agent got it ("" when it
// cannot be read).
func (rg rigging) instruction() string {
	t := rg.t
	data, err := harness.ReadAgentFile(filepath.Join(t.host.AgentLogs, "instruction.md"), 1<<20)
	if err != nil {
		return ""
	}
	return string(data)
}
